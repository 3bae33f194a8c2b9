"""Helpers that generated code calls.

Generated primal and adjoint functions import only NumPy and this module, so
an ahead-of-time artifact runs without the compiler.  Every helper is cheap
when it has nothing to do (equal shapes, matching dtype) because adjoints
call them on hot paths.
"""
from __future__ import annotations

import copy as copy_module
import dataclasses
import numbers

import numpy as np

__all__ = ["unbroadcast", "project", "zeros_like", "unreduce", "realify",
           "pack_like", "add_cotangents", "meta", "Meta"]


def unbroadcast(g, x):
    """Sum ``g`` over the axes NumPy broadcasting added to reach ``x``'s shape.

    >>> unbroadcast(np.ones((2, 3)), np.ones(3))
    array([2., 2., 2.])
    """
    shape = np.shape(x)
    gshape = np.shape(g)
    if gshape == shape:
        return g
    lead = len(gshape) - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and gshape[lead + i] != 1)
    g = np.sum(g, axis=axes, keepdims=False) if axes else g
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
    if isinstance(x, np.ndarray):
        return Meta(x.shape, x.dtype)
    return x


def realify(g, x):
    """The real part of ``g`` where the primal ``x`` is real (JAX's convention)."""
    if np.iscomplexobj(g) and not np.iscomplexobj(x):
        return np.real(g)
    return g


def project(g, x, copy=False):
    if is_structure(x):
        return _project_structure(g, x, copy)
    return _project_leaf(g, x, copy)


def _project_leaf(g, x, copy=False):
    """Project a cotangent onto the space of its primal ``x``.

    Shape (unbroadcast), realness (real part for a real primal) and type (the
    primal's dtype; a Python float for a Python float, a NumPy scalar for a
    NumPy scalar).  A fresh array is returned whenever ``g`` might be shared
    with something the caller holds, so gradients never alias.
    """
    if isinstance(x, bool) or isinstance(x, np.bool_):
        raise TypeError("booleans carry no gradient")
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
    if copy or np.shape(g) != np.shape(x):
        return np.array(np.broadcast_to(g, np.shape(x)), dtype=dtype)
    return np.asarray(g, dtype=dtype)


def zeros_like(x):
    """A zero cotangent for ``x``: 0.0 for a Python number, else zeros."""
    if x is None:
        return 0.0       # a value that was never assigned on this path
    if isinstance(x, complex):
        return 0j
    if isinstance(x, (float, int)) and not isinstance(x, np.generic):
        return 0.0
    if is_structure(x):
        return rebuild_like(x, {k: zeros_like(v) for k, v in fields_of(x)})
    if isinstance(x, np.generic):
        return np.zeros((), dtype=x.dtype)[()]
    if isinstance(x, Meta):
        return np.zeros(x.shape, dtype=x.dtype)
    return np.zeros_like(x)


def unreduce(g, x, axis=None, keepdims=False):
    """Broadcast the cotangent of a reduction back to the reduced array."""
    shape = np.shape(x)
    if axis is not None and not keepdims:
        g = np.expand_dims(g, _normalize_axes(axis, len(shape)))
    return np.broadcast_to(g, shape)


def _normalize_axes(axis, ndim):
    axes = axis if isinstance(axis, tuple) else (axis,)
    return tuple(sorted(a % ndim for a in axes))


def pack_like(t, parts):
    """Build the cotangent of the unpacked value ``t`` from its parts."""
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
    if isinstance(a, dict):
        out = dict(a)
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

def is_structure(x):
    return isinstance(x, (tuple, list, dict)) or (
        dataclasses.is_dataclass(x) and not isinstance(x, type))


def fields_of(x):
    """(key, value) pairs of a structure: indices, dict keys or field names."""
    if isinstance(x, dict):
        return list(x.items())
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return list(zip(x._fields, x))
    if isinstance(x, (tuple, list)):
        return list(enumerate(x))
    return [(f.name, getattr(x, f.name)) for f in dataclasses.fields(x)]


