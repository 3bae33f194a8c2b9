"""Rules for products, shape changes, joins, conversions and indexing.

Products are bilinear, so each factor's cotangent is ``g`` contracted with
the other factor, unconjugated (JAX's convention).  Shape changes move
``g`` back to the input's layout; they return views of ``g`` where NumPy does.

Before, a product; after, its rule in the adjoint:

>>> import numpy as np, pullback as pb
>>> from pullback.testing import adjoint_source, function_from_source
>>> f = function_from_source('''
... def f(a, b):
...     return np.dot(a, b)
... ''')
>>> print(adjoint_source(f, np.array([1.0, 2.0]), np.array([3.0, 4.0])))
def f_adjoint(residuals, out_bar):
    a, b = residuals
    a_bar = dot_lhs_grad(out_bar, a, b)
    b_bar = dot_rhs_grad(out_bar, a, b)
    return (project(a_bar, a), project(b_bar, b))
>>> pb.grad(f, argnums=(0, 1))(np.array([1.0, 2.0]), np.array([3.0, 4.0]))
(array([3., 4.]), array([1., 2.]))
"""
import operator

import numpy as np

from pullback.runtime.forward_support import ravel_tangent, reshape_tangent

from pullback.rules.registry import facts, jvp, linear, multilinear, vjp
from pullback.runtime import (c_grad, c_items, r_items, take_grad, dot_lhs_grad, dot_rhs_grad, inner_lhs_grad,
                              inner_rhs_grad, ravel_grad, unarray, unbroadcast,
                              unconcatenate, unindex, unstack, untranspose)

# --- products (matmul is in operators) ---


@vjp(np.dot, "ndarray.dot")
def dot(g, ans, a, b):
    return dot_lhs_grad(g, a, b), dot_rhs_grad(g, a, b)


@vjp(np.inner)
def inner(g, ans, a, b):
    return inner_lhs_grad(g, a, b), inner_rhs_grad(g, a, b)


@vjp(np.outer)
def outer(g, ans, a, b):
    return (np.reshape(np.dot(g, np.ravel(b)), np.shape(a)),
            np.reshape(np.dot(np.ravel(a), g), np.shape(b)))


@vjp(np.vdot)
def vdot(g, ans, a, b):
    # vdot(a, b) = sum(conj(a) * b), so a's cotangent is conjugated
    return (np.reshape(np.conj(g * np.ravel(b)), np.shape(a)),
            np.reshape(g * np.conj(np.ravel(a)), np.shape(b)))


# --- shape changes ---


@vjp(np.transpose)
def transpose(g, ans, a, axes=None):
    return untranspose(g, axes)


@vjp(np.reshape, nondiff=("shape",))
def reshape(g, ans, a, shape, order="C", copy=None):
    return np.reshape(g, np.shape(a), order=order)


@vjp(np.ravel, "ndarray.ravel", "ndarray.flatten")
def ravel(g, ans, a, order="C"):
    return ravel_grad(g, a, order)


@vjp(np.squeeze, "ndarray.squeeze")
def squeeze(g, ans, a, axis=None):
    return np.reshape(g, np.shape(a))


@vjp(np.expand_dims, nondiff=("axis",))
def expand_dims(g, ans, a, axis):
    return np.reshape(g, np.shape(a))


@vjp(np.broadcast_to, nondiff=("shape",))
def broadcast_to(g, ans, array, shape, subok=False):
    return unbroadcast(g, array)


@vjp(np.swapaxes, "ndarray.swapaxes", nondiff=("axis1", "axis2"))
def swapaxes(g, ans, a, axis1, axis2):
    return np.swapaxes(g, axis1, axis2)


@vjp(np.moveaxis, nondiff=("source", "destination"))
def moveaxis(g, ans, a, source, destination):
    return np.moveaxis(g, destination, source)


# --- joins: each input gets its slice of g ---


@vjp(np.concatenate)
def concatenate(g, ans, arrays, axis=0, dtype=None, casting="same_kind"):
    return unconcatenate(g, arrays, axis)


@vjp(r_items)
def r_(g, ans, *items):
    # np.r_[a, b] of arrays and numbers: a concatenation along the first axis
    return unconcatenate(g, items, 0)


