"""Forward rules' helpers for reductions, statistics and selections
(``np.cumprod``, ``ptp``, ``average``, ``cov``, ``corrcoef``, ``interp``,
``partition``, ``nanmax``/``nanmin``, ``angle``, ``real_if_close``, builtin
``max``/``min``; the adjoint's ``einsum_grads``), declared with their rules in
``rules/``.

Each takes the tangent ``t`` of one differentiable argument and returns its
contribution to the output's tangent; ties follow the reverse rules (tied
winners share equally), so forward and reverse mode agree.

>>> import numpy as np
>>> a = np.array([2.0, 0.0, 3.0])
>>> cumprod_jvp(np.array([1.0, 1.0, 1.0]), np.cumprod(a), a)     # exact with a zero
array([1., 2., 6.])
"""
from __future__ import annotations

import numpy as np

from .contraction_support import einsum_grads
from .forward_support import add_tangents, max_jvp, zeros_tangent
from .layout_support import cov_jvp, cumprod_jvp
from .quantile_support import quantile_jvp

__all__ = ["cumprod_jvp", "ptp_jvp", "average_jvp", "cov_jvp", "corrcoef_jvp",
           "interp_x_jvp", "interp_fp_jvp", "partition_jvp", "nanmax_jvp", "angle_jvp",
           "real_if_close_jvp", "builtin_max_jvp", "logsumexp_jvp", "cummax_jvp",
           "logaddexp_reduce_jvp", "quantile_jvp", "series_jvp",
           "ediff1d_jvp", "vander_jvp", "einsum_grads_tangent"]


def ptp_jvp(t, ans, a, axis=None, keepdims=False):
    """Tangent of ``np.ptp``: the maximum's minus the minimum's (ties share)."""
    hi = np.max(a, axis=axis, keepdims=keepdims)
    lo = np.min(a, axis=axis, keepdims=keepdims)
    return max_jvp(t, hi, a, axis, keepdims) - max_jvp(t, lo, a, axis, keepdims)


def average_jvp(t, ans, a, axis=None, weights=None, returned=False, keepdims=False):
    """Tangent of ``np.average`` (the weights constant): the average of the
    tangent; with ``returned``, the sum of the weights has a zero tangent."""
    avg = np.average(t, axis=axis, weights=weights, keepdims=keepdims)
    if returned:
        return (avg, np.zeros_like(ans[1]))
    return avg


def corrcoef_jvp(t, ans, x, y=None, rowvar=True, dtype=None):
    """Tangent of ``np.corrcoef``: ``r_ij = c_ij / sqrt(d_i d_j)`` with ``c``
    the covariance and ``d`` its (real) diagonal."""
    c = np.atleast_2d(np.cov(x, y, rowvar))
    dc = np.atleast_2d(cov_jvp(t, c, x, y, rowvar))
    d = np.real(np.diagonal(c))
    dd = np.real(np.diagonal(dc))
    s = np.sqrt(d)
    r = c / s[:, None] / s[None, :]
    out = dc / s[:, None] / s[None, :] - r * (dd[:, None] / d[:, None] + dd[None, :] / d[None, :]) / 2
    return np.reshape(out, np.shape(ans)).astype(np.result_type(ans), copy=False)


def interp_x_jvp(t, ans, x, xp, fp, left=None, right=None, period=None):
    """``x``'s part of ``np.interp``'s tangent: the slope of the piece ``x``
    lies on (the right one at a knot, 0 outside the knots) times ``t``."""
    from .fft_support import interp_grads
    slope = interp_grads(np.ones(np.shape(x)), x, xp, fp, left, right, period)[0]
    return t * np.asarray(slope)


def interp_fp_jvp(t, ans, x, xp, fp, left=None, right=None, period=None):
    """``fp``'s part: the interpolation of its tangent (``left``/``right``
    given are constants: zero there)."""
    if period is None:
        left = None if left is None else 0.0
        right = None if right is None else 0.0
    return np.interp(x, xp, t, left=left, right=right, period=period)


