"""The rule for calling an ``np.vectorize`` object: ``np.vectorize(f)(x,
y)`` with ``f`` a function of numbers (helpers:
``runtime.vectorize_support``).

``f`` is differentiated by pullback, one call per element, in both modes
(its vjp, or its jvp, at each element), with NumPy's broadcasting of the
arguments, ``otypes``, ``excluded`` (an excluded argument's cotangent sums
over the calls), several outputs and 0-d results.  The vectorize object
carries no gradient: one made from a function holding values being
differentiated (a lambda that reads one) is refused; pass such a value as
an argument instead.  ``signature=`` (a generalized ufunc) is refused.

Before, a loss written for one number; after, the adjoint, which reaches
the rule through the dispatcher (``huber`` is an object when it runs):

>>> import numpy as np, pullback as pb
>>> from pullback.testing import adjoint_source, function_from_source
>>> h = function_from_source('''
... def h(r):
...     return 0.5 * r * r if abs(r) <= 1.0 else abs(r) - 0.5
... ''')
>>> f = function_from_source('''
... def f(x):
...     return np.sum(huber(x))
... ''', {"huber": np.vectorize(h)})
>>> print(adjoint_source(f, np.array([-2.0, 0.5])))
def f_adjoint(residuals, out_bar):
    huber_x, huber_x_res, x = residuals
    huber_x_bar = unreduce(out_bar, huber_x)
    huber_grads = dynamic_adjoint(huber_x_res, huber_x_bar)
    x_bar = huber_grads[0]
    return (project(x_bar, x, copy=True),)
>>> pb.grad(f)(np.array([-2.0, 0.5]))
array([-1. ,  0.5])
"""
import numpy as np

from pullback.rules.registry import facts, jvp, vjp
from pullback.runtime.vectorize_support import each_element_grads, each_element_jvp


@vjp(np.vectorize.__call__, nondiff=("self",))
def vectorize_call(g, ans, self, *args, **kwargs):
    return each_element_grads(g, ans, self, args, kwargs)


@jvp(np.vectorize.__call__)
def vectorize_call_jvp(t, ans, self, *args, **kwargs):
    return each_element_jvp(t, ans, self, args, kwargs)


# -- facts (rules/registry.py: facts): new arrays ------------------------------------
facts(np.vectorize.__call__, fresh=True)
