"""Updates: ``y += v`` on an array changes it in place, so every name
that holds it sees the change; normalize writes it ``y = y + v``, which is
the same only where no other name can hold ``y`` when the update runs.
``check_updates`` proves that, or puts a check where the value may be a
number (numbers are never changed in place), or refuses::

>>> from pullback.testing import function_from_source, analyses
>>> f = function_from_source('''
... def f(x):
...     y = x * 1.0
...     z = [y]
...     y += 1.0
...     return z[0]
... ''')
>>> normal, ops, chains, kinds, act = analyses(f, param_kinds={"x": ARRAY})
>>> from pullback.frontend.parse import parse
>>> check_updates(normal, kinds, chains, ops, parse(f))
Traceback (most recent call last):
...
pullback.errors.UnsupportedSyntaxError: pullback cannot follow an in-place update of an array that other names may share: `z = [y]` (line 3) may hold it too.
...

A user function that read the array before its update shares nothing when
it keeps nothing (``keeps_nothing``: its result is a new array), so
``r = g(q); q += r`` is followed::

>>> g = function_from_source('''
... def g(q):
...     return 2.0 * q
... ''')
>>> h = function_from_source('''
... def h(q):
...     return q[1:]
... ''')
>>> keeps_nothing(g), keeps_nothing(h)
(True, False)
"""
from __future__ import annotations

import types
import weakref

import gast
import numpy as np

from ..errors import UnsupportedSyntaxError
from ..frontend.parse import Parsed
from ..ir import build
from ..normalize.normalize import Normal
from ..rules.registry import FRESH
from .defuse import Chains
from .kinds import ARRAY, Kind, Shape  # noqa: F401  (ARRAY: the docstring's)
from .copies import (_blocks, _carried_into, _hashable_in, _placeholder, _renames, copy_ids,
                     versions)
from .mutation import packed_to_be_copied, variant_reads
from .views import _is_view_op, used_up_before
from .ops import Op, OpKind
from .order import runs_only_after

__all__ = ["check_updates"]


def check_updates(normal: Normal, kind_of: dict[str, Kind], chains: Chains, ops: dict[int, Op],
                  parsed: Parsed) -> None:
    """Refuse `y += v` (``normal.augmented``) on an array another name may
    share: NumPy would mutate the shared array, and the desugared
    `y = y + v` would not."""
    guards = []
    # `x = x_new` after a call that wrote into x: the variant's own copy
    returned_by_variants = {id(stmt) for stmt, _, origin in normal.augmented
                            if getattr(origin, "written_by", None)}
    for stmt, old, origin in normal.augmented:
        kind = kind_of.get(old)
        if kind is not None and kind.shape is Shape.SCALAR:
            continue
        if _tuple_valued(old, normal, chains, ops, set()):
            continue        # `shape += (k,)`: a tuple is never changed, only rebound
        # a write into the array (`y[i] = v`), a non-differentiable use
        # (`y.shape`), a view used up before the update and anything that can
        # run only after it share nothing; a new array from np.zeros and the
        # like is the function's own.  The names normalize gives the variable
        # in loops and branches (joined by its own copies) are one array:
        # their definitions and uses count.
        joined = versions(normal, old)
        copies = copy_ids(normal)
        readers = [s for v in joined for s in chains.readers(v)
                   if s is not stmt and id(s) not in copies
                   and not runs_only_after(normal, stmt, s)
                   and not variant_reads(ops[id(s)], joined)]
        # the objects `old` may hold: its definitions and those copies carry
        # into it (a later rebinding, `y = m[0]` after the update, is not one)
        sources = _carried_into({old}, _renames(normal))
        shared = bool(sources & set(normal.params))
        sharer = None           # the statement that may share the array, for the message
        for s in readers:
            op = ops[id(s)]
            if (op.kind not in (OpKind.RULE, OpKind.NONDIFF, OpKind.SETITEM)
                    and not packed_to_be_copied(normal, ops, s)
                    and not (op.kind is OpKind.USER and keeps_nothing(op.primitive))) or (
                    _is_view_op(op, kind_of)
                    and not used_up_before(normal, s, stmt, ops, kind_of)):
                shared, sharer = True, sharer or s
        definers = [d for v in sources for d in chains.defs.get(v, ())
                    if id(d) not in copies and not _placeholder(d)]
        for definer in definers:
            op = ops[id(definer)]
            allocated = id(definer) in returned_by_variants or op.kind is OpKind.RULE or (
                op.kind is OpKind.NONDIFF and _hashable_in(op.primitive, FRESH)) or (
                op.kind is OpKind.PACK and isinstance(definer.value, gast.List)) or (  # a new list
                isinstance(definer, gast.Assign) and isinstance(definer.value, gast.Constant)) or (
                op.kind is OpKind.USER and keeps_nothing(op.primitive))  # `r = g(q)`, g fresh
            # (a number is immutable: `total = 0.0; total += ll` rebinds it)
            if not allocated or _is_view_op(op, kind_of):
                shared, sharer = True, sharer or definer
        if shared and (kind is None or kind.shape in (Shape.UNKNOWN, Shape.NUMBER)):
            # a value that may be a number: checked when the update runs
            # (numbers are never changed in place, so the update only rebinds)
            guards.append((stmt, old, origin))
        elif shared and getattr(origin, "written_by", None):
            callee, p = origin.written_by
            raise UnsupportedSyntaxError(
                f"`{callee}` writes into its argument `{p}`, here `{origin.target.id}`, which "
                "another name or another argument of the call may share, so pullback "
                "could not follow the change to all of them.", parsed.location(origin),
                f"Pass a copy (`{origin.target.id}.copy()`) to each argument, or make "
                f"`{callee}` return the new value.")
        elif shared:
            what = "a list" if kind is not None and kind.shape is Shape.CONTAINER else "an array"
            raise UnsupportedSyntaxError(
                f"pullback cannot follow an in-place update of {what} that other names "
                f"may share{_sharer(sharer, old, normal, ops, parsed)}.", parsed.location(origin),
                f"Write `{origin.target.id} = {origin.target.id} "
                f"{_symbol(origin.op)} ...` to make a new {what.split()[-1]}, if that is "
                "what you mean.")
    _check_numbers(normal, ops, parsed, guards)


