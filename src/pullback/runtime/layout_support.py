"""Helpers called by the layout and statistics rules (``rules.numpy_layout``).

Layout changes move ``g`` back where each element came from, adding where
an element was used more than once (``repeat``, ``tile``, ``pad``).
Each helper returns one contribution (or a tuple or list of them for a rule
with several differentiable inputs), in the dtype of ``g``.  The
contraction helpers (``contraction_support``) and those of quantiles,
running extrema and polynomials (``quantile_support``) are re-exported
here, where they were first written.

>>> cumprod_grad(np.ones(3), np.array([2.0, 0.0, 0.0]), np.array([2.0, 0.0, 3.0]))
array([1., 8., 0.])
"""
from __future__ import annotations

import numpy as np

from .weighted_choices import weights_like
from .core import unbroadcast, unreduce
from .linalg_support import _concrete
from .contraction_support import *  # noqa: F401,F403
from .contraction_support import __all__ as _contractions
from .quantile_support import *  # noqa: F401,F403
from .quantile_support import __all__ as _quantiles

__all__ = ["tile_grad", "repeat_grad", "pad_grad", "rollaxis_grad", "unjoin", "atleast_grads",
           "sort_grad", "partition_grad", "linspace_grads", "take_along_axis_grad", "diff_grad",
           "diff_end_grad", "cumprod_grad", "cumprod_jvp", "select_grads", "average_grad", "ptp_grad",
           "cov_grad", "cov_jvp", "corrcoef_grad", "nan_to_num_grad"] + _contractions + _quantiles


def _same_kind(seq, parts):
    return list(parts) if isinstance(seq, list) else tuple(parts)


def _dtype(g):
    return np.result_type(g)


# --- layout ---


def tile_grad(g, A, reps):
    """Cotangent of ``np.tile(A, reps)``: the tiles of ``g`` added up."""
    shape = np.shape(A)
    reps = (reps,) if isinstance(reps, (int, np.integer)) else tuple(reps)
    d = max(len(shape), len(reps))
    s, r = (1,) * (d - len(shape)) + shape, (1,) * (d - len(reps)) + reps
    gi = np.reshape(g, [n for pair in zip(r, s) for n in pair])
    return np.reshape(np.sum(gi, axis=tuple(range(0, 2 * d, 2))), shape)


def repeat_grad(g, a, repeats, axis=None):
    """Cotangent of ``np.repeat(a, repeats, axis)``: each copy's ``g`` added back."""
    shape = np.shape(a)
    work = (np.size(a),) if axis is None else shape
    axis = 0 if axis is None else axis % len(shape)
    gm = np.moveaxis(np.reshape(g, work[:axis] + (-1,) + work[axis + 1:]), axis, 0)
    n = work[axis]
    if np.size(repeats) == 1:
        r = int(np.reshape(repeats, -1)[0])
        out = np.sum(np.reshape(gm, (n, r) + gm.shape[1:]), axis=1)
    else:
        out = np.zeros((n,) + gm.shape[1:], gm.dtype)
        np.add.at(out, np.repeat(np.arange(n), repeats), gm)
    return np.reshape(np.moveaxis(out, 0, axis), shape)


def pad_grad(g, array, pad_width, mode="constant", reflect_type="even"):
    """Cotangent of ``np.pad(array, pad_width, mode)``: for ``constant``, the
    inner part of ``g``; for ``edge``, ``reflect``, ``symmetric`` and ``wrap``
    (each output element a copy of an input element), ``g`` added back to
    the element each came from."""
    shape = np.shape(array)
    if mode == "constant":
        widths = np.broadcast_to(np.asarray(pad_width, dtype=int), (len(shape), 2))
        return g[tuple(slice(w[0], w[0] + n) for w, n in zip(widths, shape))]
    if mode not in ("edge", "reflect", "symmetric", "wrap") or reflect_type != "even":
        raise NotImplementedError(f"the gradient of np.pad(mode={mode!r}) is not implemented")
    extra = {} if mode in ("edge", "wrap") else {"reflect_type": reflect_type}
    where = np.pad(np.arange(np.prod(shape, dtype=int)).reshape(shape), pad_width, mode, **extra)
    out = np.zeros(np.prod(shape, dtype=int), _dtype(g))
    np.add.at(out, np.ravel(where), np.ravel(g))
    return np.reshape(out, shape)


def rollaxis_grad(g, a, axis, start=0):
    """Cotangent of ``np.rollaxis(a, axis, start)``: the inverse permutation."""
    n = np.ndim(a)
    axis, start = axis % n, start + n if start < 0 else start
    order = [i for i in range(n) if i != axis]
    order.insert(start if start <= axis else start - 1, axis)
    return np.transpose(g, np.argsort(order))


