"""Owned gradient buffers, indexed adds, and writes into arrays."""
from __future__ import annotations

import numpy as np

from .core import FieldGrads, Meta, add_cotangents, meta, realify, unbroadcast, zeros_like
from .structures import attributes_of, fields_of, is_instance, is_structure
from .backends import add_repeated, is_foreign, zeros_for
from .dict_support import ChainGrads
from .opaque import is_library_object
from .index_support import _is_basic_index

__all__ = ["owned_copy", "add_into", "index_add", "owned_zeros", "snapshot", "written_grad",
           "zeroed", "distinct_indices", "index_sub", "shape_of", "unbroadcast_to", "zeros_shaped",
           "owned_items"]

def owned_copy(g):
    """A copy of a shared gradient that the adjoint may then update in place."""
    if isinstance(g, list) or (isinstance(g, tuple) and not hasattr(g, "_fields")):
        return [owned_copy(v) for v in g]
    if is_structure(g):
        kind = dict if type(g) is dict else FieldGrads
        return kind((k, owned_copy(v)) for k, v in fields_of(g))
    if isinstance(g, np.ndarray):
        return np.array(g, copy=True)
    return g.copy() if is_foreign(g) else g


def owned_items(g):
    """``owned_copy`` of the gradient of a container (a list the adjoint pops
    from): an array, which a reduction's rule gives a list (``np.sum(items)``),
    becomes the list of its rows.

    >>> owned_items(np.array([1.0, 2.0]))
    [np.float64(1.0), np.float64(2.0)]
    """
    return [owned_copy(v) for v in g] if isinstance(g, np.ndarray) else owned_copy(g)


def add_into(a, b):
    """``add_cotangents(a, b)`` into ``a`` where ``a`` is a dict the adjoint
    owns (``reverse.accumulate``): ``b``'s entries added to ``a``'s, O(entries
    of ``b``) instead of a copy of ``a``.  The entries themselves are never
    changed, only replaced; any other ``a`` gets the sum out of place."""
    if type(a) not in (dict, ChainGrads) or not isinstance(b, dict):
        return add_cotangents(a, b)
    for k, v in b.items():
        a[k] = add_cotangents(a.get(k), v)
    return a


def index_add(buffer, index, g):
    """``buffer[index] += g`` with NumPy's read semantics: repeated integer
    indices accumulate (unbuffered), a complex ``g`` adds its real part to a
    real buffer, and ``g`` is rounded to the buffer's dtype first.  Lists of
    gradients (the gradient of a list) are updated element by element."""
    if type(buffer) is np.ndarray and type(g) is np.ndarray and g.dtype == buffer.dtype \
            and type(index) in (slice, int):
        buffer[index] += g           # the common case: a slice of a float array
        return
    if isinstance(buffer, FieldGrads):
        keys = buffer.keys_at(index)
        for k, gk in zip(keys, g if isinstance(index, slice) else [g]):
            buffer[k] = add_cotangents(buffer.get(k), gk)
        return
    if isinstance(buffer, dict):
        buffer[index] = add_cotangents(buffer.get(index), g)
        return
    if isinstance(buffer, list):
        if isinstance(index, slice):
            for i, gi in zip(range(*index.indices(len(buffer))), g):
                buffer[i] = add_cotangents(buffer[i], gi)
        else:
            buffer[index] = add_cotangents(buffer[index], g)
        return
    g = realify(g, buffer)
    if np.result_type(g) != buffer.dtype:
        g = g.astype(buffer.dtype) if is_foreign(g) else np.asarray(g).astype(buffer.dtype)
    if _is_basic_index(index) or (isinstance(index, np.ndarray) and index.dtype == bool):
        buffer[index] += g
    elif type(buffer) is not np.ndarray and is_foreign(buffer):
        add_repeated(buffer, index, g)       # Dask, CuPy: no np.add.at
    else:
        _add_repeated(buffer, index, g)


def index_sub(buffer, index, g):
    """``index_add(buffer, index, -g)`` without making ``-g``: ``x - g`` is
    ``x + (-g)`` bit for bit."""
    if type(buffer) is np.ndarray and type(g) is np.ndarray and g.dtype == buffer.dtype \
            and type(index) in (slice, int):
        buffer[index] -= g
        return
    index_add(buffer, index, -g)


def _add_repeated(buffer, index, g):
    """``np.add.at(buffer, index, g)``, rounded as the out-of-place path
    rounds it (``buffer + unindex(g)``): the values for one position are
    summed first, then added once, so both paths agree bit for bit."""
    index = np.asarray(index) if isinstance(index, list) else index
    if isinstance(index, np.ndarray) and index.dtype.kind in "iu" and buffer.ndim >= 1:
        flat = index.ravel() % buffer.shape[0]
        where, inverse = np.unique(flat, return_inverse=True)
        g = np.broadcast_to(g, index.shape + buffer.shape[1:]).reshape(
            (flat.size,) + buffer.shape[1:])
        sums = np.zeros((where.size,) + buffer.shape[1:], dtype=buffer.dtype)
        np.add.at(sums, inverse, g)
        buffer[where] += sums
        return
    part = np.zeros_like(buffer)
    np.add.at(part, index, g)
    buffer += part


