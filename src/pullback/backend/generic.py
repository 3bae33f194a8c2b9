"""The namespace-generic runtime helpers: what the namespace build
(``backend.namespace``) binds in place of NumPy's, and what the
traceability check (``backend.traceability``) asks about.  Structures
(tuples, lists, dicts, namedtuples, dataclasses, objects) are taken apart as
NumPy's helpers take them; helpers whose NumPy code runs on jax.numpy once
``np`` is rebound are made again over it (``_REBOUND_MODULES``); a few have
forms of their own (``prod_grad``, ``take_grad``, ``sort_grad``).

A NumPy runtime helper (``GENERIC``: ``unbroadcast``, ``unindex``, ...) has a
twin made by ``_make_generic(xp)`` for an array namespace ``xp``: the same
result, no buffer written (an indexed scatter is ``.at[index].add``, not
``np.add.at``).  ``backend.twins`` maps ``np``/``numpy``, ``math`` and NumPy's
functions to jax.numpy's.

Before, NumPy's ``unbroadcast`` sums a gradient back to its input's shape;
after, its generic twin does the same on the namespace it was made for:

>>> import numpy as np
>>> from pullback.runtime import core
>>> GENERIC[core.unbroadcast]
'unbroadcast'
>>> _make_generic(np)["unbroadcast"](np.ones((2, 3)), np.zeros(3)).tolist()
[2.0, 2.0, 2.0]
>>> import jax.numpy as jnp
>>> _generic_helpers()["unindex"](jnp.ones(2), jnp.zeros(3), np.array([0, 0])).tolist()
[2.0, 0.0, 0.0]
"""
from __future__ import annotations

import functools
import types

import numpy as np

from ..errors import NotTraceableError
from .. import runtime as _runtime
from ..runtime import core as _core
from ..runtime import rule_support as _rule_support
from ..runtime import dot_support as _dot_support
from ..runtime import index_support as _index_support
from ..runtime import accumulation as _accumulation
from ..runtime import forward_support as _forward_support
from ..runtime.core import Meta
from .twins import _special_twin

__all__ = ["GENERIC"]


# -- the namespace-generic helpers ---------------------------------------------------

def _shape(x):
    return tuple(x.shape) if hasattr(x, "shape") else np.shape(x)


