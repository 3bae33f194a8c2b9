"""Helpers called by rules.

Rule bodies are inlined into generated code, so they hold no control flow;
the few rules that need some (ties, zeros, splitting a cotangent) call
these.  Each takes the rule's own values and returns a contribution.  The
dot products' cotangents are in ``dot_support``, those of reads by index
(``a[i]``, ``np.take``) in ``index_support``.

For ``y = np.concatenate([a, b])`` with ``a`` of 2 elements and ``b`` of 3,
the cotangent split back, one view per input:

>>> unconcatenate(np.arange(5.), [np.zeros(2), np.zeros(3)])
[array([0., 1.]), array([2., 3., 4.])]
"""
from __future__ import annotations

import numpy as np

from .backends import is_foreign
from .opaque_routes import bag_cotangent, is_bag
from .core import unbroadcast, unreduce, zeros_like
from .dot_support import (dot_lhs_grad, dot_rhs_grad, inner_lhs_grad, inner_rhs_grad,
                          matmul_lhs_grad, matmul_rhs_grad)
from .index_support import _same_kind, unindex, unitem
from .structures import is_instance, is_structure

__all__ = ["tie_share", "abs_grad", "clip_grad", "prod_grad", "untranspose", "ravel_grad",
           "unconcatenate", "unstack", "unarray", "unsum", "select_grad", "FRESH",
           "r_items", "c_items", "c_grad", "refuse_reverse_over_generated",
           "attribute_cotangent", "is_array_value"]


def is_array_value(x):
    """``x`` reads its ``.T``, ``.real``, ``.shape`` as an array does: an
    ndarray, a NumPy scalar, a Python number, a JAX, Dask or CuPy array.
    False for a namedtuple, a dataclass, a container or an object of the
    user's class (its attribute of that name is a field)."""
    if isinstance(x, (np.ndarray, np.generic, int, float, complex)):
        return True
    if is_structure(x) or is_instance(x):
        return False
    return is_foreign(x) or any(hasattr(x, a) for a in (
        "__array_namespace__", "__array_function__", "__jax_array__"))


def attribute_cotangent(g, obj, attr):
    """Cotangent of ``obj.attr`` where the compiler could not prove ``obj`` an
    array (``s.T`` of ``s = make(x)``): decided by what ``obj`` is.

    An array's ``.T`` / ``.real`` has its rule (``ndarray.T``), ``.shape``
    none; a namedtuple's, dataclass's or object's field of that name gets
    ``g`` in its structure, as a field read does (``unindex``)."""
    if is_array_value(obj):
        from .calls import _hook
        rule, _ = _hook("array_attribute_rule")(attr)     # (rules.registry, installed)
        return None if rule is None else rule.fn(g, None, obj)
    if is_structure(obj) or is_instance(obj):
        return unindex(g, obj, attr)
    from ..errors import NonDifferentiableError
    raise NonDifferentiableError(
        f"pullback cannot tell how `.{attr}` of a {type(obj).__name__} carries a "
        f"gradient: it is neither an array nor a structure of fields.")


def r_items(*items):
    """``np.r_[a, b, ...]`` of arrays and numbers (what a rule can follow)."""
    return np.r_[items]


def c_items(*items):
    """``np.c_[a, b, ...]`` of arrays and numbers: 1-d items become columns."""
    return np.c_[items]


def c_grad(g, items):
    """One cotangent per item of ``np.c_[items]``: columns of ``g`` (the last
    axis), a 1-d item's one column reshaped back to its shape."""
    parts, start = [], 0
    for x in items:
        shape = np.shape(x)
        n = 1 if len(shape) < 2 else shape[-1]
        parts.append(np.reshape(g[..., start:start + n], shape))
        start += n
    return tuple(parts)


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
    if type(x) is np.ndarray and type(g) is np.ndarray and x.dtype.kind == "f" \
            and g.dtype == x.dtype and g.shape == x.shape and x.ndim and x.size and not any(g.strides):
        # one value everywhere (the cotangent of a sum, broadcast): sign(x) is
        # fresh, so scale it in place, and not at all by 1.0 (exactly the same)
        s = np.sign(x)
        g0 = g[(0,) * g.ndim]
        if g0 != 1.0:
            np.multiply(s, g0, out=s)
        return s
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


