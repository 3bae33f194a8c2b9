"""Rules for the methods of NumPy's ufuncs: ``np.add.reduce``,
``np.logaddexp.reduce``, ``np.maximum.accumulate``, ``np.multiply.outer``...

A method is keyed by the bound method itself (``np.add.reduce``: equal, and
equally hashed, each time it is read).  NumPy's defaults hold: ``reduce`` and
``accumulate`` work along ``axis=0`` unless told otherwise (``axis=None``:
every axis), ``outer(A, B)`` has ``A``'s axes then ``B``'s.  ``initial=``,
``where=`` and ``dtype=`` on ``outer`` do not bind, so a call using them is
refused.  Ties in ``maximum``/``minimum`` share the cotangent equally, as
``np.max``'s rule does.  Any other method (``np.subtract.reduce``,
``np.add.reduceat``, ``np.logaddexp.accumulate``) is refused with the
function to write instead (``refusal_hint``).

Before, a log-sum-exp over the first axis; after, its rule inlined:

>>> import numpy as np, pullback as pb
>>> from pullback.testing import adjoint_source, function_from_source
>>> f = function_from_source('''
... def f(x):
...     return np.sum(np.logaddexp.reduce(x))
... ''')
>>> print(adjoint_source(f, np.zeros((2, 3))))
def f_adjoint(residuals, out_bar):
    reduce_x, x = residuals
    reduce_x_bar = unreduce(out_bar, reduce_x)
    x_bar = unreduce(reduce_x_bar, x, 0) * np.exp(x - unreduce(reduce_x, x, 0))
    return (project(x_bar, x),)
>>> pb.grad(f)(np.zeros((2, 3)))
array([[0.5, 0.5, 0.5],
       [0.5, 0.5, 0.5]])
"""
import numpy as np

from pullback.rules.numpy_assorted import frompyfunc_hint
from pullback.rules.registry import jvp, linear, multilinear, vjp
from pullback.runtime import cumprod_grad, cummax_grad, prod_grad, unouter, unreduce
from pullback.runtime.forward_support import (max_jvp as max_jvp_helper,
                                              prod_jvp as prod_jvp_helper)
from pullback.runtime.reduction_forward import (cummax_jvp as cummax_jvp_helper,
                                                cumprod_jvp as cumprod_jvp_helper,
                                                logaddexp_reduce_jvp as lae_jvp_helper)

__all__ = ["refusal_hint"]


# --- reduce: np.sum, np.prod, np.max, np.min, log-sum-exp along axis 0 ---


@vjp(np.add.reduce)
def add_reduce(g, ans, array, axis=0, dtype=None, keepdims=False):
    return unreduce(g, array, axis, keepdims)


@vjp(np.multiply.reduce)
def multiply_reduce(g, ans, array, axis=0, dtype=None, keepdims=False):
    return prod_grad(g, ans, array, axis, keepdims)


@vjp(np.maximum.reduce, np.minimum.reduce, np.fmax.reduce, np.fmin.reduce)
def maximum_reduce(g, ans, array, axis=0, dtype=None, keepdims=False):
    # the elements equal to the result share g equally
    winners = array == unreduce(ans, array, axis, keepdims)
    return (unreduce(g, array, axis, keepdims) * winners
            / np.sum(winners, axis=axis, keepdims=True, dtype=np.result_type(ans)))


@vjp(np.logaddexp.reduce)
def logaddexp_reduce(g, ans, array, axis=0, dtype=None, keepdims=False):
    # d log(sum exp a) = exp(a - ans) da
    return unreduce(g, array, axis, keepdims) * np.exp(array - unreduce(ans, array, axis, keepdims))


@vjp(np.logaddexp2.reduce)
def logaddexp2_reduce(g, ans, array, axis=0, dtype=None, keepdims=False):
    # d log2(sum 2**a) = 2**(a - ans) da
    return unreduce(g, array, axis, keepdims) * np.exp2(array - unreduce(ans, array, axis, keepdims))


# --- accumulate: np.cumsum, np.cumprod and running extrema along axis 0 ---


@vjp(np.add.accumulate)
def add_accumulate(g, ans, array, axis=0, dtype=None):
    # each element feeds every later partial sum: a reversed cumulative sum
    return np.flip(np.cumsum(np.flip(g, axis), axis), axis)


@vjp(np.multiply.accumulate)
def multiply_accumulate(g, ans, array, axis=0, dtype=None):
    return cumprod_grad(g, ans, array, axis)


@vjp(np.maximum.accumulate, np.minimum.accumulate)
def maximum_accumulate(g, ans, array, axis=0, dtype=None):
    return cummax_grad(g, ans, array, axis)