def keeps_nothing(fn, _seen=None):
    """Whether a call of the user function ``fn`` neither keeps nor returns
    what it is given: its body (normal form) is straight-line assignments of
    names ending in ``return name``, each one arithmetic or a NumPy function
    (no write, no container built, no statement kept for its effect, no
    ``out=``), a number, or a call of such a function; and the name returned
    holds a result NumPy makes new (not a view, not ``asarray``, not
    ``max(a, b)``, which may hand back an argument).  ``def g(q): return
    2.0 * q`` keeps nothing; ``def g(q): return q``, ``return q[1:]`` and a
    function that appends ``q`` to a list do keep it.  Sound, not complete:
    anything else counts as keeping."""
    if not isinstance(fn, types.FunctionType) or getattr(fn, "__pullback_variant__", None):
        return False
    seen = _seen if _seen is not None else set()
    if fn in seen:
        return False            # recursion: not proven
    try:
        hit = _keeps_nothing.get(fn)
    except TypeError:
        return False
    if hit is not None:
        return hit
    seen.add(fn)
    from ..front import front
    from ..errors import PullbackError
    try:
        _, normal, ops = front(fn)
    except (PullbackError, OSError, TypeError, SyntaxError):
        result = False
    else:
        result = _straight_and_fresh(normal, ops, seen)
    _keeps_nothing[fn] = result
    return result


_keeps_nothing = weakref.WeakKeyDictionary()
_MAY_RETURN_AN_ARGUMENT = {max, min}


def _straight_and_fresh(normal, ops, seen):
    *body, last = normal.tree.body
    returned = normal.returned
    if not (isinstance(last, gast.Return) and isinstance(returned, gast.Name)):
        return False
    fresh = {}
    for stmt in body:
        if not (isinstance(stmt, gast.Assign) and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], gast.Name)):
            return False
        op = ops.get(id(stmt))
        target = stmt.targets[0].id
        if isinstance(stmt.value, gast.Constant):
            fresh[target] = True
            continue
        if op is None or "out" in getattr(op, "bound", {}):
            return False
        if op.kind is OpKind.RULE:
            fresh[target] = not (_is_view_op(op, {})
                                 or _hashable_in(op.primitive, _MAY_RETURN_AN_ARGUMENT))
        elif op.kind is OpKind.USER:
            if not keeps_nothing(op.primitive, seen):
                return False
            fresh[target] = True
        elif op.kind is OpKind.NONDIFF and (
                isinstance(stmt.value, gast.Attribute)       # `q.shape`, `q.dtype`
                or _hashable_in(op.primitive, FRESH)
                or isinstance(op.primitive, np.ufunc)):
            fresh[target] = not isinstance(stmt.value, gast.Attribute) or \
                stmt.value.attr in ("shape", "ndim", "size", "dtype")
        else:
            return False
    return fresh.get(returned.id, False)


