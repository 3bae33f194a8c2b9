"""Rules for NumPy functions programs call that fit no other family:
``np.insert``, the NaN-skipping quantiles (``np.nanmedian``,
``np.nanquantile``, ``np.nanpercentile``) and ``np.nancumprod``, ``np.unwrap``, ``np.i0`` and
``np.linalg.cond``, ``np.block``, ``np.logspace``; and functions whose results
carry no gradient (integer and boolean results: ``np.digitize``,
``np.argpartition``, ``np.isin``...).  ``np.frompyfunc``'s ufuncs are refused
(``frompyfunc_hint``: write ``np.vectorize``).  Helpers:
``runtime.select_support``, ``runtime.special_support``, ``runtime.assorted_support``.
Conventions:

- ``np.insert``: ``obj`` (where) carries no gradient; ``values`` gets ``g``
  summed over the places it filled, nothing when ``arr`` is an integer array
  (the values are cast to it).
- NaN-skipping quantiles: as ``np.quantile`` over each slice's values that
  are not NaN (NaN gets 0; an all-NaN slice, whose result is NaN, too).
- ``np.unwrap``: adds multiples of ``period``, piecewise constant: ``g``
  passes through (``discont`` and ``period`` carry no gradient).
- ``np.i0``: its derivative is ``I_1``, summed from its series.
- ``np.linalg.cond``: for ``p`` None, 2, -2 the ratio of the extreme singular
  values (distinct ones assumed, as the derivative of ``svd``); otherwise
  ``norm(x, p) * norm(inv(x), p)`` with ``np.linalg.norm``'s conventions.
- ``np.block``: each block gets the part of ``g`` it filled (a nested list).
- ``np.logspace``: ``base ** linspace(start, stop)``; ``base`` carries no gradient.

Before, a condition number; after, its rule in the adjoint:

>>> import numpy as np, pullback as pb
>>> from pullback.testing import adjoint_source, function_from_source
>>> f = function_from_source('''
... def f(a):
...     return np.linalg.cond(a)
... ''')
>>> print(adjoint_source(f, np.diag([4.0, 2.0])))
def f_adjoint(residuals, out_bar):
    a, = residuals
    a_bar = cond_grad(out_bar, a)
    return (project(a_bar, a, copy=True),)
>>> pb.grad(f)(np.diag([4.0, 2.0]))          # d(s1 / s2) = ds1 / 2 - 4 ds2 / 4
array([[ 0.5,  0. ],
       [ 0. , -1. ]])
"""
import numpy as np

from pullback.rules.registry import elementwise, facts, jvp, linear, nondifferentiable, vjp
from pullback.runtime import (bessel_i1, block_grads, cond_grad, cumprod_grad, insert_grads,
                              logspace_start_grad, logspace_stop_grad, logspace_tangent,
                              nanquantile_grad)
from pullback.runtime.reduction_forward import cumprod_jvp as cumprod_jvp_helper
from pullback.runtime.special_support import cond_jvp as cond_jvp_helper
from pullback.runtime.select_support import nanquantile_jvp as nanquantile_jvp_helper


@vjp(np.insert, nondiff=("obj",), discrete=("obj",))
def insert(g, ans, arr, obj, values, axis=None):
    grads = insert_grads(g, arr, obj, values, axis)
    return grads[0], grads[1]


@vjp(np.nanmedian)
def nanmedian(g, ans, a, axis=None, out=None, overwrite_input=False, keepdims=False):
    return nanquantile_grad(g, a, 0.5, axis, keepdims)


@vjp(np.nanquantile, nondiff=("q",))
def nanquantile(g, ans, a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=False, *, weights=None):
    return nanquantile_grad(g, a, q, axis, keepdims, method, weights)


@vjp(np.nanpercentile, nondiff=("q",))
def nanpercentile(g, ans, a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=False, *, weights=None):
    return nanquantile_grad(g, a, np.true_divide(q, 100.0), axis, keepdims, method, weights)


@vjp(np.nancumprod)
def nancumprod(g, ans, a, axis=None, dtype=None, out=None):
    # NaN counts as 1 and gets nothing
    return cumprod_grad(g, ans, np.where(np.isnan(a), 1, a), axis) * ~np.isnan(a)


@vjp(np.unwrap)
def unwrap(g, ans, p, discont=None, axis=-1, *, period=2 * np.pi):
    # p plus multiples of period chosen by comparisons: the identity where it has a slope
    return g


@vjp(np.i0)
def i0(g, ans, x):
    return g * bessel_i1(x)


@vjp(np.linalg.cond)
def cond(g, ans, x, p=None):
    return cond_grad(g, x, p)


