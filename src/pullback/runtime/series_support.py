"""Helpers of the rules for ``np.polynomial``'s series objects
(``rules.numpy_series_classes``).

>>> import numpy as np
>>> from numpy.polynomial import Chebyshev, Polynomial
>>> p = Chebyshev([1.0, 2.0, 3.0], domain=[0.0, 4.0])   # x = 3 is u = 0.5, du/dx = 0.5
>>> float(series_slope(p, 3.0))                         # (2 + 12 u) / 2
4.0

``series_value(S, c, x, ...)`` is ``S(c, ...)(x)`` (``frontend.series_calls``
writes a series made from values being differentiated so), linear in ``c``;
``series_derivative`` its ``m``-th derivative in ``x``, and
``series_basis_cotangent`` the cotangent of ``c``: each basis polynomial
(differentiated ``m`` times) at ``x`` against ``x``'s cotangent.  Each is
linear in the coefficients, and the derivatives of each are the others, so
that their rules serve any order:

>>> float(series_value(Polynomial, [1.0, 2.0, 3.0], 2.0))          # 1 + 2 x + 3 x**2
17.0
>>> float(series_derivative(Polynomial, [1.0, 2.0, 3.0], 2.0, m=2))
6.0
>>> series_basis_cotangent(1.0, Polynomial, 3, 2.0)                # 1, x, x**2
array([1., 2., 4.])
>>> series_basis_cotangent(1.0, Polynomial, 3, 2.0, m=1)           # 0, 1, 2 x
array([0., 1., 4.])
"""
from __future__ import annotations

import numpy as np

__all__ = ["series_slope", "series_value", "series_derivative", "series_basis_cotangent"]


def series_slope(series, x):
    """The derivative of ``series(x)`` in ``x``: its derivative series (which
    carries the domain's scale) at ``x``."""
    return series.deriv()(x)


def series_value(cls, coef, x, domain=None, window=None, symbol="x"):
    """``cls(coef, domain, window, symbol)(x)``: a series of class ``cls``
    (``Polynomial``, ``Chebyshev``...) made and evaluated at ``x``."""
    return cls(coef, domain, window, symbol)(x)


def series_derivative(cls, coef, x, domain=None, window=None, m=1):
    """The ``m``-th derivative in ``x`` of ``cls(coef, domain, window)(x)``."""
    series = cls(coef, domain, window)
    return (series.deriv(m) if m else series)(x)


def series_basis_cotangent(ct, cls, n, x, domain=None, window=None, m=0):
    """``sum(ct * d^m/dx^m B_k(x))`` for each of the ``n`` basis polynomials
    ``B_k`` of ``cls`` (on ``domain``, ``window``): the coefficients'
    cotangent in ``series_derivative`` (``m`` > 0) and ``series_value``,
    ``ct`` the output's."""
    series = cls(np.zeros(n), domain, window)
    off, scl = series.mapparms()
    coefs = cls._der(np.eye(n), m, scl) if m else np.eye(n)      # (row j: the k-th's c_j)
    basis = series._val(off + scl * np.asarray(x), coefs)        # (n,) + x.shape
    ct = np.broadcast_to(ct, basis.shape[1:])
    return np.tensordot(basis, ct, axes=ct.ndim)
