"""Projection onto the primal, zeros and reductions.

Every cotangent is projected onto its primal's space (``project``): its
shape (``unbroadcast``), realness (``realify``), dtype and type, field by
field for a structure or an object (``runtime.structures``).  ``zeros_like``
is a zero cotangent of any primal, ``unreduce`` a reduction's cotangent
broadcast back, ``add_cotangents`` a sum of two that may be containers.

>>> project(np.array([1.0 + 2.0j, 3.0]), np.zeros(2)), project(np.float32(2.5), 1.0)
(array([1., 3.]), 2.5)
"""
from __future__ import annotations

import copy as copy_module
import dataclasses
import functools
import numbers
import struct
import types

import numpy as np

from .backends import is_foreign, to_namespace
from .structures import (_NO_GRADIENT, _computed_attribute, _entry, _held, attributes_of,
                         fields_of, is_instance, is_structure, rebuild_like)

__all__ = ["unbroadcast", "project", "zeros_like", "unreduce", "realify", "pack_like",
           "add_cotangents", "meta", "Meta", "FieldGrads", "join_grads", "repeat_grads",
           "per_output", "updatable"]


def join_grads(g, x, y):
    """Cotangents of ``x`` and ``y`` for ``x + y``: two lists or tuples joined
    (``shape + (k,)``) take their slices of ``g``; numbers, ``g`` unbroadcast."""
    if type(g) is float and type(x) is float and type(y) is float:   # scalar code
        return g, g
    if isinstance(x, (tuple, list)) and isinstance(y, (tuple, list)):
        parts = list(g) if g is not None else [None] * (len(x) + len(y))
        return pack_like(x, parts[:len(x)]), pack_like(y, parts[len(x):])
    return unbroadcast(g, x), unbroadcast(g, y)


def repeat_grads(g, x, y):
    """Cotangents of ``x`` and ``y`` for ``x * y``: a list or tuple repeated
    ``n`` times (``[v] * n``) gets the sum of its copies' cotangents."""
    for seq, n, first in ((x, y, True), (y, x, False)):
        if isinstance(seq, (tuple, list)) and isinstance(n, numbers.Integral):
            parts = list(g) if g is not None else []
            m = len(seq)
            total = [None] * m
            for k, p in enumerate(parts):
                total[k % m] = add_cotangents(total[k % m], p)
            ct = pack_like(seq, total) if m else seq
            return (ct, 0.0) if first else (0.0, ct)
    return unbroadcast(g * y, x), unbroadcast(g * x, y)



def unbroadcast(g, x):
    """Sum ``g`` over the axes NumPy broadcasting added to reach ``x``'s shape.

    >>> unbroadcast(np.ones((2, 3)), np.ones(3))
    array([2., 2., 2.])
    """
    tg, tx = type(g), type(x)
    if tx is float and tg is float:      # scalar code: the common case
        return g
    if tg is np.ndarray and (tx is np.ndarray or tx is Meta) and g.shape == x.shape:
        return g                         # array code: the common case
    shape = np.shape(x)
    gshape = np.shape(g)
    if gshape == shape:
        return g
    lead = len(gshape) - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and gshape[lead + i] != 1)
    if axes and type(g) is np.ndarray and g.size and not any(g.strides) \
            and g.dtype.kind in "fc":
        # one value everywhere (a sum's cotangent, broadcast): the sum over
        # the axes is that value times their count, with no pass over them
        count = 1
        for a in axes:
            count *= gshape[a]
        one = g[(0,) * g.ndim]
        kept = tuple(n for i, n in enumerate(gshape) if i not in axes)
        g = np.full(kept, one * count, dtype=g.dtype) if kept else g.dtype.type(one * count)
    elif axes:
        g = np.sum(g, axis=axes, keepdims=False)
    if np.shape(g) != shape:
        g = np.reshape(g, shape)
    return g


class Meta:
    """What the adjoint needs of an array it reads only for its shape and
    dtype: saving this instead of the array lets the array be freed."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape = shape
        self.dtype = dtype

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return int(np.prod(self.shape))

    def __repr__(self):
        return f"meta(shape={self.shape}, dtype={self.dtype})"


def meta(x):
    """``x``'s shape and dtype if it is an array, else ``x`` itself."""
    t = type(x)
    if t is float:              # scalar code: the common case
        return x
    if t is np.ndarray or isinstance(x, np.ndarray):
        return Meta(x.shape, x.dtype)
    return x