def partition_jvp(t, ans, a, kth, axis=-1, kind="introselect", order=None):
    """Tangent of ``np.partition``: the tangent moved as the values were
    (equal values matched in stable order, as the reverse rule does)."""
    t = np.broadcast_to(t, np.shape(a))
    if axis is None:
        a, t, axis = np.ravel(a), np.ravel(t), -1
    src = np.empty(np.shape(ans), dtype=np.intp)
    np.put_along_axis(src, np.argsort(ans, axis=axis, kind="stable"),
                      np.argsort(a, axis=axis, kind="stable"), axis=axis)
    return np.take_along_axis(t, src, axis=axis)


def nanmax_jvp(t, ans, a, axis=None, out=None, keepdims=False):
    """Tangent of ``np.nanmax``/``np.nanmin``: tied winners share it, NaNs
    never win (an all-NaN slice has a NaN value and a zero tangent)."""
    full = ans if keepdims or axis is None else np.expand_dims(ans, axis)
    winners = a == full
    count = np.sum(winners, axis=axis, keepdims=keepdims)
    return np.sum(np.where(winners, t, 0), axis=axis, keepdims=keepdims) / np.maximum(count, 1)


def angle_jvp(t, ans, z, deg=False):
    """Tangent of ``np.angle``: ``Im(dz / z)`` (0 for real ``z``, whose angle
    is 0 or pi)."""
    if not np.iscomplexobj(z):
        return np.zeros_like(ans)
    return np.imag(t / z) * (180.0 / np.pi if deg else 1.0)


def real_if_close_jvp(t, ans, a, tol=100):
    """Tangent of ``np.real_if_close``: its real part where NumPy dropped the
    imaginary part, the tangent itself otherwise."""
    return np.real(t) if not np.iscomplexobj(ans) and np.iscomplexobj(t) else t


def builtin_max_jvp(t, ans, args):
    """Tangent of builtin ``max(*args)``/``min(*args)`` for the tangent ``t``
    of each argument in turn: one contribution per positional argument (the
    winners share it equally); a single iterable's tangent has its items'.
    Tuples compare item by item, and Python returns the first winning item
    itself: all of the result's tangent is that item's (as the reverse rule)."""
    if isinstance(ans, (tuple, list)):
        items, parts = (list(args[0]), list(t)) if len(args) == 1 else (args, None)
        first = next(i for i, x in enumerate(items) if x is ans)
        if parts is not None:
            return (parts[first],)
        return tuple(t if i == first else zeros_tangent(x) for i, x in enumerate(items))
    if len(args) == 1:
        items = args[0]
        hits = np.asarray([bool(x == ans) for x in np.ravel(items)] if isinstance(
            items, np.ndarray) else [bool(x == ans) for x in items])
        parts = np.ravel(t) if isinstance(items, np.ndarray) else list(t)
        total = sum(p for p, h in zip(parts, hits) if h)
        return (total / int(np.sum(hits)),)
    hits = [bool(x == ans) for x in args]
    return tuple(t / sum(hits) if h else 0.0 * t for h in hits)


def logsumexp_jvp(t, ans, a, axis=None, b=None, keepdims=False, return_sign=False, wrt="a"):
    """``scipy.special.logsumexp``'s tangent along ``a``'s or ``b``'s tangent
    (``wrt``): ``sum(w t)`` with ``w = b exp(a - ans)`` for ``a`` and
    ``exp(a - ans)`` for ``b``; with ``return_sign`` the sign's tangent is 0.
    A negative sum (of ``b exp(a)``) has no real logarithm: NumPy's NaN."""
    lse = ans[0] if return_sign else ans
    full = lse if keepdims or axis is None else np.expand_dims(lse, axis)
    scale = np.exp(np.asarray(a) - full)
    if return_sign:
        scale = scale * np.expand_dims(ans[1], axis) if not (keepdims or axis is None) \
            else scale * ans[1]
    if wrt == "a" and b is not None:
        scale = scale * b
    out = np.sum(scale * t, axis=axis, keepdims=keepdims)
    if np.iscomplexobj(out) and not np.iscomplexobj(lse):
        out = np.real(out)
    if return_sign:
        return (out, np.zeros_like(ans[1]))
    return out


