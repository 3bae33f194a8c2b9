"""Which parameters a function writes into, and its *variant*, which a
call that must see the writes goes to (``frontend.writes``).

A parameter is written into while it holds the caller's object: by index
(``s[0] += v``, ``np.add.at(s, i, v)``), by an update (``s += v``, in place
for an array, a rebinding for a number), or by a call that writes into it.
The variant works on copies of those arguments and returns the result with
their new values::

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
import types
import weakref

import gast
import numpy as np

from ..errors import PullbackError, UnsupportedSyntaxError
from ..rules.registry import nondifferentiable

__all__ = ["written_params", "variant", "argument_written", "ITEM", "UPDATE", "MIXED", "walk", "static_callee",
           "bound_arguments", "scan"]

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
    fn = getattr(fn, "__pullback_variant__", (fn,))[0]
    try:
        memo = _written.get(fn)
    except TypeError:
        return {}
    if fn in _progress:             # a recursive call: the approximation so far
        _progress[fn][1] = True
        return _progress[fn][0]
    if memo is not None:
        return memo
    try:
        parsed, _ = _front(fn)
    except (PullbackError, TypeError, ValueError, SyntaxError, OSError):
        return {}                   # (its own transform refuses it, if it is called)
    # recursion: scan again until the writes found stop growing; a result that
    # read another function's unfinished one is not kept (asked again later)
    _progress[fn] = [{}, False]
    try:
        while True:
            outer = {g: state[1] for g, state in _progress.items() if g is not fn}
            for g in outer:
                _progress[g][1] = False
            _progress[fn][1] = False
            found = scan(parsed.tree, parsed)
            unfinished = any(_progress[g][1] for g in outer)
            for g, was in outer.items():
                _progress[g][1] = _progress[g][1] or was
            if found == _progress[fn][0] or not _progress[fn][1]:
                break
            _progress[fn][0] = found
    finally:
        del _progress[fn]
    if not unfinished:
        _written[fn] = found
    return found


_progress = {}      # fn -> [its writes found so far, whether a recursive call read them]


def _front(fn, structured=False):
    """``fn`` parsed, desugared, its nested functions lifted (and with
    ``structured``, its early exits made flags): the tree the pass sees."""
    from ..ir.naming import Namer
    from . import closures, desugar, parse, structure
    parsed = parse.parse(fn)
    namer = Namer.for_tree(parsed.tree, parsed.globals.keys())
    desugar.desugar(parsed.tree, namer, parsed)
    closures.lift_closures(parsed.tree, namer, parsed)
    if structured:
        structure.structure(parsed.tree, namer, parsed)
    return parsed, namer


def scan(tree, parsed):
    params = [a.id for a in tree.args.args] + [a.id for a in tree.args.kwonlyargs]
    modes, rebound = {}, set()
    leading = _leading_copies(tree.body, params)

    def mark(p, how):
        if p in params and p not in leading:
            modes[p] = _ITEM if _ITEM in (how, modes.get(p)) else how

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


def _leading_copies(body, params):
    """Parameters rebound by the body's first statements before anything
    else reads them (``x = x.copy()``): writes after reach the copy."""
    out = set()
    for s in body:
        if isinstance(s, gast.Assign) and len(s.targets) == 1 \
                and isinstance(s.targets[0], gast.Name) and s.targets[0].id in params:
            out.add(s.targets[0].id)
            continue
        if isinstance(s, gast.Expr) and isinstance(s.value, gast.Constant):
            continue        # a docstring
        break
    return out


def walk(stmts):
    """The nodes of ``stmts``, nested functions and lambdas left out."""
    work = list(stmts)
    while work:
        node = work.pop()
        yield node
        for child in gast.iter_child_nodes(node):
            if not isinstance(child, (gast.FunctionDef, gast.Lambda, gast.ClassDef)):
                work.append(child)


def _base(target):
    while isinstance(target, gast.Subscript):
        target = target.value
    return target.id if isinstance(target, gast.Name) else None


def static_callee(func, parsed, local):
    """The Python function a call's ``func`` names when it is a global or a
    closure variable (not a local, whose value is known only when it runs)."""
    if not isinstance(func, gast.Name) or func.id in local:
        return None
    if func.id in parsed.closure:
        try:
            obj = parsed.closure[func.id].cell_contents
        except ValueError:
            return None
    elif func.id in parsed.globals:
        obj = parsed.globals[func.id]
    else:
        return None
    if not isinstance(obj, types.FunctionType) or getattr(obj, "__pullback_variant__", None):
        return None
    if (getattr(obj, "__module__", "") or "").split(".")[0] in (
            "numpy", "scipy", "jax", "pullback"):
        return None
    return obj


def bound_arguments(callee, call):
    """``{param: argument node}`` for a call (empty if it cannot be bound)."""
    if any(isinstance(a, gast.Starred) for a in call.args) \
            or any(k.arg is None for k in call.keywords):
        return {}
    try:
        sig = inspect.signature(callee, follow_wrapped=False)
        return dict(sig.bind_partial(*call.args, **{k.arg: k.value
                                                    for k in call.keywords}).arguments)
    except (TypeError, ValueError):
        return {}


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
    return UnsupportedSyntaxError(
        f"The function writes into its argument `{p}`, which is {what}; pullback follows "
        "writes into array arguments (on its own copy) only.", parsed.location(stmt),
        f"Pass an array, or work on a copy: `{p} = {p}.copy()` at the top of the function.")


def _apart(*pairs):
    """Refuse, when the function runs, arguments written into that share
    memory with another argument: NumPy would show the write through both
    (``pairs``: name, value, name, value...)."""
    arrays = [(n, v) for n, v in zip(pairs[::2], pairs[1::2]) if isinstance(v, np.ndarray)]
    for i, (n, v) in enumerate(arrays):
        for m, w in arrays[i + 1:]:
            if np.shares_memory(v, w):
                raise UnsupportedSyntaxError(
                    f"The arguments `{n}` and `{m}` share memory, and the function writes "
                    "into one of them, so NumPy would show the write through the other.",
                    hint=f"Pass a copy: `{m}.copy()`.")


def _result_apart(result, *pairs):
    """Refuse a result that shares memory with an argument the function
    writes into (``return s`` from ``step(s)``; ``pairs``: name, value...)."""
    for n, v in zip(pairs[::2], pairs[1::2]):
        if isinstance(v, np.ndarray) and isinstance(result, np.ndarray) \
                and np.shares_memory(result, v):
            raise UnsupportedSyntaxError(
                f"The function returns an array that shares memory with its argument `{n}`, "
                "which it writes into; pullback does not follow the two as one.",
                hint=f"Return a copy (`{n}.copy()`), or nothing: the caller's `{n}` changes.")


def _number_argument(x, name):
    """A variant's parameter updated with ``op=`` that is not an array: a
    number, which the update rebinds; a 0-d array would change in place."""
    if isinstance(x, np.ndarray):
        raise UnsupportedSyntaxError(
            f"`{name}` is a 0-d array that the function updates in place (`{name} op= v`), "
            "which pullback does not follow.", hint=f"Pass a number (`float({name})`) or a "
            "1-d array of one element.")


def _no_writer(fn):
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


nondifferentiable(_apart, _number_argument, _result_apart, _no_writer)