def _make_generic(xp):
    """The runtime helpers as functions of arrays of namespace ``xp``
    (jax.numpy): the same results as NumPy's helpers, no buffer written."""

    def meta(x):
        if hasattr(x, "shape") and hasattr(x, "dtype") and not isinstance(x, Meta):
            return Meta(tuple(x.shape), np.dtype(x.dtype))
        return x

    def unbroadcast(g, x):
        shape, gshape = _shape(x), _shape(g)
        if gshape == shape:
            return g
        lead = len(gshape) - len(shape)
        axes = tuple(range(lead)) + tuple(
            lead + i for i, n in enumerate(shape) if n == 1 and gshape[lead + i] != 1)
        if axes:
            g = xp.sum(g, axis=axes)
        if _shape(g) != shape:
            g = xp.reshape(g, shape)
        return g

    def unreduce(g, x, axis=None, keepdims=False):
        shape = _shape(x)
        if axis is not None and not keepdims:
            axes = axis if isinstance(axis, tuple) else (axis,)
            g = xp.expand_dims(g, tuple(sorted(a % len(shape) for a in axes)))
        return xp.broadcast_to(g, shape)

    def _dtype(x):
        return np.dtype(x.dtype) if hasattr(x, "dtype") else np.result_type(x)

    def realify(g, x):
        if xp.iscomplexobj(g) and not np.issubdtype(_dtype(x), np.complexfloating):
            return xp.real(g)
        return g

    def _plain(x):
        if isinstance(x, (list, tuple, dict)) or _core.is_structure(x) or _core.is_instance(x) \
                or isinstance(x, functools.partial):
            raise NotTraceableError(
                "pullback runs tangent functions and function values under jax.jit on arrays, "
                f"numbers and structures of them; this value is a {type(x).__name__}.",
                hint="Pass the arrays as separate arguments, or call pullback outside jax.jit.")

    def _leaf(x):
        return hasattr(x, "shape") and hasattr(x, "dtype")

    def _fields(x):
        """(key, value) pairs of a structure or an object of the user's class."""
        return _core.fields_of(x) if _core.is_structure(x) else list(vars(x).items())

    def _no_extra_fields(g, x, names):
        # a gradient reaching a name that is not a field: refused where it is a
        # property (its value came through code the adjoint did not see); read
        # as a tracer, its value cannot be tested for zero as NumPy's path does
        if isinstance(g, dict):
            for k in g:
                if k not in names and isinstance(k, str):
                    found = getattr(type(x), k, None)
                    if found is not None and hasattr(type(found), "__get__") and not \
                            isinstance(found, (types.FunctionType, staticmethod, classmethod)):
                        _core._computed_attribute(type(x), k)

    def _project_fields(g, x, copy):
        fields = _fields(x)
        _no_extra_fields(g, x, {k for k, _ in fields})
        values = {}
        for k, v in fields:
            e = _core._entry(g, k)
            values[k] = zeros_like(v) if e is None or v is None or isinstance(
                v, _core._NO_GRADIENT + (bool,)) else project(e, v, copy)
        return _core.rebuild_like(x, values) if _core.is_structure(x) else values

    def project(g, x, copy=False):
        if not _leaf(x):
            if _core.is_structure(x) or _core.is_instance(x):
                return _project_fields(g, x, copy)
            _plain(x)
        if isinstance(x, bool):
            raise TypeError("booleans carry no gradient")
        if g is None:
            return zeros_like(x)
        if isinstance(x, (float, int, complex)) and not hasattr(x, "shape"):
            return xp.sum(g) if len(_shape(g)) else g
        g = unbroadcast(g, x)
        g = realify(g, x)
        dtype = _dtype(x)
        if _shape(g) != _shape(x):
            g = xp.broadcast_to(g, _shape(x))
        g = xp.asarray(g)
        return g.astype(dtype) if g.dtype != dtype else g

    def zeros_like(x):
        if not _leaf(x):
            if x is None or isinstance(x, _core._NO_GRADIENT):
                return 0.0
            if isinstance(x, (float, int, complex)):
                return 0j if isinstance(x, complex) else 0.0
            if _core.is_structure(x):
                return _core.rebuild_like(x, {k: zeros_like(v) for k, v in _fields(x)})
            if _core.is_instance(x):
                return {k: zeros_like(v) for k, v in _fields(x)}
            _plain(x)
        return xp.zeros(_shape(x), dtype=_dtype(x))

    def _field_grads(x):
        out = _core.FieldGrads((k, zeros_like(v)) for k, v in _fields(x))
        out.of = type(x)
        return out

    def owned_zeros(x):
        if not _leaf(x):
            if isinstance(x, list) or (isinstance(x, tuple) and not hasattr(x, "_fields")):
                return [zeros_like(v) for v in x]
            if isinstance(x, dict):
                return {k: zeros_like(v) for k, v in x.items()}
            if _core.is_structure(x) or _core.is_instance(x):
                return _field_grads(x)
            _plain(x)
        return xp.zeros(_shape(x), dtype=np.result_type(_dtype(x), 0.0))

    def unindex(g, a, index):
        if not _leaf(a):
            if isinstance(a, dict):
                out = {k: zeros_like(v) for k, v in a.items()}
                out[index] = g
                return out
            if isinstance(a, list) or (isinstance(a, tuple) and not hasattr(a, "_fields")):
                out = [zeros_like(v) for v in a]
                if isinstance(index, slice):
                    for i, gi in zip(range(*index.indices(len(a))), g):
                        out[i] = gi
                else:
                    out[index] = g
                return out if isinstance(a, list) else tuple(out)
            if _core.is_structure(a) or _core.is_instance(a):    # namedtuple, dataclass, object
                out = _field_grads(a)
                for k, gk in zip(out.keys_at(index), g if isinstance(index, slice) else [g]):
                    out[k] = gk
                return out
            _plain(a)
        dtype = np.result_type(_dtype(a), 0.0) if not isinstance(a, Meta) else a.dtype
        out = xp.zeros(_shape(a), dtype=dtype)
        return out.at[index].add(realify(g, out))    # repeats accumulate, as np.add.at

    def pack_like(t, parts):
        parts = [zeros_like(v) if p is None else p for p, v in zip(parts, t)]
        if _leaf(t):
            return xp.stack(parts)
        if isinstance(t, list):
            return parts
        if isinstance(t, tuple) and type(t) is not tuple:      # a namedtuple
            return type(t)(*parts)
        return tuple(parts)

    def join_grads(g, x, y):
        if isinstance(x, (tuple, list)) and isinstance(y, (tuple, list)):
            parts = list(g) if g is not None else [None] * (len(x) + len(y))
            return pack_like(x, parts[:len(x)]), pack_like(y, parts[len(x):])
        return unbroadcast(g, x), unbroadcast(g, y)

    def _inexact(x):
        return hasattr(x, "dtype") and np.dtype(x.dtype).kind in "fc" or (
            isinstance(x, (float, complex)) and not hasattr(x, "shape"))

    def zeros_tangent(x):
        if _core.is_structure(x):            # (a tuple, list or dict of the user's)
            return _core.rebuild_like(x, {k: zeros_tangent(v) for k, v in _core.fields_of(x)})
        _plain(x)
        if isinstance(x, range):
            return xp.zeros(len(x))
        if not _inexact(x):
            if hasattr(x, "dtype") and np.dtype(x.dtype).kind in "iu":
                return xp.zeros(_shape(x))
            if isinstance(x, int) and not isinstance(x, bool):
                return 0.0
            return None
        if not hasattr(x, "shape"):
            return 0j if isinstance(x, complex) else 0.0
        return xp.zeros(_shape(x), dtype=_dtype(x))

    def broadcast_tangent(t, x):
        shape = _shape(x)
        return t if _shape(t) == shape else xp.broadcast_to(t, shape)

    def output_tangent(t, y, fresh=False):
        if _core.is_structure(y):
            t = zeros_tangent(y) if t is None else t
            return _core.rebuild_like(y, {k: output_tangent(_core._entry(t, k), v)
                                          for k, v in _core.fields_of(y)})
        _plain(y)
        if not _inexact(y):
            return zeros_tangent(y) if t is None else t
        if t is None:
            return zeros_tangent(y)
        return project(t, y)

    made = {"meta": meta, "zeros_tangent": zeros_tangent,
            "broadcast_tangent": broadcast_tangent, "output_tangent": output_tangent, "unbroadcast": unbroadcast, "unreduce": unreduce,
            "realify": realify, "project": project, "zeros_like": zeros_like,
            "owned_zeros": owned_zeros, "unindex": unindex, "pack_like": pack_like,
            "join_grads": join_grads,
            "per_output": _core.per_output}      # reads shapes only
    # structural helpers whose only arithmetic is `a + b` on their leaves
    made.update({name: getattr(_runtime, name) for name in _STRUCTURAL})
    def prod_grad(g, ans, a, axis=None, keepdims=False):
        # NumPy's tests for a zero first (`if not zero.any()`); traced, the
        # zero-safe form always: one zero in a slice gets the product of the
        # others, two or more give the slice zero
        g = unreduce(g, a, axis, keepdims)
        zero = a == 0
        nonzero = xp.where(zero, 1, a)
        others = xp.prod(nonzero, axis=axis, keepdims=True)
        zeros = xp.sum(zero, axis=axis, keepdims=True)
        return g * xp.where(zero, xp.where(zeros == 1, others, 0),
                            xp.where(zeros == 0, others / nonzero, 0))

    def take_grad(g, a, indices, axis=None):
        out = xp.zeros(_shape(a), dtype=np.result_type(_dtype(a), 0.0))
        g = realify(g, out)
        if axis is None:
            return xp.reshape(xp.reshape(out, (-1,)).at[indices].add(g), _shape(a))
        axis = axis % len(_shape(a))
        k = np.ndim(indices)
        moved = xp.moveaxis(out, axis, 0).at[indices].add(
            xp.moveaxis(g, list(range(axis, axis + k)), list(range(k))))
        return xp.moveaxis(moved, 0, axis)

    def sort_grad(g, a, axis=-1):
        along = -1 if axis is None else axis
        places = xp.argsort(xp.argsort(a, axis=axis, stable=True), axis=along)
        return xp.reshape(xp.take_along_axis(g, places, axis=along), _shape(a))

    def _nested_shape(a):
        if isinstance(a, (list, tuple)):
            return (len(a),) + (_nested_shape(a[0]) if len(a) else ())
        return _shape(a)

    def unarray(g, a):
        # np.shape of a list of tracers converts them: the shape by hand
        if _shape(g) != _nested_shape(a):
            g = xp.reshape(g, _nested_shape(a))
        if isinstance(a, (list, tuple)):
            parts = [unarray(g[i], x) for i, x in enumerate(a)]
            return parts if isinstance(a, list) else tuple(parts)
        return g

    made.update({"unarray": unarray, "prod_grad": prod_grad, "take_grad": take_grad, "sort_grad": sort_grad})
    # helpers whose code calls only NumPy functions, the helpers above and
    # functions of their own module: the same code with `np` bound to xp (and
    # the module's other functions rebound alike)
    for module, names in _REBOUND_MODULES.items():
        rebound = _rebind(module, xp, made)
        made.update({n: rebound[n] for n in names})
    return made