def realify(g, x):
    """The real part of ``g`` where the primal ``x`` is real (JAX's convention)."""
    if np.iscomplexobj(g) and not np.iscomplexobj(x):
        return np.real(g)
    return g


def project(g, x, copy=False):
    tx, tg = type(x), type(g)
    if tx is float and tg is float:      # scalar code: the common case
        return g
    if tx is np.ndarray and tg is np.ndarray and g.shape == x.shape and g.dtype == x.dtype:
        return g.copy() if copy else g   # array code: the common case
    if is_structure(x):
        return _project_structure(g, x, copy)
    if is_instance(x):
        return _project_instance(g, x, copy)
    if isinstance(x, functools.partial):      # its held values' (runtime.function_values)
        return {k: zeros_like(v) if _entry(g, k) is None or not isinstance(g, dict)
                else project(_entry(g, k), v, copy) for k, v in _held(x)}
    return _project_leaf(g, x, copy)


def _project_instance(g, x, copy):
    """The cotangent of an object of the user's own class: a dict of its
    attributes' cotangents (zero for those nothing reached, and for functions,
    strings and the like, which carry none)."""
    out = {}
    attrs = attributes_of(x)
    for k, v in attrs.items():
        e = _entry(g, k)
        if e is None or isinstance(v, _NO_GRADIENT) or v is None \
                or isinstance(v, (str, bytes, bool)):
            out[k] = zeros_like(v)
        else:
            out[k] = project(e, v, copy)
    if isinstance(g, dict) and len(g) > len(out):
        _check_computed_attributes(g, x, attrs)
    return out


def _check_computed_attributes(g, x, fields):
    """Refuse a gradient that reached an attribute ``x`` does not store (a
    property, or another descriptor of its class, read as ``p.area``): the
    value came from code pullback did not differentiate, so the gradient
    cannot be sent on to the attributes it was computed from."""
    for k, e in g.items():
        if k in fields or not isinstance(k, str) or _is_zero(e):
            continue
        found = getattr(type(x), k, None)
        if found is None or not hasattr(type(found), "__get__") \
                or isinstance(found, (types.FunctionType, staticmethod, classmethod)):
            continue            # a class attribute: a constant shared by the class
        _computed_attribute(type(x), k)    # raises, naming the property


def _is_zero(e):
    if e is None:
        return True
    if isinstance(e, (numbers.Number, np.ndarray, np.generic)):
        return not np.any(e)
    if isinstance(e, dict):
        return all(_is_zero(v) for v in e.values())
    if isinstance(e, (list, tuple)):
        return all(_is_zero(v) for v in e)
    return False


def _project_leaf(g, x, copy=False):
    """Project a cotangent onto the space of its primal ``x``.

    Shape (unbroadcast), realness (real part for a real primal) and type (the
    primal's dtype; a Python float for a Python float, a NumPy scalar for a
    NumPy scalar).  A fresh array is returned whenever ``g`` might be shared
    with something the caller holds, so gradients never alias.
    """
    if isinstance(x, bool) or isinstance(x, np.bool_):
        raise TypeError("booleans carry no gradient")
    if x is None or isinstance(x, _NO_GRADIENT):
        return zeros_like(x)    # a string or a function read from an object: no gradient
    if isinstance(x, (numbers.Number, np.generic)) and is_foreign(g):
        return _project_foreign_scalar(g, x)    # a number's gradient from a Dask batch
    if isinstance(x, (float, int)) and not isinstance(x, np.generic):
        g = np.sum(g) if np.ndim(g) else g
        if isinstance(x, complex):
            return complex(g)
        return float(np.real(g))
    if isinstance(x, complex):
        return complex(np.sum(g) if np.ndim(g) else g)
    g = unbroadcast(g, x)
    g = realify(g, x)
    dtype = x.dtype if isinstance(x, Meta) else np.result_type(x)
    if isinstance(x, np.generic):
        return dtype.type(g)
    if (type(x) is not np.ndarray and is_foreign(x)) or is_foreign(g):
        return _project_foreign(g, x, dtype, copy)      # stays lazy (Dask), on the device
    if copy or np.shape(g) != np.shape(x):
        return np.array(np.broadcast_to(g, np.shape(x)), dtype=dtype)
    return np.asarray(g, dtype=dtype)


