"""Helpers of the rules for quantiles that skip NaN, ``np.insert``
(``rules.numpy_assorted``), selections and ``np.polyfit``
(``rules.numpy_selections``).

>>> nanquantile_grad(1.0, np.array([3.0, np.nan, 1.0, 2.0]), 0.5)     # median of 1, 2, 3
array([0., 0., 0., 1.])
>>> insert_grads(np.arange(5.0), np.zeros(3), [1, 3], np.array([7.0, 8.0]))   # a0 7 a1 a2 8
(array([0., 2., 3.]), array([1., 4.]))
>>> a = np.array([[1.0, 2.0], [3.0, 4.0]])
>>> gather_grad(np.ones(5), a, np.resize(source_index(a), 5))     # a[0, 0] is used twice
array([[2., 1.],
       [1., 1.]])
"""
from __future__ import annotations

import numpy as np

from .layout_support import quantile_parts

__all__ = ["nanquantile_grad", "nanquantile_jvp", "insert_grads", "source_index",
           "gather_grad", "polyfit_grad", "polyfit_jvp"]


def _nanquantile_weights(a, q, axis, method, weights):
    """How much each element of ``a`` weighs in each output of
    ``np.nanquantile(a, q, axis)``: ``(Q,) + rest + (n,)`` over the reduced
    axes joined (``quantile_parts``' layout, the elements in their own
    order).  NaN sorts last, so a slice's ``count`` values come first; an
    all-NaN slice weighs nothing."""
    flat, order, _, _, _, perm, shape = quantile_parts(a, q, axis, method, weights)
    count = np.sum(~np.isnan(flat), axis=-1)
    qs = np.ravel(np.asarray(q, dtype=np.float64)).reshape((-1,) + (1,) * count.ndim)
    pos = qs * np.maximum(count - 1, 0)
    lo = np.floor(pos).astype(np.intp)
    hi = np.minimum(lo + 1, np.maximum(count - 1, 0))
    frac = (pos - lo) * (count > 0)
    at = np.arange(flat.shape[-1])
    sorted_w = ((at == lo[..., None]) * (1 - frac)[..., None]
                + (at == hi[..., None]) * frac[..., None]) * (count > 0)[..., None]
    w = np.empty(sorted_w.shape, dtype=np.result_type(flat, np.float64))
    np.put_along_axis(w, np.broadcast_to(order, w.shape), sorted_w, -1)
    return w, perm, shape


def nanquantile_grad(g, a, q, axis=None, keepdims=False, method="linear", weights=None):
    """Cotangent of ``a`` in ``np.nanquantile(a, q, axis)`` (``np.nanmedian``:
    ``q = 0.5``; ``np.nanpercentile``: ``q / 100``): as ``quantile_grad``, over
    each slice's values that are not NaN; NaN gets 0, and so does an all-NaN
    slice (whose result is NaN)."""
    w, perm, shape = _nanquantile_weights(a, q, axis, method, weights)
    gq = np.reshape(np.asarray(g), w.shape[:-1])
    out = np.sum(gq[..., None] * w, axis=0).astype(np.result_type(g, a), copy=False)
    return np.transpose(np.reshape(out, shape), np.argsort(perm))


def nanquantile_jvp(t, ans, a, q, axis=None, keepdims=False, method="linear", weights=None):
    """Tangent of ``np.nanquantile(a, q, axis)``: the tangents of the values
    each output interpolates, weighted as ``nanquantile_grad``."""
    w, perm, _ = _nanquantile_weights(a, q, axis, method, weights)
    tm = np.transpose(np.broadcast_to(t, np.shape(a)), perm)
    out = np.sum(w * np.reshape(tm, w.shape[1:]), axis=-1)
    return np.reshape(out, np.shape(ans)).astype(np.result_type(t, a), copy=False)


def insert_grads(g, arr, obj, values, axis=None):
    """Cotangents of ``arr`` and ``values`` in ``np.insert(arr, obj, values,
    axis)``: ``g`` where each of ``arr``'s elements went, and summed where
    each of ``values``' went (broadcast, it may fill several places).  The
    places are found by inserting the elements' numbers the same way.  The
    values are cast to ``arr``'s dtype: into an integer array, nothing."""
    arr, g = np.asarray(arr), np.asarray(g)
    values = np.asarray(values)
    mine = np.insert(np.arange(arr.size).reshape(arr.shape), obj, np.full(values.shape, -1), axis)
    theirs = np.insert(np.full(arr.shape, -1), obj, np.arange(values.size).reshape(values.shape),
                       axis)
    flat_g, mine, theirs = np.ravel(g), np.ravel(mine), np.ravel(theirs)
    arr_bar = np.zeros(arr.size, dtype=g.dtype)
    arr_bar[mine[mine >= 0]] = flat_g[mine >= 0]
    values_bar = np.zeros(values.size, dtype=g.dtype)
    np.add.at(values_bar, theirs[theirs >= 0], flat_g[theirs >= 0])
    if arr.dtype.kind not in "fc":
        values_bar = values_bar * 0
    return arr_bar.reshape(arr.shape), values_bar.reshape(values.shape)


def source_index(a):
    """``1 + `` the flat index of each element of ``a``, in ``a``'s shape: a
    selection applied to it tells where each output element came from (0:
    from none, as the zeros ``np.diagflat`` adds)."""
    return np.arange(1, np.size(a) + 1).reshape(np.shape(a))


def gather_grad(g, a, picked):
    """Cotangent of ``a`` in a selection whose outputs came from the elements
    ``picked - 1`` of ``a`` (``picked``: the selection of ``source_index(a)``):
    ``g`` summed into each element it came from."""
    idx = np.ravel(picked) - 1
    keep = idx >= 0
    parts = np.ravel(np.broadcast_to(g, np.shape(picked)))[keep]
    out = np.bincount(idx[keep], weights=np.real(parts), minlength=np.size(a))
    if np.iscomplexobj(parts):
        out = out + 1j * np.bincount(idx[keep], weights=np.imag(parts), minlength=np.size(a))
    return out.reshape(np.shape(a)).astype(np.result_type(g), copy=False)


def _polyfit_matrix(x, y, deg, rcond, full, w, cov):
    """The matrix ``J`` of the fit, ``coefficients = J @ y`` (linear in ``y``
    for a fixed ``x``); ``full`` and ``cov`` (residuals, a covariance that
    depends on ``y`` otherwise) are refused."""
    if full or cov is not False:
        raise NotImplementedError("the derivative of np.polyfit with full=True or cov=... is "
                                  "not implemented; pullback differentiates the coefficients "
                                  "(full=False, cov=False)")
    return np.polyfit(x, np.eye(len(x)), deg, rcond, w=w)


def polyfit_grad(g, x, y, deg, rcond=None, full=False, w=None, cov=False):
    """Cotangent of ``y`` in ``np.polyfit(x, y, deg)``: ``J^T g``."""
    return np.tensordot(_polyfit_matrix(x, y, deg, rcond, full, w, cov), g, (0, 0))


def polyfit_jvp(t, x, y, deg, rcond=None, full=False, w=None, cov=False):
    """Tangent of ``np.polyfit``'s coefficients: the fit of ``y``'s tangent."""
    return np.tensordot(_polyfit_matrix(x, y, deg, rcond, full, w, cov), t, (1, 0))
