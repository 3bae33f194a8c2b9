"""Forward rules: which rule gives the tangent of a statement, and how.

A rule's ``jvp`` field (``rules/registry.py``) says how its tangent is
computed:

- ``LINEAR``: the primitive itself, applied to the tangents of its
  differentiable arguments (``np.sum(x_dot, axis=0)``, ``x_dot[i]``,
  ``np.concatenate(parts_dot)``);
- ``MULTILINEAR``: one term per active argument, its tangent in its place
  (``x_dot @ w + x @ w_dot``);
- a function ``(t, ans, ...)``: inlined like a reverse rule, ``t`` the
  tangent of one argument, one term per active argument.

An elementwise rule needs no field: its reverse contribution ``g *
partial`` is the tangent's term with ``g`` the argument's tangent, so its
forward rule is its reverse rule (``exp``: ``g * ans`` gives ``x_dot * y``).
That holds for complex values only where the function is holomorphic; for
``abs``, ``maximum`` and the other exceptions a complex argument is refused.
The ufuncs of other packages declared elementwise for fused kernels
(``registry.declare_elementwise``: ``scipy.special.gammaln``, ``erf``...)
are elementwise too, and refuse a complex argument unless declared
holomorphic.

>>> import numpy as np
>>> from pullback.rules.registry import lookup, LINEAR
>>> how(lookup(np.sum), np.sum)[0], how(lookup(np.exp), np.exp)[0]
('linear', 'elementwise')
>>> how(lookup(np.linalg.eigh), np.linalg.eigh)[0]     # a function (t, ans, a, UPLO)
'inline'
"""
from __future__ import annotations

import math

import numpy as np

from ..analyses import purity
from ..rules.registry import (ELEMENTWISE_JVP as ELEMENTWISE, LINEAR, MULTILINEAR,
                              KERNEL_NAMES, KERNEL_UFUNCS, MATH_TWIN, NOT_HOLOMORPHIC,
                              declared_elementwise)

__all__ = ["how", "ELEMENTWISE", "complex_exception"]

# math functions: every one maps numbers to a number, so its rule is elementwise
_NOT_ELEMENTWISE_MATH = {math.fsum}


def how(rule, primitive, op=None):
    """``(kind, function)``: kind is ``linear``, ``multilinear``, ``inline``,
    ``elementwise`` (the reverse rule read forwards) or None (no forward
    rule yet)."""
    fwd = rule.jvp
    if fwd == LINEAR or fwd == MULTILINEAR:
        return fwd, None
    if fwd == ELEMENTWISE:
        return ELEMENTWISE, rule.fn
    if fwd is not None:
        return "inline", fwd
    if _elementwise(primitive, op):
        return ELEMENTWISE, rule.fn
    return None, None


def _elementwise(primitive, op):
    if op is not None and purity.elementwise(op) is not None:
        return True
    try:
        hash(primitive)
    except TypeError:
        return False
    if primitive in purity._OPERATORS or primitive in KERNEL_NAMES:
        return True
    if primitive in MATH_TWIN and primitive not in (pow,):
        return True
    if declared_elementwise(primitive) is not None:
        return True
    if getattr(primitive, "__module__", None) == "math" or (
            type(primitive).__name__ == "builtin_function_or_method"
            and getattr(math, getattr(primitive, "__name__", ""), None) is primitive):
        return primitive not in _NOT_ELEMENTWISE_MATH
    return isinstance(primitive, np.ufunc) and primitive.nout == 1 \
        and primitive.__name__ in KERNEL_UFUNCS


def complex_exception(primitive):
    """Whether an elementwise rule read forwards is wrong for complex values
    (the function is not holomorphic)."""
    declared = declared_elementwise(primitive)
    if declared is not None:
        return not declared.holomorphic
    twin = purity.numpy_twin(primitive) or primitive
    try:
        return twin in NOT_HOLOMORPHIC or primitive in (
            abs, max, min, math.fabs, math.copysign, math.atan2, math.hypot)
    except TypeError:
        return True
