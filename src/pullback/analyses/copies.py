"""Copies: which names are one variable, and where statements read and
write them.

Normalize gives a variable that a loop carries or a branch merges one
name per binding, joined by copies (``y_1 = y``): those names hold one
object, so a write into one is a write into all (``versions``,
``_carried_into``).  The statement helpers here (``_reads``, ``_writes``,
``_simple``, ``_blocks``, ``_targets``) are what ``mutation``, ``views``
and ``updates`` ask of the normal form::

>>> from pullback.testing import function_from_source, analyses
>>> f = function_from_source('''
... def f(x, n):
...     y = x * 1.0
...     for i in range(n):
...         y = y * 2.0
...     return y
... ''')
>>> normal, ops, chains, kinds, act = analyses(f)
>>> sorted(versions(normal, "y"))
['y', 'y_1', 'y_2']
"""
from __future__ import annotations

import gast

from ..ir.walk import own_nodes
from .ops import OpKind, all_statements


def _carried_into(names, pairs):
    """``names`` and every name a chain of copies (``pairs``: target,
    source) carries into one of them."""
    return _along_copies(names, pairs, forward=False)


def _along_copies(names, pairs, forward):
    """``names`` closed under the copies ``pairs`` (target, source): their
    targets (``forward``) or their sources."""
    group = set(names)
    changed = bool(group)
    while changed:
        changed = False
        for target, source in pairs:
            old, new = (source, target) if forward else (target, source)
            if old in group and new not in group:
                group.add(new)
                changed = True
    return group


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


def versions(normal, name):
    """``name`` and the names normalize's copies join it to (one variable)."""
    return _closure({name}, _renames(normal))


def copy_ids(normal):
    """The ids of the copies normalize added where loops and branches join."""
    return {id(s) for s in all_statements(normal.tree.body) if id(s) in normal.renames}


def _blocks(stmts):
    yield stmts
    for s in stmts:
        for field in ("body", "orelse"):
            if getattr(s, field, None):
                yield from _blocks(getattr(s, field))


def _hashable_in(prim, group):
    try:
        return prim in group
    except TypeError:
        return False


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


def _copies_of(view, pairs):
    """``view`` and the names normalize's merge copies give it."""
    return _along_copies({view}, pairs, forward=True)


def _reads(stmt, names, copies):
    """Whether ``stmt`` (or a statement inside it) reads one of ``names``,
    other than in normalize's merge copies (``copies``: their ids)."""
    for s in all_statements([stmt]):
        if id(s) in copies:
            continue
        if any(isinstance(n, gast.Name) and n.id in names and isinstance(n.ctx, gast.Load)
               for n in own_nodes(s)):
            return True
    return False


def _writes(stmt, ops, group):
    for s in all_statements([stmt]):
        op = ops.get(id(s))
        if op is not None and op.kind is OpKind.SETITEM and op.mutates in group:
            return True
    return False


def _simple(stmts):
    """Statements that are not blocks (so a read is attributed to one place)."""
    return [s for s in all_statements(stmts) if not isinstance(s, (gast.If, gast.For,
                                                                  gast.While))]


def _placeholder(stmt):
    """`y = None`, which normalize puts before a loop that defines y."""
    return isinstance(stmt, gast.Assign) and isinstance(stmt.value, gast.Constant) \
        and stmt.value.value is None
