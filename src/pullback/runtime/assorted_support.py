"""Helpers of the rules for ``np.block``, ``np.choose``, ``np.logspace``,
``np.histogram``, the NumPy 2 gufuncs ``np.vecdot``, ``np.matvec`` and
``np.vecmat``, ``np.unique`` and the set operations (a value's cotangent to
its first occurrence), and the parts of a tuple result's cotangent
(``np.modf``, ``np.frexp``): ``rules.numpy_assorted``,
``rules.numpy_selections``, ``rules.numpy_statistics``,
``rules.numpy_contractions``, ``rules.numpy_elementwise``.  Their forward
rules (second derivatives) are in ``rules.assorted_helpers``.

>>> block_grads(np.arange(1.0, 6.0), [np.zeros(2), np.zeros(3)])
[array([1., 2.]), array([3., 4., 5.])]
>>> choose_grads(np.ones(3), np.array([0, 1, 0]), [np.zeros(3), 5.0], "raise")
[array([1., 0., 1.]), np.float64(1.0)]
"""
from __future__ import annotations

import numpy as np

from .core import unbroadcast, zeros_like
from .layout_support import linspace_grads

__all__ = ["result_part", "block_grads", "choose_grads", "logspace_start_grad",
           "logspace_stop_grad", "logspace_tangent", "histogram_grads", "histogram_tangent",
           "bin_edges_grad", "bin_edges_tangent",
           "vecdot_lhs_grad", "vecdot_rhs_grad", "matvec_lhs_grad", "matvec_rhs_grad",
           "vecmat_lhs_grad", "vecmat_rhs_grad", "selection_grads", "selection_tangent",
           "unique_grad", "unique_tangent", "setdiff1d_grad", "setdiff1d_tangent"]


def _dtype(*values):
    """The dtype NumPy gives arrays of ``values`` together (a list of numbers
    is an array here, not a dtype's fields)."""
    return np.result_type(*(np.asarray(v) if isinstance(v, (list, tuple)) else v
                            for v in values))


def result_part(g, ans, i):
    """Part ``i`` of the cotangent ``g`` of a tuple result ``ans`` (a tuple, a
    namedtuple, or a dict by field name after ``result.field``); zeros where
    that part got none."""
    if isinstance(g, dict):
        part = g.get(ans._fields[i])
    elif isinstance(g, (tuple, list)):
        part = g[i]
    else:
        part = None
    return zeros_like(ans[i]) if part is None else part


# --- np.block: g sent back to the block each element came from ---


def _blocks(x, leaf, start=0):
    """``x`` (a nested list of arrays and numbers) with each block replaced by
    ``leaf(block, start)``, ``start`` counting the elements before it; and
    the count of all."""
    if not isinstance(x, list):
        return leaf(x, start), start + int(np.size(x))
    out = []
    for y in x:
        part, start = _blocks(y, leaf, start)
        out.append(part)
    return out, start


def block_grads(g, arrays):
    """Cotangent of ``np.block(arrays)``: one part per block, in the nesting
    of ``arrays`` (each element of the result came from one block)."""
    if not isinstance(arrays, list):
        return np.reshape(g, np.shape(arrays))
    # each block's elements numbered from 1, joined as the blocks were
    labels, total = _blocks(arrays, lambda x, k: np.arange(k + 1, k + np.size(x) + 1)
                            .reshape(np.shape(x)))
    flat = np.zeros(total, _dtype(g))
    flat[np.ravel(np.block(labels)) - 1] = np.ravel(g)
    return _blocks(arrays, lambda x, k: flat[k:k + np.size(x)].reshape(np.shape(x)))[0]


# --- np.choose: each choice gets g where it was chosen ---


def choose_grads(g, a, choices, mode="raise"):
    """Cotangents of the ``choices`` in ``np.choose(a, choices, mode=mode)``:
    ``g`` where ``a`` (wrapped or clipped as ``mode`` says) picked each one,
    summed back onto its shape; an array of choices gets an array."""
    n = len(choices)
    idx = np.asarray(a)
    if mode == "wrap":
        idx = idx % n
    elif mode == "clip":
        idx = np.clip(idx, 0, n - 1)
    parts = [unbroadcast(np.where(idx == k, g, 0), c) for k, c in enumerate(choices)]
    if isinstance(choices, np.ndarray):
        return np.stack(parts) if parts else np.zeros_like(g, shape=np.shape(choices))
    return tuple(parts) if isinstance(choices, tuple) else parts


# --- np.logspace: base ** linspace(start, stop) ---


def _log_base(base, axis, ans):
    lb = np.log(np.asarray(base, np.result_type(ans)))
    return np.expand_dims(lb, axis) if np.ndim(lb) else lb


