"""Rules for NumPy functions that call a user function: ``np.piecewise``
and ``np.apply_along_axis`` (helpers: ``runtime.callback_support``).

The function is differentiated by pullback, one call per piece or slice, in
both modes.  The conditions of ``np.piecewise`` are piecewise constant (a
mask computed from the inputs is fine); the functions themselves, and the
extra ``*args``/``**kw`` passed to them, carry no gradient: a function
holding values being differentiated (a lambda that reads one) is refused,
naming the argument; pass such a value through ``x`` (or ``arr``) instead.

Before, a piecewise function; after, the rule in the adjoint:

>>> import numpy as np, pullback as pb
>>> from pullback.testing import adjoint_source, function_from_source
>>> f = function_from_source('''
... def f(x):
...     return np.sum(np.piecewise(x, [x < 0], [lambda t: t * t, lambda t: 3 * t]))
... ''')
>>> print(adjoint_source(f, np.array([-1.0, 2.0])))
def f_adjoint(residuals, out_bar):
    piecewise_x_pack, x, pack, pack_1 = residuals
    piecewise_x_pack_bar = unreduce(out_bar, piecewise_x_pack)
    x_bar = piecewise_grad(piecewise_x_pack_bar, x, pack, pack_1, (), {})
    return (project(x_bar, x, copy=True),)
>>> pb.grad(f)(np.array([-1.0, 2.0]))
array([-2.,  3.])
"""
import numpy as np

from pullback.rules.registry import facts, jvp, vjp
from pullback.runtime import apply_along_axis_grad, piecewise_grad
from pullback.runtime.callback_support import (apply_along_axis_jvp as apply_jvp_helper,
                                               piecewise_jvp as piecewise_jvp_helper)


@vjp(np.piecewise, nondiff=("condlist", "funclist", "args"), discrete=("condlist",))
def piecewise(g, ans, x, condlist, funclist, *args, **kw):
    return piecewise_grad(g, x, condlist, funclist, args, kw)


@vjp(np.apply_along_axis, nondiff=("func1d", "axis", "args"))
def apply_along_axis(g, ans, func1d, axis, arr, *args, **kwargs):
    return apply_along_axis_grad(g, ans, func1d, axis, arr, args, kwargs)


@jvp(np.piecewise)
def piecewise_jvp(t, ans, x, condlist, funclist, *args, **kw):
    return piecewise_jvp_helper(t, ans, x, condlist, funclist, args, kw)


@jvp(np.apply_along_axis)
def apply_along_axis_jvp(t, ans, func1d, axis, arr, *args, **kwargs):
    return apply_jvp_helper(t, ans, func1d, axis, arr, args, kwargs)


# -- facts (rules/registry.py: facts): new arrays ------------------------------------
facts(np.piecewise, np.apply_along_axis, fresh=True)
