"""Indices into lists that grow: a read ``xs[-1]`` (or ``xs[i]`` with ``i``
negative, or a slice) of a list the function appends to later names the item
by the list's length *at the read*.  The adjoint runs when the list has
grown, so each such read is pinned to the position it names when it runs
(``runtime.control.list_index``: a non-negative index, or a slice with
non-negative bounds, for a list; anything else unchanged)::

>>> from pullback.testing import function_from_source, pinned
>>> print(pinned(function_from_source('''
... def f(a):
...     xs = [a]
...     xs.append(xs[-1] * 2.0)
...     return xs[-1]
... ''')))
def f(a):
    xs = [a]
    xs.append(xs[list_index(xs, -1)] * 2.0)
    return xs[list_index(xs, -1)]

Without it, ``xs[-1]``'s cotangent went to the list's last item at the end
(the one appended after the read), and the gradient of ``a`` was zero.
"""
from __future__ import annotations

import gast

from ..ir.build import closure_name, name as _name
from ..rules.registry import nondifferentiable
from ..runtime import control
from .parse import Parsed

__all__ = ["pin_list_indices"]

_GROW = {"append", "extend", "insert", "pop", "remove", "clear", "reverse", "sort"}


def pin_list_indices(fn: gast.FunctionDef, namer, parsed: Parsed) -> None:
    """Pin the subscript reads of every local name the function changes by a
    list method (``xs.append(...)``, ``xs.pop()``...); ``fn`` changes in place."""
    grown = {n.func.value.id for n in gast.walk(fn)
             if isinstance(n, gast.Call) and isinstance(n.func, gast.Attribute)
             and n.func.attr in _GROW and isinstance(n.func.value, gast.Name)}
    if grown:
        _Pin(grown, lambda: closure_name(namer, parsed, "list_index",
                                         control.list_index)).visit(fn)


class _Pin(gast.NodeTransformer):
    def __init__(self, grown, helper):
        self.grown, self.helper = grown, helper

    def visit_Subscript(self, node):
        self.generic_visit(node)
        if isinstance(node.ctx, gast.Load) and isinstance(node.value, gast.Name) \
                and node.value.id in self.grown and not _non_negative(node.slice):
            call = gast.Call(func=_name(self.helper()), args=[_name(node.value.id),
                                                              _as_value(node.slice)],
                             keywords=[])
            node.slice = gast.copy_location(call, node.slice)
        return node


def _non_negative(index):
    """An index known not to count from the end: a constant ``>= 0``."""
    return isinstance(index, gast.Constant) and isinstance(index.value, int) \
        and index.value >= 0


def _as_value(index):
    if isinstance(index, gast.Slice):
        return gast.Call(func=_name("slice"), args=[
            p if p is not None else gast.Constant(None, None)
            for p in (index.lower, index.upper, index.step)], keywords=[])
    return index


nondifferentiable(control.list_index)
