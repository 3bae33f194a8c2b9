"""Which user class the object a name of the normal form holds is of, as the
refusals of ``analyses.attributes``, ``analyses.store_calls`` and
``analyses.object_reads`` ask it (split from ``analyses.attributes``).

A name's class is known where the function builds the object
(``s = Sim(x)``, the name's only binding), for ``self`` in a method of the
class, and for the names of an object ``frontend.method_state`` follows
through the methods that change it (normalize rebinds them); else it is
``None`` (an argument, a value a call returned):

>>> from pullback.frontend.parse import parse
>>> from pullback.testing import function_from_source, normal_form
>>> class Sim:
...     def __init__(self, x):
...         self.x = x
>>> f = function_from_source('''
... def f(x, p):
...     s = Sim(x)
...     return s.x + p.x
... ''', {"Sim": Sim})
>>> normal, parsed = normal_form(f), parse(f)
>>> binds = bindings(normal)
>>> class_of("s", normal, parsed, binds).__name__, class_of("p", normal, parsed, binds)
('Sim', None)
"""
from __future__ import annotations

import builtins
import inspect
import types

import gast

from ..runtime.origin import module_name
from ..frontend.followed import Followed
from ..frontend.method_state import state_class

__all__ = ["bindings", "class_of", "only_binding", "resolve_name", "string_constant"]


def bindings(normal):
    """Name -> the assignments of ``normal`` that bind it (one walk)."""
    binds = {}
    for n in gast.walk(normal.tree):
        if isinstance(n, gast.Assign):
            for t in n.targets:
                if isinstance(t, gast.Name):
                    binds.setdefault(t.id, []).append(n)
    return binds


def only_binding(name, binds):
    """The one assignment binding ``name`` (of ``bindings``), else None."""
    found = binds.get(name, [])
    return found[0] if len(found) == 1 else None


def class_of(name, normal, parsed, binds):
    """The user class of the object ``name`` holds: built in this function
    by ``name = Cls(...)`` (its only binding), or ``self`` of a method; or
    an object followed through the methods that change it
    (``frontend.method_state``), whose names normalize rebinds."""
    followed = _followed_classes(normal, parsed)
    if name in followed:
        return followed[name]
    binds = binds.get(name, [])
    if len(binds) == 1 and isinstance(binds[0].value, gast.Call) \
            and isinstance(binds[0].value.func, gast.Name):
        cls = resolve_name(binds[0].value.func.id, parsed, set())
        if isinstance(cls, type) and module_name(cls) == "builtins":
            return None
        return cls if isinstance(cls, type) and not issubclass(cls, BaseException) else None
    params = list(normal.params)
    if not binds and params and name == params[0]:
        qual = getattr(parsed.fn, "__qualname__", "").split(".")
        if len(qual) >= 2 and qual[-2] != "<locals>":
            cls = parsed.fn.__globals__.get(qual[-2])
            if isinstance(cls, type) and isinstance(
                    inspect.getattr_static(cls, parsed.fn.__name__, None), types.FunctionType):
                return cls
    return None


def _followed_classes(normal, parsed):
    """Name -> class for the names of the normal form that hold an object
    ``frontend.method_state`` follows: bound from ``Cls(...)``, from the
    object a state function returns, from ``with_attribute`` or from another
    such name (normalize's copies in loops), and from nothing else."""
    from ..runtime.objects import with_attribute
    if not getattr(parsed, "state_objects", None) and state_class(parsed.fn) is None:
        return {}
    memo = getattr(normal, "_followed_classes", None)
    if memo is not None:
        return memo
    sources = {}
    for n in gast.walk(normal.tree):
        if isinstance(n, gast.Assign):
            for t in n.targets:
                if isinstance(t, gast.Name):
                    sources.setdefault(t.id, []).append((n.value, None))
                elif isinstance(t, gast.Tuple):
                    for i, e in enumerate(t.elts):
                        if isinstance(e, gast.Name):
                            sources.setdefault(e.id, []).append((n.value, i))
        elif isinstance(n, (gast.For, gast.AugAssign)):
            target = n.target
            for e in gast.walk(target):
                if isinstance(e, gast.Name):
                    sources.setdefault(e.id, []).append((None, None))
    owner = state_class(parsed.fn)
    params = list(normal.params)
    known = {params[0]: owner} if owner is not None and params else {}

    def source_class(value, index):
        if isinstance(value, gast.Name) and index is None:
            return known.get(value.id)
        if not isinstance(value, gast.Call) or not isinstance(value.func, gast.Name):
            return None
        fn = resolve_name(value.func.id, parsed, set())
        if isinstance(fn, Followed) and index == 0 and state_class(fn.function) is not None:
            return state_class(fn.function)
        if fn is with_attribute and index is None and value.args \
                and isinstance(value.args[0], gast.Name):
            return known.get(value.args[0].id)
        if index is None and isinstance(fn, type) \
                and fn in getattr(parsed, "state_objects", {}).values():
            return fn
        return None
    changed = True
    while changed:          # optimistic: what one source says, ...
        changed = False
        for name, srcs in sources.items():
            if name not in known:
                found = {source_class(v, i) for v, i in srcs} - {None}
                if len(found) == 1:
                    known[name] = found.pop()
                    changed = True
    changed = True
    while changed:          # ... kept where every source agrees
        changed = False
        for name in list(known):
            if owner is not None and name == params[0] and name not in sources:
                continue
            if any(source_class(v, i) is not known[name]
                   for v, i in sources.get(name, [(None, None)])):
                del known[name]
                changed = True
    normal._followed_classes = known
    return known


def resolve_name(name, parsed, local):
    """What ``name`` holds for the user's function: its closure cell, its
    global, else (for a name not in ``local``) the builtin; None otherwise."""
    if name in parsed.closure:
        try:
            return parsed.closure[name].cell_contents
        except (ValueError, AttributeError):
            return None
    if name in parsed.globals:
        return parsed.globals[name]
    if name in local:
        return None
    return getattr(builtins, name, None)


def string_constant(node):
    """The string a constant node holds (an attribute's name), else None."""
    return node.value if isinstance(node, gast.Constant) and isinstance(node.value, str) \
        else None
