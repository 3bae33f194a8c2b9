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
import numpy as np
from numpy.polynomial._polybase import ABCPolyBase

from pullback.rules.registry import elementwise, facts, jvp, vjp
from pullback.runtime import (series_basis_cotangent, series_derivative, series_slope,
                              series_value)


@vjp(ABCPolyBase.__call__, nondiff=("self",))
def series_call(g, ans, self, arg):
    return g * series_slope(self, arg)


# the slope at each point times that point's tangent
elementwise(ABCPolyBase.__call__)

# -- facts (rules/registry.py: facts): a new array of the argument's shape -----------
facts(ABCPolyBase.__call__, fresh=True)



# -- a series made from values being differentiated (frontend.series_calls): linear in
# its coefficients; the rules of the three helpers are the helpers again, so that they
# serve derivatives of any order.  The two helpers the rules call take `domain` and
# `window` as `discrete`: they are series_value's, which refuses them where they depend
# on the inputs, so that in a derivative differentiated again (where the first one's
# values, domain among them, are inputs) their tangent is zero
@vjp(series_value, nondiff=("cls",))
def series_value_rule(g, ans, cls, coef, x, domain=None, window=None, symbol="x"):
    coef_bar = series_basis_cotangent(g, cls, np.size(coef), x, domain, window)
    return coef_bar, g * series_derivative(cls, coef, x, domain, window)


@jvp(series_value)
def series_value_jvp(t, ans, cls, coef, x, domain=None, window=None, symbol="x"):
    return series_derivative(cls, t, x, domain, window, 0), \
        t * series_derivative(cls, coef, x, domain, window)


@vjp(series_derivative, nondiff=("cls",), discrete=("domain", "window", "m"))
def series_derivative_rule(g, ans, cls, coef, x, domain=None, window=None, m=1):
    coef_bar = series_basis_cotangent(g, cls, np.size(coef), x, domain, window, m)
    return coef_bar, g * series_derivative(cls, coef, x, domain, window, m + 1)


@jvp(series_derivative)
def series_derivative_jvp(t, ans, cls, coef, x, domain=None, window=None, m=1):
    return series_derivative(cls, t, x, domain, window, m), \
        t * series_derivative(cls, coef, x, domain, window, m + 1)


@vjp(series_basis_cotangent, nondiff=("cls", "n"), discrete=("domain", "window", "m"))
def series_basis_cotangent_rule(g, ans, ct, cls, n, x, domain=None, window=None, m=0):
    # (the cotangent g of the coefficients' cotangent is a series' coefficients)
    ct_bar = series_derivative(cls, g, x, domain, window, m)
    return ct_bar, ct * series_derivative(cls, g, x, domain, window, m + 1)


@jvp(series_basis_cotangent)
def series_basis_cotangent_jvp(t, ans, ct, cls, n, x, domain=None, window=None, m=0):
    return series_basis_cotangent(t, cls, n, x, domain, window, m), \
        series_basis_cotangent(ct * t, cls, n, x, domain, window, m + 1)


facts(series_value, fresh=True)
facts(series_derivative, fresh=True)
facts(series_basis_cotangent, fresh=True)
