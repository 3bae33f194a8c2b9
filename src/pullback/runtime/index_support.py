"""Cotangents of reads by index, called by their rules: ``a[index]``
(arrays, lists, tuples, dicts, namedtuples, dataclasses and the user's
objects), ``np.take`` and ``a.item(...)`` (split from ``rule_support``).

Each scatters ``g`` into fresh zeros shaped like what was read, repeated
integer indices accumulating (``np.add.at``); a structure gets the same
structure back, zeros (or ``zeros_like`` of the item) where nothing was
read.  For ``y = a[[0, 0, 2]]`` of a 4-element ``a``:

>>> unindex(np.array([1., 2., 3.]), np.zeros(4), [0, 0, 2])
array([3., 0., 3., 0.])
>>> unindex(5.0, (1.0, np.ones(2)), 0)
(5.0, array([0., 0.]))
"""
from __future__ import annotations

import numpy as np

from .backends import add_repeated, is_foreign, set_basic, zeros_for
from .core import FieldGrads, Meta, realify, zeros_like
from .structures import attributes_of, is_instance, is_structure

__all__ = ["unindex", "take_grad", "unitem"]


def _same_kind(seq, parts):
    return list(parts) if isinstance(seq, list) else tuple(parts)



def _is_basic_index(index):
    items = index if isinstance(index, tuple) else (index,)
    return all(i is None or i is Ellipsis
               or (isinstance(i, (int, np.integer, slice))
                   and not isinstance(i, (bool, np.bool_)))
               for i in items)


def unindex(g, a, index):
    """Cotangent of ``a[index]``: ``g`` scattered into zeros shaped like ``a``.

    Repeated integer indices accumulate (``np.add.at``).  Lists, tuples and
    dicts get the same structure with zeros elsewhere.
    """
    out = None
    if is_structure(a) and not isinstance(a, (list, dict)) \
            and not (isinstance(a, tuple) and not hasattr(a, "_fields")):
        out = FieldGrads.zeros(a)          # a namedtuple or a dataclass
    elif is_instance(a):                   # an object of the user's class: by attribute
        out = FieldGrads((k, zeros_like(v)) for k, v in attributes_of(a).items())
        out.of = type(a)
    if out is not None:
        keys = out.keys_at(index)
        for k, gk in zip(keys, g if isinstance(index, slice) else [g]):
            out[k] = gk
        return out
    if isinstance(a, (list, tuple)):
        out = [zeros_like(x) for x in a]
        if isinstance(index, slice):
            for i, gi in zip(range(*index.indices(len(a))), g):
                out[i] = gi
        else:
            out[index] = g
        return _same_kind(a, out)
    if isinstance(a, dict):
        out = {k: zeros_like(x) for k, x in a.items()}
        out[index] = g
        return out
    dtype = a.dtype if isinstance(a, Meta) else np.result_type(a, 0.0)
    foreign = type(a) is not np.ndarray and is_foreign(a)
    out = zeros_for(a, dtype) if foreign else np.zeros(np.shape(a), dtype=dtype)
    g = realify(g, out)           # projected as an in-place add would project it
    if foreign:                         # Dask, CuPy: no np.add.at, no None in Dask's index
        if _is_basic_index(index) or (isinstance(index, np.ndarray) and index.dtype == bool):
            set_basic(out, index, g)
        else:
            add_repeated(out, index, g)
    elif _is_basic_index(index) or (isinstance(index, np.ndarray) and index.dtype == bool):
        out[index] = g
    else:
        np.add.at(out, index, g)
    return out


def take_grad(g, a, indices, axis=None):
    """Cotangent of ``np.take(a, indices, axis)``: ``g`` added back at the
    taken positions (repeats accumulate)."""
    dtype = a.dtype if isinstance(a, Meta) else np.result_type(a, 0.0)
    if type(a) is not np.ndarray and is_foreign(a):
        return _take_grad_foreign(g, a, indices, axis, dtype)
    out = np.zeros(np.shape(a), dtype=dtype)
    g = realify(g, out)
    if axis is None:
        np.add.at(out.reshape(-1), indices, g)
        return out
    axis = axis % out.ndim
    k = np.ndim(indices)
    np.add.at(np.moveaxis(out, axis, 0), indices,
              np.moveaxis(g, list(range(axis, axis + k)), list(range(k))))
    return out


def _take_grad_foreign(g, a, indices, axis, dtype):
    """``take_grad`` for a Dask or CuPy ``a``: the taken axis moved first,
    the cotangent added there (``backends.add_repeated``), and moved back."""
    indices = np.asarray(indices) if isinstance(indices, (list, int)) else indices
    if axis is None:
        out = zeros_for(a, dtype, (int(np.prod(np.shape(a))),))
        add_repeated(out, indices, realify(g, out))
        return np.reshape(out, np.shape(a))
    axis = axis % np.ndim(a)
    k = np.ndim(indices)
    shape = np.shape(a)
    out = zeros_for(a, dtype, (shape[axis],) + shape[:axis] + shape[axis + 1:])
    add_repeated(out, indices, realify(np.moveaxis(g, list(range(axis, axis + k)),
                                                   list(range(k))), out))
    return np.moveaxis(out, 0, axis)


def unitem(g, a, args):
    """Cotangent of ``a.item(*args)``: ``g`` at that element, zeros elsewhere."""
    out = np.zeros(np.shape(a), dtype=np.result_type(a, g))
    if len(args) == 1 and isinstance(args[0], tuple):
        args = args[0]
    if len(args) == 0:
        out[(0,) * out.ndim] = g
    elif len(args) == 1:
        out[np.unravel_index(args[0], out.shape)] = g
    else:
        out[args] = g
    return out
