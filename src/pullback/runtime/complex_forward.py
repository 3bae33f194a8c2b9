"""Forward-mode tangents of ``abs`` for complex values, and of its cotangent.

``|z|`` is not complex-linear, so its reverse rule read forwards is wrong for
a complex ``z``; its tangent along ``dz`` (JAX's convention: ``z`` as a pair
of reals) is ``Re(conj(z) dz) / |z|``.  The cotangent ``abs_grad(g, z) =
Re(g) conj(z) / |z|`` moves with ``z`` too; its tangent in ``z`` is what
forward over reverse (``pb.hessian``, ``pb.grad`` of ``pb.grad``) needs.
Both are zero where ``z == 0`` (the one-sided slopes split equally, as the
real rule's ``sign``) and are the real rule's where ``z`` is real.

>>> float(abs_tangent(1.0 + 0.0j, 3.0 + 4.0j, 5.0))          # Re((3-4j)(1)) / 5
0.6
>>> abs_grad_x_tangent(1.0j, 1.0, 1.0 + 0.0j)       # d(conj(z)/|z|) along 1j at z = 1
np.complex128(-1j)
"""
from __future__ import annotations

import numpy as np

from .rule_support import abs_grad

__all__ = ["abs_tangent", "abs_grad_x_tangent"]


def _over(num, den):
    """``num / den``, zero where ``den`` is zero."""
    if np.ndim(num) == 0 and np.ndim(den) == 0:
        return num / den if den != 0 else 0.0 * num
    zero = den == 0
    return np.where(zero, 0.0 * num, num / np.where(zero, 1.0, den))


def abs_tangent(t, x, ans):
    """The tangent of ``ans = abs(x)`` for a tangent ``t`` of ``x``."""
    if not np.iscomplexobj(x):
        return abs_grad(t, x)
    return _over(np.real(np.conj(x) * t), ans)


def abs_grad_x_tangent(t, g, x):
    """The tangent of ``abs_grad(g, x)`` for a tangent ``t`` of ``x``: zero
    for a real ``x`` (its sign is piecewise constant); ``Re(g) (conj(t) / |x|
    - conj(x) Re(conj(x) t) / |x|**3)`` for a complex one."""
    if not np.iscomplexobj(x):
        return 0.0 * np.real(g) * t
    m = np.abs(x)
    return np.real(g) * (_over(np.conj(t), m) - np.conj(x) * _over(np.real(np.conj(x) * t), m ** 3))
