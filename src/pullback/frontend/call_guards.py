"""Guards that generated code runs before a call it cannot follow: the
callee, known only then, must not write into an array it is handed or that
its object holds, nor store into an attribute of an object it is given (the
caller's), which pullback differentiates as a value.  ``frontend.writes``
puts them before such calls; the dispatcher runs ``no_writer`` for a callee
it is handed::

    fn(s)           ->  no_writer(fn)
                        fn(s)
    p.poke()        ->  no_attribute_store(p.poke)
                        p.poke()

>>> import numpy as np
>>> class Holder:
...     def __init__(self):
...         self.w = np.zeros(2)
...     def poke(self):
...         self.w[0] = 5.0
>>> [c for c, _, _ in self_array_writes(Holder, Holder.poke, "self", set())]
[('w',)]
>>> no_attribute_store(Holder().poke)
Traceback (most recent call last):
...
pullback.errors.UnsupportedSyntaxError: pullback cannot run this call of `Holder.poke`: ...
"""
from __future__ import annotations

import inspect
import types

import numpy as np

from ..errors import UnsupportedSyntaxError
from ..rules.registry import nondifferentiable
from ..runtime import calls as _runtime_calls
from ..runtime.arguments import unwrapped
from ..runtime.origin import module_name
from .attribute_stores import attribute_stores
from .written import written_params

__all__ = ["no_writer", "no_attribute_store", "no_array_write", "self_array_writes",
           "param_store", "user_object"]


def no_writer(fn):
    """Refuse, when a call whose callee is a value (``fn(s)``, its result
    unused) runs, a callee that writes into its arguments: the caller could
    not know its array changes (a call by name goes to the variant)."""
    import functools
    method = isinstance(fn, types.MethodType)
    while isinstance(fn, (functools.partial, types.MethodType)):
        fn = fn.func if isinstance(fn, functools.partial) else fn.__func__
    if not isinstance(fn, types.FunctionType) or getattr(fn, "__pullback_variant__", None):
        return
    written = written_params(fn)
    if written:
        p = next(iter(written))
        name = getattr(fn, "__pullback_captured__", (fn.__name__,))[0]
        if method:
            raise UnsupportedSyntaxError(
                f"`{name}` writes into its argument `{p}`, and here it is called as a method "
                "of an object that pullback cannot tell when it transforms the function (an "
                "attribute, an argument, an element), so it cannot follow the change to the "
                "caller's array.",
                hint=f"Make the object in the function (`solver = {fn.__qualname__.split('.')[0]}"
                     f"(...)`, then `solver.{fn.__name__}(...)`) or call "
                     f"`{fn.__qualname__}(obj, ...)`; or make it return the new `{p}`.")
        raise UnsupportedSyntaxError(
            f"`{name}` writes into its argument `{p}`, and here it is called through a "
            "value (a variable, `map`, a partial), where pullback cannot follow the change "
            "to the caller's array.",
            hint=f"Call `{name}` by its name in a statement of its own, or make it return "
                 f"the new `{p}`.")