def rebuild_like(x, values):
    """A structure of ``x``'s type holding ``values`` (key -> value)."""
    if isinstance(x, dict):
        return type(x)((k, values.get(k)) for k in x)
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*(values.get(k) for k in x._fields))
    if isinstance(x, (tuple, list)):
        return type(x)(values.get(i) for i in range(len(x)))
    new = copy_module.copy(x)
    for k, v in values.items():
        object.__setattr__(new, k, v)
    return new


def _entry(g, key):
    if g is None:
        return None
    if isinstance(g, dict):
        return g.get(key)
    if isinstance(g, (list, tuple)) and isinstance(key, int):
        return g[key] if key < len(g) else None
    return getattr(g, key, None)


def _project_structure(g, x, copy):
    return rebuild_like(x, {k: (zeros_like(v) if _entry(g, k) is None
                                else project(_entry(g, k), v, copy)) for k, v in fields_of(x)})


def is_python_scalar(x):
    return isinstance(x, numbers.Number) and not isinstance(x, np.generic)


# --- helpers called by rules ---
#
# Rule bodies are inlined into generated code, so they hold no control flow;
# the few rules that need some (ties, zeros, splitting a cotangent, indexing)
# call these.  Each takes the rule's own values and returns a contribution.

__all__ += ["tie_share", "abs_grad", "clip_grad", "prod_grad", "dot_lhs_grad",
            "dot_rhs_grad", "matmul_lhs_grad", "matmul_rhs_grad",
            "inner_lhs_grad", "inner_rhs_grad", "untranspose", "ravel_grad",
            "unconcatenate", "unstack", "unarray", "unindex", "unitem",
            "unsum", "select_grad", "take_grad"]


def tie_share(g, ans, x, y):
    """``x``'s share of ``g`` in an elementwise max or min whose value is ``ans``.

    All of ``g`` where ``x`` alone attains ``ans``, half of it where ``y``
    attains it too (ties split equally, as in JAX), none elsewhere.

    >>> tie_share(1.0, np.array([2., 3.]), np.array([2., 3.]), np.array([1., 3.]))
    array([1. , 0.5])
    """
    return np.where(x == ans, np.where(y == ans, 0.5 * g, g), 0)


def abs_grad(g, x):
    """Cotangent of ``abs(x)``: ``g * sign(x)``; ``g * conj(x) / |x|`` for complex ``x``.

    Zero at ``x == 0`` (the two one-sided slopes split equally).
    """
    if type(x) is float:
        return g if x > 0 else -g if x < 0 else 0.0 * g
    if np.iscomplexobj(x):
        return np.real(g) * np.conj(np.sign(x))
    return g * np.sign(x)


def clip_grad(g, ans, a, a_min, a_max, wrt):
    """Cotangent of ``np.clip(a, a_min, a_max)`` for the argument named ``wrt``.

    Clip is ``minimum(maximum(a, a_min), a_max)``, so a tie at a bound splits
    equally between the value and the bound.  A ``None`` bound gets ``None``.
    """
    if (wrt == "a_min" and a_min is None) or (wrt == "a_max" and a_max is None):
        return None
    m = a if a_min is None else np.maximum(a, a_min)
    if wrt == "a_max":
        return tie_share(g, ans, a_max, m)
    gm = g if a_max is None else tie_share(g, ans, m, a_max)
    if wrt == "a_min":
        return tie_share(gm, m, a_min, a)
    return gm if a_min is None else tie_share(gm, m, a, a_min)


def prod_grad(g, ans, a, axis=None, keepdims=False):
    """Cotangent of ``np.prod(a, axis)``: the product of the other factors.

    Correct with zeros: where a slice has one zero, only the zero gets the
    product of the others; with two or more, the whole slice gets zero.
    """
    a = np.asarray(a)
    g = unreduce(g, a, axis, keepdims)
    zero = a == 0
    if not zero.any():
        return g * unreduce(ans, a, axis, keepdims) / a
    nonzero = np.where(zero, 1, a)
    others = np.prod(nonzero, axis=axis, keepdims=True)
    zeros = np.sum(zero, axis=axis, keepdims=True)
    return g * np.where(zero, np.where(zeros == 1, others, 0),
                        np.where(zeros == 0, others / nonzero, 0))


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


