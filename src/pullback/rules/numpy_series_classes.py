"""The rule for calling a ``np.polynomial`` series object on an array:
``Polynomial``, ``Chebyshev``, ``Legendre``, ``Hermite``, ``HermiteE`` and
``Laguerre`` all evaluate through ``ABCPolyBase.__call__``, which maps the
argument from the series' domain to its window and sums the basis.

The coefficients are the object's and carry no gradient here: a series
built from values being differentiated (``Polynomial(c)(x)`` with ``c``
differentiated) is refused where it is called; write
``np.polynomial.polynomial.polyval(x, c)`` (or ``chebval``, ``hermeval``...)
for those, which differentiates in ``c`` too.  In the argument, the
derivative is the derivative series (``p.deriv()``, with the domain's
scale) evaluated there.

Before, a basis polynomial called on the samples; after, the adjoint, which
reaches the rule through the dispatcher (the series is a value when it runs):

>>> import numpy as np, pullback as pb
>>> from numpy.polynomial import HermiteE
>>> from pullback.testing import adjoint_source, function_from_source
>>> f = function_from_source('''
... def f(x):
...     return np.sum(HermiteE.basis(2)(x))
... ''', {"HermiteE": HermiteE})
>>> print(adjoint_source(f, np.array([1.0, 2.0])))
def f_adjoint(residuals, out_bar):
    HermiteE_basis_x, HermiteE_basis_x_res, x = residuals
    HermiteE_basis_x_bar = unreduce(out_bar, HermiteE_basis_x)
    HermiteE_basis_grads = dynamic_adjoint(HermiteE_basis_x_res, HermiteE_basis_x_bar)
    x_bar = HermiteE_basis_grads[0]
    return (project(x_bar, x, copy=True),)
>>> pb.grad(f)(np.array([1.0, 2.0]))                # He_2 = x**2 - 1: 2 x
array([2., 4.])
"""
from numpy.polynomial._polybase import ABCPolyBase

from pullback.rules.registry import elementwise, facts, vjp
from pullback.runtime import series_slope


@vjp(ABCPolyBase.__call__, nondiff=("self",))
def series_call(g, ans, self, arg):
    return g * series_slope(self, arg)


# the slope at each point times that point's tangent
elementwise(ABCPolyBase.__call__)

# -- facts (rules/registry.py: facts): a new array of the argument's shape -----------
facts(ABCPolyBase.__call__, fresh=True)