def unconcatenate(g, arrays, axis=0, ndmin=1):
    """Split the cotangent of a concatenation into one view per input.

    ``axis=None`` means the inputs were flattened first; ``ndmin`` is the
    rank the inputs were promoted to (2 for ``vstack``).
    """
    if axis == 0 and ndmin == 1 and type(g) is np.ndarray and g.ndim:
        # the common case (a loop's np.concatenate((wall, x, wall))): arrays
        # of g's rank along their first axis, one slice each
        parts, start = [], 0
        for x in arrays:
            if type(x) is not np.ndarray or x.ndim != g.ndim:
                break
            n = x.shape[0]
            parts.append(g[start:start + n])
            start += n
        else:
            return _same_kind(arrays, parts)
    if axis is None:
        g, axis = np.ravel(g), 0
        sizes = [np.size(x) for x in arrays]
    else:
        sizes = []
        for x in arrays:
            shape = x.shape if type(x) is np.ndarray else np.shape(x)
            shape = (1,) * (ndmin - len(shape)) + shape
            sizes.append(shape[axis])
    before = (slice(None),) * (axis % np.ndim(g))
    parts, start = [], 0
    for x, n in zip(arrays, sizes):
        part = g[before + (slice(start, start + n),)]
        start += n
        shape = x.shape if type(x) is np.ndarray else np.shape(x)
        parts.append(part if part.shape == shape else np.reshape(part, shape))
    return _same_kind(arrays, parts)


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


def unsum(g, iterable):
    """Cotangent of builtin ``sum(iterable)`` (or ``math.fsum``): ``g`` for each item."""
    if isinstance(iterable, np.ndarray):
        return np.broadcast_to(g, iterable.shape)
    _not_consumed(iterable, "sum")
    if is_bag(iterable):        # a view, a set: by the identity of its items (runtime.opaque)
        items = list(iterable)
        return bag_cotangent(items, [unbroadcast(g, x) for x in items])
    return _same_kind(iterable, [unbroadcast(g, x) for x in iterable])


def _not_consumed(items, name):
    """Refuse an iterator given to ``sum``/``max``/``min``: it is empty by the
    time the adjoint reads it (its items would get no gradient)."""
    if not isinstance(items, (tuple, list, dict)) and hasattr(items, "__next__"):
        from ..errors import NonDifferentiableError
        raise NonDifferentiableError(
            f"pullback cannot send the gradient of `{name}(...)` back through an iterator "
            f"(a {type(items).__name__}): it is used up once read.", None,
            f"Make a list of it first: `{name}(list(...))`.")


def select_grad(g, ans, args):
    """Cotangent of builtin ``max(*args)`` / ``min(*args)``: winners share ``g`` equally.

    Returns one contribution per positional argument; with a single iterable
    argument, its contribution has the iterable's structure.
    """
    if len(args) == 1:
        items = args[0]
        _not_consumed(items, "max")
        if isinstance(items, np.ndarray):
            hits = items == ans
            return (g * hits / int(np.sum(hits)),)
        if is_bag(items):       # a view, a set: by the identity of its items (runtime.opaque)
            items = list(items)
            return (bag_cotangent(items, _winners_share(g, ans, items)),)
        return (_same_kind(items, _winners_share(g, ans, items)),)
    return tuple(_winners_share(g, ans, args))


def _winners_share(g, ans, items):
    if isinstance(ans, (tuple, list)):
        # `score, v = min(pairs)`: Python returns the first winning item itself
        # (tuples compare item by item); all of g is that item's
        first = next(i for i, x in enumerate(items) if x is ans)
        return [g if i == first else zeros_like(x) for i, x in enumerate(items)]
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


def refuse_reverse_over_generated(name):
    """The reverse rule of a run-time helper of generated code
    (``rules.runtime_helpers``): reverse mode never differentiates generated
    code (reverse over reverse is forward over reverse, ``pullback.higher``),
    so reaching one stops with the reason."""
    from ..errors import NonDifferentiableError
    raise NonDifferentiableError(
        f"pullback does not differentiate its own helper {name} in reverse mode.",
        hint="Second derivatives run forward over reverse (pb.jvp of pb.grad, pb.hessian, "
             "pb.hvp, pb.grad of pb.grad).")