def _sharer(stmt, name, normal, ops, parsed):
    """``: <why>`` naming the statement ``stmt`` that may share the array
    (a reader before the update, or where the value comes from), or ``""``."""
    if stmt is None:
        if set(_carried_into({name}, _renames(normal))) & set(normal.params):
            return ": it is the caller's argument"
        return ""
    line = getattr(stmt, "lineno", None)
    text = (parsed.location(stmt).line or "").strip() if line else ""
    what = f"`{text}` (line {line})" if text else (f"line {line}" if line else "a statement")
    op = ops[id(stmt)]
    if op.kind is OpKind.USER:
        callee = getattr(op.primitive, "__name__", "the callee")
        return (f": the call {what} may keep or return it (pullback could not prove that "
                f"`{callee}` returns a new array and keeps nothing it is given)")
    if op.kind is OpKind.DYNAMIC:
        return f": {what} calls a function known only when it runs, which may keep it"
    if op.kind is OpKind.RULE:
        return f": {what} makes a view of it or is one"
    return f": {what} may hold it too"


def _check_numbers(normal, ops, parsed, guards):
    """Put ``number_to_update(y)`` (``pullback.runtime``) before each update
    in ``guards`` (stmt, old name, origin): it refuses an array when the
    update runs.  The check binds no name, so the analyses stand."""
    if not guards:
        return
    import types
    from .. import runtime
    name = normal.namer.fresh("number_to_update")
    parsed.closure[name] = types.CellType(runtime.number_to_update)
    for stmt, old, origin in guards:
        call = build.call(name, build.name(old), gast.Constant(value=origin.target.id, kind=None))
        check = gast.Expr(value=call)
        for node in (check, call, call.func, *call.args):
            gast.copy_location(node, origin)
        block = next(b for b in _blocks(normal.tree.body) if any(t is stmt for t in b))
        block.insert(next(i for i, t in enumerate(block) if t is stmt), check)
        ops[id(check)] = Op(OpKind.NONDIFF, label="number_to_update",
                            primitive=runtime.number_to_update, node=call)


def _tuple_valued(name, normal, chains, ops, seen):
    """Whether ``name`` certainly holds a tuple: every definition (through
    normalize's copies) is a tuple literal, ``.shape``, ``tuple(...)``, a
    tuple joined with ``+``, or another name that holds a tuple."""
    if name in seen:
        return True             # a loop's carried value: its other definitions decide
    seen.add(name)
    copies = copy_ids(normal)
    sources = _carried_into({name}, _renames(normal))
    if sources & set(normal.params):
        return False
    defs = [d for v in sources for d in chains.defs.get(v, ())
            if id(d) not in copies and not _placeholder(d)]
    if not defs:
        return False
    for d in defs:
        value = d.value if isinstance(d, gast.Assign) else None
        if isinstance(value, gast.Tuple) or (isinstance(value, gast.Attribute)
                                             and value.attr == "shape"):
            continue
        if isinstance(value, gast.Call) and ops[id(d)].primitive is tuple:
            continue
        if isinstance(value, gast.Name) and _tuple_valued(value.id, normal, chains, ops, seen):
            continue            # `b = a` of a tuple: `b += (v,)` rebinds b, a is unchanged
        if isinstance(value, gast.BinOp) and isinstance(value.op, gast.Add) and any(
                isinstance(side, gast.Name) and _tuple_valued(side.id, normal, chains, ops,
                                                              seen)
                for side in (value.left, value.right)):
            continue
        return False
    return True


def _symbol(op):
    return {gast.Add: "+", gast.Sub: "-", gast.Mult: "*", gast.Div: "/",
            gast.MatMult: "@", gast.Pow: "**"}.get(type(op), "op")
