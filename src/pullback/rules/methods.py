"""Rules for ``ndarray`` methods and attributes, keyed by strings ("ndarray.T").

The array itself (``self``) is the first parameter, named as in the NumPy
function it mirrors.  Methods whose signature agrees with a function share
its rule and are registered next to it:

- ``numpy_reductions``: sum, mean, prod, max, min, var, std, cumsum
- ``numpy_linalg_shape``: dot, ravel, flatten, squeeze, swapaxes, copy, astype
- ``numpy_elementwise``: real, imag, conj, conjugate

This module holds the methods whose calling convention differs (``*shape``,
``*axes``, ``min=``/``max=``) and the attributes.

Before, ``ndarray`` methods; after, their rules inlined in the adjoint:

>>> import numpy as np, pullback as pb
>>> from pullback.testing import adjoint_source, function_from_source
>>> f = function_from_source('''
... def f(x):
...     return np.sum(x.reshape(2, 3).T[0])
... ''')
>>> print(adjoint_source(f, np.arange(6.0)))
def f_adjoint(residuals, out_bar):
    x_reshape_T_item, x_reshape_T, x = residuals
    x_reshape_T_item_bar = unreduce(out_bar, x_reshape_T_item)
    x_reshape_T_bar = owned_zeros(x_reshape_T)
    x_reshape_T_bar[0] += x_reshape_T_item_bar
    x_reshape_bar = np.transpose(x_reshape_T_bar)
    x_bar = np.reshape(x_reshape_bar, np.shape(x), order='C')
    return (project(x_bar, x, copy=True),)
>>> pb.grad(f)(np.arange(6.0))
array([1., 0., 0., 1., 0., 0.])
"""
import numpy as np

from pullback.runtime.forward_support import reshape_tangent

from pullback.rules.registry import elementwise, jvp, linear, nondifferentiable, vjp
from pullback.runtime import clip_grad, unitem, untranspose


@vjp("ndarray.reshape", nondiff=("shape",))
def reshape_method(g, ans, a, *shape, order="C"):
    # a.reshape(2, 3) and a.reshape((2, 3)) alike
    return np.reshape(g, np.shape(a), order=order)


@vjp("ndarray.transpose", nondiff=("axes",))
def transpose_method(g, ans, a, *axes):
    # a.transpose(), a.transpose(1, 0, 2) and a.transpose((1, 0, 2)) alike
    return untranspose(g, axes)


@vjp("ndarray.T")
def T(g, ans, a):
    return np.transpose(g)


@vjp("ndarray.mT")
def mT(g, ans, a):
    return np.swapaxes(g, -1, -2)


@vjp("ndarray.clip", broadcasts=True)
def clip_method(g, ans, a, min=None, max=None):
    # the bounds are static here (they have defaults); np.clip differentiates them
    return clip_grad(g, ans, a, min, max, "a")


@vjp("ndarray.item", nondiff=("args",))
def item(g, ans, a, *args):
    return unitem(g, a, args)


@vjp("ndarray.tolist")
def tolist(g, ans, a):
    # g is a (nested) list of numbers shaped like the result
    return np.reshape(np.asarray(g), np.shape(a))


nondifferentiable(
    "ndarray.shape", "ndarray.ndim", "ndarray.size", "ndarray.dtype",
    "ndarray.itemsize", "ndarray.nbytes", "ndarray.strides", "ndarray.flags",
    "ndarray.argmax", "ndarray.argmin", "ndarray.argsort", "ndarray.nonzero",
    "ndarray.all", "ndarray.any", "ndarray.round",
)

# --- forward rules ---

elementwise("ndarray.clip")
linear("ndarray.transpose", "ndarray.T", "ndarray.mT", "ndarray.item",
       "ndarray.tolist")



@jvp("ndarray.reshape")
def reshape_method_jvp(t, ans, a, *shape, order="C"):
    return reshape_tangent(t, a, np.shape(ans), order)