@vjp(c_items)
def c_(g, ans, *items):
    # np.c_[a, b]: 1-d items are columns, 2-d ones join along the last axis
    return c_grad(g, items)


@vjp(np.stack)
def stack(g, ans, arrays, axis=0, dtype=None, casting="same_kind"):
    return unstack(g, arrays, axis)


@vjp(np.hstack)
def hstack(g, ans, tup, dtype=None, casting="same_kind"):
    # 1-d inputs are joined end to end, others along axis 1
    return unconcatenate(g, tup, 0 if np.ndim(tup[0]) <= 1 else 1)


@vjp(np.vstack)
def vstack(g, ans, tup, dtype=None, casting="same_kind"):
    # inputs are promoted to 2-d, then joined along axis 0
    return unconcatenate(g, tup, 0, 2)


# --- copies and conversions ---


@vjp(np.copy, "ndarray.copy")
def copy(g, ans, a, order="K", subok=False):
    return g


@vjp(np.asarray)
def asarray(g, ans, a, dtype=None, order=None, copy=None):
    # identity for an array; a list of numbers gets a list of parts
    return unarray(g, a)


@vjp(np.array)
def array(g, ans, object, dtype=None, copy=True, order="K", subok=False, ndmin=0):
    return unarray(g, object)


@vjp(np.astype, "ndarray.astype", nondiff=("dtype",))
def astype(g, ans, x, dtype, order="K", casting="unsafe", subok=True, copy=True):
    # the projection onto x casts the cotangent back to x's dtype
    return g


# --- indexing ---


@vjp(np.take, nondiff=("indices",))
def take(g, ans, a, indices, axis=None, mode="raise"):
    # like indexing with an integer array: repeated indices accumulate
    return take_grad(g, a, indices, axis)


@vjp(operator.getitem, nondiff=("b",), discrete=("b",))
def getitem(g, ans, a, b):
    # g scattered into zeros like a; repeated integer indices accumulate
    return unindex(g, a, b)

# --- forward rules: products are multilinear, shape and layout linear ---

multilinear(np.dot, "ndarray.dot", np.inner, np.outer, np.vdot)
linear(np.transpose, np.squeeze,
       "ndarray.squeeze", np.expand_dims, np.broadcast_to, np.swapaxes, "ndarray.swapaxes",
       np.moveaxis, np.concatenate, r_items, c_items, np.stack, np.hstack, np.vstack,
       np.copy, "ndarray.copy", np.asarray, np.array, np.astype, "ndarray.astype", np.take,
       operator.getitem)


@jvp(np.reshape)
def reshape_jvp(t, ans, a, shape, order="C", copy=None):
    return reshape_tangent(t, a, np.shape(ans), order)


@jvp(np.ravel, "ndarray.ravel")
def ravel_jvp(t, ans, a, order="C"):
    return ravel_tangent(t, a, order)


@jvp("ndarray.flatten")
def flatten_jvp(t, ans, a, order="C"):
    # a copy, as the primal is: a later write into a's tangent must not reach it
    return np.copy(ravel_tangent(t, a, order))


# -- facts (rules/registry.py: facts) ----------------------------------------------
facts(np.concatenate, np.stack, np.outer, np.dot, np.copy, fresh=True, owned=True)
facts(np.vstack, np.hstack, "ndarray.copy", "ndarray.astype", "ndarray.flatten", fresh=True)
facts(np.reshape, np.transpose, np.ravel, np.squeeze, np.expand_dims, np.broadcast_to,
      np.asarray, np.swapaxes, np.moveaxis, "ndarray.T", "ndarray.reshape",
      "ndarray.transpose", "ndarray.ravel", "ndarray.squeeze", "ndarray.real",
      "ndarray.imag", "ndarray.swapaxes", view=True)
facts(np.copy, "ndarray.copy", np.transpose, "ndarray.T", "ndarray.transpose", shape="same")
facts(np.ravel, "ndarray.ravel", "ndarray.flatten", shape="flat")
facts(np.reshape, "ndarray.reshape", shape="reshape")
