"""Propagate copies: in the adjoint, ``a = b`` between plain names is
replaced by ``b`` at every later read until either is reassigned, and the
copy is dropped when nothing reads ``a`` any more.  Pass-through rules (``+``
hands its gradient to both operands, a phi copy hands it on) leave such
copies behind; in a loop body each one costs a store and a load per
iteration.  Only straight-line runs are rewritten: the alias map is cleared
at every ``if`` and loop, so nothing crosses a branch or an iteration.

>>> import gast
>>> from pullback.backend.codegen import unparse
>>> fn = gast.parse('''
... def f_adjoint(out_bar):
...     s_bar = out_bar
...     a_bar = s_bar
...     b_bar = s_bar * 2.0
...     a_bar = a_bar + b_bar
...     return a_bar
... ''').body[0]
>>> print(unparse(propagate_copies(fn)))
def f_adjoint(out_bar):
    b_bar = out_bar * 2.0
    a_bar = out_bar + b_bar
    return a_bar
"""
from __future__ import annotations

import gast

__all__ = ["propagate_copies"]


def propagate_copies(fn: gast.FunctionDef) -> gast.FunctionDef:
    """Rewrite the adjoint ``fn`` (a gast FunctionDef) in place; return it."""
    fn.body = _block(fn.body)
    loads = {}
    for node in gast.walk(fn):
        if isinstance(node, gast.Name) and not isinstance(node.ctx, gast.Store):
            loads[node.id] = loads.get(node.id, 0) + 1
    fn.body = _drop_dead_copies(fn.body, loads)
    return fn


def _block(stmts):
    alias = {}      # a -> b: `a = b` holds here
    copies = {}     # b -> the names aliased to b
    for stmt in stmts:
        if isinstance(stmt, (gast.If, gast.For, gast.While)):
            header = stmt.test if not isinstance(stmt, gast.For) else stmt.iter
            _substitute(header, alias)
            alias.clear()
            copies.clear()
            stmt.body = _block(stmt.body)
            stmt.orelse = _block(stmt.orelse)
            continue
        if _is_copy(stmt) and stmt.targets[0].id == alias.get(stmt.value.id, stmt.value.id):
            stmt.value.id = stmt.targets[0].id     # `a = a`: nothing changes; dropped below
            continue
        if isinstance(stmt, gast.Assign):
            _substitute(stmt.value, alias)
            for target in stmt.targets:
                _substitute_target(target, alias)
        elif isinstance(stmt, gast.AugAssign):
            _substitute(stmt.value, alias)
            _substitute_target(stmt.target, alias)
        else:
            _substitute(stmt, alias)
        for name in _stored(stmt):
            if name in alias:
                copies[alias.pop(name)].discard(name)
            for key in copies.pop(name, ()):
                del alias[key]
        if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 \
                and isinstance(stmt.targets[0], gast.Name) and isinstance(stmt.value, gast.Name) \
                and stmt.targets[0].id != stmt.value.id:
            alias[stmt.targets[0].id] = stmt.value.id
            copies.setdefault(stmt.value.id, set()).add(stmt.targets[0].id)
    return stmts


def _substitute(node, alias):
    if not alias:
        return
    for n in gast.walk(node):
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load) and n.id in alias:
            n.id = alias[n.id]


def _substitute_target(target, alias):
    """In ``a[i] += g`` the container is read: substitute it, not the name stored."""
    if isinstance(target, (gast.Subscript, gast.Attribute)):
        _substitute(target, alias)


def _stored(stmt):
    targets = stmt.targets if isinstance(stmt, gast.Assign) else (
        [stmt.target] if isinstance(stmt, gast.AugAssign) else [])
    for t in targets:
        for n in gast.walk(t):
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
                yield n.id


def _drop_dead_copies(stmts, loads):
    dead = _dead_copies(stmts, loads)
    out = []
    for i, stmt in enumerate(stmts):
        if isinstance(stmt, (gast.If, gast.For, gast.While)):
            stmt.body = _drop_dead_copies(stmt.body, loads) or [gast.Pass()]
            stmt.orelse = _drop_dead_copies(stmt.orelse, loads)
        elif i in dead:
            continue
        out.append(stmt)
    return out


def _is_copy(stmt):
    return isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 \
        and isinstance(stmt.targets[0], gast.Name) and isinstance(stmt.value, gast.Name)


def _dead_copies(stmts, loads):
    """The positions of the copies in ``stmts`` whose value is never read: the
    name is assigned again before any read in the same run of statements
    (the run ends at an ``if`` or a loop), or is read nowhere at all; and the
    copies ``a = a``.  One backward pass: ``first`` holds, for the rest of
    the run after the statement at hand, whether each name's first use there
    is a read or a store."""
    dead = set()
    first = {}          # name -> True: stored before any read; False: read first
    for i in range(len(stmts) - 1, -1, -1):
        stmt = stmts[i]
        if isinstance(stmt, (gast.If, gast.For, gast.While)):
            first = {}
            continue
        if _is_copy(stmt):
            name = stmt.targets[0].id
            if name == stmt.value.id or first.get(name, loads.get(name, 0) == 0):
                dead.add(i)
        for name in _stored(stmt):
            first[name] = True
        for n in gast.walk(stmt):
            if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Store):
                first[n.id] = False
    return dead
