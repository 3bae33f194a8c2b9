"""Iterator names: a name bound once to an ``itertools`` iterator and read
once, as the sequence of a ``for`` loop in the same loop body as its binding,
is bound to the iterator's items read into a list (``runtime.index_items``:
integers, strings, None; a float, an array or an object is refused naming the
binding's line), as a loop over the call itself is (``frontend.desugar``)::

    p = itertools.combinations(range(n), 2)      p = index_items(itertools.combinations(range(n), 2))
    for i, j in p:                        ->     for i, j in p:
        s = s + x[i] * x[j]                          s = s + x[i] * x[j]

An iterator of an array's rows or a list's values (``pairwise(x)``) is bound
instead to the list of its items, a comprehension that ``itertools_rows``
follows, where only bindings of constants (``s = 0.0``) stand between it and
its loop (``followed_names(..., adjacent=True)``: nothing there can change
what it reads, so reading the items when it is bound changes nothing).

Where the name is read again, bound again or bound in another loop than the
one that reads it (an outer loop's second pass would find the iterator spent),
it is left as it is, and the loop is refused when it runs
(``runtime.indexable``).

>>> import gast, itertools
>>> from pullback.backend.codegen import unparse
>>> tree = gast.parse('''
... def f(x):
...     p = itertools.pairwise(range(3))
...     for i, j in p:
...         x = x + i
...     return x
... ''').body[0]
>>> follow_iterator_names(tree, lambda call: True, lambda call: gast.Call(
...     func=gast.Name("index_items", gast.Load(), None, None), args=[call], keywords=[]))
>>> print(unparse(tree).splitlines()[1])
    p = index_items(itertools.pairwise(range(3)))
"""
from __future__ import annotations

import collections

import gast

__all__ = ["follow_iterator_names", "followed_names"]


def follow_iterator_names(fn, is_iterator_call, wrap):
    """Rewrite ``fn`` (a FunctionDef) in place: the binding of each name as
    above gets ``wrap(call)`` for its value."""
    for stmt in followed_names(fn, is_iterator_call):
        stmt.value = gast.copy_location(wrap(stmt.value), stmt.value)


def followed_names(fn, is_iterator_call, adjacent=False):
    """The statements binding a name as above (``is_iterator_call`` of their
    value); with ``adjacent``, only those whose loop comes right after them in
    the same block, or after statements that bind names to constants alone
    (``s = 0.0``): nothing between can change what the iterator reads, so its
    items may be read when it is bound."""
    stores, loads = collections.Counter(), collections.Counter()
    for n in gast.walk(fn):
        if isinstance(n, gast.Name):
            (loads if isinstance(n.ctx, gast.Load) else stores)[n.id] += 1
    bound, looped = {}, {}      # name -> (its Assign, the loop around it, block); name -> ...

    def visit(stmts, loop):
        for stmt in stmts:
            if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 \
                    and isinstance(stmt.targets[0], gast.Name) \
                    and isinstance(stmt.value, gast.Call) and is_iterator_call(stmt.value):
                bound[stmt.targets[0].id] = (stmt, loop, stmts)
            if isinstance(stmt, gast.For) and isinstance(stmt.iter, gast.Name):
                looped[stmt.iter.id] = (loop, stmt, stmts)
            if isinstance(stmt, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
                continue
            inner = stmt if isinstance(stmt, (gast.For, gast.While)) else loop
            for field in ("body", "orelse", "finalbody"):
                visit(getattr(stmt, field, None) or [], inner)
            for handler in getattr(stmt, "handlers", None) or []:
                visit(handler.body, inner)

    visit(fn.body, None)
    out = []
    for name, (stmt, loop, block) in bound.items():
        if stores[name] == 1 and loads[name] == 1 and name in looped \
                and looped[name][0] is loop \
                and (not adjacent or _adjacent(stmt, looped[name][1], block, looped[name][2])):
            out.append(stmt)
    return out


def _adjacent(stmt, loop, block, loop_block):
    if block is not loop_block:
        return False
    ids = [id(s) for s in block]
    first, last = ids.index(id(stmt)), ids.index(id(loop))
    return first < last and all(isinstance(s, gast.Assign) and all(isinstance(t, gast.Name) for t in s.targets)
               and all(isinstance(n, (gast.Constant, gast.UnaryOp, gast.unaryop, gast.Name,
                                      gast.expr_context)) for n in gast.walk(s.value))
               for s in block[first + 1:last])
