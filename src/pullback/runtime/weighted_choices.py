"""Derivatives of the arguments of ``np.select`` and ``np.average`` that
their rules once took as constants: ``default`` (what no condition picks)
and ``weights`` (a weighted mean is a ratio of sums, each weight in both).

>>> import numpy as np
>>> float(select_default_grad(np.ones(3), [np.array([True, False, False])], 0.0))
2.0
>>> average_weights_grad(1.0, 2.0, np.array([1.0, 3.0]), None, np.array([1.0, 1.0]))
array([-0.5,  0.5])
"""
from __future__ import annotations

import numpy as np

from .core import unbroadcast, unreduce

__all__ = ["select_default_grad", "select_default_jvp", "average_weights_grad",
           "average_weights_jvp"]


def _none_true(condlist):
    """Where no condition of ``np.select`` holds: where the default is taken."""
    taken = False
    for c in condlist:
        taken = np.logical_or(taken, c)
    return np.logical_not(taken)


def select_default_grad(g, condlist, default):
    """Cotangent of ``np.select``'s ``default``: ``g`` where no condition
    holds, summed to the default's shape."""
    return unbroadcast(np.where(_none_true(condlist), g, 0), default)


def select_default_jvp(t, condlist, ans):
    """The default's part of ``np.select``'s tangent."""
    return np.broadcast_to(np.where(_none_true(condlist), t, 0), np.shape(ans)).astype(
        np.result_type(ans, t), copy=False)


def weights_like(weights, a, axis):
    """The weights broadcast to ``a``'s shape, as np.average does (a 1-D
    weight vector runs along ``axis``)."""
    w = np.asarray(weights)
    if w.shape != a.shape:
        w = np.reshape(w, [-1 if d == axis % a.ndim else 1 for d in range(a.ndim)])
    return np.broadcast_to(w, a.shape)


def _to_weights(d, weights, a, axis):
    """``d`` (``a``'s shape) summed to the weights' own shape."""
    w = np.asarray(weights)
    if w.shape == a.shape:
        return d
    return np.sum(d, axis=tuple(k for k in range(a.ndim) if k != axis % a.ndim))


def average_weights_grad(g, ans, a, axis=None, weights=None, returned=False, keepdims=False):
    """Cotangent of ``np.average``'s ``weights``: the average is
    sum(w a) / sum(w), so each weight moves it by (a - average) / sum(w);
    with ``returned``, the sum of the weights (the second result) adds its
    cotangent to every weight of its slice (None without weights)."""
    if weights is None:
        return None
    a = np.asarray(a)
    w = weights_like(weights, a, axis)
    total = np.sum(w, axis=axis, keepdims=True)
    mean = np.sum(w * a, axis=axis, keepdims=True) / total
    g0 = g[0] if returned else g
    d = unreduce(g0, a, axis, keepdims) * (a - mean) / total
    if returned:
        d = d + unreduce(g[1], a, axis, keepdims)
    return _to_weights(d, weights, a, axis)


def average_weights_jvp(t, ans, a, axis=None, weights=None, returned=False, keepdims=False):
    """The weights' part of ``np.average``'s tangent (``t``: their tangent)."""
    if weights is None:
        return None
    a = np.asarray(a)
    w = weights_like(weights, a, axis)
    tw = weights_like(t, a, axis)
    total = np.sum(w, axis=axis, keepdims=True)
    mean = np.sum(w * a, axis=axis, keepdims=True) / total
    avg_dot = np.sum(tw * (a - mean), axis=axis, keepdims=keepdims) / np.sum(
        w, axis=axis, keepdims=keepdims)
    if returned:
        return (avg_dot, np.broadcast_to(np.sum(tw, axis=axis, keepdims=keepdims),
                                         np.shape(ans[1])))
    return avg_dot
