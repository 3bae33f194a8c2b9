"""Helpers of the rules for special functions without SciPy (``math.lgamma``,
``math.gamma``, ``np.i0``) and for ``np.linalg.cond``
(``rules.math_special``, ``rules.numpy_more``).

>>> round(digamma(1.0), 12)                  # -(Euler's constant)
-0.577215664902
>>> float(bessel_i1(0.0)), round(float(bessel_i1(1.0)), 12)
(0.0, 0.565159103992)
"""
from __future__ import annotations

import math

import numpy as np

from .linalg_support import norm_grad

__all__ = ["digamma", "bessel_i1", "cond_grad", "cond_jvp"]

# the asymptotic series of digamma: B_2k / (2k) for k = 1..7
_DIGAMMA_TAIL = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12)


def digamma(x):
    """The derivative of ``math.lgamma`` at the float ``x`` (NaN at the poles
    0, -1, -2, ...), to about 1e-15: reflected below 1/2, shifted up past 8,
    then the asymptotic series."""
    if x <= 0 and x == math.floor(x):
        return math.nan
    if x < 0.5:
        return digamma(1.0 - x) - math.pi / math.tan(math.pi * x)
    shift = 0.0
    while x < 8.0:
        shift -= 1.0 / x
        x += 1.0
    inv2, power, tail = 1.0 / (x * x), 1.0, 0.0
    for c in _DIGAMMA_TAIL:
        power *= inv2
        tail += c * power
    return shift + math.log(x) - 0.5 / x - tail


def bessel_i1(x):
    """The modified Bessel function of the first kind of order 1 (the
    derivative of ``np.i0``), from its power series
    ``sum (x/2)**(2k+1) / (k! (k+1)!)``, whose terms are all of one sign."""
    x = np.asarray(x, dtype=np.result_type(x, 1.0))
    quarter = (x * x) / 4.0
    term = x / 2.0
    total, k = term, 0
    while np.any(np.abs(term) > 1e-17 * np.abs(total)):
        k += 1
        term = term * quarter / (k * (k + 1))
        total = total + term
    return total


def _matrix_parts(x, p):
    """cond = s_hi / s_lo: the singular values and vectors for ``p`` None, 2 or -2."""
    u, s, vh = np.linalg.svd(x, full_matrices=False)
    hi, lo = (-1, 0) if p == -2 else (0, -1)
    return (u[..., :, hi, None] * vh[..., hi, None, :], s[..., hi, None, None],
            u[..., :, lo, None] * vh[..., lo, None, :], s[..., lo, None, None])


def cond_grad(g, x, p=None):
    """Cotangent of ``x`` in ``np.linalg.cond(x, p)``.  For ``p`` None, 2 or
    -2 the ratio of the extreme singular values ``s_hi / s_lo``, each with
    the derivative ``Re(u^H dx v)`` (unconjugated: ``conj(u v^H)``); for the
    other norms ``norm(x, p) * norm(inv(x), p)`` through ``np.linalg.norm``'s
    rule, ``inv``'s cotangent being ``-inv^T g inv^T``."""
    x, gk = np.asarray(x), np.asarray(g)[..., None, None]
    if p in (None, 2, -2):
        top, s_hi, bottom, s_lo = _matrix_parts(x, p)
        return np.conj(gk * (top / s_lo - (s_hi / (s_lo * s_lo)) * bottom))
    inv = np.linalg.inv(x)
    nx = np.linalg.norm(x, p, axis=(-2, -1))
    ni = np.linalg.norm(inv, p, axis=(-2, -1))
    inv_t = np.swapaxes(inv, -1, -2)
    gi = norm_grad(g * nx, ni, inv, p, (-2, -1))
    return norm_grad(g * ni, nx, x, p, (-2, -1)) - inv_t @ gi @ inv_t


def cond_jvp(t, ans, x, p=None):
    """Tangent of ``np.linalg.cond(x, p)``: ``Re <cond_grad(1), t>`` (the
    condition number is real)."""
    c = cond_grad(np.ones(np.shape(ans)), x, p)
    return np.real(np.sum(c * t, axis=(-2, -1))).astype(np.result_type(ans), copy=False)
