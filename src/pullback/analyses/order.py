"""Order: which statements of a normal-form function can run before which.

Normal form has no jumps: a statement runs after those before it in the
code, except where a loop brings control back, and the two branches of an
``if`` never both run (unless a loop holds the ``if``).  The mutation checks
ask these questions to tell a write that can reach a view or an alias from
one that cannot::

    b[0] = v          # w: always before s
    for e in b:       # s (the loop's view of b's rows)
        t = e * 2.0
    r = e * t         # t: no write between s and t, so e shows no change

Before, a normal-form function; after, the answers for some of its statements:

>>> from pullback.testing import function_from_source, normal_form
>>> normal = normal_form(function_from_source('''
... def f(x, c):
...     a = x * 2.0
...     if c:
...         b = a + 1.0
...     else:
...         b = a - 1.0
...     for i in range(3):
...         a = a * b
...     return a
... '''))
>>> a, branch, rng, carry, loop, ret = normal.tree.body
>>> then, other = branch.body[0], branch.orelse[0]        # b = a + 1.0 / b = a - 1.0
>>> update, back = loop.body                               # a_2 = a_1 * b / a_1 = a_2
>>> runs_only_after(normal, a, then), exclusive(normal.tree.body, then, other)
(True, True)
>>> runs_only_after(normal, update, back), runs_only_after(normal, back, update)
(False, False)
>>> may_run_between(normal.tree.body, back, update, update)   # the loop comes back
True
"""
from __future__ import annotations

import gast

from .ops import all_statements

__all__ = ["runs_only_after", "only_after", "exclusive", "may_run_between"]


def runs_only_after(normal, first, later):
    """Whether ``later`` can run only once ``first`` has run (or not at all):
    it comes after ``first`` in the code and no loop holds both (normal form
    has no other way back; branches are taken one at a time)."""
    return only_after(normal.tree.body, first, later)


def only_after(root, first, later):
    order = {id(s): i for i, s in enumerate(all_statements(root))}
    if order[id(later)] <= order[id(first)]:
        return False
    return not any(id(first) in inside and id(later) in inside for inside in _loops(root))


def _loops(root):
    """The statements inside each loop (as sets of ids)."""
    return [{id(s) for s in all_statements(loop.body + loop.orelse)}
            for loop in all_statements(root) if isinstance(loop, (gast.For, gast.While))]


def exclusive(root, a, b):
    """Whether ``a`` and ``b`` lie in the two branches of one ``if`` that no
    loop holds: they never both run."""
    loops = _loops(root)
    for s in all_statements(root):
        if isinstance(s, gast.If):
            then = {id(t) for t in all_statements(s.body)}
            other = {id(t) for t in all_statements(s.orelse)}
            if ((id(a) in then and id(b) in other) or (id(a) in other and id(b) in then)) \
                    and not any(id(s) in inside for inside in loops):
                return True
    return False


def may_run_between(root, w, first, last):
    """Whether ``w`` can run after ``first`` and before ``last``."""
    return not (exclusive(root, w, first) or exclusive(root, w, last)
                or only_after(root, w, first) or only_after(root, last, w))
