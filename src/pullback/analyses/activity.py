"""Activity: the names whose gradient the adjoint must compute.

A name is *varied* if it depends differentiably on an input being
differentiated, *useful* if the output depends differentiably on it, and
*active* if both.  Only active names get a ``_bar``; a statement none of
whose operands is active leaves no trace in the adjoint::

    def f(x, n):              varied: x, y, z      useful: z, y, x, k
        k = n * 2             active: x, y, z      (k is not varied: no k_bar)
        y = x * k
        z = np.sin(y)
        return z
"""
from __future__ import annotations

import gast

__all__ = ["active_names"]


def active_names(fn, chains, wrt, returned, differentiable_operands):
    """The set of active names.

    ``differentiable_operands(stmt)`` gives the names the statement's targets
    depend on differentiably (empty for a comparison, ``x.shape``, ...).
    """
    targets = {id(s): _targets(s) for s in fn.body}
    varied = set()
    work = [w for w in wrt]
    while work:
        name = work.pop()
        if name in varied:
            continue
        varied.add(name)
        for stmt in chains.readers(name):
            if name in differentiable_operands(stmt):
                work.extend(t for t in targets[id(stmt)] if t not in varied)
    useful = set()
    work = [returned.id] if isinstance(returned, gast.Name) else []
    while work:
        name = work.pop()
        if name in useful:
            continue
        useful.add(name)
        stmt = chains.defs.get(name)
        if stmt is not None:
            work.extend(n for n in differentiable_operands(stmt) if n not in useful)
    return varied & useful


def _targets(stmt):
    if isinstance(stmt, gast.Assign):
        t = stmt.targets[0]
        return [t.id] if isinstance(t, gast.Name) else [e.id for e in t.elts]
    return []
