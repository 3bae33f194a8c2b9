"""Helpers of the rules for running extrema and outer products of ufuncs
(``rules.numpy_ufunc_methods``), and for quantiles, integration, grids,
polynomials, ``ediff1d``, ``vander`` and ``delete`` (``rules.numpy_statistics``).

Each returns the cotangent of one differentiable input, in the dtype of
``g``; where the derivative is not unique (tied extrema, tied values in a
quantile) the convention is stated on the helper.

>>> quantile_grad(1.0, np.array([3.0, 1.0, 2.0, 0.0]), 0.5)
array([0. , 0.5, 0.5, 0. ])
"""
from __future__ import annotations

import numpy as np
import numpy as _numpy      # axes and dtypes: never rebound to another namespace

from .core import unbroadcast
from .rule_support import unarray

__all__ = ["running_winners", "cummax_grad", "unouter", "quantile_parts", "quantile_grad",
           "quantile_jvp",
           "trapezoid_grad", "meshgrid_grads", "series_grad", "ediff1d_grad", "vander_powers",
           "vander_grad", "delete_grad"]


# --- ufunc methods (rules.numpy_ufunc_methods) ---


def running_winners(a, ans, axis):
    """For ``ans = np.maximum.accumulate(a, axis)`` (or ``minimum``), with
    ``axis`` moved last: ``hit`` (``a`` attains the running extremum), the
    first and last position of the run of equal ``ans`` each position lies in,
    and ``count``, how many positions up to each one attain its value (the
    tied winners that share its cotangent, as ``np.max``'s rule shares it)."""
    a = np.moveaxis(np.asarray(a), axis, -1)
    ans = np.moveaxis(np.asarray(ans), axis, -1)
    n = a.shape[-1]
    hit = a == ans
    new = np.ones(a.shape, bool)
    new[..., 1:] = ans[..., 1:] != ans[..., :-1]
    last = np.ones(a.shape, bool)
    last[..., :-1] = new[..., 1:]
    idx = np.arange(n)
    first = np.maximum.accumulate(np.where(new, idx, 0), axis=-1)
    end = np.flip(np.minimum.accumulate(np.flip(np.where(last, idx, n - 1), -1), axis=-1), -1)
    hits = np.cumsum(hit, axis=-1)
    count = hits - np.take_along_axis(hits, first, -1) + np.take_along_axis(hit, first, -1)
    return hit, first, end, count


def cummax_grad(g, ans, a, axis=0):
    """Cotangent of ``np.maximum.accumulate(a, axis)`` (and ``minimum``):
    each ``g_i`` is shared equally by the positions ``j <= i`` where ``a_j``
    equals ``ans_i``.

    >>> cummax_grad(np.ones(4), np.array([1., 3., 3., 3.]), np.array([1., 3., 2., 3.]))
    array([1. , 2.5, 0. , 0.5])
    """
    axis = 0 if axis is None else axis
    hit, first, end, count = running_winners(a, ans, axis)
    with np.errstate(divide="ignore", invalid="ignore"):     # a NaN: no winner, NaN
        g = np.moveaxis(np.asarray(g), axis, -1)
        w = g / count.astype(np.result_type(g, np.float16))
    total = np.cumsum(w, axis=-1)
    # sum of w over positions i >= j in j's run of equal ans
    tail = np.take_along_axis(total, end, -1) - total + w
    return np.moveaxis(np.where(hit, tail, 0 * tail), -1, axis)


def unouter(g, A, B, kind, which):
    """The cotangent of ``A`` (``which=0``) or ``B`` (1) in ``np.add.outer(A,
    B)`` (``kind`` ``"add"``), ``np.subtract.outer`` or ``np.multiply.outer``
    (unconjugated): ``g`` has ``A``'s axes then ``B``'s.

    >>> unouter(np.ones((2, 3)), np.ones(2), np.arange(3.0), "multiply", 0)
    array([3., 3.])
    """
    na, nb = np.ndim(A), np.ndim(B)
    if kind == "multiply":
        if which == 0:
            return np.tensordot(g, B, nb) if nb else g * B
        return np.tensordot(A, g, na) if na else A * g
    if which == 0:
        return np.sum(g, axis=tuple(range(na, na + nb)))
    gb = np.sum(g, axis=tuple(range(na)))
    return -gb if kind == "subtract" else gb


# --- quantiles, integration, grids, polynomials (rules.numpy_statistics) ---


