"""Where each statement of a function stands, and which statements bind
each name: what ``frontend.closures`` needs to decide whether a nested
function used as a value agrees with Python's late binding (a captured
variable assigned again after the value is made, or in a loop around it).

Statements are numbered in source order outside nested functions; a loop's
target is assigned by the loop, inside it::

>>> import gast
>>> tree = gast.parse('''
... def f(x):
...     y = x
...     for i in range(3):
...         y = y + i
...     g = lambda z: z
...     return y
... ''').body[0]
>>> order, stores, binds = statement_order(tree)
>>> [(at, len(loops)) for at, loops in order.values()]
[(0, 0), (1, 0), (2, 1), (3, 0), (4, 0)]
>>> [(at, len(loops), line) for at, loops, line in stores["y"]]
[(0, 0, 3), (2, 1, 5)]
>>> [lam for _, _, lam in binds["g"]], [len(loops) for _, loops, _ in stores["i"]]
([True], [1])
"""
from __future__ import annotations

import gast

__all__ = ["statement_order", "walk_outer"]


def statement_order(fn):
    """For the statements of ``fn`` outside its nested functions: id ->
    (position in source order, the loops around it); for each name the
    (position, loops, line) of the statements that assign it (a loop's
    target is assigned by the loop), and the (block, line) of each binding,
    ``def`` included."""
    order, stores, binds = {}, {}, {}

    def visit(stmts, loops):
        for stmt in stmts:
            if isinstance(stmt, (gast.FunctionDef, gast.ClassDef)):
                binds.setdefault(stmt.name, []).append((id(stmts), stmt.lineno, True))
                continue
            here = (len(order), stmt.lineno)
            order[id(stmt)] = (here[0], loops)
            inner = loops + (id(stmt),) if isinstance(stmt, (gast.For, gast.While)) else loops
            heads = [stmt.target] if isinstance(stmt, gast.For) else \
                [] if isinstance(stmt, (gast.If, gast.While, gast.Try)) else [stmt]
            for head in heads:
                for n in walk_outer(head):
                    if isinstance(n, gast.Name) and isinstance(n.ctx, (gast.Store, gast.Del)):
                        stores.setdefault(n.id, []).append(
                            (here[0], inner if isinstance(stmt, gast.For) else loops, here[1]))
                        binds.setdefault(n.id, []).append((id(stmts), here[1], isinstance(
                            stmt, gast.Assign) and isinstance(stmt.value, gast.Lambda)))
            for field in ("body", "orelse", "finalbody"):
                visit(getattr(stmt, field, None) or [], inner)
            for h in getattr(stmt, "handlers", None) or []:
                if h.name is not None and isinstance(h.name, gast.Name):
                    stores.setdefault(h.name.id, []).append((here[0], loops, h.lineno))
                    binds.setdefault(h.name.id, []).append((id(h.body), h.lineno, False))
                visit(h.body, inner)
            if isinstance(stmt, (gast.If, gast.While)):
                for n in walk_outer(stmt.test):     # a := in a test
                    if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
                        stores.setdefault(n.id, []).append((here[0], inner, here[1]))
                        binds.setdefault(n.id, []).append((id(stmts), here[1], False))
    visit(fn.body, ())
    return order, stores, binds


def walk_outer(node):
    """``gast.walk`` that does not enter nested functions, lambdas or comprehensions."""
    work = [node]
    while work:
        n = work.pop()
        yield n
        if n is not node and isinstance(n, (gast.FunctionDef, gast.Lambda, gast.ListComp,
                                            gast.SetComp, gast.DictComp, gast.GeneratorExp)):
            continue
        work.extend(gast.iter_child_nodes(n))
