"""Small constructors for the gast nodes the compiler generates."""
from __future__ import annotations

import gast

__all__ = ["name", "call", "assign", "all_statements"]


def name(id_, store=False):
    return gast.Name(id=id_, ctx=gast.Store() if store else gast.Load(), annotation=None,
                     type_comment=None)


def call(func, *args):
    return gast.Call(func=name(func), args=list(args), keywords=[])


def assign(target, value, lineno=None):
    """``target = value``; ``target`` is a name or a target node."""
    stmt = gast.Assign(targets=[name(target, True) if isinstance(target, str) else target],
                       value=value, type_comment=None)
    if lineno is not None:
        stmt.lineno = lineno
    return stmt


def all_statements(stmts):
    """Every statement of a block, nested blocks included, in program order."""
    for s in stmts:
        yield s
        for field in ("body", "orelse"):
            yield from all_statements(getattr(s, field, None) or [])
