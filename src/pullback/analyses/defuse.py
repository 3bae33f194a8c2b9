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
    thread may be writing to.

    beniget visits a loop's body twice (the second time with the definitions
    the first leaves, for the uses an iteration's definitions reach in the
    next), and so a nest of d loops 2**d times.  Inside an enclosing loop's
    second visit, a loop's body is visited once: its own second visit adds
    only uses reached through its back edge, by definitions made in its body
    (a definition from outside that reaches the end of the body reached
    every use after it from the entry already), and those were linked when
    the enclosing loops made their first visit."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._visits = {}          # id(loop body) -> visits so far, while in the loop
        self._again = 0            # inside a loop body's second visit

    def warn(self, msg, node):
        pass

    def visit_For(self, node):
        return self._loop(node, super().visit_For)

    def visit_While(self, node):
        return self._loop(node, super().visit_While)

    def _loop(self, node, visit):
        key = id(node.body)
        outer = self._visits.get(key)
        self._visits[key] = 0
        try:
            return visit(node)
        finally:
            if outer is None:
                del self._visits[key]
            else:
                self._visits[key] = outer

    def process_body(self, stmts):
        key = id(stmts)
        if key not in self._visits:
            return super().process_body(stmts)
        self._visits[key] += 1
        if self._visits[key] != 2:
            return super().process_body(stmts)
        if self._again:
            return None
        self._again += 1
        try:
            return super().process_body(stmts)
        finally:
            self._again -= 1


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