def logspace_start_grad(g, ans, start, stop, num=50, endpoint=True, base=10.0, axis=0):
    """Cotangent of ``start`` in ``np.logspace``: ``d y = y log(base) d
    linspace(start, stop)`` (one helper per end: each is bilinear in ``g`` and
    ``ans``, which a second derivative reads)."""
    return linspace_grads(g * ans * _log_base(base, axis, ans), start, stop, num, endpoint, False,
                          axis)[0]


def logspace_stop_grad(g, ans, start, stop, num=50, endpoint=True, base=10.0, axis=0):
    """Cotangent of ``stop`` in ``np.logspace``."""
    return linspace_grads(g * ans * _log_base(base, axis, ans), start, stop, num, endpoint, False,
                          axis)[1]


def logspace_tangent(dstart, dstop, ans, start, stop, num=50, endpoint=True, base=10.0, axis=0):
    """Tangent of ``np.logspace`` for tangents ``dstart``, ``dstop`` (0 for none)."""
    zero = np.zeros(np.broadcast_shapes(np.shape(start), np.shape(stop)), np.result_type(ans))
    return ans * _log_base(base, axis, ans) * np.linspace(zero + dstart, zero + dstop, num,
                                                     endpoint=endpoint, axis=axis)


# --- np.histogram: weights summed into bins, edges from min(a) and max(a) ---


class _Histogram:
    """The bins of one ``np.histogram`` call, as NumPy fills them."""

    def __init__(self, ans, a, bins, range, density, weights):
        self.hist, self.edges = ans
        self.a = np.ravel(a)
        n = len(self.hist)
        idx = np.searchsorted(self.edges, self.a, side="right") - 1
        idx[self.a == self.edges[-1]] = n - 1           # the last bin is closed
        self.keep = (idx >= 0) & (idx < n)
        self.idx = np.where(self.keep, idx, 0)
        self.w = None if weights is None else np.ravel(weights)
        self.density = bool(density)
        self.widths = np.diff(self.edges)
        self.total = np.sum(np.where(self.keep, 1.0 if self.w is None else self.w, 0))
        self.from_data = _from_data(self.a, bins, range)
        self.t = np.arange(n + 1) / n

    def extremes(self):
        return _extremes(self.a)


def _from_data(a, bins, range):
    """Whether the edges spread from the data's extremes (not given: ``bins``
    an array, or ``range=``)."""
    return np.ndim(bins) == 0 and range is None and np.size(a) > 0


def _extremes(a):
    """Where ``a`` is smallest and largest, ties sharing equally."""
    lo, hi = a == np.min(a), a == np.max(a)
    return lo / np.sum(lo), hi / np.sum(hi)


def bin_edges_grad(g, ans, a, bins=10, range=None):
    """Cotangent of ``a`` in ``np.histogram_bin_edges``: the edges ``lo + (hi -
    lo) k / n`` move with ``lo = min(a)``, ``hi = max(a)`` unless given."""
    flat = np.ravel(a)
    if not _from_data(flat, bins, range):
        return np.zeros(np.shape(a), _dtype(a, 1.0))
    t = np.arange(len(ans)) / (len(ans) - 1)
    lo, hi = _extremes(flat)
    out = lo * np.sum(g * (1 - t)) + hi * np.sum(g * t)
    return np.reshape(out, np.shape(a)).astype(_dtype(a, 1.0), copy=False)


def bin_edges_tangent(t, ans, a, bins=10, range=None):
    """Tangent of ``np.histogram_bin_edges`` for the tangent ``t`` of ``a``."""
    flat = np.ravel(a)
    if not _from_data(flat, bins, range):
        return np.zeros(np.shape(ans), ans.dtype)
    k = np.arange(len(ans)) / (len(ans) - 1)
    lo, hi = _extremes(flat)
    return (np.sum(lo * np.ravel(t)) * (1 - k) + np.sum(hi * np.ravel(t)) * k).astype(ans.dtype)


def histogram_grads(g, ans, a, bins=10, range=None, density=None, weights=None):
    """Cotangents of ``a`` and ``weights`` in ``np.histogram``: a weight gets
    its bin's ``g`` (``density=True``: of the normalised height); ``a`` only
    through the edges, which move with ``min(a)`` and ``max(a)`` when neither
    ``bins`` (an array) nor ``range`` fixes them."""
    h = _Histogram(ans, a, bins, range, density, weights)
    gh = np.asarray(result_part(g, ans, 0), np.result_type(h.hist, 1.0))
    ge = np.array(result_part(g, ans, 1), np.result_type(h.edges, 1.0))
    gw = gh
    if h.density:
        gw = gh / (h.total * h.widths) - np.sum(gh * h.hist) / h.total
        gd = -gh * h.hist / h.widths                  # the widths' cotangent
        ge[1:] += gd
        ge[:-1] -= gd
    w_bar = None if h.w is None else np.reshape(
        np.where(h.keep, gw[h.idx], 0).astype(_dtype(weights, 1.0), copy=False),
        np.shape(weights))
    a_bar = np.zeros(h.a.shape)
    if h.from_data:
        lo, hi = h.extremes()
        a_bar = lo * np.sum(ge * (1 - h.t)) + hi * np.sum(ge * h.t)
    return np.reshape(a_bar, np.shape(a)).astype(_dtype(a, 1.0), copy=False), w_bar


