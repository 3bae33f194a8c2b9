"""Def-use chains from beniget, behind a small adapter.

beniget wants a module and reports unbound names; this adapter hands it one,
silences it, and answers the questions the other passes ask in terms of
statements: which statement defines a name, and which statements read it.

>>> from pullback.testing import function_from_source, normal_form
>>> from pullback.codegen import unparse
>>> f = function_from_source('''
... def f(x):
...     y = x * 2.0
...     return y + x
... ''')
>>> c = chains(normal_form(f).tree)
>>> unparse(c.defs["y"])
'y = x * 2.0'
>>> [unparse(s) for s in c.readers("x")]
['y = x * 2.0', 'out = y + x']
"""
from __future__ import annotations

import contextlib
import io

import beniget
import gast

__all__ = ["Chains", "chains"]


class Chains:
    """Which statement defines each local name, and which statements read it."""

    def __init__(self, defs, users):
        self.defs = defs      # name -> statement (None for a parameter)
        self.users = users    # name -> [statement, ...] in program order

    def readers(self, name):
        return self.users.get(name, [])


def chains(fn):
    """Def-use chains of the normal-form function ``fn`` (a gast FunctionDef)."""
    module = gast.Module(body=[fn], type_ignores=[])
    du = beniget.DefUseChains()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        du.visit(module)
    owner = {}
    for stmt in fn.body:
        for node in gast.walk(stmt):
            owner[id(node)] = stmt
    defs, users = {}, {}
    for d in du.locals[fn]:
        name = d.name()
        stmt = owner.get(id(d.node))
        defs.setdefault(name, stmt)
        readers = users.setdefault(name, [])
        for u in d.users():
            s = owner.get(id(u.node))
            if s is not None and s not in readers:
                readers.append(s)
    order = {id(s): i for i, s in enumerate(fn.body)}
    for readers in users.values():
        readers.sort(key=lambda s: order[id(s)])
    return Chains(defs, users)
