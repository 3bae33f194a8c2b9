"""The rule for calling a ``np.polynomial`` series object on an array:
``Polynomial``, ``Chebyshev``, ``Legendre``, ``Hermite``, ``HermiteE`` and
``Laguerre`` all evaluate through ``ABCPolyBase.__call__``, which maps the
argument from the series' domain to its window and sums the basis.

The coefficients are the object's and carry no gradient here.  A series
built in the function and called there (``Polynomial(c)(x)``, or ``p =
Chebyshev(c, domain=d)`` then ``p(x)``) is written as ``series_value(
Polynomial, c, x)`` (``frontend.series_calls``), whose rule differentiates
in ``c`` too: the series is linear in its coefficients, so ``c``'s
cotangent is each basis polynomial at ``x`` against the output's cotangent.
In the argument, the derivative is the derivative series (``p.deriv()``,
with the domain's scale) evaluated there.

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

from pullback.rules.registry import elementwise, facts, jvp, vjp
from pullback.runtime import (series_basis_cotangent, series_basis_tangent, series_slope,
                              series_value)


@vjp(ABCPolyBase.__call__, nondiff=("self",))
def series_call(g, ans, self, arg):
    return g * series_slope(self, arg)


# the slope at each point times that point's tangent
elementwise(ABCPolyBase.__call__)

# -- facts (rules/registry.py: facts): a new array of the argument's shape -----------
facts(ABCPolyBase.__call__, fresh=True)


@vjp(series_value, nondiff=("cls",))
def series_value_rule(g, ans, cls, coef, x, domain=None, window=None, symbol="x"):
    slope = series_slope(cls(coef, domain, window), x)
    return series_basis_cotangent(g, cls, coef, x, domain, window), g * slope


@jvp(series_value)
def series_value_jvp(t, ans, cls, coef, x, domain=None, window=None, symbol="x"):
    slope = series_slope(cls(coef, domain, window), x)
    return series_basis_tangent(t, cls, coef, x, domain, window), t * slope


facts(series_value, fresh=True)
