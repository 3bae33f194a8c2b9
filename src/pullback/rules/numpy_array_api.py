"""Rules for NumPy's array-API names and conversions that had none:
``np.linalg``'s ``matmul``, ``outer``, ``tensordot``, ``diagonal``,
``trace``, ``matrix_transpose``, ``vector_norm``, ``matrix_norm``,
``svdvals``, ``vecdot``; ``np.matrix_transpose``, ``np.cumulative_sum``,
``np.cumulative_prod`` and ``np.unstack``; and the conversions ``np.asanyarray``,
``np.ascontiguousarray``, ``np.asfortranarray``, ``np.asarray_chkfinite``
and ``np.require`` (the identity on the values).  Each is its classic
twin's rule with the array API's parameters (the matrix axes last).
``vecdot`` conjugates its first argument, as NumPy's does (``np.vecdot``, a
generalized ufunc that reduces an axis, is left without a rule: the shape
analyses read a ufunc as elementwise).

Before, the array-API spellings; after, the rules in the adjoint:

>>> import numpy as np, pullback as pb
>>> from pullback.testing import adjoint_source, function_from_source
>>> f = function_from_source('''
... def f(a):
...     return np.linalg.vector_norm(np.linalg.matrix_transpose(a), axis=0)[1]
... ''')
>>> pb.grad(f)(np.array([[3.0, 4.0], [0.0, 1.0]]))       # |row 1| = |(0, 1)|
array([[0., 0.],
       [0., 1.]])
"""
import numpy as np

from pullback.rules.registry import facts, jvp, linear, multilinear, vjp
from pullback.runtime import (cumprod_grad, diagonal_grad, einsum_grads, matmul_lhs_grad, matmul_rhs_grad,
                              norm_grad, svd_grad, tensordot_subscripts, trace_grad, unarray,
                              vecdot_grads, vector_norm_grad)
from pullback.runtime.array_api_support import (matrix_norm_jvp as matrix_norm_jvp_helper,
                                                vector_norm_jvp as vector_norm_jvp_helper)
from pullback.runtime.linalg_forward import svd_jvp as svd_jvp_helper
from pullback.runtime.reduction_forward import cumprod_jvp as cumprod_jvp_helper

_LA = np.linalg

# --- conversions: the values unchanged ---


@vjp(np.asanyarray, np.ascontiguousarray, np.asfortranarray, np.asarray_chkfinite, np.require,
     nondiff=("args",))
def asanyarray(g, ans, a, *args, **kwargs):
    return unarray(g, a)


# --- products, parts and transposes of matrices (last two axes) ---


@vjp(_LA.matmul)
def la_matmul(g, ans, x1, x2):
    return matmul_lhs_grad(g, x1, x2), matmul_rhs_grad(g, x1, x2)


@vjp(_LA.outer)
def la_outer(g, ans, x1, x2):
    return np.dot(g, x2), np.dot(x1, g)


@vjp(_LA.tensordot)
def la_tensordot(g, ans, x1, x2, *, axes=2):
    grads = einsum_grads(g, (tensordot_subscripts(x1, x2, axes), x1, x2))
    return grads[1], grads[2]


@vjp(_LA.diagonal)
def la_diagonal(g, ans, x, *, offset=0):
    return diagonal_grad(g, x, offset, -2, -1)


@vjp(_LA.trace)
def la_trace(g, ans, x, *, offset=0, dtype=None):
    return trace_grad(g, x, offset, -2, -1)


@vjp(np.matrix_transpose, _LA.matrix_transpose)
def matrix_transpose(g, ans, x):
    return np.swapaxes(g, -1, -2)


@vjp(_LA.vecdot)
def vecdot(g, ans, x1, x2, axis=-1):
    grads = vecdot_grads(g, x1, x2, axis)
    return grads[0], grads[1]


@vjp(np.cumulative_sum)
def cumulative_sum(g, ans, x, axis=None, dtype=None, out=None, include_initial=False):
    # a reversed cumulative sum of g (less the initial zero's part); axis=None: 1-d x
    along = 0 if axis is None else axis
    part = np.delete(g, 0, along) if include_initial else g
    return np.flip(np.cumsum(np.flip(part, along), along), along)


@vjp(np.cumulative_prod)
def cumulative_prod(g, ans, x, axis=None, dtype=None, out=None, include_initial=False):
    # cumprod's rule, less the initial one's part; axis=None: 1-d x
    along = 0 if axis is None else axis
    return cumprod_grad(np.delete(g, 0, along) if include_initial else g,
                        np.delete(ans, 0, along) if include_initial else ans, x, along)


@vjp(np.unstack)
def unstack(g, ans, x, *, axis=0):
    return np.stack(g, axis=axis)


# --- norms and singular values ---


@vjp(_LA.vector_norm)
def vector_norm(g, ans, x, *, axis=None, keepdims=False, ord=2):
    return vector_norm_grad(g, ans, x, axis, keepdims, ord)


@vjp(_LA.matrix_norm)
def matrix_norm(g, ans, x, *, keepdims=False, ord="fro"):
    return norm_grad(g, ans, x, ord, (-2, -1), keepdims)


@vjp(_LA.svdvals)
def svdvals(g, ans, x):
    return svd_grad(g, ans, x, False, False)


# --- forward rules ---

linear(np.asanyarray, np.ascontiguousarray, np.asfortranarray, np.asarray_chkfinite,
       np.require, _LA.diagonal, _LA.trace, np.matrix_transpose, _LA.matrix_transpose,
       np.cumulative_sum, np.unstack)
multilinear(_LA.matmul, _LA.outer, _LA.tensordot)


@jvp(np.cumulative_prod)
def cumulative_prod_jvp(t, ans, x, axis=None, dtype=None, out=None, include_initial=False):
    along = 0 if axis is None else axis
    dot = cumprod_jvp_helper(t, np.delete(ans, 0, along) if include_initial else ans, x, along)
    return np.insert(dot, 0, 0, along) if include_initial else dot


@jvp(_LA.vecdot)
def vecdot_jvp(t, ans, x1, x2, axis=-1):
    return np.sum(np.conj(t) * x2, axis=axis), np.sum(np.conj(x1) * t, axis=axis)


@jvp(_LA.vector_norm)
def vector_norm_jvp(t, ans, x, *, axis=None, keepdims=False, ord=2):
    return vector_norm_jvp_helper(t, ans, x, axis, keepdims, ord)


@jvp(_LA.matrix_norm)
def matrix_norm_jvp(t, ans, x, *, keepdims=False, ord="fro"):
    return matrix_norm_jvp_helper(t, ans, x, keepdims, ord)


@jvp(_LA.svdvals)
def svdvals_jvp(t, ans, x):
    return svd_jvp_helper(t, ans, x, False, False)


# -- facts (rules/registry.py: facts) ------------------------------------------------
facts(np.asanyarray, np.ascontiguousarray, np.asfortranarray, np.asarray_chkfinite,
      np.require, np.matrix_transpose, _LA.matrix_transpose, _LA.diagonal, view=True)
facts(_LA.matmul, _LA.outer, _LA.tensordot, np.cumulative_sum, np.cumulative_prod, fresh=True)
facts(_LA.vector_norm, _LA.matrix_norm, _LA.svdvals, real_output=True)
