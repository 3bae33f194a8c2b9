"""Reverse over reverse: the vjp of a gradient, by the symmetry of the Hessian.

``x -> grad_a f(x)`` is a gradient, so its vjp with a cotangent ``c`` is
``sum_a c_a d/dx grad_a f(x)``, the Hessian applied to ``c`` placed at the
arguments ``a``; the Hessian of a real scalar function is symmetric, so that
is the jvp of ``grad f`` (all arguments) along ``c``: forward over reverse
again.  ``pb.grad(pb.grad(f))``, ``pb.vjp(pb.grad(f), x)`` and a ``pb.grad``
called inside a differentiated function go there (``GradVJP``)::

    vjp(grad f, x)(c)  =  H(x) c  =  jvp(grad f, (x,), (c,))[1]

A complex argument ``z = x + iy`` too, in JAX's (and autograd's) convention:
the gradient is ``G = f_x - i f_y``, a tangent ``dz = dx + i dy``, and the vjp
of ``G`` with cotangent ``c = a + ib`` is the gradient of ``Re(c G)``, that is
``(a f_xx + b f_xy) - i (a f_xy + b f_yy)``: exactly the jvp of ``G`` along
``dz = c`` (the real Hessian is symmetric; the two conjugations cancel).

A third derivative is forward over that (``GradVJP.forward_over_reverse``:
the forward transform runs over the tangent functions forward mode
generated, whose helpers have forward rules too).  ``PullbackVJP`` is the
reverse handle of a pullback made by ``pb.vjp``: the transpose of
``ct -> J^T ct`` is ``w -> J w``, a jvp.
"""
from __future__ import annotations

import inspect

import numpy as np

from ..checks import check_scalar_output, is_inexact, one_like
from ..errors import NonDifferentiableError
from ..runtime.forward_support import zeros_tangent
from .forward_over_reverse import (PullbackForward, forward_over_reverse, fresh,
                                   fresh_tangent)
from .inner import annotated, inner_transform, jvp
from .made import MadeHandle, ReverseCallers, add, leaves, made_by, name_of, scale

__all__ = ["GradVJP", "PullbackVJP"]