def _rebind(module, xp, made):
    """``module``'s functions as functions of namespace ``xp``: one new
    globals dict with ``np`` bound to xp, SciPy's special functions to
    ``jax.scipy.special``, the generic helpers in place of NumPy's, and every
    function defined in the module made again over it."""
    g = dict(vars(module))
    for name, value in vars(module).items():
        if isinstance(value, types.FunctionType) and value.__module__ == module.__name__:
            g[name] = types.FunctionType(value.__code__, g, name, value.__defaults__,
                                         value.__closure__)
    g.update({k: v for k, v in made.items() if k in g})
    g["np"] = xp
    if "_special" in g:
        g["_special"] = _special_twin
    return g


from ..runtime import layout_support as _layout_support            # noqa: E402
from ..runtime import contraction_support as _contraction_support  # noqa: E402
from ..runtime import quantile_support as _quantile_support        # noqa: E402
from ..runtime import linalg_support as _linalg_support            # noqa: E402
from ..runtime import linalg_forward as _linalg_forward            # noqa: E402
from ..runtime import reduction_forward as _reduction_forward      # noqa: E402
from ..runtime import fft_support as _fft_support                  # noqa: E402
from ..runtime import scipy_support as _scipy_support              # noqa: E402

#: helpers whose NumPy code runs on jax.numpy as written once ``np`` is
#: rebound (``_rebind``): no write into an array, no Python branch on a value.
#: Each is checked against pullback's NumPy gradient under jax.jit
#: (test_jit.py::test_helpers_with_a_generic_form, test_lazy_backends.py); the
#: helpers of these modules not listed branch on values or write into arrays,
#: and are refused by the traceability check.  A module comes after those whose
#: functions it imports (rebound first, then bound in its own globals)
_REBOUND_MODULES = {
    _dot_support: ("matmul_lhs_grad", "matmul_rhs_grad", "inner_lhs_grad", "inner_rhs_grad",
                   "dot_lhs_grad", "dot_rhs_grad"),
    _rule_support: ("abs_grad", "clip_grad", "tie_share", "unconcatenate", "unstack",
                    "untranspose", "ravel_grad"),
    _layout_support: ("atleast_grads", "tile_grad", "diff_grad", "linspace_grads",
                      "cumprod_grad", "cumprod_jvp", "cov_grad", "cov_jvp", "corrcoef_grad",
                      "ptp_grad"),
    _contraction_support: ("einsum_grads", "kron_grads", "cross_grads", "diagonal_grad",
                           "trace_grad", "diag_grad"),
    _quantile_support: ("quantile_grad", "quantile_jvp"),
    _linalg_support: ("solve_rhs_grad", "solve_lhs_grad", "slogdet_grad",
                      "norm_grad", "pinv_grad", "hermitian_grad", "det_grad", "cholesky_grad",
                      "eigh_grad", "svd_grad", "qr_grad", "matrix_power_grad",
                      "multi_dot_grad", "lstsq_grad",
                      # (what linalg_forward and forward_support import from it)
                      "_T", "_H", "_cj", "_eye", "_diag_embed", "_hermitian"),
    _linalg_forward: ("lstsq_jvp", "eig_jvp", "eigvals_jvp", "eigh_jvp", "eigvalsh_jvp",
                      "svd_jvp", "qr_jvp", "pinv_jvp", "matrix_power_jvp", "multi_dot_jvp"),
    _forward_support: ("sort_jvp", "prod_jvp", "norm_jvp", "reshape_tangent", "ravel_tangent",
                       "add_tangents", "det_jvp", "slogdet_jvp", "cholesky_jvp",
                       "solve_a_jvp", "max_jvp"),
    _reduction_forward: ("ptp_jvp", "corrcoef_jvp"),
    _fft_support: ("fft_grad", "eig_grad"),
    _scipy_support: ("sp_digamma", "sp_polygamma", "logsumexp_grad", "xlogy_grad",
                     "multigammaln_grad"),
}
_REBOUND = tuple(getattr(m, n) for m, names in _REBOUND_MODULES.items() for n in names)

