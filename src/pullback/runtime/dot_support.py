"""Cotangents of the dot products, called by their rules: ``np.dot``,
``a @ b`` (``np.matmul``) and ``np.inner``, for each of the two factors
(split from ``rule_support``).

A product is bilinear, so each factor's cotangent is ``g`` contracted with
the other factor, unconjugated (JAX's convention); vectors, matrices and
stacks of matrices alike, summed over the batch axes a factor was broadcast
along.  For ``y = a @ b`` with ``a`` of shape (2, 3) and ``b`` of shape (3,):

>>> a, b = np.ones((2, 3)), np.array([1., 2., 3.])
>>> matmul_lhs_grad(np.array([1., 10.]), a, b)
array([[ 1.,  2.,  3.],
       [10., 20., 30.]])
>>> matmul_rhs_grad(np.array([1., 10.]), a, b)
array([11., 11., 11.])
"""
from __future__ import annotations

import numpy as np

from .core import unbroadcast

__all__ = ["dot_lhs_grad", "dot_rhs_grad", "matmul_lhs_grad", "matmul_rhs_grad",
           "inner_lhs_grad", "inner_rhs_grad"]


def dot_lhs_grad(g, a, b):
    """Cotangent of ``a`` in ``np.dot(a, b)`` (any ranks; no conjugation)."""
    na, nb = np.ndim(a), np.ndim(b)
    if na == 0:
        return np.sum(g * b)
    if nb == 0:
        return g * b
    if nb == 1:
        return np.multiply.outer(g, b)
    if na == 2 and nb == 2:
        return np.dot(g, np.transpose(b))
    return np.tensordot(g, b, axes=(list(range(na - 1, np.ndim(g))),
                                    list(range(nb - 2)) + [nb - 1]))


def dot_rhs_grad(g, a, b):
    """Cotangent of ``b`` in ``np.dot(a, b)`` (any ranks; no conjugation)."""
    na, nb = np.ndim(a), np.ndim(b)
    if nb == 0:
        return np.sum(g * a)
    if na == 0:
        return g * a
    lead = list(range(na - 1))
    if nb == 1:
        return np.tensordot(g, a, axes=(lead, lead))
    if na == 2 and nb == 2:
        return np.dot(np.transpose(a), g)
    return np.moveaxis(np.tensordot(a, g, axes=(lead, lead)), 0, -2)


def matmul_lhs_grad(g, a, b):
    """Cotangent of ``a`` in ``a @ b``, summed over broadcast batch axes."""
    na, nb = np.ndim(a), np.ndim(b)
    if na == 1 and nb == 1:
        return g * b
    if nb == 1:
        c = np.expand_dims(g, -1) * b
    elif na == 1:
        c = np.matmul(b, np.expand_dims(g, -1))[..., 0]
    else:
        c = np.matmul(g, np.swapaxes(b, -1, -2))
    return unbroadcast(c, a)


def matmul_rhs_grad(g, a, b):
    """Cotangent of ``b`` in ``a @ b``, summed over broadcast batch axes."""
    na, nb = np.ndim(a), np.ndim(b)
    if na == 1 and nb == 1:
        return g * a
    if na == 1:
        c = np.expand_dims(a, -1) * np.expand_dims(g, -2)
    elif nb == 1:
        c = np.matmul(np.swapaxes(a, -1, -2), np.expand_dims(g, -1))[..., 0]
    else:
        c = np.matmul(np.swapaxes(a, -1, -2), g)
    return unbroadcast(c, b)


def inner_lhs_grad(g, a, b):
    """Cotangent of ``a`` in ``np.inner(a, b)`` (sum over the last axes)."""
    na, nb = np.ndim(a), np.ndim(b)
    if na == 0:
        return np.sum(g * b)
    if nb == 0:
        return g * b
    return np.tensordot(g, b, axes=(list(range(na - 1, np.ndim(g))),
                                    list(range(nb - 1))))


def inner_rhs_grad(g, a, b):
    """Cotangent of ``b`` in ``np.inner(a, b)`` (sum over the last axes)."""
    na, nb = np.ndim(a), np.ndim(b)
    if nb == 0:
        return np.sum(g * a)
    if na == 0:
        return g * a
    lead = list(range(na - 1))
    return np.tensordot(g, a, axes=(lead, lead))
