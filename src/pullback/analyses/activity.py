"""Activity: the names whose gradient the adjoint must compute.

A name is *varied* if it depends differentiably on an input being
differentiated, *useful* if the output depends differentiably on it, and
*active* if both.  Only active names get a ``_bar``; a statement none of
whose operands is active leaves no trace in the adjoint.

>>> from pullback.testing import function_from_source, analyses
>>> f = function_from_source('''
... def f(x, n):
...     k = n * 2
...     y = x * k
...     s = np.shape(y)
...     return np.sin(y)
... ''')
>>> *_, act = analyses(f, wrt=["x"])
>>> sorted(act.active)        # k is not varied, s not useful
['out', 'x', 'y']
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable

import gast

from .defuse import Chains

__all__ = ["Activity", "analyze"]


@dataclasses.dataclass(frozen=True)
class Activity:
    varied: frozenset
    useful: frozenset

    @property
    def active(self):
        return self.varied & self.useful


def analyze(fn: gast.FunctionDef, chains: Chains, wrt: Iterable[str], returned: gast.expr,
            differentiable_operands: Callable[[gast.stmt], set[str]],
            mutated: Callable[[gast.stmt], str | None] = lambda s: None) -> Activity:
    """Which names are varied, useful and active.

    ``mutated(stmt)`` names the list a statement appends to (which it
    defines as much as an assignment would).

    ``differentiable_operands(stmt)`` gives the names the statement's targets
    depend on differentiably (empty for a comparison, ``x.shape``, ...).
    """
    targets = {id(s): _targets(s) + ([mutated(s)] if mutated(s) else [])
               for s in chains.statements}
    mutators = {}
    for s in chains.statements:
        if mutated(s):
            mutators.setdefault(mutated(s), []).append(s)
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
        for stmt in list(chains.defs.get(name, ())) + mutators.get(name, []):
            work.extend(n for n in differentiable_operands(stmt) if n not in useful)
    return Activity(frozenset(varied), frozenset(useful))


def _targets(stmt):
    if isinstance(stmt, gast.For):
        return []     # loop targets are indices or elements read by an Op; not varied
    if isinstance(stmt, gast.Assign):
        t = stmt.targets[0]
        if isinstance(t, gast.Subscript):
            return []       # a write: `mutated` names the array
        return [t.id] if isinstance(t, gast.Name) else [e.id for e in t.elts]
    return []