def no_attribute_store(fn, *args, **kwargs):
    """Refuse, before it runs, a call ``fn(*args, **kwargs)`` that would store
    an attribute into a dataclass it is given (``p.reset()``, ``h(p)`` with
    ``h`` doing ``p.b = 0.0``, directly or through the functions and the
    methods it calls): pullback differentiates a dataclass as a value
    (``runtime.core`` refuses such a store inside a differentiated function),
    and a store made by a call it runs as plain Python would go unseen."""
    import dataclasses
    fn, first, keywords = unwrapped(fn)
    if not isinstance(fn, types.FunctionType) or getattr(fn, "__pullback_variant__", None):
        return
    if first and not isinstance(first[0], type):
        no_array_write(fn, first[0])
    stores = attribute_stores(fn)
    if not stores:
        return
    sig = inspect.signature(fn, follow_wrapped=False)
    try:
        bound = sig.bind_partial(*first, *args, **{**keywords, **kwargs}).arguments
    except TypeError:
        return          # (the call itself raises)
    for param, value in bound.items():
        if param not in stores:
            continue
        kind = sig.parameters[param].kind
        values = value if kind is inspect.Parameter.VAR_POSITIONAL else \
            tuple(value.values()) if kind is inspect.Parameter.VAR_KEYWORD else (value,)
        for v in values:
            if isinstance(v, type) or not user_object(v):
                continue
            found = param_store(type(v), fn, param, set())
            if found is None:
                continue
            attr, where = found
            if not dataclasses.is_dataclass(v) and not _inexact(
                    getattr(v, attr, None) if attr is not None else None):
                continue    # a counter, a shape, a log: nothing a gradient would follow
            cls = type(v).__name__
            name = fn.__qualname__ if param == "self" else fn.__name__
            via = "" if where is fn else f" (in `{where.__name__}`, which it calls)"
            what = f"the attribute `{attr}`" if attr is not None else "an attribute"
            dc = dataclasses.is_dataclass(v)
            example = (f"dataclasses.replace({param}, {attr}=...)" if attr is not None
                       else f"dataclasses.replace({param}, ...)") if dc \
                else f"{cls}(...)"
            raise UnsupportedSyntaxError(
                f"pullback cannot differentiate this call of `{name}`: it stores into "
                f"{what} of `{param}`{via}, here " + (f"a dataclass (`{cls}`)" if dc else
                f"an object of class `{cls}` that this function did not build itself (an "
                "argument, or what a call returned)") + ", which pullback differentiates as "
                "a value (and never changes: it may be the caller's), "
                "so the reads of it after the call would be "
                "differentiated as if the store had not happened.",
                hint=f"Make `{fn.__name__}` return a new object, e.g. `return {example}`, "
                     "and use it: " + (f"`obj = obj.{fn.__name__}()`." if param == "self"
                                       else f"`{param} = {fn.__name__}(...)`."))


def _inexact(value):
    """Whether ``value`` is a number or array a gradient could follow."""
    return isinstance(value, (float, complex, np.inexact)) or (
        isinstance(value, np.ndarray) and np.issubdtype(value.dtype, np.inexact))


def user_object(v):
    """Whether ``v`` is an instance of a class defined in Python with
    attributes of its own (a dataclass, a plain object, a ``__slots__``
    class): what a stored attribute would change for the caller."""
    cls = type(v)
    if module_name(cls) == "builtins" or isinstance(v, (types.ModuleType, types.FunctionType,
                                                      types.MethodType, np.ndarray, np.generic)):
        return False
    return hasattr(v, "__dict__") or bool(getattr(cls, "__slots__", ()))


def no_array_write(fn, obj):
    """Refuse, before it runs, a method call ``obj.meth(...)`` whose method
    writes into an array ``obj`` holds (``self.w[0] = v``, ``self.w += v``,
    ``np.add.at(self.w, i, v)``, ``self.w.fill(0)``, ``out=self.w``),
    directly or through the methods of its class it calls on ``self``.  Such a
    call on an argument runs as plain Python: the write would reach the
    caller's array (a transform never changes it, README "Mutation"), compound
    when a transform runs the function more than once, and go unseen by the
    gradient (was a silent wrong gradient: ``p.poke()`` doing ``self.w[0] =
    5.0`` gave ``p.w``'s gradient ``[1, 2]`` where ``[0, 2]`` is right)::

        p.poke()    ->  no_attribute_store(p.poke); p.poke()
                        # UnsupportedSyntaxError: `_Holder.poke` writes into
                        # the array `self.w` (`self.w[0] = 5.0`) ...
    """
    params = list(inspect.signature(fn, follow_wrapped=False).parameters)
    if not params:
        return
    for chain, text, where in self_array_writes(type(obj), fn, params[0], set()):
        value = obj
        for attr in chain:
            value = inspect.getattr_static(value, attr, None) if not isinstance(value, type) \
                else None
            if value is None:
                break
        if not isinstance(value, np.ndarray):
            continue
        target = ".".join(("self",) + chain)
        via = "" if where is fn else f" (in `{where.__qualname__}`, which it calls)"
        raise UnsupportedSyntaxError(
            f"pullback cannot run this call of `{fn.__qualname__}`: it writes into the array "
            f"`{target}` of its object (`{text}`){via}, a write into what an attribute holds, "
            "which pullback does not follow: the write would change the object's array "
            "(the caller's, for an argument, which a transform never changes), and the "
            "reads of it after the call would be differentiated as if the write had not "
            "happened.",
            hint=f"Make `{fn.__name__}` return the new array (`w = self.{chain[-1]}.copy(); "
                 f"w[0] = ...; return w`) or a new object "
                 f"(`dataclasses.replace(self, {chain[-1]}=w)`), and use that instead of "
                 "changing the object in place.")


