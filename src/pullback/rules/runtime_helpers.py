"""Forward rules for the run-time helpers generated code calls, so that the
primal and adjoint pullback writes can be transformed again (derivatives of
derivatives, ``pullback.higher``).

Forward over reverse runs the tangent transform over a generated primal and
adjoint; their calls of ``pullback.runtime`` helpers are then ordinary
primitives with rules.  Most helpers are linear in the cotangent they move
around and read the other arguments only for their shape, dtype, an index or
a mask (``unbroadcast(g, x)``, ``unindex(g, a, i)``, ``tie_share(g, ans, x,
y)``): their tangent is the helper applied to the cotangent's tangent
(``linear``), and the other arguments are declared ``discrete`` (a shape or a
mask is piecewise constant in them, so their derivative is zero where there
is one).  The product helpers (``matmul_lhs_grad(g, a, b)``) are bilinear in
the cotangent and the other factor (``multilinear``).  Where the tangent also
flows through the tangent function of a generated function (the tangent
helpers of forward mode itself, for third derivatives), the same holds.

Before / after (the adjoint line ``sin_x_bar = unbroadcast(g * x_pow_3, sin_x)``
transformed forwards)::

    sin_x_bar = unbroadcast(g_x_pow_3, sin_x)
    sin_x_bar_dot = unbroadcast(g_x_pow_3_dot, sin_x)

Reverse mode never differentiates generated code (reverse over reverse is
forward over reverse by the symmetry of the Hessian, ``pullback.higher``), so
the reverse rules registered here (the registry wants one before a forward
rule) refuse when they run.
"""
from __future__ import annotations

import linecache

import numpy as np

from ..runtime import core, accumulation, control, rule_support, forward_support, opaque_routes
from ..runtime import layout_support, statement_checks, structures, weighted_choices
from ..runtime import dot_support, index_support
from ..runtime.rule_support import refuse_reverse_over_generated
from ..runtime.forward_support import abs_grad_tangent
from .registry import facts, jvp, linear, multilinear, nondifferentiable, vjp

__all__ = []


def _register_linear(fn, diff, discrete=(), fresh=False):
    """A helper linear in the parameters ``diff`` (positions into its own
    signature), the others discrete."""
    import inspect
    params = list(inspect.signature(fn).parameters.values())
    rename = {"g": "cot", "ans": "ans_value", "t": "tangent"}
    names = [rename.get(p.name, p.name) for p in params]
    diff_names = [names[i] for i in diff]
    # the rule's parameters mirror the helper's (keywords bind), renamed
    # where one is called `g` or `ans` (the rule's own first two); generated
    # code passes those positionally
    parts = []
    for name, p in zip(names, params):
        if p.default is inspect.Parameter.empty:
            parts.append(name)
        else:
            parts.append(f"{name}={p.default!r}")
    refuse = f"refuse_reverse_over_generated({fn.__name__!r})"
    ret = refuse if len(diff) == 1 else ", ".join([refuse] + ["None"] * (len(diff) - 1))
    src = f"def {fn.__name__}_rule(g, ans, {', '.join(parts)}):\n    return {ret}\n"
    scope = {"refuse_reverse_over_generated": refuse_reverse_over_generated}
    filename = f"<pullback rule of {fn.__module__}.{fn.__name__}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    exec(compile(src, filename, "exec"), scope)
    rule = scope[f"{fn.__name__}_rule"]
    rule.__pullback_forward_only_rule__ = True    # (its forward rule is tested in
    #                                              compiler_tests/test_higher_order.py)
    nondiff = tuple(n for i, n in enumerate(names) if i not in diff
                    and params[i].default is inspect.Parameter.empty)
    vjp(fn, nondiff=nondiff, discrete=tuple(n for n in names if n not in diff_names))(rule)
    return rule


def _declare(fn, diff, kind="linear", fresh=False):
    _register_linear(fn, diff)
    (linear if kind == "linear" else multilinear)(fn)
    if fresh:
        facts(fn, fresh=True)


# -- shape, dtype and structure: linear in the cotangent --------------------------
_declare(core.unbroadcast, (0,))
_declare(core.unreduce, (0,))
_declare(core.project, (0,))
_declare(core.realify, (0,))
_declare(core.pack_like, (1,))
_declare(core.updatable, (0,))
_declare(opaque_routes.items_cotangent, (2,))
_declare(core.add_cotangents, (0, 1))
_declare(core.join_grads, (0,))
_declare(structures.field_cotangent, (0,))
_declare(accumulation.owned_copy, (0,), fresh=True)
_declare(accumulation.snapshot, (0,), fresh=True)
_declare(accumulation.written_grad, (0,))
_declare(accumulation.zeroed, (0,), fresh=True)
_declare(rule_support.tie_share, (0,))
_declare(rule_support.clip_grad, (0,))
_declare(rule_support.untranspose, (0,))
_declare(rule_support.ravel_grad, (0,))
_declare(rule_support.unconcatenate, (0,))
_declare(rule_support.unstack, (0,))
_declare(rule_support.unarray, (0,))
_declare(index_support.unindex, (0,), fresh=True)
_declare(index_support.take_grad, (0,), fresh=True)
_declare(index_support.unitem, (0,), fresh=True)
_declare(rule_support.unsum, (0,))
_declare(rule_support.select_grad, (0,))
_declare(weighted_choices.select_default_grad, (0,))   # (condlist: a mask)
_declare(rule_support.c_grad, (0,))
_declare(rule_support.attribute_cotangent, (0,))     # an array's .T / .real, or a field
_declare(layout_support.diagonal_grad, (0,))         # (writes through a view of its own zeros)
# products: bilinear in the cotangent and the other factor
_declare(dot_support.dot_lhs_grad, (0, 2), "multilinear")
_declare(dot_support.dot_rhs_grad, (0, 1), "multilinear")
_declare(dot_support.matmul_lhs_grad, (0, 2), "multilinear")
_declare(dot_support.matmul_rhs_grad, (0, 1), "multilinear")
_declare(dot_support.inner_lhs_grad, (0, 2), "multilinear")
_declare(dot_support.inner_rhs_grad, (0, 1), "multilinear")

# abs: linear in the cotangent where the argument is real (its sign is piecewise constant)
_register_linear(rule_support.abs_grad, (0,))


@jvp(rule_support.abs_grad)
def abs_grad_jvp(t, ans, cot, x):
    return abs_grad_tangent(t, x)


# -- forward mode's own helpers (forward over forward) -----------------------------
_declare(forward_support.owned_tangent, (0,), fresh=True)
_declare(forward_support.broadcast_tangent, (0,))
_declare(forward_support.output_tangent, (0,))

# -- values that carry no derivative ------------------------------------------------
# (np.result_type: the dtype a rule body asks for, e.g. ``np.sum(w, dtype=np.result_type(x))``)
nondifferentiable(np.result_type, core.meta, core.zeros_like, statement_checks.indexable,
                  statement_checks.mapping_keys, statement_checks.same_method,
                  statement_checks.plain_operands, statement_checks.no_float_in,
                  accumulation.owned_zeros, forward_support.zeros_tangent,
                  forward_support.check_real, forward_support.check_static,
                  forward_support.takes_tangent, forward_support.kept_structure,
                  control.caught_exception)
facts(core.zeros_like, accumulation.owned_zeros, forward_support.zeros_tangent, fresh=True)
