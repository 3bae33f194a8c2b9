"""Registration for the SciPy rules: differentiable parameters with defaults.

SciPy's functions take differentiable values through parameters that have
defaults (``norm.logpdf(x, loc=0, scale=1)``, ``logsumexp(a, b=None)``,
``odeint(..., args=())``), which ``registry.vjp`` would take for static
ones.  ``vjp_diff`` registers a rule with its differentiable parameters
named explicitly, in return order; an omitted one takes its default and
gets no cotangent::

    @vjp_diff(scipy.stats.norm.logpdf, diff=("x", "loc", "scale"))
    def norm_logpdf(g, ans, x, loc=0.0, scale=1.0):
        ...
"""
import dataclasses

from pullback.rules.registry import RULES, register_lazily, vjp
from pullback.runtime import set_odeint_vjp

__all__ = ["vjp_diff", "load_scipy_rules", "field_vjp"]


def vjp_diff(*primitives, diff, broadcasts=False):
    """Register the decorated rule of ``primitives`` with exactly ``diff`` differentiable."""

    def register(fn):
        vjp(*primitives, broadcasts=broadcasts)(fn)
        rule = dataclasses.replace(RULES[primitives[0]], diff=tuple(diff))
        missing = set(diff) - set(rule.params)
        if missing:
            raise ValueError(f"rule {fn.__name__}: no parameter {sorted(missing)}")
        for p in primitives:
            RULES[p] = rule
        return fn

    return register


def load_scipy_rules():
    """Register the SciPy rules; False when SciPy does not import."""
    try:
        import scipy  # noqa: F401
    except ImportError:
        return False
    try:
        from pullback.rules import (scipy_integrate, scipy_linalg,  # noqa: F401
                                    scipy_signal, scipy_special, scipy_stats)
    except (ImportError, AttributeError) as err:     # a SciPy without some function
        import warnings
        warnings.warn(f"pullback: the SciPy rules could not be registered ({err!r}); "
                      "SciPy functions will be refused.", RuntimeWarning, stacklevel=2)
        return False
    return True


def field_vjp(func, y, t, args, ct, tfirst):
    """``func(y, t, *args)`` (``func(t, y, *args)`` with ``tfirst``) and the
    cotangents of ``y``, ``t`` and each of ``args`` for the output cotangent
    ``ct``, from pullback's own derivative of ``func`` (the dispatcher that
    differentiates calls of function values).  Installed here, not with the
    odeint rule, so that a cached or ahead-of-time adjoint finds it."""
    from pullback import dispatch
    call = (t, y) + tuple(args) if tfirst else (y, t) + tuple(args)
    out, res = dispatch.dynamic_call(func, tuple(range(len(call))), False, *call)
    grads = dispatch.dynamic_adjoint(res, ct)
    yb, tb = (grads[1], grads[0]) if tfirst else (grads[0], grads[1])
    return out, yb, tb, tuple(grads[2:])


register_lazily("scipy", load_scipy_rules)
set_odeint_vjp(field_vjp)
