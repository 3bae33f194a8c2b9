"""Jacobians from tangents (``pb.jacfwd``): pytree leaves, and one Jacobian
per pair of an output leaf and an input leaf, from the tangent outputs of one
``jvp`` per input element, in JAX's layout (the output's structure outside,
the inputs' inside; an output of shape ``S`` and an input of shape ``T``
give a Jacobian of shape ``S + T``).

>>> import numpy as np
>>> stack_columns(np.zeros(2), [np.array([1.0, 0.0]), np.array([0.0, 2.0])], (2,))
array([[1., 0.],
       [0., 2.]])
"""
from __future__ import annotations

import numpy as np

from .. import runtime

__all__ = ["leaves", "with_leaf", "at", "stack_columns", "rebuild"]


def leaves(x, path=()):
    """``(path, leaf)`` for every leaf of the pytree ``x`` (paths: keys)."""
    if runtime.is_structure(x):
        for k, v in runtime.fields_of(x):
            yield from leaves(v, path + (k,))
    else:
        yield path, x


def with_leaf(tree, path, value):
    """``tree`` with the leaf at ``path`` replaced by ``value`` (a new tree)."""
    if not path:
        return value
    k = path[0]
    fields = dict(runtime.fields_of(tree))
    fields[k] = with_leaf(fields[k], path[1:], value)
    return runtime.rebuild_like(tree, fields)


def at(tree, path):
    """The leaf of ``tree`` at ``path``."""
    for k in path:
        tree = dict(runtime.fields_of(tree))[k]
    return tree


def stack_columns(out, cols, in_shape):
    """Tangents of the output leaf ``out``, one per input element, as the
    Jacobian of shape ``out.shape + in_shape``."""
    stacked = np.stack([np.asarray(c) for c in cols], axis=-1)
    jac = stacked.reshape(np.shape(out) + tuple(in_shape))
    if not np.ndim(jac) and not isinstance(out, np.ndarray):
        return jac[()]
    return jac


def rebuild(arg, pieces):
    """``arg``'s structure with each ``(path, value)`` of ``pieces`` at its path."""
    if len(pieces) == 1 and pieces[0][0] == ():
        return pieces[0][1]
    tree = arg
    for path, jac in pieces:
        tree = with_leaf(tree, path, jac)
    return tree
