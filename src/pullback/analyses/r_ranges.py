"""The items of ``np.r_[...]`` with each integer slice written as a range.

``np.r_[x, 1:4]`` joins ``x`` and ``np.arange(1, 4)``: the resolver hands
the rule a ``range(1, 4, 1)`` call in the slice's place, so that the rule
sees its length.  String directives, complex steps (``np.linspace``) and
float bounds are refused, naming what to write.

>>> from pullback.testing import function_from_source, analyses
>>> f = function_from_source('''
... def f(x):
...     y = np.r_[x, 2:5]
...     return y
... ''')
>>> normal, ops, *_ = analyses(f)
>>> from pullback.backend.codegen import unparse
>>> [unparse(a).strip() for a in ops[id(normal.tree.body[0])].bound["items"]]
['x', 'range(2, 5, 1)']
"""
from __future__ import annotations

import gast

from ..errors import UnsupportedSyntaxError
from .callable_facts import static_value

__all__ = ["r_ranges"]


def r_ranges(resolver, node, items):
    """The items of ``np.r_[...]`` with each slice of integer bounds (``1:n``,
    ``::-1`` refused: no stop) written as the ``range`` NumPy makes of it, so
    that the rule sees its length; string directives, complex steps
    (``np.linspace``) and float bounds are refused, naming what to write."""
    where = resolver.parsed.location(node)
    out = []
    for e in items:
        if isinstance(e, gast.Constant) and isinstance(e.value, str):
            raise UnsupportedSyntaxError(
                f"pullback cannot differentiate np.r_ with the string directive {e.value!r}.",
                where, "Join the arrays with np.concatenate (axis=...), np.stack or "
                "np.column_stack instead.")
        if not isinstance(e, gast.Slice):
            out.append(e)
            continue
        parts = [e.lower, e.upper, e.step]
        for p in parts:
            if isinstance(p, gast.Constant) and isinstance(p.value, complex):
                raise UnsupportedSyntaxError(
                    "pullback cannot differentiate np.r_ with a complex step (`a:b:kj`, k "
                    "points as np.linspace).", where,
                    "Write np.linspace(a, b, k) for that item.")
            if p is not None and not isinstance(p, gast.Name) and not (
                    isinstance(p, gast.Constant) and type(p.value) is int):
                raise UnsupportedSyntaxError(
                    "pullback follows slices in np.r_[...] whose start, stop and step are "
                    "integers or names.", where, "Write np.arange(start, stop, step) for "
                    "that item.")
        if e.upper is None or static_value(gast.Name(id="range", ctx=gast.Load(),
                                                     annotation=None, type_comment=None),
                                           resolver.parsed) is not range:
            raise UnsupportedSyntaxError(
                "pullback follows slices in np.r_[...] with a stop (`1:n`).", where,
                "Write np.arange(start, stop, step) for that item.")
        call = gast.Call(func=gast.Name(id="range", ctx=gast.Load(), annotation=None,
                                        type_comment=None),
                         args=[e.lower or gast.Constant(0, None), e.upper,
                               e.step or gast.Constant(1, None)], keywords=[])
        call.r_range = True       # (np.r_ makes the same integers of it: NumPy's semantics)
        out.append(gast.copy_location(call, e))
    if isinstance(node.slice, gast.Tuple):
        node.slice.elts = out
    else:
        node.slice = out[0]
    return out