def unjoin(g, tup, axis, rank):
    """Split the cotangent of ``column_stack`` (``rank=2``) or ``dstack``
    (``rank=3``) into one part per input, shaped like it."""
    parts, start = [], 0
    for x in tup:
        shape = np.shape(x)
        if rank == 2:
            n = shape[1] if len(shape) >= 2 else 1
        else:
            n = shape[2] if len(shape) >= 3 else 1
        index = (slice(None),) * axis + (slice(start, start + n),)
        parts.append(np.reshape(g[index], shape))
        start += n
    return _same_kind(tup, parts)


def atleast_grads(g, arys):
    """Cotangents of ``np.atleast_1d/2d/3d(*arys)`` (one result, or one per input)."""
    parts = (g,) if len(arys) == 1 else g
    return tuple(np.reshape(p, np.shape(x)) for p, x in zip(parts, arys))


def sort_grad(g, a, axis=-1):
    """Cotangent of ``np.sort(a, axis)``: ``g`` sent back through the inverse
    of a stable sorting permutation (tied elements keep their order)."""
    along = -1 if axis is None else axis
    places = np.argsort(np.argsort(a, axis=axis, kind="stable"), axis=along)
    return np.reshape(np.take_along_axis(g, places, axis=along), np.shape(a))


def partition_grad(g, ans, a, axis=-1):
    """Cotangent of ``np.partition(a, kth, axis)``, or of any rearrangement
    ``ans`` of ``a`` along ``axis``: equal values are matched in stable order."""
    shape = np.shape(a)
    if axis is None:
        g, ans, axis = np.ravel(g), np.ravel(ans), -1
    a = np.reshape(a, np.shape(ans))
    src = np.empty(np.shape(ans), dtype=np.intp)
    np.put_along_axis(src, np.argsort(ans, axis=axis, kind="stable"),
                      np.argsort(a, axis=axis, kind="stable"), axis=axis)
    out = np.zeros(np.shape(a), _dtype(g))
    np.put_along_axis(out, src, g, axis=axis)
    return np.reshape(out, shape)


def linspace_grads(g, start, stop, num=50, endpoint=True, retstep=False, axis=0):
    """Cotangents of ``start`` and ``stop`` in ``np.linspace``: sample ``i``
    is ``start + (stop - start) i / div``, the step ``(stop - start) / div``."""
    gs, gstep = (g[0], g[1]) if retstep else (g, 0)
    div = (num - 1) if endpoint else num
    t = np.arange(num) / div if div > 0 else np.zeros(num)
    gs = np.moveaxis(np.asarray(gs), axis, 0)
    t = np.reshape(t.astype(_dtype(gs), copy=False), (num,) + (1,) * (gs.ndim - 1))
    up = np.sum(gs * t, axis=0) + (gstep / div if div > 0 else 0)
    down = np.sum(gs, axis=0) - up
    return unbroadcast(down, start), unbroadcast(up, stop)


def take_along_axis_grad(g, arr, indices, axis=-1):
    """Cotangent of ``np.take_along_axis``: ``g`` added back at the taken positions."""
    out = np.zeros(np.shape(arr), _dtype(g))
    if axis is None:
        np.add.at(np.reshape(out, -1), indices, g)
        return out
    axis = axis % out.ndim
    index = [np.reshape(np.arange(n), [-1 if d == k else 1 for d in range(out.ndim)])
             for k, n in enumerate(out.shape)]
    index[axis] = indices
    np.add.at(out, tuple(index), g)
    return out


def _diff_width(x, axis):
    if x is None or x is np._NoValue:
        return 0
    return 1 if np.ndim(x) == 0 else np.shape(x)[axis]


def _diff_adjoint(g, a, n, axis, prepend, append):
    """``n`` adjoint differences (``g[j-1] - g[j]``) of ``g``: the cotangent of
    ``a`` with ``prepend`` and ``append`` joined to it along ``axis``."""
    g = np.asarray(g)
    length = np.shape(a)[axis] + _diff_width(prepend, axis) + _diff_width(append, axis)
    for _ in range(min(n, length)):     # differences of an empty axis are empty
        zero = np.zeros(g.shape[:axis % g.ndim] + (1,) + g.shape[axis % g.ndim + 1:], g.dtype)
        g = np.concatenate([zero, g], axis=axis) - np.concatenate([g, zero], axis=axis)
    return g, length


