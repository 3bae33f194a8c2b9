"""Run-time helpers the generated tangent functions call (forward mode,
``pullback.forward``), and the forward rules' helpers.

Kept small and out of loops where the pass can: a tangent that needs no
helper is plain NumPy (``y_dot = x_dot * np.cos(x)``).  ``zeros_tangent``
materializes the zero of a value whose tangent is structurally zero where one
must exist (an element of a container, an array the function writes into);
``owned_tangent`` makes the tangent of an array the function writes into a
buffer of its own, so that ``y_dot[i] = v_dot`` never writes into a caller's
tangent or another tangent; ``kernel_tangent`` finishes a fused elementwise
kernel's tangent from its partials (one multiply-add per input).

>>> import numpy as np
>>> zeros_tangent((np.ones(2), 3, "a"))
(array([0., 0.]), 0.0, None)
>>> t = np.ones(3)
>>> o = owned_tangent(t, np.zeros(3))
>>> o is t, o.flags.writeable
(False, True)
"""
from __future__ import annotations

import numpy as np
import numpy as _numpy      # memory order: never rebound to another namespace

from ..errors import NonDifferentiableError
from .core import project
from .structures import fields_of, is_structure, rebuild_like
from .linalg_support import _concrete, det_grad
from .rule_support import abs_grad, is_array_value

__all__ = ["attribute_tangent", "zeros_tangent", "owned_tangent", "broadcast_tangent", "output_tangent",
           "kernel_tangent", "check_real", "check_static", "kept_structure", "max_jvp", "prod_jvp", "norm_jvp", "det_jvp",
           "slogdet_jvp", "cholesky_jvp", "sort_jvp", "solve_a_jvp", "pad_jvp",
           "ravel_tangent", "reshape_tangent", "abs_grad_tangent", "add_tangents"]


def _inexact(x):
    if isinstance(x, (bool, np.bool_)):
        return False
    if isinstance(x, (float, complex)):
        return True
    if isinstance(x, (np.ndarray, np.generic)):
        return x.dtype.kind in "fc"
    return False


def takes_tangent(y):
    """Whether a value written into the array ``y`` keeps its tangent: not
    where ``y`` is an integer or boolean array, which casts it."""
    return np.dtype(getattr(y, "dtype", np.float64)).kind not in "biu"


def zeros_tangent(x):
    """The zero tangent of ``x``: zeros of its shape and dtype for a float or
    complex value, the same structure for a container, None for a value
    that has no tangent (an integer, a string, a function)."""
    if is_structure(x):
        return rebuild_like(x, {k: zeros_tangent(v) for k, v in fields_of(x)})
    if not _inexact(x):
        # an integer that becomes a float later (``total = 0`` before a loop of
        # float additions) has the zero of a float
        if isinstance(x, np.ndarray) and x.dtype.kind in "biu":
            return np.zeros(x.shape)
        if isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)):
            return 0.0
        if isinstance(x, range):      # a range of integers, as an integer array
            return np.zeros(len(x))
        return None
    if isinstance(x, complex):
        return 0j
    if isinstance(x, float) and not isinstance(x, np.generic):
        return 0.0
    if isinstance(x, np.generic):
        return x.dtype.type(0)
    return np.zeros(x.shape, dtype=x.dtype)


def owned_tangent(t, x):
    """A new, writable buffer holding the tangent ``t`` of the array ``x``
    (which the function writes into), in ``x``'s shape; a list's a new list."""
    if isinstance(x, list):
        return list(t) if t is not None else [zeros_tangent(v) for v in x]
    if not isinstance(x, np.ndarray):
        return t
    dtype = x.dtype if x.dtype.kind in "fc" else np.result_type(t, np.float64)
    if t is None:
        return np.zeros(x.shape, dtype=dtype)
    return np.array(np.broadcast_to(t, x.shape), dtype=dtype)