def distinct_indices(r):
    """Whether the integers of the range ``r`` index distinct elements of any
    axis they are all valid for: all of one sign (``-1`` and ``n - 1`` are one
    element).  An adjoint loop over ``r`` whose buffer is fresh then stores
    each element once, ``x_bar[i] = g + 0.0``, rather than adding to it.

    >>> distinct_indices(range(5, -1, -1)), distinct_indices(range(-1, 3))
    (True, False)
    """
    if not r:
        return True
    lo, hi = (r[0], r[-1]) if r.step > 0 else (r[-1], r[0])
    return lo >= 0 or hi < 0


# A loop's tape keeps, of a NumPy array the adjoint reads only for its shape,
# the shape itself (``x.shape``, no call; ``meta(x)`` for any other value),
# and the adjoint reads it through these two:

def unbroadcast_to(g, shape):
    """``unbroadcast(g, x)`` given what the tape kept of ``x``."""
    if type(shape) is tuple:
        if type(g) is np.ndarray and g.shape == shape:
            return g
        return unbroadcast(g, Meta(shape, None))
    return unbroadcast(g, shape)


def zeros_shaped(shape):
    """``owned_zeros(x)`` of a float64 ``x``, given what the tape kept of it."""
    if type(shape) is tuple:
        return np.zeros(shape)
    return owned_zeros(shape)


def shape_of(x):
    """What a tape keeps of an array read for its shape alone (the generated
    code writes it inline: ``x.shape if type(x) is ndarray else meta(x)``)."""
    return x.shape if type(x) is np.ndarray else meta(x)


def owned_zeros(x):
    """A zero gradient buffer for ``x`` that may be updated in place: an array
    of ``x``'s shape and dtype, a list for a list or tuple, a dict for a dict,
    a namedtuple or a dataclass (project gives it ``x``'s type at the end)."""
    t = type(x)
    if t is Meta:               # array code: the common cases first
        return np.zeros(x.shape, dtype=x.dtype)
    if t is np.ndarray and x.dtype.kind in "fc":
        return np.zeros(x.shape, dtype=x.dtype)
    if isinstance(x, list) or (isinstance(x, tuple) and not hasattr(x, "_fields")):
        return [zeros_like(v) for v in x]
    if isinstance(x, dict):
        return {k: zeros_like(v) for k, v in x.items()}
    if is_structure(x):
        return FieldGrads.zeros(x)
    if is_instance(x):          # an object of the user's class: by attribute
        out = FieldGrads((k, zeros_like(v)) for k, v in attributes_of(x).items())
        out.of = t
        return out
    if isinstance(x, Meta):
        return np.zeros(x.shape, dtype=x.dtype)
    if type(x) is not np.ndarray and is_foreign(x):
        return zeros_for(x)                  # Dask, CuPy: of x's array type
    if is_library_object(x) or isinstance(x, (str, bytes)):
        # made by a library call: by attribute (runtime.opaque); a string: none
        return FieldGrads()
    return np.zeros(np.shape(x), dtype=np.result_type(x, 0.0))


# --- writes into arrays ---

def snapshot(x):
    """The value of ``x`` now, safe from later writes into the array."""
    if isinstance(x, np.ndarray):
        return np.array(x, copy=True)
    return x.copy() if is_foreign(x) else x


def written_grad(g, index, value, into=None, every=False):
    """The gradient of the value written by ``y[index] = value`` (or ``+=``)
    from ``g``, the gradient of ``y`` after the write: ``g[index]``, where a
    position written twice counts only for its last write (NumPy's buffered
    semantics), or for every write with ``every=True`` (``np.add.at``);
    summed back onto ``value``'s shape.  ``into`` (``y``, or its ``meta``,
    where its dtype was not known when transformed): an integer or boolean
    ``y`` casts the value, which then gets no gradient."""
    if into is not None and np.dtype(getattr(into, "dtype", float)).kind in "biu":
        return zeros_like(value)
    part = np.array(g[index], copy=True) if isinstance(g, np.ndarray) \
        else g[index].copy() if is_foreign(g) else g
    if not every and not _is_basic_index(index) and not (
            isinstance(index, np.ndarray) and index.dtype == bool):
        part = part * _last_writes(np.shape(g), index, np.shape(part))
    return unbroadcast(part, value)


def _last_writes(shape, index, out_shape):
    """1 where an element of an integer-array index is the last to write its
    position, else 0 (shaped to broadcast against ``g[index]``)."""
    parts = index if isinstance(index, tuple) else (index,)
    if any(isinstance(p, slice) or p is None or p is Ellipsis for p in parts):
        raise NotImplementedError(
            "pullback differentiates writes with repeated indices only when every "
            "index is an integer or an integer array (no slices mixed in).")
    arrays = np.broadcast_arrays(*[np.asarray(p) for p in parts])
    flat = np.ravel_multi_index([a % n for a, n in zip(arrays, shape)],
                                shape[:len(arrays)]).ravel()
    rev = flat[::-1]
    _, first = np.unique(rev, return_index=True)
    keep = np.zeros(rev.size, dtype=bool)
    keep[first] = True
    mask = keep[::-1].reshape(arrays[0].shape)
    return mask.reshape(mask.shape + (1,) * (len(out_shape) - mask.ndim))


def zeroed(g, index):
    """A copy of ``g`` with ``g[index]`` set to zero (the out-of-place form of
    ``g[index] = 0``)."""
    out = g.copy() if is_foreign(g) else np.array(g, copy=True)
    out[index] = 0
    return out