def histogram_tangent(ans, a, bins, range, density, weights, da, dw):
    """Tangent ``(hist, edges)`` of ``np.histogram`` for the tangents ``da``
    of ``a`` and ``dw`` of ``weights`` (None for none)."""
    h = _Histogram(ans, a, bins, range, density, weights)
    dtype = np.result_type(h.edges, 1.0)
    dedges = np.zeros(h.edges.shape, dtype)
    if da is not None and h.from_data:
        lo, hi = h.extremes()
        da = np.ravel(da)
        dedges = np.sum(lo * da) * (1 - h.t) + np.sum(hi * da) * h.t
    dcount = np.zeros(h.hist.shape, dtype)
    if dw is not None:
        dcount = np.bincount(h.idx[h.keep], np.ravel(dw)[h.keep], len(h.hist)).astype(dtype)
    if not h.density:
        return (dcount if h.w is not None else np.zeros_like(h.hist)), dedges.astype(h.edges.dtype)
    dtotal = np.sum(dcount)
    dhist = (dcount / (h.total * h.widths) - h.hist * dtotal / h.total
             - h.hist * np.diff(dedges) / h.widths)
    return dhist.astype(h.hist.dtype), dedges.astype(h.edges.dtype)


# --- the NumPy 2 gufuncs vecdot, matvec, vecmat ---


def _refuse_axes(name, axes):
    if axes is not None:
        from ..errors import NonDifferentiableError
        raise NonDifferentiableError(
            f"pullback cannot differentiate np.{name}(..., axes=...) yet.",
            hint="Move the core axes last with np.moveaxis and call it without axes=.")


def vecdot_lhs_grad(g, x1, x2, axis=-1, axes=None):
    """Cotangent of ``x1`` in ``np.vecdot(x1, x2) = sum(conj(x1) * x2, axis)``
    (JAX's convention: conjugation's cotangent is conjugated)."""
    _refuse_axes("vecdot", axes)
    m1 = np.moveaxis(x1, axis, -1)
    return np.moveaxis(unbroadcast(np.conj(np.expand_dims(g, -1) * np.moveaxis(x2, axis, -1)),
                                   m1), -1, axis)


def vecdot_rhs_grad(g, x1, x2, axis=-1, axes=None):
    """Cotangent of ``x2`` in ``np.vecdot(x1, x2)``."""
    _refuse_axes("vecdot", axes)
    m2 = np.moveaxis(x2, axis, -1)
    return np.moveaxis(unbroadcast(np.expand_dims(g, -1) * np.conj(np.moveaxis(x1, axis, -1)),
                                   m2), -1, axis)


def matvec_lhs_grad(g, x1, x2, axes=None):
    """Cotangent of ``x1`` in ``np.matvec(x1, x2)``: ``(..., m, n) (..., n) -> (..., m)``."""
    _refuse_axes("matvec", axes)
    return unbroadcast(np.expand_dims(g, -1) * np.expand_dims(x2, -2), x1)


def matvec_rhs_grad(g, x1, x2, axes=None):
    """Cotangent of ``x2`` in ``np.matvec(x1, x2)``."""
    _refuse_axes("matvec", axes)
    return unbroadcast(np.sum(np.expand_dims(g, -1) * x1, axis=-2), x2)


def vecmat_lhs_grad(g, x1, x2, axes=None):
    """Cotangent of ``x1`` in ``np.vecmat(x1, x2) = conj(x1) @ x2``: ``(..., n)
    (..., n, m) -> (..., m)``."""
    _refuse_axes("vecmat", axes)
    return unbroadcast(np.conj(np.sum(np.expand_dims(g, -2) * x2, axis=-1)), x1)


def vecmat_rhs_grad(g, x1, x2, axes=None):
    """Cotangent of ``x2`` in ``np.vecmat(x1, x2)``."""
    _refuse_axes("vecmat", axes)
    return unbroadcast(np.expand_dims(np.conj(x1), -1) * np.expand_dims(g, -2), x2)