def untranspose(g, axes):
    """Undo ``np.transpose(a, axes)`` on ``g``; ``axes`` may also be a method's ``*axes``."""
    if isinstance(axes, tuple) and len(axes) == 1 and (
            axes[0] is None or isinstance(axes[0], (tuple, list))):
        axes = axes[0]
    if axes is None or len(axes) == 0:
        return np.transpose(g)
    return np.transpose(g, np.argsort(np.mod(axes, np.ndim(g))))


def ravel_grad(g, a, order="C"):
    """Cotangent of ``np.ravel(a, order)``: ``g`` laid back in ``a``'s shape."""
    shape = np.shape(a)
    if order in ("C", "F", None):
        return np.reshape(g, shape, order=order or "C")
    a = np.asarray(a)
    if a.flags.c_contiguous:
        return np.reshape(g, shape)
    if order == "A" or a.flags.f_contiguous:
        return np.reshape(g, shape, order="F" if a.flags.f_contiguous else "C")
    # "K": memory order; an index array laid out like ``a`` says where each went
    where = np.empty_like(a, dtype=np.intp)
    where[...] = np.arange(a.size).reshape(shape)
    out = np.empty(a.size, dtype=np.result_type(g))
    out[np.ravel(where, order="K")] = g
    return out.reshape(shape)


def _same_kind(seq, parts):
    return list(parts) if isinstance(seq, list) else tuple(parts)


def unconcatenate(g, arrays, axis=0, ndmin=1):
    """Split the cotangent of a concatenation into one view per input.

    ``axis=None`` means the inputs were flattened first; ``ndmin`` is the
    rank the inputs were promoted to (2 for ``vstack``).
    """
    if axis is None:
        g, axis = np.ravel(g), 0
        sizes = [np.size(x) for x in arrays]
    else:
        sizes = []
        for x in arrays:
            shape = np.shape(x)
            shape = (1,) * (ndmin - len(shape)) + shape
            sizes.append(shape[axis])
    parts = np.split(g, np.cumsum(sizes)[:-1], axis=axis)
    return _same_kind(arrays, [p if np.shape(p) == np.shape(x) else
                               np.reshape(p, np.shape(x))
                               for p, x in zip(parts, arrays)])


def unstack(g, arrays, axis=0):
    """Split the cotangent of ``np.stack(arrays, axis)`` into one view per input."""
    return _same_kind(arrays, np.moveaxis(g, axis, 0))


def unarray(g, a):
    """Cotangent of ``np.asarray(a)`` / ``np.array(a)`` in the structure of ``a``.

    An array gets ``g`` (reshaped if ``ndmin`` added axes); a (nested) list or
    tuple of numbers or arrays gets a list or tuple of parts.
    """
    if isinstance(a, (list, tuple)):
        shape = np.shape(a)
        if np.shape(g) != shape:
            g = np.reshape(g, shape)
        return _same_kind(a, [unarray(g[i], x) for i, x in enumerate(a)])
    if np.shape(g) != np.shape(a):
        g = np.reshape(g, np.shape(a))
    return g


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
    out = np.zeros(np.shape(a), dtype=dtype)
    g = realify(g, out)           # projected as an in-place add would project it
    if _is_basic_index(index) or (isinstance(index, np.ndarray) and index.dtype == bool):
        out[index] = g
    else:
        np.add.at(out, index, g)
    return out


def take_grad(g, a, indices, axis=None):
    """Cotangent of ``np.take(a, indices, axis)``: ``g`` added back at the
    taken positions (repeats accumulate)."""
    dtype = a.dtype if isinstance(a, Meta) else np.result_type(a, 0.0)
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


def zeroed(g, index):
    """A copy of ``g`` with ``g[index]`` set to zero (the out-of-place form of
    ``g[index] = 0``)."""
    out = np.array(g, copy=True)
    out[index] = 0
    return out


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


