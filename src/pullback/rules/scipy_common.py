"""Registration of SciPy rules: differentiable parameters with defaults.

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

from pullback.rules.registry import RULES, vjp

__all__ = ["vjp_diff"]


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