def broadcast_tangent(t, x):
    """``t`` broadcast to the shape of ``x`` (a view), when it is smaller."""
    shape = np.shape(x)
    if np.shape(t) == shape:
        return t
    return np.broadcast_to(t, shape)


def output_tangent(t, y, fresh=False):
    """The tangent handed to the caller: shaped like the output ``y``, with
    its dtype and realness (a real output's tangent is real), and a new
    object, so it shares memory with no argument or tangent (``fresh``: the
    generated code made ``t`` itself, so it is not copied again)."""
    if is_structure(y):
        if t is None:
            t = zeros_tangent(y)
        return rebuild_like(y, {k: output_tangent(_entry(t, k), v)
                                        for k, v in fields_of(y)})
    if not _inexact(y):
        return zeros_tangent(y) if t is None else t
    if t is None:
        return zeros_tangent(y)
    return project(t, y, copy=not fresh)


def add_tangents(*terms):
    """The sum of tangent terms that may be structures (a decomposition's
    result with two active arguments, ``lstsq(a, b)``): summed entry by entry,
    an entry that is None in a term (a subscript's) left out."""
    terms = [t for t in terms if t is not None]
    if not terms:
        return None
    first = terms[0]
    if isinstance(first, (tuple, list)):
        parts = [add_tangents(*items) for items in zip(*terms)]
        return type(first)(*parts) if hasattr(first, "_fields") else type(first)(parts)
    if isinstance(first, dict):
        return {k: add_tangents(*(t[k] for t in terms)) for k in first}
    total = first
    for term in terms[1:]:
        total = total + term
    return total


def _entry(t, key):
    if t is None:
        return None
    if isinstance(t, dict):
        return t.get(key)
    if isinstance(t, (list, tuple)) and isinstance(key, int):
        return t[key] if key < len(t) else None
    return getattr(t, key, None)


