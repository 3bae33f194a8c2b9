"""Rules for NumPy's reductions and their ``ndarray`` methods.

A reduction's cotangent is broadcast back over the reduced axes
(``runtime.unreduce``), then shaped by the derivative.  ``max``/``min`` split
the cotangent equally among tied maxima (JAX's policy); ``prod`` is correct
with zeros.  ``out=``, ``initial=`` and ``where=`` are not accepted: a call
using them does not bind, so it is refused rather than differentiated wrongly.

Before, reductions; after, their rules inlined in the adjoint:

>>> import numpy as np, pullback as pb
>>> from pullback.testing import adjoint_source, function_from_source
>>> f = function_from_source('''
... def f(x):
...     return np.sum(np.mean(x, axis=0))
... ''')
>>> print(adjoint_source(f, np.ones((2, 3))))
def f_adjoint(residuals, out_bar):
    mean_x, x = residuals
    mean_x_bar = unreduce(out_bar, mean_x)
    x_bar = unreduce(mean_x_bar / per_output(x, mean_x), x, 0)
    return (project(x_bar, x, copy=True),)
>>> pb.grad(f)(np.ones((2, 3)))
array([[0.5, 0.5, 0.5],
       [0.5, 0.5, 0.5]])
"""
import numpy as np

from pullback.rules.registry import facts, vjp, jvp, linear
from pullback.runtime.forward_support import max_jvp as max_jvp_helper, prod_jvp as prod_jvp_helper
from pullback.runtime import per_output, prod_grad, unreduce


@vjp(np.sum, "ndarray.sum")
def sum_(g, ans, a, axis=None, dtype=None, keepdims=False):
    return unreduce(g, a, axis, keepdims)


@vjp(np.mean, "ndarray.mean")
def mean(g, ans, a, axis=None, dtype=None, keepdims=False):
    # each element weighs 1/n, n = how many were averaged into each output
    return unreduce(g / per_output(a, ans), a, axis, keepdims)


@vjp(np.prod, "ndarray.prod")
def prod(g, ans, a, axis=None, dtype=None, keepdims=False):
    return prod_grad(g, ans, a, axis, keepdims)


@vjp(np.max, np.amax, np.min, np.amin, "ndarray.max", "ndarray.min")
def max_(g, ans, a, axis=None, keepdims=False):
    # the elements equal to the result share g equally
    winners = a == unreduce(ans, a, axis, keepdims)
    return (unreduce(g, a, axis, keepdims) * winners
            / np.sum(winners, axis=axis, keepdims=True, dtype=np.result_type(ans)))


@vjp(np.var, "ndarray.var")
def var(g, ans, a, axis=None, dtype=None, ddof=0, keepdims=False):
    # d var = 2 Re(conj(a - mean) da) / (n - ddof)
    centered = a - np.mean(a, axis=axis, keepdims=True)
    return (unreduce(g, a, axis, keepdims) * (2.0 / (per_output(a, ans) - ddof))
            * (np.conj(centered) if np.iscomplexobj(centered) else centered))


@vjp(np.std, "ndarray.std")
def std(g, ans, a, axis=None, dtype=None, ddof=0, keepdims=False):
    # d std = d var / (2 std)
    centered = a - np.mean(a, axis=axis, keepdims=True)
    return (unreduce(g / ans, a, axis, keepdims) * (1.0 / (per_output(a, ans) - ddof))
            * (np.conj(centered) if np.iscomplexobj(centered) else centered))


@vjp(np.cumsum, "ndarray.cumsum")
def cumsum(g, ans, a, axis=None, dtype=None):
    # each element feeds every later partial sum: a reversed cumulative sum
    # (axis=None: over the flattened array, then reshaped)
    along = -1 if axis is None else axis
    return np.reshape(np.flip(np.cumsum(np.flip(g, along), along), along), np.shape(a))

# --- forward rules ---

linear(np.sum, "ndarray.sum", np.mean, "ndarray.mean", np.cumsum, "ndarray.cumsum")


@jvp(np.prod, "ndarray.prod")
def prod_jvp(t, ans, a, axis=None, dtype=None, keepdims=False):
    return prod_jvp_helper(t, ans, a, axis, keepdims)


@jvp(np.max, np.amax, np.min, np.amin, "ndarray.max", "ndarray.min")
def max_jvp(t, ans, a, axis=None, keepdims=False):
    return max_jvp_helper(t, ans, a, axis, keepdims)


@jvp(np.var, "ndarray.var")
def var_jvp(t, ans, a, axis=None, dtype=None, ddof=0, keepdims=False):
    # d var = 2 mean(Re(conj(a - mean) da)) n / (n - ddof)
    centered = a - np.mean(a, axis=axis, keepdims=True)
    return (np.sum(np.real(np.conj(centered) * t), axis=axis, keepdims=keepdims)
            * (2.0 / (per_output(a, ans) - ddof)))


@jvp(np.std, "ndarray.std")
def std_jvp(t, ans, a, axis=None, dtype=None, ddof=0, keepdims=False):
    centered = a - np.mean(a, axis=axis, keepdims=True)
    return (np.sum(np.real(np.conj(centered) * t), axis=axis, keepdims=keepdims)
            / (ans * (per_output(a, ans) - ddof)))


# -- facts (rules/registry.py: facts) ----------------------------------------------
facts(np.sum, np.mean, np.prod, owned=True)
facts(np.sum, np.mean, np.prod, np.max, np.min, np.var, np.std, "ndarray.sum",
      "ndarray.mean", "ndarray.prod", "ndarray.max", "ndarray.min", "ndarray.var",
      "ndarray.std", reduction=True)
