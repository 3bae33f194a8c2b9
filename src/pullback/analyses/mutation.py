"""Mutation: which arrays the function writes into, and whether pullback can
follow it exactly.

A write (``y[i] = v``, ``y[idx] += v``, ``np.add.at(y, idx, v)``) changes
the object, so every name that shares it sees the change.  pullback follows
writes into arrays the function itself allocated and shares with nothing
else; the names a loop or a branch gives one variable (``y``, ``y_1``) are
one object.  Reading a slice of such an array (a view) is fine as long as
the view is used up before the next write.  Anything else is refused at
transform time, with the line, rather than differentiated wrongly::

>>> from pullback.testing import function_from_source, analyses
>>> f = function_from_source('''
... def f(x):
...     y = np.zeros(3)
...     y[0] = x
...     return np.sum(y)
... ''')
>>> normal, ops, chains, kinds, act = analyses(f)
>>> sorted(mutated_arrays(normal, ops))
['y']
"""
from __future__ import annotations

import gast
import numpy as np

from ..errors import UnsupportedSyntaxError
from .ops import all_statements

__all__ = ["mutated_arrays", "check", "VIEWS"]

ALLOCATING = {np.zeros, np.ones, np.empty, np.full, np.zeros_like, np.ones_like,
              np.empty_like, np.full_like, np.array, np.copy, np.eye, np.identity, np.arange,
              np.linspace, np.concatenate, np.stack, np.vstack, np.hstack, np.outer, np.dot,
              np.matmul, np.where, np.tile, np.repeat, "ndarray.copy", "ndarray.astype",
              "ndarray.flatten"}
VIEWS = {np.reshape, np.transpose, np.ravel, np.squeeze, np.expand_dims, np.broadcast_to,
         np.asarray, np.real, np.imag, np.swapaxes, np.moveaxis, np.atleast_1d,
         np.atleast_2d, "ndarray.T", "ndarray.reshape", "ndarray.transpose", "ndarray.ravel",
         "ndarray.squeeze", "ndarray.real", "ndarray.imag", "ndarray.swapaxes"}


def mutated_arrays(normal, ops):
    """Every name written into, with the names normalize made the same
    variable (loop-carried and merged copies)."""
    written = {op.mutates for op in ops.values() if op.kind == "setitem"}
    return _closure(written, _renames(normal)) if written else set()


def _renames(normal):
    pairs = []
    for s in all_statements(normal.tree.body):
        if id(s) in normal.renames:
            pairs.append((s.targets[0].id, s.value.id))
    return pairs


def _closure(names, pairs):
    group = set(names)
    changed = True
    while changed:
        changed = False
        for a, b in pairs:
            if (a in group) != (b in group):
                group |= {a, b}
                changed = True
    return group


def check(normal, ops, parsed):
    """Raise ``UnsupportedSyntaxError`` for a write pullback cannot follow."""
    group = mutated_arrays(normal, ops)
    if not group:
        return group
    renames = {id(s) for s in all_statements(normal.tree.body) if id(s) in normal.renames}
    for p in normal.params:
        if p in group:
            stmt = _first_write(normal, ops, group)
            raise UnsupportedSyntaxError(
                f"The function writes into its argument `{p}`; pullback never changes the "
                "caller's arrays.", parsed.location(stmt),
                f"Work on a copy: `{p} = {p}.copy()` at the top of the function.")
    for s in all_statements(normal.tree.body):
        op = ops.get(id(s))
        if op is None or id(s) in renames:
            continue
        targets = _targets(s)
        if any(t in group for t in targets) and not _allocates(op, s):
            raise UnsupportedSyntaxError(
                f"pullback can follow writes only into arrays the function creates itself, "
                f"and `{targets[0]}` may share memory with another array.",
                parsed.location(s), "Make a new array to write into (np.zeros(n), "
                "np.empty_like(x), or x.copy()).")
        if op.kind in ("setitem", "nondiff"):
            continue
        shared = [n for _, n in op.operands if n in group]
        if not shared:
            continue
        if op.kind in ("copy", "pack", "append", "user", "custom", "opaque", "unpack"):
            raise UnsupportedSyntaxError(
                f"`{shared[0]}` is written into, and here another name comes to share it, "
                "so pullback could not follow the writes.", parsed.location(s),
                f"Pass or store a copy: `{shared[0]}.copy()`.")
    _check_views(normal.tree.body, ops, group, parsed, normal.tree.body)
    return group


def _first_write(normal, ops, group):
    for s in all_statements(normal.tree.body):
        op = ops.get(id(s))
        if op is not None and op.kind == "setitem" and op.mutates in group:
            return s
    return normal.tree


def _targets(stmt):
    if isinstance(stmt, gast.Assign):
        t = stmt.targets[0]
        if isinstance(t, gast.Name):
            return [t.id]
        if isinstance(t, gast.Tuple):
            return [e.id for e in t.elts]
    if isinstance(stmt, gast.For):
        return [stmt.target.id]
    return []


def _allocates(op, stmt):
    if isinstance(stmt.value, (gast.BinOp, gast.UnaryOp)):
        return True
    if op.kind not in ("rule", "nondiff"):
        return False
    prim = op.primitive
    return isinstance(prim, np.ufunc) or prim in ALLOCATING


def _is_view(op, stmt):
    if op.kind != "rule":
        return False
    if op.primitive in VIEWS:
        return True
    import operator
    if op.primitive is operator.getitem:
        index = op.bound.get("b")
        items = index.elts if isinstance(index, gast.Tuple) else [index]
        return any(isinstance(i, gast.Slice) or (isinstance(i, gast.Constant)
                                                   and i.value in (None, Ellipsis))
                   for i in items)
    return False


def _check_views(stmts, ops, group, parsed, root):
    """A view of a written array must be used up before the next write."""
    for i, s in enumerate(stmts):
        for field in ("body", "orelse"):
            if getattr(s, field, None):
                _check_views(getattr(s, field), ops, group, parsed, root)
        op = ops.get(id(s))
        if op is None or not _is_view(op, s) or not any(n in group for n in op.names()):
            continue
        view = s.targets[0].id
        later = stmts[i + 1:]
        uses = [j for j, t in enumerate(later) if _reads(t, view)]
        last = uses[-1] if uses else -1
        inside = {id(t) for t in all_statements(later)}
        escapes = any(_reads(t, view) and id(t) not in inside for t in _simple(root))
        writes = [j for j, t in enumerate(later[:last + 1]) if _writes(t, ops, group)]
        if writes or escapes:
            raise UnsupportedSyntaxError(
                f"`{view}` is a view of an array the function writes into, and it is read "
                "after a write, where NumPy would show it the new values.",
                parsed.location(s), "Take a copy of the slice (`.copy()`) before writing, "
                "or read it again after the write.")


def _reads(stmt, name):
    return any(isinstance(n, gast.Name) and n.id == name and isinstance(n.ctx, gast.Load)
               for n in gast.walk(stmt))


def _writes(stmt, ops, group):
    for s in all_statements([stmt]):
        op = ops.get(id(s))
        if op is not None and op.kind == "setitem" and op.mutates in group:
            return True
    return False


def _simple(stmts):
    """Statements that are not blocks (so a read is attributed to one place)."""
    return [s for s in all_statements(stmts) if not isinstance(s, (gast.If, gast.For,
                                                                  gast.While))]
