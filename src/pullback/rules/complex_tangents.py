"""Forward rules of ``abs`` where its argument may be complex (``abs`` is not
complex-linear, so its reverse rule read forwards holds for real values
only), and of its cotangent ``abs_grad`` in both arguments, so that forward
over reverse (``pb.hessian``, ``pb.vjp`` of ``pb.grad``) runs through the
gradient of ``|z|`` (``runtime.complex_forward``)::

    y = np.abs(z)               y_dot = abs_tangent(z_dot, z, y)
    z_bar = abs_grad(g, z)      z_bar_dot = abs_grad(g_dot, z) + abs_grad_x_tangent(z_dot, g, z)
"""
from __future__ import annotations

import operator

import numpy as np

from ..runtime import rule_support
from ..runtime.complex_forward import abs_grad_x_tangent, abs_tangent
from ..runtime.rule_support import abs_grad
from .registry import jvp
from .runtime_helpers import _register_linear

__all__ = []


@jvp(np.abs, abs, operator.abs)
def absolute_jvp(t, ans, x):
    return abs_tangent(t, x, ans)


# abs_grad(g, x): linear in g; in x through conj(x) / |x| where x is complex
_register_linear(rule_support.abs_grad, (0, 1))


@jvp(rule_support.abs_grad)
def abs_grad_jvp(t, ans, cot, x):
    return abs_grad(t, x), abs_grad_x_tangent(t, cot, x)