# --- np.unique and the set operations: each value from its first occurrence ---
#
# JAX's convention (jnp.unique(..., size=n) and the set operations built on it,
# a stable sort then the first of each run of equal values): a value's
# cotangent goes to its first occurrence, in ar1 before ar2.


def _first_places(values, pool, equal_nan):
    """The index in ``pool`` (1-d) of the first element equal to each of
    ``values`` (1-d, each present); NaNs unequal to each other (``equal_nan``
    False) are matched in order."""
    u, first = np.unique(pool, return_index=True, equal_nan=equal_nan)
    pos = np.searchsorted(u, values)
    nan = np.isnan(values)
    if np.any(nan):
        pos[nan] = np.searchsorted(u, np.nan) + (np.cumsum(nan)[nan] - 1 if not equal_nan else 0)
    return first[pos]


def _pool(arrays):
    return np.concatenate([np.ravel(x) for x in arrays])


def _values(g, ans):
    """The values of a set result and their cotangent (a tuple result holds
    the values first, then integers)."""
    if isinstance(ans, tuple):
        return result_part(g, ans, 0), ans[0]
    return g, ans


def selection_grads(g, ans, arrays, equal_nan=True):
    """Cotangents of ``arrays`` for the values ``ans`` (1-d) taken from them:
    ``g`` added at each value's first occurrence, ``arrays[0]`` first."""
    g, values = _values(g, ans)
    pool = _pool(arrays)
    flat = np.zeros(pool.shape, _dtype(g))
    flat[_first_places(np.ravel(values), pool, equal_nan)] = np.ravel(g)
    out, start = [], 0
    for x in arrays:
        out.append(np.reshape(flat[start:start + np.size(x)], np.shape(x)))
        start += np.size(x)
    return tuple(out)


def with_values(ans, dvalues):
    """``ans`` (an array of values, or a tuple with the values first and
    integer results after) with the values replaced by ``dvalues``."""
    if not isinstance(ans, tuple):
        return dvalues
    rest = [np.zeros_like(x) for x in ans[1:]]
    return type(ans)(dvalues, *rest) if hasattr(ans, "_fields") else (dvalues, *rest)


def selection_tangent(ans, arrays, which, t, equal_nan=True):
    """Tangent of the values ``ans`` taken from ``arrays`` for the tangent
    ``t`` of ``arrays[which]`` (the others held)."""
    values = _values(None, ans)[1]
    pool = _pool(arrays)
    dpool = np.zeros(pool.shape, _dtype(t, np.real(values)))
    start = sum(np.size(x) for x in arrays[:which])
    dpool[start:start + np.size(arrays[which])] = np.ravel(t)
    return with_values(ans, dpool[_first_places(np.ravel(values), pool, equal_nan)])


def unique_grad(g, ans, ar, axis=None, equal_nan=True, sorted=True):
    """Cotangent of ``ar`` in ``np.unique`` (its values; the index, inverse and
    count results carry none)."""
    if axis is None:
        return selection_grads(g, ans, (ar,), equal_nan)[0]
    g = _values(g, ans)[0]
    first = _first_slices(ar, axis, equal_nan, sorted)
    out = np.zeros(np.shape(ar), _dtype(g))
    np.moveaxis(out, axis, 0)[first] = np.moveaxis(g, axis, 0)
    return out


def _first_slices(ar, axis, equal_nan, sorted):
    kw = {} if sorted is True else {"sorted": sorted}
    return np.unique(ar, return_index=True, axis=axis, equal_nan=equal_nan, **kw)[1]


def unique_tangent(t, ans, ar, axis=None, equal_nan=True, sorted=True):
    """Tangent of ``np.unique``'s result for the tangent ``t`` of ``ar``."""
    if axis is None:
        return selection_tangent(ans, (ar,), 0, t, equal_nan)
    return with_values(ans, np.take(t, _first_slices(ar, axis, equal_nan, sorted), axis=axis))


def setdiff1d_grad(g, ans, ar1, ar2, assume_unique=False):
    """Cotangent of ``ar1`` in ``np.setdiff1d`` (``assume_unique``: the kept
    elements in order, repeats too; else each value's first occurrence)."""
    if not assume_unique:
        return selection_grads(g, ans, (ar1,))[0]
    flat = np.zeros(np.size(ar1), _dtype(g))
    flat[~np.isin(np.ravel(ar1), ar2)] = g
    return np.reshape(flat, np.shape(ar1))


def setdiff1d_tangent(t, ans, ar1, ar2, assume_unique=False):
    """Tangent of ``np.setdiff1d`` for the tangent ``t`` of ``ar1``."""
    if not assume_unique:
        return selection_tangent(ans, (ar1,), 0, t)
    return np.ravel(t)[~np.isin(np.ravel(ar1), ar2)]