def unsum(g, iterable):
    """Cotangent of builtin ``sum(iterable)`` (or ``math.fsum``): ``g`` for each item."""
    if isinstance(iterable, np.ndarray):
        return np.broadcast_to(g, iterable.shape)
    return _same_kind(iterable, [unbroadcast(g, x) for x in iterable])


def select_grad(g, ans, args):
    """Cotangent of builtin ``max(*args)`` / ``min(*args)``: winners share ``g`` equally.

    Returns one contribution per positional argument; with a single iterable
    argument, its contribution has the iterable's structure.
    """
    if len(args) == 1:
        items = args[0]
        if isinstance(items, np.ndarray):
            hits = items == ans
            return (g * hits / int(np.sum(hits)),)
        return (_same_kind(items, _winners_share(g, ans, items)),)
    return tuple(_winners_share(g, ans, args))


def _winners_share(g, ans, items):
    hits = [bool(x == ans) for x in items]
    n = sum(hits)
    return [g / n if h else zeros_like(x) for h, x in zip(hits, items)]


# Helpers whose result is always a new array that nothing else refers to (the
# ownership analysis may then update it in place).  Helpers that may hand back
# ``g`` itself or a view of it (unbroadcast, unreduce, untranspose, unstack...)
# are deliberately absent.
FRESH = frozenset([tie_share, abs_grad, prod_grad, dot_lhs_grad, dot_rhs_grad,
                   matmul_lhs_grad, matmul_rhs_grad, inner_lhs_grad, inner_rhs_grad,
                   unindex, unitem])


# --- helpers for in-place accumulation ---

def owned_copy(g):
    """A copy of a shared gradient that the adjoint may then update in place."""
    if isinstance(g, list) or (isinstance(g, tuple) and not hasattr(g, "_fields")):
        return [owned_copy(v) for v in g]
    if is_structure(g):
        return {k: owned_copy(v) for k, v in fields_of(g)}
    return np.array(g, copy=True) if isinstance(g, np.ndarray) else g


def index_add(buffer, index, g):
    """``buffer[index] += g`` with NumPy's read semantics: repeated integer
    indices accumulate (unbuffered), a complex ``g`` adds its real part to a
    real buffer, and ``g`` is rounded to the buffer's dtype first.  Lists of
    gradients (the gradient of a list) are updated element by element."""
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
        g = np.asarray(g).astype(buffer.dtype)
    if _is_basic_index(index) or (isinstance(index, np.ndarray) and index.dtype == bool):
        buffer[index] += g
    else:
        np.add.at(buffer, index, g)


def owned_zeros(x):
    """A zero gradient buffer for ``x`` that may be updated in place: an array
    of ``x``'s shape and dtype, a list for a list or tuple, a dict for a dict,
    a namedtuple or a dataclass (project gives it ``x``'s type at the end)."""
    if isinstance(x, list) or (isinstance(x, tuple) and not hasattr(x, "_fields")):
        return [zeros_like(v) for v in x]
    if is_structure(x):
        return {k: zeros_like(v) for k, v in fields_of(x)}
    if isinstance(x, Meta):
        return np.zeros(x.shape, dtype=x.dtype)
    return np.zeros(np.shape(x), dtype=np.result_type(x, 0.0))


# --- writes into arrays ---

def snapshot(x):
    """The value of ``x`` now, safe from later writes into the array."""
    return np.array(x, copy=True) if isinstance(x, np.ndarray) else x


def written_grad(g, index, value, every=False):
    """The gradient of the value written by ``y[index] = value`` (or ``+=``)
    from ``g``, the gradient of ``y`` after the write: ``g[index]``, where a
    position written twice counts only for its last write (NumPy's buffered
    semantics), or for every write with ``every=True`` (``np.add.at``);
    summed back onto ``value``'s shape."""
    part = np.array(g[index], copy=True) if isinstance(g, np.ndarray) else g
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