@vjp(np.block)
def block(g, ans, arrays):
    # each element of the result came from one block: a nested list of parts
    return block_grads(g, arrays)


@vjp(np.logspace)
def logspace(g, ans, start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    return (logspace_start_grad(g, ans, start, stop, num, endpoint, base, axis),
            logspace_stop_grad(g, ans, start, stop, num, endpoint, base, axis))


# --- forward rules ---

elementwise(np.unwrap, np.i0)
linear(np.block)


@jvp(np.logspace)
def logspace_jvp(t, ans, start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    return (logspace_tangent(t, 0, ans, start, stop, num, endpoint, base, axis),
            logspace_tangent(0, t, ans, start, stop, num, endpoint, base, axis))


@jvp(np.insert)
def insert_jvp(t, ans, arr, obj, values, axis=None):
    # one input's tangent in its places, zeros in the other's
    return (np.insert(t, obj, np.zeros(np.shape(values), t.dtype), axis),
            np.insert(np.zeros(np.shape(arr), np.result_type(t, ans)), obj, t, axis)
            * (np.asarray(arr).dtype.kind in "fc"))


@jvp(np.nanmedian)
def nanmedian_jvp(t, ans, a, axis=None, out=None, overwrite_input=False, keepdims=False):
    return nanquantile_jvp_helper(t, ans, a, 0.5, axis, keepdims)


@jvp(np.nanquantile)
def nanquantile_jvp(t, ans, a, q, axis=None, out=None, overwrite_input=False, method="linear",
                    keepdims=False, *, weights=None):
    return nanquantile_jvp_helper(t, ans, a, q, axis, keepdims, method, weights)


@jvp(np.nanpercentile)
def nanpercentile_jvp(t, ans, a, q, axis=None, out=None, overwrite_input=False,
                      method="linear", keepdims=False, *, weights=None):
    return nanquantile_jvp_helper(t, ans, a, np.true_divide(q, 100.0), axis, keepdims, method,
                                  weights)


@jvp(np.nancumprod)
def nancumprod_jvp(t, ans, a, axis=None, dtype=None, out=None):
    return cumprod_jvp_helper(np.where(np.isnan(a), 0, t), ans, np.where(np.isnan(a), 1, a),
                              axis, dtype)


@jvp(np.linalg.cond)
def cond_jvp(t, ans, x, p=None):
    return cond_jvp_helper(t, ans, x, p)


# --- np.frompyfunc: refused (a ufunc of Python objects) ---


def frompyfunc_hint(ufunc):
    """What to write instead of calling a ufunc that ``np.frompyfunc`` made
    (``rules.numpy_ufunc_methods.refusal_hint`` reads it).

    >>> print(frompyfunc_hint(np.frompyfunc(abs, 1, 1)).split(": ")[-1][:29])
    write np.vectorize(f) instead
    """
    return (f"{ufunc.__name__} was made by np.frompyfunc: it maps Python objects to "
            "objects (an array of dtype object), whose derivative pullback cannot "
            "follow: write np.vectorize(f) instead (pullback differentiates f at each element),"
            " or compute it with NumPy functions on the whole array.")


# --- results that carry no gradient: integers, booleans, shapes, windows of an integer
# length, and np.spacing (piecewise constant) ---

nondifferentiable(
    np.argpartition, np.nanargmax, np.nanargmin, np.digitize, np.lexsort, np.isin,
    np.indices, np.diag_indices, np.diag_indices_from, np.tril_indices, np.tril_indices_from,
    np.triu_indices, np.triu_indices_from, np.mask_indices, np.ravel_multi_index,
    np.unravel_index, np.tri, np.broadcast_shapes, np.bartlett, np.blackman, np.hamming,
    np.hanning, np.array_equiv, np.isscalar, np.iterable, np.may_share_memory,
    np.shares_memory, np.gcd, np.lcm, np.packbits, np.unpackbits, np.isnat, np.isfortran,
    np.issubdtype, np.can_cast, np.min_scalar_type, np.promote_types, np.common_type,
    np.spacing)
if hasattr(np, "bitwise_count"):            # NumPy 2.0+
    nondifferentiable(np.bitwise_count)


# -- facts (rules/registry.py: facts) ------------------------------------------------
facts(np.insert, np.nanmedian, np.nanquantile, np.nanpercentile, np.unwrap, np.i0,
      np.nancumprod, np.block, np.logspace, fresh=True)
facts(np.linalg.cond, np.nanmedian, np.nanquantile, np.nanpercentile, real_output=True)
facts(np.unwrap, np.i0, shape="same")