#: the NumPy helpers that have a namespace-generic form, by identity
GENERIC = {_core.meta: "meta", _core.unbroadcast: "unbroadcast", _core.unreduce: "unreduce",
           _core.realify: "realify", _core.project: "project", _core.zeros_like: "zeros_like",
           _accumulation.owned_zeros: "owned_zeros", _index_support.unindex: "unindex",
           _core.per_output: "per_output"}
#: helpers that only take structures apart, check them or add leaves (`a + b`):
#: the NumPy helper itself is namespace-generic
_STRUCTURAL = ("add_cotangents", "indexable", "field_cotangent", "mapping_keys",
               "plain_operands", "loops_over_keys", "no_float_in", "updatable",
               "plain_container")
GENERIC.update({fn: fn.__name__ for fn in _REBOUND})
GENERIC.update({_core.pack_like: "pack_like", _core.join_grads: "join_grads",
                _rule_support.prod_grad: "prod_grad", _index_support.take_grad: "take_grad",
                _rule_support.unarray: "unarray",
                _layout_support.sort_grad: "sort_grad"})
GENERIC.update({getattr(_runtime, n): n for n in _STRUCTURAL})
GENERIC.update({getattr(_forward_support, n): n for n in ("zeros_tangent", "broadcast_tangent",
                                                          "output_tangent")})
#: helpers the in-place build calls that the out-of-place build (the one
#: jax.jit runs) does not
_ACCUMULATION_ONLY = {getattr(_accumulation, n) for n in ("owned_copy", "index_add")
                      if hasattr(_accumulation, n)}


def _generic_of(value):
    try:
        return GENERIC.get(value)
    except TypeError:       # unhashable
        return None


def _accumulation_only(value):
    try:
        return value in _ACCUMULATION_ONLY
    except TypeError:
        return False


_GENERIC_CACHE = {}


def _generic_helpers():
    import jax.numpy as jnp
    made = _GENERIC_CACHE.get("jax")
    if made is None:
        made = _GENERIC_CACHE["jax"] = _make_generic(jnp)
    return made


def _callee_of(value):
    """The ``Derivative`` handle of a callee's primal or adjoint as generated
    code holds them (``Derivative.for_callers``), else None."""
    tag = getattr(value, "__pullback_callee__", None)
    if tag is not None and hasattr(tag[0], "specialize"):
        return tag[0]
    owner = getattr(value, "__self__", None)
    if owner is not None and getattr(value, "__name__", "") == "call_adjoint" \
            and hasattr(owner, "specialize") and hasattr(owner, "for_callers"):
        return owner
    return None
