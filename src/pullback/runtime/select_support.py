"""Helpers of the rules for quantiles that skip NaN and for ``np.insert``
(``rules.numpy_more``).

>>> nanquantile_grad(1.0, np.array([3.0, np.nan, 1.0, 2.0]), 0.5)     # median of 1, 2, 3
array([0., 0., 0., 1.])
>>> insert_grads(np.arange(5.0), np.zeros(3), [1, 3], np.array([7.0, 8.0]))   # a0 7 a1 a2 8
(array([0., 2., 3.]), array([1., 4.]))
"""
from __future__ import annotations

import numpy as np

from .layout_support import quantile_parts

__all__ = ["nanquantile_grad", "nanquantile_jvp", "insert_grads"]


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