def quantile_parts(a, q, axis, method="linear", weights=None):
    """``a`` with the reduced axes moved last and joined (``rest + (n,)``), the
    order that sorts it, and for each element of ``q`` the two sorted
    positions (as floats) and the weight of the second (NumPy's default
    ``linear`` method: position ``q (n - 1)``), as ``np.quantile(a, q,
    axis)`` reads them.  Computed in ``a``'s namespace: ``q`` may be a
    traced or lazy constant (``np.array([10.0, 90.0]) / 100`` under jax.jit)."""
    if method != "linear" or weights is not None:
        raise NotImplementedError(
            f"the gradient of np.quantile/np.percentile with method={method!r}"
            + (" and weights" if weights is not None else "") + " is not implemented; "
            "pullback follows method='linear' (the default) without weights")
    a = np.asarray(a)
    axes = tuple(range(a.ndim)) if axis is None else tuple(
        int(ax) % a.ndim for ax in _numpy.atleast_1d(axis))
    rest = [d for d in range(a.ndim) if d not in axes]
    perm = rest + list(axes)
    moved = np.transpose(a, perm)
    flat = np.reshape(moved, tuple(moved.shape[:len(rest)]) + (-1,))
    n = flat.shape[-1]
    order = np.argsort(flat, axis=-1, stable=True)
    pos = np.ravel(np.asarray(q, dtype=_numpy.float64)) * (n - 1)
    lo = np.floor(pos)
    hi = np.minimum(lo + 1, n - 1)
    return flat, order, lo, hi, pos - lo, perm, tuple(moved.shape)


def _picks(flat, lo, hi, f, dtype):
    """How much each sorted place weighs in each output: ``(Q,) + (1,) * len(rest)
    + (n,)``, two nonzero weights per output."""
    at = np.arange(flat.shape[-1])
    w = (at == lo[:, None]) * (1 - f)[:, None] + (at == hi[:, None]) * f[:, None]
    return np.reshape(w.astype(dtype), (lo.shape[0],) + (1,) * (len(flat.shape) - 1) + (-1,))


def quantile_grad(g, a, q, axis=None, keepdims=False, method="linear", weights=None):
    """Cotangent of ``a`` in ``np.quantile(a, q, axis)`` (``np.median``: ``q =
    0.5``; ``np.percentile``: ``q / 100``): each output's ``g`` goes to the two
    sorted elements it interpolates, weighted as it weighs them (tied values:
    to the one the stable sort puts there, as JAX's sort-based rule does).
    A weighted sum, then the sort undone (for traced and lazy arrays by a
    gather, not a write).

    >>> quantile_grad(1.0, np.array([3.0, 1.0, 2.0, 0.0]), 0.5)
    array([0. , 0.5, 0.5, 0. ])
    """
    flat, order, lo, hi, f, perm, shape = quantile_parts(a, q, axis, method, weights)
    gq = np.reshape(np.asarray(g), (lo.shape[0],) + tuple(flat.shape[:-1]))
    picks = _picks(flat, lo, hi, f, _numpy.result_type(gq.dtype, flat.dtype))
    w = np.sum(gq[..., None] * picks, axis=0)     # rest + (n,), in sorted order
    if isinstance(w, _numpy.ndarray):              # NumPy: the sort undone by a write
        out = _numpy.empty_like(w)
        _numpy.put_along_axis(out, order, w, -1)
    else:
        out = np.take_along_axis(w, np.argsort(order, axis=-1, stable=True), -1)
    return np.transpose(np.reshape(out, shape), tuple(_numpy.argsort(perm)))


def quantile_jvp(t, ans, a, q, axis=None, keepdims=False, method="linear", weights=None):
    """Tangent of ``np.quantile(a, q, axis)``: the tangents of the two sorted
    elements each output interpolates, weighted as ``quantile_grad``."""
    flat, order, lo, hi, f, perm, shape = quantile_parts(a, q, axis, method, weights)
    tm = np.transpose(np.broadcast_to(t, np.shape(a)), perm)
    ts = np.take_along_axis(np.reshape(tm, tuple(flat.shape)), order, -1)
    out = np.sum(ts[None] * _picks(flat, lo, hi, f, ts.dtype), axis=-1)
    return np.reshape(out, np.shape(ans))


def trapezoid_grad(g, y, x=None, dx=1.0, axis=-1):
    """Cotangent of ``y`` in ``np.trapezoid(y, x, dx, axis)``: each sample
    weighs half of the widths of the intervals it bounds.

    >>> trapezoid_grad(1.0, np.ones(4), dx=0.5)
    array([0.25, 0.5 , 0.5 , 0.25])
    """
    ym = np.moveaxis(np.asarray(y), axis, -1)
    n = ym.shape[-1]
    if x is None:
        d = np.full(max(n - 1, 0), dx, dtype=np.result_type(dx, 1.0))
    elif np.ndim(x) == 1:
        d = np.diff(np.asarray(x))
    else:
        d = np.moveaxis(np.diff(np.asarray(x), axis=axis), axis, -1)
    w = np.zeros(d.shape[:-1] + (n,), dtype=np.result_type(d, 1.0))
    w[..., :-1] += d / 2
    w[..., 1:] += d / 2
    return np.moveaxis(unbroadcast(np.expand_dims(np.asarray(g), -1) * w, ym), -1, axis)


