"""Helpers of the rules for ``np.polynomial``'s series objects
(``rules.numpy_series_classes``).

>>> from numpy.polynomial import Chebyshev
>>> p = Chebyshev([1.0, 2.0, 3.0], domain=[0.0, 4.0])   # x = 3 is u = 0.5, du/dx = 0.5
>>> float(series_slope(p, 3.0))                         # (2 + 12 u) / 2
4.0
"""
from __future__ import annotations

__all__ = ["series_slope"]


def series_slope(series, x):
    """The derivative of ``series(x)`` in ``x``: its derivative series (which
    carries the domain's scale) at ``x``."""
    return series.deriv()(x)