def _project_foreign_scalar(g, x):
    """The gradient of a number ``x`` (a Python or NumPy scalar) from a Dask or
    CuPy cotangent ``g``: a 0-d array of ``g``'s type, so that a Dask gradient
    stays lazy and a CuPy one on the device (``float(g)`` computes it)."""
    g = np.sum(g) if np.ndim(g) else g
    dtype = np.result_type(x) if isinstance(x, np.generic) else \
        np.dtype(complex) if isinstance(x, complex) else np.dtype(float)
    if not np.iscomplexobj(x):
        g = np.real(g)
    return g.astype(dtype)


def _project_foreign(g, x, dtype, copy):
    """The projection's last step for a Dask or CuPy primal or cotangent:
    ``g`` of ``x``'s shape and dtype and of the foreign array type, never
    converted to NumPy (that would compute a lazy Dask graph or copy a CuPy
    array to the host): the gradient of a NumPy weight in a loss over a Dask
    batch is a lazy Dask array too."""
    if not is_foreign(g):
        g = to_namespace(np.asarray(g, dtype=dtype), x)
    if np.shape(g) != np.shape(x):
        g = np.broadcast_to(g, np.shape(x))
        copy = True
    if g.dtype != dtype or copy:
        g = g.astype(dtype, copy=True)
    return g


def zeros_like(x):
    """A zero cotangent for ``x``: 0.0 for a Python number, else zeros."""
    t = type(x)
    if t is float:              # scalar code: the common case
        return 0.0
    if t is np.ndarray:         # array code: before the structure checks
        return np.zeros_like(x)
    if t is Meta:
        return np.zeros(x.shape, dtype=x.dtype)
    if x is None:
        return 0.0       # a value that was never assigned on this path
    if isinstance(x, complex):
        return 0j
    if isinstance(x, (float, int)) and not isinstance(x, np.generic):
        return 0.0
    if is_structure(x):
        return rebuild_like(x, {k: zeros_like(v) for k, v in fields_of(x)})
    if is_instance(x):
        return {k: zeros_like(v) for k, v in attributes_of(x).items()}
    if isinstance(x, functools.partial):
        return {k: zeros_like(v) for k, v in _held(x)}
    if isinstance(x, _NO_GRADIENT):
        return 0.0       # a function or a class held by an object: no gradient
    if isinstance(x, np.generic):
        return np.zeros((), dtype=x.dtype)[()]
    if isinstance(x, Meta):
        return np.zeros(x.shape, dtype=x.dtype)
    return np.zeros_like(x)


_FLOAT64 = np.dtype(np.float64)
_pack_double = struct.Struct("=d").pack


def unreduce(g, x, axis=None, keepdims=False):
    """Broadcast the cotangent of a reduction back to the reduced array."""
    tx = type(x)
    shape = x.shape if tx is np.ndarray or tx is Meta else np.shape(x)
    if axis is None and (type(g) is float or type(g) is np.float64):
        # the cotangent of a whole sum: a read-only view of one value, as
        # np.broadcast_to makes, built directly (broadcast_to's Python layers
        # cost twice as much, on every gradient of a sum) on the value's eight
        # bytes, which are immutable: the view is read-only as it is made
        return np.ndarray(shape, _FLOAT64, _pack_double(g), 0, (0,) * len(shape))
    if axis is not None and not keepdims:
        g = np.expand_dims(g, _normalize_axes(axis, len(shape)))
    return np.broadcast_to(g, shape)


def per_output(a, ans):
    """How many elements of ``a`` a reduction gathered into each element of its
    result ``ans`` (``np.size(a) // np.size(ans)``), read from the shapes: a
    Dask array is not computed for it.

    >>> per_output(np.ones((2, 3)), np.ones(3))
    2
    """
    n = a.size if type(a) is np.ndarray else _count(np.shape(a))
    return n // (ans.size if isinstance(ans, (np.ndarray, np.generic)) else _count(np.shape(ans)))


def _count(shape):
    n = 1
    for k in shape:
        n *= int(k)
    return n


def _normalize_axes(axis, ndim):
    axes = axis if isinstance(axis, tuple) else (axis,)
    return tuple(sorted(a % ndim for a in axes))


#: ``(is_bag, is_iterator, bag_cotangent)`` of ``opaque_routes``, which sets them when it
#: loads (it reads this module's helpers: importing it from here would make a ring)
BAG_ROUTES = []


