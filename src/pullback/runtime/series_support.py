"""Helpers of the rules for ``np.polynomial``'s series objects
(``rules.numpy_series_classes``).

>>> import numpy as np
>>> from numpy.polynomial import Chebyshev, Polynomial
>>> p = Chebyshev([1.0, 2.0, 3.0], domain=[0.0, 4.0])   # x = 3 is u = 0.5, du/dx = 0.5
>>> float(series_slope(p, 3.0))                         # (2 + 12 u) / 2
4.0

``series_value(S, c, x, ...)`` is ``S(c, ...)(x)`` (``frontend.series_calls``
writes a series made from values being differentiated so): linear in ``c``,
whose cotangent is each basis polynomial at ``x`` against ``x``'s cotangent:

>>> float(series_value(Polynomial, [1.0, 2.0, 3.0], 2.0))
17.0
>>> series_basis_cotangent(1.0, Polynomial, [1.0, 2.0, 3.0], 2.0)   # 1, x, x**2
array([1., 2., 4.])
"""
from __future__ import annotations

import numpy as np

__all__ = ["series_slope", "series_value", "series_basis_cotangent", "series_basis_tangent"]


def series_slope(series, x):
    """The derivative of ``series(x)`` in ``x``: its derivative series (which
    carries the domain's scale) at ``x``."""
    return series.deriv()(x)


def series_value(cls, coef, x, domain=None, window=None, symbol="x"):
    """``cls(coef, domain, window, symbol)(x)``: a series of class ``cls``
    (``Polynomial``, ``Chebyshev``...) made and evaluated at ``x``."""
    return cls(coef, domain, window, symbol)(x)


def _basis(cls, coef, x, domain, window):
    """Each basis polynomial of ``cls(coef, domain, window)`` at ``x`` (first
    axis: the coefficient's index), and the coefficients' length."""
    s = cls(coef, domain, window)
    off, scl = s.mapparms()
    n = len(s.coef)
    return s._val(off + scl * np.asarray(x), np.eye(n)), n


def series_basis_cotangent(g, cls, coef, x, domain=None, window=None):
    """The cotangent of ``coef`` in ``series_value``: the basis at ``x``
    against the output's cotangent ``g`` (summed over ``x``'s points)."""
    basis, n = _basis(cls, coef, x, domain, window)
    g = np.broadcast_to(g, basis.shape[1:])
    return np.tensordot(basis, g, axes=g.ndim)


def series_basis_tangent(t, cls, coef, x, domain=None, window=None):
    """The tangent of ``series_value`` along the coefficients' tangent ``t``:
    the series with coefficients ``t`` at ``x``."""
    basis, n = _basis(cls, coef, x, domain, window)
    return np.tensordot(np.broadcast_to(t, (n,)), basis, axes=1)
