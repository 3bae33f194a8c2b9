"""Small constructors for the gast nodes the compiler generates.

>>> import gast
>>> from pullback.backend.codegen import unparse
>>> print(unparse(assign("y", call("f", name("x"), gast.Constant(2.0, None)))))
y = f(x, 2.0)
"""
from __future__ import annotations

import gast

from .walk import all_statements  # noqa: F401  (re-exported)

__all__ = ["name", "call", "assign", "assign_at", "assign_located", "located", "item", "length",
           "range_of", "sum_of", "all_statements"]


def name(id_, store=False):
    """The name ``id_``, loaded, or stored to if ``store`` is true; ``store``
    may also be the context node itself (``gast.Store()``)."""
    ctx = store if isinstance(store, gast.expr_context) else \
        gast.Store() if store else gast.Load()
    return gast.Name(id=id_, ctx=ctx, annotation=None, type_comment=None)


def call(func, *args):
    return gast.Call(func=name(func), args=list(args), keywords=[])


def assign(target, value, lineno=None):
    """``target = value``; ``target`` is a name or a target node."""
    stmt = gast.Assign(targets=[name(target, True) if isinstance(target, str) else target],
                       value=value, type_comment=None)
    if lineno is not None:
        stmt.lineno = lineno
    return stmt


def assign_at(target, value, origin):
    """``target = value`` at ``origin``'s location; ``target`` (a node) is
    made a store target."""
    if isinstance(target, gast.AST) and hasattr(target, "ctx"):
        for n in gast.walk(target):
            if hasattr(n, "ctx") and isinstance(n, (gast.Name, gast.Tuple, gast.List)):
                n.ctx = gast.Store()
    stmt = gast.Assign(targets=[target], value=value, type_comment=None)
    return gast.copy_location(stmt, origin)


def assign_located(target, value, where):
    """``target = value`` (``target`` a node), located as ``located`` does."""
    return located(gast.Assign(targets=[target], value=value, type_comment=None), where)


def located(stmt, where):
    """``stmt``, each of its nodes without a line number given ``where``'s location."""
    for node in gast.walk(stmt):
        if not hasattr(node, "lineno") or getattr(node, "lineno", None) is None:
            gast.copy_location(node, where)
    return stmt


def item(seq, index):
    """``seq[index]`` of two names."""
    return gast.Subscript(value=name(seq), slice=name(index), ctx=gast.Load())


def length(seq):
    """``len(seq)`` of a name."""
    return gast.Call(func=name("len"), args=[name(seq)], keywords=[])


def sum_of(terms):
    """``a + b + c`` of the expressions ``terms``; None for none."""
    if not terms:
        return None
    total = terms[0]
    for term in terms[1:]:
        total = gast.BinOp(left=total, op=gast.Add(), right=term)
    return total


def range_of(*args):
    """``range(*args)``."""
    return gast.Call(func=name("range"), args=list(args), keywords=[])


def closure_name(namer, parsed, base, obj):
    """The closure variable through which generated code reaches ``obj``:
    the one already holding it, or a fresh name (from ``base``) bound to it."""
    import types
    for k, cell in parsed.closure.items():
        try:
            if cell.cell_contents is obj:
                return k
        except ValueError:
            continue
    name = namer.fresh(base)
    parsed.closure[name] = types.CellType(obj)
    return name