_ARRAY_CHANGING = frozenset({"fill", "put", "itemset", "resize", "sort", "partition",
                             "setfield", "byteswap"})


def self_array_writes(cls, fn, self_name, seen):
    """``(attribute chain, source text, function)`` of each write into
    something reached from ``self_name`` by attributes (``self.w[0] = v``:
    ``("w",)``) in ``fn``, a method of ``cls``, and in the methods of ``cls``
    it calls on ``self_name``; the caller checks at run time which chains hold
    arrays (``self.n += 1`` on a number is a rebinding, not a write)."""
    import ast
    import textwrap
    if fn in seen:
        return []
    seen.add(fn)
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return []

    aliases = {}        # `w = self.w`: a name bound (only) to an attribute chain of self

    def chain(node):
        attrs = []
        while isinstance(node, ast.Attribute):
            attrs.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name) and node.id == self_name and attrs:
            return tuple(reversed(attrs))
        if isinstance(node, ast.Name) and aliases.get(node.id):
            return aliases[node.id] + tuple(reversed(attrs))
        return None
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.NamedExpr)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            value = getattr(node, "value", None)
            for t in targets:
                if isinstance(t, ast.Name):
                    c = chain(value) if isinstance(node, ast.Assign) and len(targets) == 1 \
                        and t.id not in aliases else None
                    aliases[t.id] = c if c is not None and t.id not in aliases else None
    found = []

    def note(node, stmt):
        c = chain(node)
        if c is not None:
            found.append((c, ast.unparse(stmt).splitlines()[0], fn))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) \
                else [node.target]
            for t in targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Subscript) and isinstance(n.ctx, (ast.Store, ast.Del)):
                        note(n.value, node)
                if isinstance(node, ast.AugAssign) and isinstance(t, ast.Attribute):
                    note(t, node)
        elif isinstance(node, ast.Call):
            func = node.func
            for k in node.keywords:
                if k.arg == "out":
                    for v in (k.value.elts if isinstance(k.value, ast.Tuple) else [k.value]):
                        note(v, node)
            if isinstance(func, ast.Attribute) and func.attr in _ARRAY_CHANGING:
                note(func.value, node)
            if isinstance(func, ast.Attribute) and func.attr == "at" and node.args:
                note(node.args[0], node)
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
                    and func.value.id == self_name:
                callee = inspect.getattr_static(cls, func.attr, None)
                if isinstance(callee, types.FunctionType):
                    names = list(inspect.signature(callee, follow_wrapped=False).parameters)
                    if names:
                        found += self_array_writes(cls, callee, names[0], seen)
    return found


def param_store(cls, fn, param, seen):
    """(attribute, function) of a store into the parameter ``param`` of ``fn``
    holding an instance of ``cls``, following the methods called on it."""
    seen.add(fn)
    entry = attribute_stores(fn).get(param)
    if entry is None:
        return None
    attr, where, called = entry
    if not called:
        return attr, where
    for name in called:
        m = inspect.getattr_static(cls, name, None)
        if isinstance(m, types.FunctionType) and m not in seen:
            params = list(inspect.signature(m, follow_wrapped=False).parameters)
            found = param_store(cls, m, params[0], seen) if params else None
            if found is not None:
                return found
    return None


nondifferentiable(no_writer, no_attribute_store)


def _method_store(cls, fn, self_name):
    """``param_store`` for the runtime (``runtime.arguments.unseen_method_write``),
    which imports no compiler module."""
    return param_store(cls, fn, self_name, set())


_runtime_calls.install(method_store=_method_store)
