"""Rules for selections and fits: ``np.compress``, ``np.extract``,
``np.resize``, ``np.diagflat``, ``np.choose``, ``np.bincount`` (its
``weights``), ``np.polyfit`` (its ``y``), ``np.unique`` (and NumPy 2's
``unique_values``, ``unique_counts``, ``unique_inverse``, ``unique_all``) and
the set operations ``np.union1d``, ``np.intersect1d``, ``np.setdiff1d``,
``np.setxor1d``.  A selection moves ``g`` back where each output
element came from, found by applying the same selection to the elements'
numbers (``runtime.select_support.source_index``); repeated elements
(``np.resize`` past the end) accumulate.  The conditions and indices are
piecewise constant.  ``np.polyfit``'s coefficients are linear in ``y`` for a
fixed ``x`` (``x``, ``deg`` and ``w`` carry no gradient; ``full=True`` and
``cov`` are refused when the derivative runs).

Unique values and set operations: a value that occurs several times gets
its ``g`` at its first occurrence, in ``ar1`` before ``ar2`` (JAX's
convention, where its result is differentiable: ``jnp.unique(x, size=n)``,
a stable sort then the first of each run; without ``size`` JAX's gradient
is zero).  The indices, inverse and counts they also return carry none;
``setdiff1d(..., assume_unique=True)`` keeps repeats, each with its own ``g``.
``np.choose``: each choice gets ``g`` where it was chosen (after ``mode``'s
wrapping or clipping), summed back onto its shape.

Before, a fit; after, its rule in the adjoint:

>>> import numpy as np, pullback as pb
>>> from pullback.testing import adjoint_source, function_from_source
>>> f = function_from_source('''
... def f(y):
...     return np.polyfit(np.arange(4.0), y, 1)[0]
... ''')
>>> print(adjoint_source(f, np.ones(4)))
def f_adjoint(residuals, out_bar):
    polyfit_arange_y, arange, y = residuals
    polyfit_arange_y_bar = owned_zeros(polyfit_arange_y)
    polyfit_arange_y_bar[0] += out_bar
    y_bar = polyfit_grad(polyfit_arange_y_bar, arange, y, 1)
    return (project(y_bar, y, copy=True),)
>>> pb.grad(f)(np.ones(4))                  # the slope: (x - mean x) / sum (x - mean x)**2
array([-0.3, -0.1,  0.1,  0.3])
"""
import numpy as np

from pullback.rules.registry import facts, jvp, linear, vjp
from pullback.runtime import (choose_grads, gather_grad, polyfit_grad, selection_grads,
                              selection_tangent, setdiff1d_grad, setdiff1d_tangent,
                              source_index, unique_grad, unique_tangent)
from pullback.runtime.select_support import polyfit_jvp as polyfit_jvp_helper


@vjp(np.compress, nondiff=("condition",), discrete=("condition",))
def compress(g, ans, condition, a, axis=None, out=None):
    return gather_grad(g, a, np.compress(condition, source_index(a), axis))


@vjp(np.extract, nondiff=("condition",), discrete=("condition",))
def extract(g, ans, condition, arr):
    return gather_grad(g, arr, np.extract(condition, source_index(arr)))


@vjp(np.resize, nondiff=("new_shape",))
def resize(g, ans, a, new_shape):
    return gather_grad(g, a, np.resize(source_index(a), new_shape))


@vjp(np.diagflat)
def diagflat(g, ans, v, k=0):
    return gather_grad(g, v, np.diagflat(source_index(v), k))


@vjp(np.bincount, nondiff=("x",), optional=("weights",), discrete=("x",))
def bincount(g, ans, x, weights=None, minlength=0):
    # each weight is added into its bin: it gets that bin's g
    return np.asarray(g)[np.asarray(x)]


@vjp(np.polyfit, nondiff=("x", "deg"))
def polyfit(g, ans, x, y, deg, rcond=None, full=False, w=None, cov=False):
    return polyfit_grad(g, x, y, deg, rcond, full, w, cov)


@vjp(np.choose, nondiff=("a",), discrete=("a",))
def choose(g, ans, a, choices, out=None, mode="raise"):
    return choose_grads(g, a, choices, mode)


# --- unique values and set operations: a value's g goes to its first occurrence ---


@vjp(np.unique)
def unique(g, ans, ar, return_index=False, return_inverse=False, return_counts=False,
           axis=None, *, equal_nan=True, sorted=True):
    return unique_grad(g, ans, ar, axis, equal_nan, sorted)


def unique_values(g, ans, x):
    # the array API's (NumPy 2): NaNs are distinct values
    return unique_grad(g, ans, x, None, False)


@vjp(np.union1d, np.setxor1d)
def union1d(g, ans, ar1, ar2, assume_unique=False):
    grads = selection_grads(g, ans, (ar1, ar2))
    return grads[0], grads[1]


@vjp(np.intersect1d)
def intersect1d(g, ans, ar1, ar2, assume_unique=False, return_indices=False):
    # (values in both: from ar1)
    grads = selection_grads(g, ans, (ar1, ar2))
    return grads[0], grads[1]


@vjp(np.setdiff1d, nondiff=("ar2",), discrete=("ar2",))
def setdiff1d(g, ans, ar1, ar2, assume_unique=False):
    return setdiff1d_grad(g, ans, ar1, ar2, assume_unique)


# --- forward rules: linear in the values they move ---

linear(np.compress, np.extract, np.resize, np.diagflat, np.bincount, np.choose)


@jvp(np.unique)
def unique_jvp(t, ans, ar, return_index=False, return_inverse=False, return_counts=False,
               axis=None, *, equal_nan=True, sorted=True):
    return unique_tangent(t, ans, ar, axis, equal_nan, sorted)


def unique_values_jvp(t, ans, x):
    return unique_tangent(t, ans, x, None, False)


if hasattr(np, "unique_values"):
    _unique_all = (np.unique_values, np.unique_counts, np.unique_inverse, np.unique_all)
    vjp(*_unique_all)(unique_values)
    jvp(*_unique_all)(unique_values_jvp)
    facts(*_unique_all, fresh=True)


@jvp(np.union1d, np.setxor1d)
def union1d_jvp(t, ans, ar1, ar2, assume_unique=False):
    return selection_tangent(ans, (ar1, ar2), 0, t), selection_tangent(ans, (ar1, ar2), 1, t)


@jvp(np.intersect1d)
def intersect1d_jvp(t, ans, ar1, ar2, assume_unique=False, return_indices=False):
    return selection_tangent(ans, (ar1, ar2), 0, t), selection_tangent(ans, (ar1, ar2), 1, t)


@jvp(np.setdiff1d)
def setdiff1d_jvp(t, ans, ar1, ar2, assume_unique=False):
    return setdiff1d_tangent(t, ans, ar1, ar2, assume_unique)


@jvp(np.polyfit)
def polyfit_jvp(t, ans, x, y, deg, rcond=None, full=False, w=None, cov=False):
    return polyfit_jvp_helper(t, x, y, deg, rcond, full, w, cov)


# -- facts (rules/registry.py: facts) ------------------------------------------------
facts(np.compress, np.extract, np.resize, np.diagflat, np.bincount, np.polyfit, np.choose,
      np.unique, np.union1d, np.setxor1d, np.intersect1d, np.setdiff1d, fresh=True)