class GradVJP(ReverseCallers, MadeHandle):
    """The reverse-mode handle of a function made by ``pb.grad`` or
    ``pb.value_and_grad``: its vjp is a Hessian-vector product, computed
    forward over reverse (the Hessian is symmetric)."""

    variadic = False

    def __init__(self, fn):
        super().__init__(fn)
        self.fun = self.made.fun

    def call_primal(self, args, wrt, has_aux=False, inplace=None):
        args = tuple(args)
        out = self.fn(*args)
        return out, (args, tuple(wrt))

    def split_ct(self, ct):
        """The cotangents of (value, aux, grads) in the output's structure."""
        m = self.made
        single = isinstance(m.argnums, int)
        if m.kind == "grad":
            g_ct, aux_ct = (ct[0], ct[1]) if m.has_aux else (ct, None)
            v_ct = None
        else:
            head, g_ct = ct
            v_ct, aux_ct = (head[0], head[1]) if m.has_aux else (head, None)
        g_ct = (g_ct,) if single else tuple(g_ct)
        return v_ct, aux_ct, g_ct

    def call_adjoint(self, res, ct):
        args, wrt = res
        m = self.made
        v_ct, aux_ct, g_ct = self.split_ct(ct)
        if aux_ct is not None and any(np.any(np.asarray(leaf) != 0) for leaf in leaves(aux_ct)):
            raise NonDifferentiableError(
                f"The aux output of the gradient of {name_of(m.fun)} is differentiated here; "
                "pullback differentiates a gradient's aux output only as a constant.",
                hint="Return the value from a function of its own and differentiate that, or "
                     "stop the outer derivative from reading the aux output.")
        # the cotangent of grad_a f, placed at the arguments a: a direction
        direction = {}
        for a, c in zip(m.argnums_t, g_ct):
            if c is None:
                continue
            direction[a] = c if a not in direction else add(direction[a], c)
        moving = tuple(sorted(set(wrt) | set(direction)))
        tangents = tuple(direction[i] if i in direction else zeros_tangent(args[i])
                         for i in moving)
        outs = tuple(sorted(set(wrt)))
        (value, aux, grads), (_, _, hv) = forward_over_reverse(
            m.fun, args, outs, m.has_aux, moving, tangents, user_view=False)  # (the adjoint's)
        full = [None] * len(args)
        for i, h, g in zip(outs, hv, grads):
            if v_ct is not None:      # value_and_grad: the value's cotangent times the gradient
                h = add(h, scale(g, v_ct))
            full[i] = h
        return tuple(full)

    def forward_over_reverse(self, args, argnums, has_aux, wrt, tangents, ct, ct_dot):
        """Forward over this gradient's own reverse mode (third derivatives).

        ``self.fn`` is ``g = grad_a f``; its gradient (with a cotangent ``c``)
        is the jvp of ``grad f`` along ``c`` placed at ``a`` (``call_adjoint``),
        and the tangent of that along ``tangents`` is one more forward pass
        over the tangent functions of ``f``'s primal and adjoint: forward over
        forward over reverse.  Returns what ``forward_over_reverse`` returns."""
        from ..callees import Derivative, derivative_of
        from ..forward import calls
        m = self.made
        if m.kind != "grad" or m.has_aux or has_aux or ct is not None or ct_dot is not None:
            raise NonDifferentiableError(
                f"pullback takes a third derivative of {name_of(m.fun)} as "
                "pb.grad(pb.grad(pb.grad(f))) (or pb.jvp / pb.hessian of pb.grad(f)), without "
                "aux outputs or value_and_grad in the middle.",
                hint="Nest pb.grad, pb.jvp and pb.hessian of a plain function.")
        base = derivative_of(m.fun)
        if not isinstance(base, Derivative):
            raise NonDifferentiableError(
                f"pullback takes third derivatives of plain functions only, not of "
                f"{name_of(m.fun)}.", hint="Pass the function itself.")
        args = base.bind(tuple(args), {})
        inner_wrt = tuple(sorted(set(argnums) | set(m.argnums_t)))
        loaded = inner_transform(base, args, inner_wrt, False)

        def run():
            # the value of g = grad_a f, which must be a scalar: its cotangent is 1
            out, res = loaded.primal(*args)
            grads0 = loaded.adjoint(res, one_like(out))
            value = grads0[inner_wrt.index(m.argnums_t[0])]
            check_scalar_output(self.fn, value)
            c = one_like(value)
            direction = {m.argnums_t[0]: c}
            moving = tuple(sorted(set(wrt) | set(direction)))
            dir_t = tuple(direction[i] if i in direction else zeros_tangent(args[i])
                          for i in moving)
            p_jvp = calls.forward_of(loaded.primal).specialize(args, moving).jvp
            # stage 1: the primal's tangent function, along `tangents` of the arguments
            ((out, res), (_, res_d)), ((_, res_t), (_, res_d_t)) = jvp(
                p_jvp, args + dir_t, wrt, tangents)
            a_jvp = calls.forward_of(loaded.adjoint).specialize((res, one_like(out)), (0,)).jvp
            # stage 2: the adjoint's tangent function (its tangent: the Hessian along c)
            (grads, grads_d), (grads_t, grads_d_t) = jvp(
                a_jvp, (res, one_like(out), res_d), (0, 2), (res_t, res_d_t))
            return value, grads, grads_d, grads_t, grads_d_t
        value, grads, grads_d, grads_t, grads_d_t = annotated(loaded, run)
        pick = [inner_wrt.index(i) for i in argnums]
        a = inner_wrt.index(m.argnums_t[0])
        value_dot = fresh_tangent(grads_t[a], args[m.argnums_t[0]])
        out = tuple(fresh(grads_d[k], args[i]) for k, i in zip(pick, argnums))
        out_dot = tuple(fresh_tangent(grads_d_t[k], args[i]) for k, i in zip(pick, argnums))
        return (value, None, out), (value_dot, None, out_dot)


class PullbackVJP(ReverseCallers):
    """The reverse-mode handle of a pullback made by ``pb.vjp``: the
    transpose of ``ct -> J^T ct`` is ``w -> J w``, a jvp of the function."""

    variadic = False

    def __init__(self, fn):
        self.fn = fn
        self.made = made_by(fn)
        self.params = ["ct"]
        self.signature = inspect.Signature(
            [inspect.Parameter("ct", inspect.Parameter.POSITIONAL_OR_KEYWORD)])

    def bind(self, args, kwargs):
        return PullbackForward.bind(self, args, kwargs)

    def call_primal(self, args, wrt, has_aux=False, inplace=None):
        out = self.fn(*args)
        return out, tuple(wrt)

    def call_adjoint(self, res, ct):
        from ..forward import calls
        m = self.made
        if not res:
            return (None,)
        primals = m.primals
        wrt = tuple(i for i, p in enumerate(primals) if is_inexact(p))
        t = tuple(ct[i] if ct[i] is not None else zeros_tangent(primals[i]) for i in wrt)
        _, out_dot = calls.jvp_call(m.fun, primals, {}, wrt, t, m.has_aux, top=True)
        return (out_dot,)