def pack_like(t, parts):
    """Build the cotangent of the unpacked value ``t`` from its parts.  ``t``
    a view a library call made (``a, b = d.values()``): keyed by the identity
    of the values it holds, as the call's routes read it (``opaque_routes``);
    an iterator (``a, b = zip(*rows)``) is used up by now, so which values it
    gave is not known: refused (its cotangent was dropped: a zero gradient)."""
    if not isinstance(t, (tuple, list, np.ndarray)):
        is_bag, is_iterator, bag_cotangent = BAG_ROUTES     # (opaque_routes, loaded with runtime)
        if is_bag(t):
            if is_iterator(t):
                from ..errors import NonDifferentiableError
                raise NonDifferentiableError(
                    f"pullback cannot send the gradient of the names unpacked here back "
                    f"through the iterator they were read from (a {type(t).__name__}, "
                    "used up by the unpacking).", None,
                    "Make a list of it first: `a, b = list(zip(*rows))`.")
            return bag_cotangent(list(t), parts)
    parts = [zeros_like(v) if p is None else p for p, v in zip(parts, t)]
    if isinstance(t, np.ndarray):
        return np.stack(parts)
    if isinstance(t, list):
        return parts
    if isinstance(t, tuple) and type(t) is not tuple:  # a namedtuple
        return type(t)(*parts)
    return tuple(parts)


def add_cotangents(a, b):
    """``a + b`` for cotangents that may be containers (added by element)."""
    if a is None:
        return b
    if b is None:
        return a
    if isinstance(b, dict) and not isinstance(a, dict):
        a, b = b, a         # a namedtuple or dataclass plus the same by field name
    if isinstance(a, dict) and type(b) is float and b == 0.0:
        return a            # a function value's (its held values') plus a plain function's
    if isinstance(a, dict):
        out = copy_module.copy(a)
        for k, v in (b.items() if isinstance(b, dict) else fields_of(b)):
            out[k] = add_cotangents(out.get(k), v)
        return out
    if isinstance(a, (tuple, list)):
        return type(a)(add_cotangents(u, v) for u, v in zip(a, b)) \
            if type(a) in (tuple, list) else type(a)(*(add_cotangents(u, v)
                                                       for u, v in zip(a, b)))
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        return rebuild_like(a, {k: add_cotangents(v, getattr(b, k, None) if not isinstance(
            b, dict) else b.get(k)) for k, v in fields_of(a)})
    return a + b


# --- structures: tuples, lists, dicts, namedtuples, dataclasses ---

class FieldGrads(dict):
    """The gradient of a namedtuple or a dataclass while the adjoint builds
    it: field name -> cotangent (``project`` gives it the primal's type).  A
    namedtuple's fields are also read by position (``p[0]`` is ``p.w``), so
    an integer or a slice selects the fields in their order."""

    def keys_at(self, index):
        names = list(self)
        if isinstance(index, slice):
            return names[index]
        if isinstance(index, (int, np.integer)) and not isinstance(index, bool):
            return [names[index]]
        if index not in self and isinstance(index, str):
            _computed_attribute(getattr(self, "of", None), index)
        return [index]

    @classmethod
    def zeros(cls, x):
        out = cls((k, zeros_like(v)) for k, v in fields_of(x))
        out.of = type(x)
        return out



def updatable(g):
    """``g`` as a buffer ``index_add`` can update by position or field: a
    tuple's entries in a list, a namedtuple's or a dataclass's in a
    ``FieldGrads`` (a callee's gradient, a sum of two are immutable); any
    other ``g`` itself.  The entries are not copied: ``index_add`` replaces
    them, it never writes into them.

    >>> import collections
    >>> updatable(collections.namedtuple("P", "w b")(1.0, 2.0))
    {'w': 1.0, 'b': 2.0}
    """
    if type(g) is tuple:
        return list(g)
    if isinstance(g, tuple) and hasattr(g, "_fields") or (
            dataclasses.is_dataclass(g) and not isinstance(g, type)):
        out = FieldGrads(fields_of(g))
        out.of = type(g)
        return out
    return g


def _project_structure(g, x, copy):
    if isinstance(g, dict) and not isinstance(x, dict) and dataclasses.is_dataclass(x):
        names = {f.name for f in dataclasses.fields(x)}
        if any(k not in names for k in g):
            _check_computed_attributes(g, x, names)
    return rebuild_like(x, {k: (zeros_like(v) if _entry(g, k) is None
                                or isinstance(v, (bool, np.bool_))     # (carries none)
                                else project(_entry(g, k), v, copy)) for k, v in fields_of(x)})
