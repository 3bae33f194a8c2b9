"""Def-use chains from beniget, behind a small adapter.

beniget wants a module and reports unbound names; this adapter hands it one,
silences it, and answers the questions the other passes ask in terms of
statements: which statement defines a name, and which statements read it.

>>> from pullback.testing import function_from_source, normal_form
>>> from pullback.backend.codegen import unparse
>>> f = function_from_source('''
... def f(x):
...     y = x * 2.0
...     return y + x
... ''')
>>> c = chains(normal_form(f).tree)
>>> [unparse(s) for s in c.defs["y"]]
['y = x * 2.0']
>>> [unparse(s) for s in c.readers("x")]
['y = x * 2.0', 'out = y + x']
"""
from __future__ import annotations


import beniget
import gast

from ..ir.walk import all_statements as _all_statements, own_nodes as _own_nodes

__all__ = ["Chains", "chains"]


class Chains:
    """Which statement defines each local name, and which statements read it."""

    def __init__(self, defs, users, statements):
        self.defs = defs      # name -> [statement, ...] (empty for a parameter)
        self.users = users    # name -> [statement, ...] in program order
        self.statements = statements

    def readers(self, name):
        return self.users.get(name, [])


class _QuietChains(beniget.DefUseChains):
    """beniget prints a warning for each unbound name (a global, a builtin);
    silenced here, not by redirecting the process's stdout, which another
    thread may be writing to."""

    def warn(self, msg, node):
        pass


def chains(fn: gast.FunctionDef) -> Chains:
    """Def-use chains of the normal-form function ``fn`` (a gast FunctionDef)."""
    module = gast.Module(body=[fn], type_ignores=[])
    du = _QuietChains()
    du.visit(module)
    owner = {}
    for stmt in _all_statements(fn.body):
        for node in _own_nodes(stmt):
            owner[id(node)] = stmt
    defs, users = {}, {}
    for d in du.locals[fn]:
        name = d.name()
        stmt = owner.get(id(d.node))
        if stmt is not None and stmt not in defs.setdefault(name, []):
            defs[name].append(stmt)
        readers = users.setdefault(name, [])
        for u in d.users():
            s = owner.get(id(u.node))
            if s is not None and s not in readers:
                readers.append(s)
    order = {id(s): i for i, s in enumerate(_all_statements(fn.body))}
    for readers in users.values():
        readers.sort(key=lambda s: order[id(s)])
    return Chains(defs, users, list(_all_statements(fn.body)))