def meshgrid_grads(g, xi, indexing="xy"):
    """Cotangents of the inputs of ``np.meshgrid(*xi)``: the ``i``-th grid's
    cotangent summed over every axis but the one ``xi[i]`` runs along (axes 0
    and 1 swapped for ``indexing='xy'``)."""
    out = []
    for i, x in enumerate(xi):
        along = {0: 1, 1: 0}.get(i, i) if indexing == "xy" and len(xi) > 1 else i
        gi = np.asarray(g[i])
        gi = np.sum(gi, axis=tuple(d for d in range(gi.ndim) if d != along))
        out.append(np.reshape(gi, np.shape(x)))
    return tuple(out)


_POLY = {"polyval": ("polynomial", "poly"), "polynomial": ("polynomial", "poly"),
         "chebyshev": ("chebyshev", "cheb"), "legendre": ("legendre", "leg"),
         "hermite": ("hermite", "herm"), "hermite_e": ("hermite_e", "herme"),
         "laguerre": ("laguerre", "lag")}


def _series(kind, c):
    """``(val, der, vander, c)`` of a NumPy series kind, ``c`` lowest degree
    first (``np.polyval``'s highest-first coefficients reversed)."""
    module, prefix = _POLY[kind]
    m = getattr(np.polynomial, module)
    c = np.asarray(c)
    if c.ndim != 1:
        raise NotImplementedError(
            "the gradient of a polynomial with coefficients of more than one axis is not "
            "implemented; evaluate each polynomial apart (a loop over the columns)")
    if kind == "polyval":
        c = c[::-1]
    return (getattr(m, prefix + "val"), getattr(m, prefix + "der"),
            getattr(m, prefix + "vander"), c)


def series_grad(g, x, c, kind, which):
    """Cotangent of ``x`` (``which="x"``) or of the coefficients ``c`` in the
    value of a series (``np.polyval(c, x)``, ``kind="polyval"``; or
    ``np.polynomial.<kind>.<prefix>val(x, c)``) with 1-d ``c``: the derivative
    series at ``x``, or ``g`` against the basis at ``x`` (the Vandermonde
    matrix), unconjugated.

    >>> float(series_grad(1.0, 2.0, np.array([1.0, 0.0, 3.0]), "polyval", "x"))   # x**2 + 3
    4.0
    """
    val, der, vander, cs = _series(kind, c)
    if which == "x":
        return g * val(x, der(cs))
    basis = np.reshape(vander(x, len(cs) - 1), np.shape(x) + (len(cs),))   # (1-d for a number)
    cbar = np.tensordot(g, basis, np.ndim(g))
    return unarray(cbar[::-1] if kind == "polyval" else cbar, c)


def ediff1d_grad(g, ary, to_end=None, to_begin=None):
    """Cotangent of ``ary`` in ``np.ediff1d(ary, to_end, to_begin)``: the
    differences' part of ``g`` (between the constants) moved back as
    ``np.diff``'s."""
    start = 0 if to_begin is None else np.size(to_begin)
    stop = np.size(g) - (0 if to_end is None else np.size(to_end))
    mid = np.ravel(g)[start:stop]
    zero = np.zeros(1, dtype=mid.dtype)
    return np.reshape(np.concatenate([zero, mid]) - np.concatenate([mid, zero]), np.shape(ary))


def vander_powers(x, N=None, increasing=False):
    """The exponents of ``np.vander(x, N, increasing)``'s columns."""
    n = len(x) if N is None else N
    return np.arange(n) if increasing else np.arange(n - 1, -1, -1)


def vander_grad(g, x, N=None, increasing=False):
    """Cotangent of ``x`` in ``np.vander(x, N, increasing)``: ``sum_j g_ij k_j
    x_i ** (k_j - 1)`` over the columns' exponents ``k_j``."""
    k = vander_powers(x, N, increasing)
    x = np.asarray(x)
    slope = k * np.power(x[:, None], np.maximum(k - 1, 0)) * (k > 0)
    g = np.asarray(g)
    return np.sum(g * slope, axis=1).astype(np.result_type(g, x), copy=False)


def delete_grad(g, arr, obj, axis=None):
    """Cotangent of ``arr`` in ``np.delete(arr, obj, axis)``: ``g`` at the
    positions kept, zero at those deleted."""
    arr = np.asarray(arr)
    g = np.asarray(g)
    if axis is None:
        out = np.zeros(arr.size, dtype=g.dtype)
        out[np.delete(np.arange(arr.size), obj)] = g
        return np.reshape(out, arr.shape)
    out = np.zeros(arr.shape, dtype=g.dtype)
    kept = np.delete(np.arange(arr.shape[axis]), obj)
    np.moveaxis(out, axis, 0)[kept] = np.moveaxis(g, axis, 0)
    return out