def diff_grad(g, a, n=1, axis=-1, prepend=None, append=None):
    """Cotangent of ``a`` in ``np.diff(a, n, axis, prepend, append)``: ``n``
    adjoint differences (``g[j-1] - g[j]``), less the prepended and appended
    parts."""
    g, length = _diff_adjoint(g, a, n, axis, prepend, append)
    return np.take(g, np.arange(_diff_width(prepend, axis),
                                length - _diff_width(append, axis)), axis=axis)


def diff_end_grad(g, a, n, axis, prepend, append, end):
    """Cotangent of ``prepend`` (``end == 0``) or ``append`` (``end == 1``)
    in ``np.diff``: its part of the adjoint differences, summed for a
    scalar (NumPy broadcasts one along ``axis``)."""
    g, length = _diff_adjoint(g, a, n, axis, prepend, append)
    x = append if end else prepend
    width = _diff_width(x, axis)
    part = np.take(g, np.arange(length - width, length) if end else np.arange(width), axis=axis)
    return np.sum(part) if np.ndim(x) == 0 else part


def _rcumsum(x, axis):
    """Sums from each place to the end of ``axis``."""
    return np.flip(np.cumsum(np.flip(x, axis), axis=axis), axis)


def _first_zero(a, axis):
    """Where no zero of ``a`` comes at or before a place along ``axis``, and
    where the first zero of each slice is."""
    zero = a == 0
    seen = np.cumsum(zero, axis=axis)
    return seen == 0, zero & (seen == 1)


def cumprod_grad(g, ans, a, axis=None):
    """Cotangent of ``np.cumprod(a, axis)``, exact with zeros in ``a`` and
    with no branch on values (a traced or lazy ``a``): before the first zero
    of its slice ``a_j`` gets ``sum_(i >= j) g_i ans_i / a_j``; the first zero
    ``sum_(i >= j) g_i`` times the products with it left out; a later place 0.
    (A NumPy ``a`` without zeros takes the first sum alone.)"""
    shape = np.shape(a)
    a, ans, g = np.asarray(a), np.asarray(ans), np.asarray(g)
    if axis is None:
        a, ans, g, axis = np.ravel(a), np.ravel(ans), np.ravel(g), 0
    if _concrete(a) and not np.any(a == 0):
        return np.reshape(_rcumsum(g * ans, axis) / a, shape)
    clear, first = _first_zero(a, axis)
    before = _rcumsum(g * ans, axis) / np.where(clear, a, 1)
    at = _rcumsum(g * np.cumprod(np.where(first, 1, a), axis=axis), axis)
    return np.reshape(np.where(clear, before, np.where(first, at, 0)), shape)


def cumprod_jvp(t, ans, a, axis=None, dtype=None):
    """Tangent of ``np.cumprod``: ``ans * cumsum(t / a)`` up to the first zero
    of each slice; from it on, only that zero's tangent, times the products
    with it left out (no branch on values, as ``cumprod_grad``)."""
    a, ans = np.asarray(a), np.asarray(ans)
    t = np.broadcast_to(t, np.shape(a))
    if axis is None:
        a, t, axis = np.ravel(a), np.ravel(t), 0
    if _concrete(a) and not np.any(a == 0):
        return (ans * np.cumsum(t / a, axis=axis)).astype(ans.dtype, copy=False)
    clear, first = _first_zero(a, axis)
    plain = ans * np.cumsum(t / np.where(clear, a, 1), axis=axis)
    rest = np.cumprod(np.where(first, 1, a), axis=axis) * np.cumsum(
        np.where(first, t, 0), axis=axis)
    return np.where(clear, plain, rest).astype(ans.dtype, copy=False)


# --- selection and statistics ---


def select_grads(g, condlist, choicelist):
    """Cotangents of the choices in ``np.select``: each gets ``g`` where its
    condition is the first true one."""
    taken, parts = False, []
    for c, x in zip(condlist, choicelist):
        mine = np.logical_and(c, np.logical_not(taken))
        taken = np.logical_or(taken, c)
        parts.append(unbroadcast(np.where(mine, g, 0), x))
    return _same_kind(choicelist, parts)


