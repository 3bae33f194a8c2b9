"""Which parameters a function writes into, and its *variant*, which a
call that must see the writes goes to (``frontend.writes``).

A parameter is written into while it holds the caller's object: by index
(``s[0] += v``, ``np.add.at(s, i, v)``), by an update (``s += v``, in place
for an array, a rebinding for a number), or by a call that writes into it.
The variant works on copies of those arguments and returns the result with
their new values.  The attributes a function stores into are
``attribute_stores``'; what both scans read of a function, ``function_scans``'::

>>> import numpy as np
>>> from pullback.testing import function_from_source
>>> step = function_from_source('''
... def step(s, v, dt):
...     s[0] += dt * v
...     v -= dt
... ''')
>>> written_params(step)
{'s': 'item', 'v': 'update'}
>>> s = np.zeros(2)
>>> variant(step)(s, 1.0, 0.5), s
((None, array([0.5, 0. ]), 1.0), array([0., 0.]))
"""
from __future__ import annotations

import inspect
import weakref

import gast
import numpy as np

from ..errors import UnsupportedSyntaxError
from ..rules.registry import nondifferentiable
from ..runtime.arguments import arguments_apart, number_argument, result_apart
from .function_scans import _leading_copies, bound_arguments, static_callee, to_fixpoint, walk
# (analyses.attributes reads these here)
from .attribute_stores import attribute_stores, stored_values  # noqa: F401
from .function_scans import _known_method  # noqa: F401

__all__ = ["written_params", "variant", "argument_written", "ITEM", "UPDATE", "MIXED", "scan"]

ITEM, UPDATE, MIXED = "item", "update", "mixed"
_ITEM, _UPDATE, _MIXED = ITEM, UPDATE, MIXED


_variants = weakref.WeakKeyDictionary()


def variant(fn):
    """``fn``'s variant: called as ``fn`` is, it works on copies of the
    arguments ``fn`` writes into and returns ``(result, new value of each)``,
    in ``written_params(fn)``'s order; a number updated (``n += 1``) comes
    back unchanged, as the caller's number is."""
    v = _variants.get(fn)
    if v is not None:
        return v
    written = list(written_params(fn))
    sig = inspect.signature(fn, follow_wrapped=False)

    def writes(*args, **kwargs):
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        for p in written:
            if isinstance(bound.arguments[p], np.ndarray):
                bound.arguments[p] = bound.arguments[p].copy()
        result = fn(*bound.args, **bound.kwargs)
        return (result,) + tuple(bound.arguments[p] for p in written)

    writes.__signature__ = sig
    writes.__name__ = writes.__qualname__ = f"{fn.__name__}_writes"
    writes.__module__ = fn.__module__
    writes.__pullback_variant__ = (fn, tuple(written))
    _variants[fn] = writes
    return writes


# -- which parameters a function writes into ------------------------------------------

_written = weakref.WeakKeyDictionary()


def written_params(fn):
    """``{param: how}`` for the parameters ``fn`` writes into while they hold
    the caller's object: ``"item"`` (``p[i] = v``, ``p[i] += v``,
    ``np.add.at(p, ...)``, or passed to a function that writes into it),
    ``"update"`` (``p += v``: in place for an array, a rebinding for a number),
    ``"mixed"`` (written into by index and also rebound, ``p = ...``, so which
    object a write reaches depends on the path taken).  A parameter only
    updated and also rebound is left out: a number's updates rebind it, an
    array's are refused by ``updates.check_updates``."""
    return to_fixpoint(fn, _written, _progress, dict, lambda fn, parsed: scan(parsed.tree, parsed))


_progress = {}      # fn -> [its writes found so far, whether a recursive call read them]