# --- outer: A's axes then B's ---


@vjp(np.add.outer)
def add_outer(g, ans, A, B):
    return unouter(g, A, B, "add", 0), unouter(g, A, B, "add", 1)


@vjp(np.subtract.outer)
def subtract_outer(g, ans, A, B):
    return unouter(g, A, B, "subtract", 0), unouter(g, A, B, "subtract", 1)


@vjp(np.multiply.outer)
def multiply_outer(g, ans, A, B):
    return unouter(g, A, B, "multiply", 0), unouter(g, A, B, "multiply", 1)


# --- forward rules ---

linear(np.add.reduce, np.add.accumulate, np.add.outer, np.subtract.outer)
multilinear(np.multiply.outer)


@jvp(np.multiply.reduce)
def multiply_reduce_jvp(t, ans, array, axis=0, dtype=None, keepdims=False):
    return prod_jvp_helper(t, ans, array, axis, keepdims)


@jvp(np.maximum.reduce, np.minimum.reduce, np.fmax.reduce, np.fmin.reduce)
def maximum_reduce_jvp(t, ans, array, axis=0, dtype=None, keepdims=False):
    return max_jvp_helper(t, ans, array, axis, keepdims)


@jvp(np.logaddexp.reduce)
def logaddexp_reduce_jvp(t, ans, array, axis=0, dtype=None, keepdims=False):
    return lae_jvp_helper(t, ans, array, axis, keepdims)


@jvp(np.logaddexp2.reduce)
def logaddexp2_reduce_jvp(t, ans, array, axis=0, dtype=None, keepdims=False):
    return lae_jvp_helper(t, ans, array, axis, keepdims, 2)


@jvp(np.multiply.accumulate)
def multiply_accumulate_jvp(t, ans, array, axis=0, dtype=None):
    return cumprod_jvp_helper(t, ans, array, axis)


@jvp(np.maximum.accumulate, np.minimum.accumulate)
def maximum_accumulate_jvp(t, ans, array, axis=0, dtype=None):
    return cummax_jvp_helper(t, ans, array, axis)


# --- the other methods: refused, naming what to write instead ---

_OPERATORS = {"subtract": "-", "divide": "/", "true_divide": "/", "power": "**"}
_FOLLOWED = ("pullback follows .reduce of np.add, np.multiply, np.maximum, np.minimum, "
             "np.fmax, np.fmin, np.logaddexp and np.logaddexp2, .accumulate of np.add, "
             "np.multiply, np.maximum and np.minimum, and .outer of np.add, np.subtract "
             "and np.multiply")


def refusal_hint(primitive):
    """What to write instead of a ufunc method without a rule (None for
    anything else).

    >>> print(refusal_hint(np.divide.outer).split('; ')[1])
    write np.divide.outer(...) as a[..., None] / b (for a 1-d a), which has rules.
    """
    if isinstance(primitive, np.ufunc) and all(set(t) <= set("O->") for t in primitive.types):
        return frompyfunc_hint(primitive)          # object loops only: np.frompyfunc's
    ufunc = getattr(primitive, "__self__", None)
    method = getattr(primitive, "__name__", None)
    if not isinstance(ufunc, np.ufunc) or method not in ("reduce", "accumulate", "reduceat",
                                                         "outer", "at"):
        return None
    name = ufunc.__name__
    if method == "outer":
        same = (f"a[..., None] {_OPERATORS[name]} b (for a 1-d a)" if name in _OPERATORS
                else f"np.{name}(a[..., None], b) (for a 1-d a)")
    elif method == "reduceat":
        same = "a reduction of each slice (np.sum(a[i:j], axis=0), ...) joined with np.stack"
    elif method == "at":
        same = "an indexed update of an array the function creates (y[idx] += v), or np.add.at"
    elif (name, method) == ("logaddexp", "accumulate"):
        same = "a loop of np.logaddexp over the axis"
    elif (name, method) == ("subtract", "reduce"):
        same = "a[0] - np.sum(a[1:], axis=0)"
    elif (name, method) in (("divide", "reduce"), ("true_divide", "reduce")):
        same = "a[0] / np.prod(a[1:], axis=0)"
    elif method == "reduce":
        same = "the NumPy function that reduces this way (np.sum, np.prod, np.max, np.min, " \
               f"scipy.special.logsumexp), or a loop of np.{name} over the axis"
    else:
        same = "np.cumsum, np.cumprod, or a loop of " f"np.{name} over the axis"
    return f"{_FOLLOWED}; write np.{name}.{method}(...) as {same}, which has rules."