def average_grad(g, ans, a, axis=None, weights=None, returned=False, keepdims=False):
    """Cotangent of ``a`` in ``np.average(a, axis, weights)`` (weights constant)."""
    g, ans = (g[0], ans[0]) if returned else (g, ans)
    a = np.asarray(a)
    if weights is None:
        return unreduce(g, a, axis, keepdims) / (a.size // np.size(ans))
    w = weights_like(weights, a, axis)
    return unreduce(g, a, axis, keepdims) * w / np.sum(w, axis=axis, keepdims=True)


def ptp_grad(g, a, axis=None, keepdims=False):
    """Cotangent of ``np.ptp``: max minus min, ties sharing equally."""
    hi = a == np.max(a, axis=axis, keepdims=True)
    lo = a == np.min(a, axis=axis, keepdims=True)
    dt = np.result_type(a, g)
    return unreduce(g, a, axis, keepdims) * (
        hi / np.sum(hi, axis=axis, keepdims=True, dtype=dt)
        - lo / np.sum(lo, axis=axis, keepdims=True, dtype=dt))


def _cov_rows(x, rowvar):
    x = np.atleast_2d(np.asarray(x))
    return x.T if not rowvar and x.shape[0] != 1 else x


def _cov_parts(m, y, rowvar, bias, ddof, fweights, aweights):
    """``np.cov``'s variables as rows (``m``'s, then ``y``'s), the weight of
    each observation, their total and the divisor."""
    x = _cov_rows(m, rowvar)
    if y is not None:
        x = np.concatenate([x, _cov_rows(y, rowvar)], axis=0)
    w = np.ones(x.shape[1])
    for extra in (fweights, aweights):
        if extra is not None:
            w = w * np.asarray(extra, dtype=float)
    total = np.sum(w)
    ddof = (0 if bias else 1) if ddof is None else ddof
    fact = total - ddof if aweights is None else \
        total - ddof * np.sum(w * np.asarray(aweights)) / total
    return x, w, total, fact


def cov_grad(g, m, y=None, rowvar=True, bias=False, ddof=None, fweights=None,
             aweights=None):
    """Cotangent of ``m`` in ``np.cov`` (``y`` and the weights constant):
    ``c = Xc W Xc^H / f``, so ``Xc`` gets ``(G + G^H) conj(Xc) W / f``, centered."""
    x, w, total, fact = _cov_parts(m, y, rowvar, bias, ddof, fweights, aweights)
    xc = x - np.sum(x * w, axis=1, keepdims=True) / total
    gm = np.reshape(g, (x.shape[0], x.shape[0]))
    gx = np.matmul(gm + np.conj(gm.T), np.conj(xc) * w) / fact
    gx = gx - np.sum(gx, axis=1, keepdims=True) * w / total
    gx = gx[:_cov_rows(m, rowvar).shape[0]]
    if not rowvar and np.ndim(m) == 2 and np.shape(m)[0] != 1:
        gx = gx.T
    return np.reshape(gx, np.shape(m)).astype(np.result_type(g, m), copy=False)


def cov_jvp(t, ans, m, y=None, rowvar=True, bias=False, ddof=None, fweights=None,
            aweights=None, dtype=None):
    """Tangent of ``np.cov`` in ``m`` (``y`` and the weights constant): with
    ``Xc`` the centered rows and ``dXc`` the tangent's, ``(dXc W Xc^H + Xc W
    dXc^H) / f``."""
    x, w, total, fact = _cov_parts(m, y, rowvar, bias, ddof, fweights, aweights)
    dx = _cov_rows(np.broadcast_to(t, np.shape(m)), rowvar)
    if y is not None:
        dx = np.concatenate([dx, np.zeros((x.shape[0] - dx.shape[0], x.shape[1]))], axis=0)
    xc = x - np.sum(x * w, axis=1, keepdims=True) / total
    dxc = dx - np.sum(dx * w, axis=1, keepdims=True) / total
    half = np.matmul(dxc * w, np.conj(xc.T))
    out = (half + np.conj(half.T)) / fact
    return np.reshape(out, np.shape(ans)).astype(np.result_type(ans), copy=False)


def corrcoef_grad(g, m, y=None, rowvar=True):
    """Cotangent of ``m`` in ``np.corrcoef`` (real input; ``y`` constant):
    ``r_ij = c_ij / sqrt(c_ii c_jj)`` through ``cov``."""
    c = np.atleast_2d(np.cov(m, y, rowvar))
    d = np.diagonal(c)
    s = np.sqrt(d)
    r = c / s[:, None] / s[None, :]
    gm = np.reshape(g, c.shape)
    gc = gm / s[:, None] / s[None, :]
    gd = -0.5 * (np.sum(gm * r, axis=1) + np.sum(gm * r, axis=0)) / d
    return cov_grad(gc + np.diag(gd), m, y, rowvar)


def nan_to_num_grad(g, x):
    """Cotangent of ``np.nan_to_num``: ``g`` where ``x`` was finite (per part
    for complex ``x``), 0 where it was replaced."""
    if np.iscomplexobj(x):
        return (np.where(np.isfinite(np.real(x)), np.real(g), 0)
                + 1j * np.where(np.isfinite(np.imag(x)), np.imag(g), 0))
    return np.where(np.isfinite(x), g, 0)
