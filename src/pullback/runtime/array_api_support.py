"""Helpers of the rules for NumPy's array-API names (``rules.numpy_array_api``):
``np.linalg.vector_norm`` (a vector norm over any axes, which
``np.linalg.norm`` would read as a matrix norm for two), ``matrix_norm``'s
tangent and ``vecdot`` (which conjugates its first argument).

>>> vector_norm_grad(1.0, 5.0, np.array([[3.0, 0.0], [0.0, 4.0]]))   # |x| over every axis
array([[0.6, 0. ],
       [0. , 0.8]])
"""
from __future__ import annotations

import numpy as np

from .core import unbroadcast
from .linalg_support import norm_grad

__all__ = ["vector_norm_grad", "vector_norm_jvp", "matrix_norm_jvp", "vecdot_grads"]


def _as_vectors(x, axis):
    """``x`` with the axes of ``axis`` (None: all) moved last and joined,
    and how to undo it."""
    x = np.asarray(x)
    axes = tuple(range(x.ndim)) if axis is None else tuple(
        int(a) % x.ndim for a in np.atleast_1d(axis))
    last = tuple(range(x.ndim - len(axes), x.ndim))
    moved = np.moveaxis(x, axes, last)
    flat = np.reshape(moved, moved.shape[:x.ndim - len(axes)] + (-1,))
    return flat, (moved.shape, axes, last)


def _unvectors(c, undo):
    shape, axes, last = undo
    return np.moveaxis(np.reshape(c, shape), last, axes)


def vector_norm_grad(g, ans, x, axis=None, keepdims=False, ord=2):
    """Cotangent of ``x`` in ``np.linalg.vector_norm(x, axis, keepdims, ord)``:
    ``np.linalg.norm``'s for the vectors along ``axis`` (its conventions:
    ties share, 0 at 0)."""
    flat, undo = _as_vectors(x, axis)
    rest = flat.shape[:-1]
    c = norm_grad(np.reshape(g, rest), np.reshape(ans, rest), flat, ord, -1)
    return _unvectors(c, undo)


def vector_norm_jvp(t, ans, x, axis=None, keepdims=False, ord=2):
    """Tangent of ``np.linalg.vector_norm``: ``Re <cotangent of 1, t>`` along
    each vector (the norm is real)."""
    flat, undo = _as_vectors(x, axis)
    c = norm_grad(np.ones(flat.shape[:-1]), np.reshape(ans, flat.shape[:-1]), flat, ord, -1)
    tv, _ = _as_vectors(np.broadcast_to(t, np.shape(x)), axis)
    out = np.real(np.sum(c * tv, axis=-1))
    return np.reshape(out, np.shape(ans)).astype(np.result_type(ans), copy=False)


def matrix_norm_jvp(t, ans, x, keepdims=False, ord="fro"):
    """Tangent of ``np.linalg.matrix_norm``: ``Re <cotangent of 1, t>`` over
    each matrix (the norm is real)."""
    c = norm_grad(np.ones(np.shape(ans)), ans, x, ord, (-2, -1), keepdims)
    out = np.real(np.sum(c * t, axis=(-2, -1)))
    return np.reshape(out, np.shape(ans)).astype(np.result_type(ans), copy=False)


def vecdot_grads(g, x1, x2, axis=-1):
    """Cotangents of ``x1`` and ``x2`` in ``np.vecdot(x1, x2, axis)`` =
    ``sum(conj(x1) * x2, axis)``: ``conj(g x2)`` and ``g conj(x1)`` (the
    unconjugated convention; ``x1``'s is not holomorphic), unbroadcast."""
    ge = np.expand_dims(g, axis)
    return unbroadcast(np.conj(ge * x2), x1), unbroadcast(ge * np.conj(x1), x2)
