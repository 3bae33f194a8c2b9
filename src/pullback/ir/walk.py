"""Walking normal-form statements: the one copy of each traversal the passes share.

>>> import gast
>>> tree = gast.parse('''
... for i in range(n):
...     if c:
...         y = x
... z = y
... ''')
>>> [type(s).__name__ for s in all_statements(tree.body)]
['For', 'If', 'Assign', 'Assign']
>>> sorted(n.id for n in own_nodes(tree.body[0]) if isinstance(n, gast.Name))
['i', 'n', 'range']
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator

import gast

__all__ = ["all_statements", "own_nodes", "scope_nodes", "statement_lists", "replace_node"]


def all_statements(stmts: Iterable[gast.stmt]) -> Iterator[gast.stmt]:
    """Every statement of a block, nested blocks included, in program order."""
    for s in stmts:
        yield s
        for field in ("body", "orelse"):
            yield from all_statements(getattr(s, field, None) or [])


def statement_lists(stmts):
    """``stmts`` and every statement list nested in it (loops' and branches'
    bodies and ``else`` parts), outermost first."""
    yield stmts
    for s in stmts:
        for field in ("body", "orelse"):
            inner = getattr(s, field, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], gast.stmt):
                yield from statement_lists(inner)


def own_nodes(stmt: gast.stmt) -> list[gast.AST]:
    """The nodes of a statement, not those of its nested blocks: an ``if``'s
    or ``while``'s test, a ``for``'s target and iterable, or all of any other
    statement."""
    if isinstance(stmt, (gast.If, gast.While)):
        return list(gast.walk(stmt.test))
    if isinstance(stmt, gast.For):
        return list(gast.walk(stmt.target)) + list(gast.walk(stmt.iter))
    return list(gast.walk(stmt))


_NESTED = (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ClassDef)


def scope_nodes(node):
    """``node`` and what it holds, in source order, not descending into nested
    functions, lambdas or classes (which are yielded themselves)."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        if n is not node and isinstance(n, _NESTED):
            continue
        stack.extend(reversed(list(gast.iter_child_nodes(n))))


def replace_node(root, old, new):
    """Put ``new`` wherever a node under ``root`` holds the node ``old``."""
    for node in gast.walk(root):
        for field, value in gast.iter_fields(node):
            if value is old:
                setattr(node, field, new)
            elif isinstance(value, list):
                for i, v in enumerate(value):
                    if v is old:
                        value[i] = new


def unnested_nodes(stmts):
    """The nodes of ``stmts``, nested functions, lambdas and classes left out."""
    work = list(stmts)
    while work:
        node = work.pop()
        yield node
        for child in gast.iter_child_nodes(node):
            if not isinstance(child, (gast.FunctionDef, gast.Lambda, gast.ClassDef)):
                work.append(child)