def cummax_jvp(t, ans, a, axis=0):
    """Tangent of ``np.maximum.accumulate(a, axis)`` (and ``minimum``): the
    mean of the tangents of the tied winners ``j <= i`` (as ``cummax_grad``)."""
    from .quantile_support import running_winners
    axis = 0 if axis is None else axis
    hit, first, end, count = running_winners(a, ans, axis)
    ht = np.where(hit, np.moveaxis(np.broadcast_to(t, np.shape(a)), axis, -1), 0)
    total = np.cumsum(ht, axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (total - np.take_along_axis(total, first, -1)
               + np.take_along_axis(ht, first, -1)) / count.astype(np.result_type(ht, np.float16))
    return np.moveaxis(out, -1, axis)


def logaddexp_reduce_jvp(t, ans, a, axis=0, keepdims=False, base=None):
    """Tangent of ``np.logaddexp.reduce(a, axis)`` (``base=2``: ``logaddexp2``):
    ``t`` weighted by ``base ** (a - ans)``, summed over ``axis``."""
    full = ans if keepdims or axis is None else np.expand_dims(ans, axis)
    w = np.exp(a - full) if base is None else np.exp2(a - full)
    return np.sum(t * w, axis=axis, keepdims=keepdims)


def series_jvp(t, x, c, kind, which):
    """Tangent of a series' value (``layout_support.series_grad``): ``t`` times
    the derivative series at ``x``, or the series of the coefficients' tangent."""
    from .quantile_support import _series
    val, der, _, cs = _series(kind, c)
    if which == "x":
        return t * val(x, der(cs))
    tc = np.asarray(t)
    return val(x, tc[::-1] if kind == "polyval" else tc)


def ediff1d_jvp(t, ary, to_end=None, to_begin=None):
    """Tangent of ``np.ediff1d``: the tangent's differences, the constants'
    places zero."""
    d = np.ediff1d(t)
    before = np.zeros(0 if to_begin is None else np.size(to_begin), dtype=d.dtype)
    after = np.zeros(0 if to_end is None else np.size(to_end), dtype=d.dtype)
    return np.concatenate([before, d, after])


def vander_jvp(t, x, N=None, increasing=False):
    """Tangent of ``np.vander(x, N, increasing)``: ``t_i k_j x_i ** (k_j - 1)``."""
    from .quantile_support import vander_powers
    k = vander_powers(x, N, increasing)
    x = np.asarray(x)
    t = np.asarray(t)
    return (t[:, None] * k * np.power(x[:, None], np.maximum(k - 1, 0)) * (k > 0)).astype(
        np.result_type(t, x), copy=False)


def einsum_grads_tangent(t, g, args, optimize=False):
    """The tangent of ``einsum_grads(g, args)`` (the operands' cotangents of
    ``np.einsum(*args)``) along the tangent ``t`` of ``args`` (a tuple like
    it: None or zeros for the subscripts and sublists).  Each cotangent is
    multilinear in ``g`` and the other operands: one term per operand with a
    tangent, that operand's tangent in its place, its own cotangent left out
    (it does not read itself; the same array passed twice is two operands)."""
    n = len(args)
    if isinstance(args[0], str):
        operands = range(1, n)
    else:
        operands = range(0, n - 1 if n % 2 else n, 2)
    total = [None] * n
    for k in operands:
        if t[k] is None:
            continue
        part = einsum_grads(g, args[:k] + (t[k],) + args[k + 1:], optimize)
        total = [a if i == k else add_tangents(a, p) for i, (a, p) in enumerate(zip(total, part))]
    dtype = np.result_type(g, *(args[k] for k in operands))
    for k in operands:
        if total[k] is None:      # no other operand moves
            total[k] = np.zeros(np.shape(args[k]), dtype=dtype)
    return tuple(total)