def kernel_tangent(res, tangents):
    """The tangent of a fused kernel's value from its partials: ``sum_k
    partial_k * t_k`` (of the summed value's, where the kernel returned the
    sum of its elementwise value)."""
    partials, metas, shape = res
    total = None
    for p, t in zip(partials, tangents):
        if p is None or t is None:
            continue
        if shape is not None and type(t) is np.ndarray and type(p) is np.ndarray \
                and t.shape == p.shape == shape and t.ndim:
            # the kernel returned np.sum of its value: sum(t * p) in one pass
            term = np.dot(t.reshape(-1), p.reshape(-1))
            total = term if total is None else total + term
            continue
        term = t * p
        if shape is not None:            # the kernel returned np.sum of its value
            size = int(np.prod(shape))
            n = np.size(term)
            term = np.sum(term) * (size // n) if n else np.sum(term)
        total = term if total is None else total + term
    return 0.0 if total is None else total


def check_real(x, what):
    """Refuse a complex value where forward mode's rule holds for real ones."""
    if np.iscomplexobj(x):
        raise NonDifferentiableError(
            f"forward mode has no rule for {what} of a complex value yet (its derivative "
            "is not complex-linear).",
            hint="Use pb.vjp for this function, or write it with the real and imaginary "
                 "parts (np.real, np.imag).")
    return x


def check_static(value, param, what):
    """A value that forward mode finds depending on the inputs, passed where a
    rule takes no gradient (``axis``), whose kind the transform did not know
    (a helper's ``axis`` read from its residuals: forward over reverse gives
    every residual a tangent).  An integer, None, a string or a tuple of them
    carries no tangent; anything else (a float, a function holding values)
    would lose its own: refused."""
    if not _no_tangent(value):
        raise NonDifferentiableError(
            f"The `{param}` argument of {what} carries no gradient, but its value (a "
            f"{type(value).__name__}) depends on the inputs being differentiated.",
            hint=f"Pass a constant as `{param}`, or rewrite the expression so that it enters "
                 "through a differentiable argument.")
    return value


def kept_structure(held, fn, *args, **kwargs):
    """``fn(*args, **kwargs)``, a call run for its effect on the values
    ``held``, which carry tangents (``b.apply_defaults()``, a library method):
    refused where it adds, moves or removes their items, since the tangents
    held for them would not follow (a later read of the new item found none)."""
    from .leaves import Walk

    def places():       # (a move of a value with a tangent the call itself refuses)
        return [sorted(repr(p) for p, _ in Walk().leaves(v)) for v in held]
    try:
        before = places()
    except Exception:
        return fn(*args, **kwargs)        # (the call itself says what it cannot check)
    out = fn(*args, **kwargs)
    if places() != before:
        name = getattr(fn, "__name__", type(fn).__name__)
        if name == "checked_method_call" and len(args) > 3:
            name = args[3]
        elif name == "checked_call" and len(args) > 1:
            name = getattr(args[1], "__name__", name)
        raise NonDifferentiableError(
            f"forward mode cannot follow tangents through `{name}`, which changes an object "
            "holding values being differentiated in place (adds, moves or removes its items).",
            hint="Build the new value in your own function (a new list or dict), or use "
                 "reverse mode (pb.grad) for one derivative.")
    return out


def _no_tangent(v):
    if isinstance(v, (tuple, list)):
        return all(_no_tangent(e) for e in v)
    if isinstance(v, np.ndarray):
        return v.dtype.kind in "biu"
    return v is None or isinstance(v, (bool, int, str, np.integer, np.bool_))


# -- forward rules too long to inline ------------------------------------------


def max_jvp(t, ans, a, axis=None, keepdims=False):
    """Tangent of ``np.max``/``np.min``: tied winners share it equally."""
    full = ans if keepdims or axis is None else np.expand_dims(ans, axis)
    winners = a == full
    count = np.sum(winners, axis=axis, keepdims=keepdims)
    return np.sum(np.where(winners, t, 0), axis=axis, keepdims=keepdims) / count


def prod_jvp(t, ans, a, axis=None, keepdims=False):
    """Tangent of ``np.prod``: sum over i of t_i times the product of the
    others (exact with zeros: each term is a product that leaves one out)."""
    a = np.asarray(a)
    if axis is None:
        flat_a, flat_t = a.reshape(-1), np.broadcast_to(t, a.shape).reshape(-1)
        out = _prod_jvp_last(flat_t[None, :], flat_a[None, :])[0]
        return np.reshape(out, (1,) * a.ndim) if keepdims else out
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    axes = tuple(int(ax) % a.ndim for ax in axes)
    rest = [d for d in range(a.ndim) if d not in axes]
    moved_a = np.transpose(a, rest + list(axes))
    moved_t = np.transpose(np.broadcast_to(t, a.shape), rest + list(axes))
    lead = moved_a.shape[:len(rest)]
    out = _prod_jvp_last(moved_t.reshape(lead + (-1,)), moved_a.reshape(lead + (-1,)))
    if keepdims:
        out = np.expand_dims(out, axes)
    return out


def _prod_jvp_last(t, a):
    n = a.shape[-1]
    if n == 0:
        return np.zeros(a.shape[:-1], dtype=np.result_type(a, t))
    ones = np.ones(a.shape[:-1] + (1,), dtype=a.dtype)
    before = np.cumprod(np.concatenate([ones, a[..., :-1]], axis=-1), axis=-1)
    after = np.flip(np.cumprod(np.concatenate([ones, np.flip(a, -1)[..., :-1]], axis=-1),
                               axis=-1), -1)
    return np.sum(t * before * after, axis=-1)


def norm_jvp(t, ans, x, ord=None, axis=None, keepdims=False):
    """Tangent of ``np.linalg.norm`` for the 2-norm of vectors and the
    Frobenius norm (``ord`` None, 2 on vectors, or 'fro')."""
    x = np.asarray(x)
    vector = (axis is None and x.ndim == 1) or (axis is not None and np.ndim(axis) == 0) \
        or (isinstance(axis, tuple) and len(axis) == 1)
    if not (ord is None or ord == "fro" and not vector or ord == 2 and vector):
        raise NonDifferentiableError(
            f"forward mode has no rule for np.linalg.norm with ord={ord!r} yet.",
            hint="Use pb.vjp for this function, or write the norm out "
                 "(np.sqrt(np.sum(x * x))).")
    inner = np.real(np.conj(x) * t) if np.iscomplexobj(x) or np.iscomplexobj(t) else x * t
    s = np.sum(inner, axis=axis, keepdims=keepdims)
    return s / np.where(ans == 0, 1, ans)      # (0 at 0, as the reverse rule)


def solve_a_jvp(t, x, a, b):
    """The tangent of ``x = solve(a, b)`` along ``da = t``: ``-solve(a, t x)``
    (a 1-d ``b`` is one vector, however many matrices ``a`` holds)."""
    if np.ndim(b) == 1:
        return -np.linalg.solve(a, np.matmul(t, x[..., None]))[..., 0]
    return -np.linalg.solve(a, np.matmul(t, x))


def det_jvp(t, ans, a):
    """``d det(a) = det(a) tr(solve(a, da))``, or ``<adj(a)^T, da>`` when
    ``a`` is singular."""
    if _concrete(ans) and np.all(np.asarray(ans) != 0):
        return ans * np.trace(np.linalg.solve(a, t), axis1=-2, axis2=-1)
    return np.sum(det_grad(np.ones_like(ans), ans, a) * t, axis=(-2, -1))     # adj(a)^T


def slogdet_jvp(t, ans, a):
    """``(sign, logabsdet)``: ``d logabsdet = Re tr(solve(a, da))``; a complex
    sign turns by ``i Im tr(solve(a, da))``."""
    sign, _ = ans
    tr = np.trace(np.linalg.solve(a, t), axis1=-2, axis2=-1)
    if np.iscomplexobj(tr):
        sign_dot = sign * 1j * np.imag(tr)
    else:
        sign_dot = np.zeros_like(sign)
    return type(ans)(sign_dot, np.real(tr)) if hasattr(ans, "_fields") else (
        sign_dot, np.real(tr))


def cholesky_jvp(t, ans, a, upper=False):
    """``L_dot = L Phi(L^-1 A_dot L^-H)``, Phi the lower triangle with half
    the diagonal (``upper``: the transpose of that)."""
    low = np.conj(np.swapaxes(ans, -1, -2)) if upper else ans
    # NumPy reads one triangle of a: the tangent of the matrix it factors
    # (and the real part of its diagonal)
    h = lambda m: np.conj(np.swapaxes(m, -1, -2))  # noqa: E731
    part = np.triu(t, 1) if upper else np.tril(t, -1)
    diag = np.real(np.diagonal(t, axis1=-2, axis2=-1))
    sym = part + h(part) + diag[..., :, None] * np.eye(t.shape[-1], dtype=diag.dtype)
    linv_t = _solve_lower(low, sym)
    inner = np.conj(np.swapaxes(_solve_lower(low, np.conj(np.swapaxes(linv_t, -1, -2))),
                                -1, -2))
    phi = np.tril(inner, -1) + np.tril(np.triu(inner)) / 2
    out = low @ phi
    return np.conj(np.swapaxes(out, -1, -2)) if upper else out


def _solve_lower(low, b):
    return np.linalg.solve(low, b)


def sort_jvp(t, ans, a, axis=-1, kind=None, order=None):
    """Tangent of ``np.sort``: the tangent, permuted as the values were."""
    t = np.broadcast_to(t, np.shape(a))
    if axis is None:
        a, t, axis = np.ravel(a), np.ravel(t), -1
    return np.take_along_axis(t, np.argsort(a, axis=axis, stable=True), axis=axis)


_LINEAR_PADS = {"constant", "edge", "reflect", "symmetric", "wrap", "mean", "empty"}


def pad_jvp(t, pad_width, mode="constant", stat_length=None, reflect_type="even"):
    """Tangent of ``np.pad``: the tangent padded the same way (constant
    padding pads it with zeros); modes that are not linear are refused."""
    if callable(mode) or mode not in _LINEAR_PADS or mode == "empty":
        raise NonDifferentiableError(
            f"forward mode has no rule for np.pad with mode={mode!r} yet.",
            hint="Use pb.vjp for this function, or pad with mode 'constant', 'edge', "
                 "'reflect', 'symmetric', 'wrap' or 'mean'.")
    if mode == "constant":
        return np.pad(t, pad_width, mode="constant")
    if mode in ("reflect", "symmetric"):
        return np.pad(t, pad_width, mode=mode, reflect_type=reflect_type)
    if mode == "mean":
        return np.pad(t, pad_width, mode="mean", stat_length=stat_length)
    return np.pad(t, pad_width, mode=mode)


def _order_of(a, order):
    """``order='A'`` (``'K'`` too) spelled out for ``a``: 'F' for a
    Fortran-ordered NumPy array; an array of another library (Dask, JAX)
    has no memory order of its own: 'C'."""
    if order in ("A", "K"):
        if not isinstance(a, (list, tuple, _numpy.ndarray)):
            return "C"
        a = _numpy.asarray(a)
        if order == "A":
            return "F" if a.flags.f_contiguous and not a.flags.c_contiguous else "C"
    return order


def ravel_tangent(t, a, order="C"):
    """``np.ravel(a, order)``'s tangent: the tangent's elements in the order
    the primal's were read ('A' and 'K' follow ``a``'s memory, not ``t``'s)."""
    order = _order_of(a, order)
    if order == "C":
        return np.ravel(t)              # (Dask's ravel takes no order)
    if order != "K":
        return np.ravel(t, order=order)
    position = _numpy.empty_like(a, dtype=_numpy.intp)     # laid out like a
    position[...] = _numpy.arange(_numpy.size(a)).reshape(_numpy.shape(a))
    return np.ravel(t)[_numpy.ravel(position, order="K")]


def reshape_tangent(t, a, shape, order="C"):
    """``np.reshape(a, shape, order)``'s tangent ('A' follows ``a``'s memory)."""
    return np.reshape(t, shape, order=_order_of(a, order))


def abs_grad_tangent(t, x):
    """The tangent of ``abs_grad(g, x)`` (the cotangent of ``abs(x)``) for a
    tangent ``t`` of ``g``: ``t * sign(x)`` for real ``x``, where the sign is
    piecewise constant; a complex ``x`` is refused (its sign moves with ``x``)."""
    if np.iscomplexobj(x):
        raise NonDifferentiableError(
            "pullback does not yet differentiate the gradient of abs of a complex value "
            "again.", hint="Write |z| as np.sqrt(z.real**2 + z.imag**2).")
    return abs_grad(t, x)


def attribute_tangent(t, obj, attr, ans):
    """Tangent of ``ans = obj.attr`` where the compiler could not prove
    ``obj`` an array: an array's ``.T`` / ``.real`` by its forward rule,
    ``.shape`` none; a field of a structure or object is the same field of
    its tangent (which has the value's structure)."""
    if is_array_value(obj):
        from .calls import _hook
        rule, linear = _hook("array_attribute_rule")(attr)    # (rules.registry, installed)
        if rule is None:
            return zeros_tangent(ans)
        if linear:
            return getattr(np.asarray(t) if isinstance(t, (int, float, complex)) else t, attr)
        return rule.jvp(t, ans, obj)
    if t is None:
        return None
    # a property: its getter run on the tangent would be its tangent only were it
    # linear (`self.a ** 2` is not): refused, as the reverse pass refuses it
    from .structures import refuse_computed_read
    refuse_computed_read(type(obj), attr)
    return getattr(t, attr)
