"""Concatenated parts: the cotangent of ``np.concatenate`` of a literal pack
with one active part is that part's slice, bounded by the lengths of the
others, and the pack itself is not kept for the adjoint.

A loop's ``np.concatenate((wall, x, wall))`` (the FPU chain) split the
cotangent into every part (``unconcatenate``, a Python call per step), and
the tape held the pack ``(wall, x, wall)`` each step, to read ``x``'s part
only.  The other parts, assigned once outside any block (or parameters
never assigned), have the same length on every step; along the first axis
the active part is what lies between theirs::

    pack = (wall, x_1, wall)                   (primal)
    xp = np.concatenate(pack)
    ...
    pack_bar = unconcatenate(xp_bar, pack)     (adjoint)
    x_1_bar = x_1_bar + pack_bar[1]
->
    pack_bar = (None, xp_bar[len(wall):len(xp_bar) - len(wall)], None)
    x_1_bar = x_1_bar + pack_bar[1]

the view ``unconcatenate`` gives, for any array cotangent (the parts of a
concatenation have its rank, so their lengths are their first axes').
Code differentiated again keeps ``unconcatenate``.

>>> import numpy as np, pullback as pb
>>> from pullback.testing import function_from_source
>>> f = function_from_source('''
... def f(x):
...     wall = np.zeros(1)
...     xp = np.concatenate((wall, x, wall))
...     return np.sum(xp[1:] * xp[:-1])
... ''')
>>> src = pb.source(f, np.ones(3))
>>> [line.strip() for line in src.splitlines() if "pack_bar =" in line]
['pack_bar = (None, xp_bar[len(wall):len(xp_bar) - len(wall)], None)']
>>> pb.grad(f)(np.array([1.0, 2.0, 3.0]))
array([2., 4., 2.])
"""
from __future__ import annotations

import gast
import numpy as np

from ..again import transforming_again
from ..analyses.kinds import Shape
from ..ir.build import call, name, sum_of
from ..runtime import rule_support

__all__ = ["one_part"]


def one_part(ctx, op, expr):
    """``expr`` (``unconcatenate(g, pack)`` or with axis 0) as the tuple of
    the active part's slice and None for the others, where ``op`` is
    ``np.concatenate`` of a literal pack with one active part whose other
    parts have a fixed length (see the module docstring); else None."""
    if op.primitive is not np.concatenate or transforming_again() \
            or not isinstance(expr, gast.Call) or not isinstance(expr.func, gast.Name) \
            or ctx.helpers.get(expr.func.id) is not rule_support.unconcatenate \
            or expr.keywords or not 2 <= len(expr.args) <= 3:
        return None
    g, pack = expr.args[:2]
    if len(expr.args) == 3 and not (isinstance(expr.args[2], gast.Constant)
                                    and expr.args[2].value == 0):
        return None
    if not (isinstance(g, gast.Name) and isinstance(pack, gast.Name)):
        return None
    defs = ctx.definitions(pack.id)
    if len(defs) != 1 or not isinstance(defs[0].value, (gast.Tuple, gast.List)):
        return None
    parts = defs[0].value.elts
    if not all(isinstance(e, gast.Name) for e in parts):
        return None
    active = [i for i, e in enumerate(parts) if e.id in ctx.active]
    if len(active) != 1 or not all(_fixed(ctx, e.id) for i, e in enumerate(parts)
                                   if i != active[0]):
        return None
    k, len_ = active[0], ctx.helper("len", len)
    lengths = [call(len_, name(e.id)) for e in parts]
    lower = sum_of(lengths[:k])
    upper = None if k == len(parts) - 1 else gast.BinOp(
        left=call(len_, name(g.id)), op=gast.Sub(), right=sum_of(lengths[k + 1:]))
    piece = gast.Subscript(value=name(g.id),
                           slice=gast.Slice(lower=lower, upper=upper, step=None),
                           ctx=gast.Load())
    return gast.Tuple(elts=[piece if i == k else gast.Constant(None, None)
                            for i in range(len(parts))], ctx=gast.Load())


def _fixed(ctx, var):
    """``var`` holds one array for the whole call, whose length nothing
    changes: a parameter never assigned, or a name assigned once, outside
    any block; not active, and not written into by any call."""
    if var in ctx.active or ctx.kind(var).shape is not Shape.ARRAY \
            or any(getattr(op, "mutates", None) == var for op in ctx.ops.values()):
        return False
    defs = ctx.definitions(var)
    if not defs:
        return var in ctx.normal.params
    return len(defs) == 1 and var not in ctx.normal.params \
        and any(s is defs[0] for s in ctx.normal.tree.body)