def scan(tree, parsed):
    params = [a.id for a in tree.args.args] + [a.id for a in tree.args.kwonlyargs]
    modes, rebound = {}, set()
    leading = _leading_copies(tree.body, params)

    # `z = p` (or an item of a list `state = [q, p]`, named by list_items):
    # a write through z reaches p where z holds p's array
    # (a name bound only so: one rebound to a new array writes into that)
    sources, bindings = {}, {}
    for node in walk(tree.body):
        if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Store):
            bindings[node.id] = bindings.get(node.id, 0) + 1
        if isinstance(node, gast.AugAssign) and isinstance(node.target, gast.Name):
            bindings[node.target.id] = bindings.get(node.target.id, 0) - 1
        if isinstance(node, gast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], gast.Name) and isinstance(node.value, gast.Name):
            sources.setdefault(node.targets[0].id, []).append(node.value.id)
    sources = {z: set(ps) for z, ps in sources.items() if len(ps) == bindings.get(z)}

    def mark(p, how, seen=()):
        if p in params and p not in leading:
            modes[p] = _ITEM if _ITEM in (how, modes.get(p)) else how
        for q in sources.get(p, ()):
            if q not in seen:
                mark(q, how, (*seen, p))

    for node in walk(tree.body):
        if isinstance(node, (gast.Assign, gast.AugAssign)):
            targets = node.targets if isinstance(node, gast.Assign) else [node.target]
            for t in targets:
                base = _base(t)
                if isinstance(t, gast.Name):
                    if isinstance(node, gast.AugAssign):
                        mark(t.id, _UPDATE)
                    else:
                        rebound.add(t.id)
                elif base is not None and isinstance(t, gast.Subscript):
                    mark(base, _ITEM)
                elif isinstance(t, (gast.Tuple, gast.List)):
                    rebound.update(n.id for n in gast.walk(t) if isinstance(n, gast.Name))
        elif isinstance(node, gast.For):
            rebound.update(n.id for n in gast.walk(node.target) if isinstance(n, gast.Name))
        elif isinstance(node, gast.Call):
            f = node.func
            if isinstance(f, gast.Attribute) and f.attr == "at" and node.args \
                    and isinstance(node.args[0], gast.Name):
                mark(node.args[0].id, _ITEM)        # np.add.at(p, idx, v)
            callee = static_callee(f, parsed, params)
            if callee is not None:
                for q, arg in bound_arguments(callee, node).items():
                    how = written_params(callee).get(q)
                    if how and isinstance(arg, gast.Name):
                        mark(arg.id, how)
    # `s += v` and `s = ...`: a number's updates only rebind it; an array's
    # are refused by check_updates (whose object a path reaches is not known)
    return {p: (_MIXED if p in rebound else modes[p]) for p in params
            if p in modes and not (p in rebound and modes[p] == _UPDATE)}


def _base(target):
    while isinstance(target, gast.Subscript):
        target = target.value
    return target.id if isinstance(target, gast.Name) else None


# -- the runtime side -----------------------------------------------------------------

def argument_written(parsed, p, stmt, kind):
    """The refusal of a write into the argument ``p`` that is not an array
    (frontend.writes copies arrays written into): a list, or a variable a
    nested function captures (lifted to an argument)."""
    from ..analyses.kinds import Shape
    what = "a list or a tuple" if getattr(kind, "shape", None) is Shape.CONTAINER \
        else "not known to be an array"
    nested, captured = getattr(parsed.fn, "__pullback_captured__", (None, ()))
    if p in captured:
        return UnsupportedSyntaxError(
            f"The nested function `{nested}` writes into `{p}`, a variable it captures from "
            f"the function around it, and `{p}` is {what}; pullback follows such writes "
            "only into arrays.", parsed.location(stmt),
            f"Make `{p}` an array (`{p} = np.zeros(1)`), or count with a number: "
            f"`nonlocal {p}` and `{p} += 1`.")
    if getattr(kind, "shape", None) is Shape.CONTAINER:
        name = getattr(parsed.fn, "__name__", "f")
        return UnsupportedSyntaxError(
            f"The function writes into its argument `{p}` by item, and `{p}` is a list or a "
            "tuple: the write would change the caller's list, which pullback's transforms "
            "never do, and pullback follows writes by item only into a list the function "
            "builds itself (`state = [q, p]`).", parsed.location(stmt),
            f"Build a new list instead (`{p} = [{p}[0] - g] + {p}[1:]`) and return it "
            f"where a caller needs the change: `return {p}`, then `{p} = {name}({p}, ...)` "
            "in the caller.")
    return UnsupportedSyntaxError(
        f"The function writes into its argument `{p}`, which is {what}; pullback follows "
        "writes into array arguments (on its own copy) only.", parsed.location(stmt),
        f"Pass an array, or work on a copy: `{p} = {p}.copy()` at the top of the function.")


# (generated code calls these; they live in the runtime, which artifacts import)
_apart, _result_apart, _number_argument = arguments_apart, result_apart, number_argument


nondifferentiable(_apart, _number_argument, _result_apart)
