"""Reverse over forward: the vjp of a jvp, and of ``pb.jacfwd`` and
``pb.linearize`` functions, by the symmetry of each output's Hessian.

``(x, t) -> (f(x), J(x) t)`` with cotangents ``(a, b)``: ``t`` gets
``J^T b``, and ``x`` gets ``J^T a + sum_i b_i H_i t`` where ``H_i`` is the
(symmetric, real) Hessian of output ``i``; that sum is the tangent of
``x -> J(x)^T b`` along ``t``, forward over reverse with the cotangent ``b``::

    (_, _, J^T b), (_, _, sum_i b_i H_i t) = forward_over_reverse(f, x, ..., (t,), ct=b)

Exact; refused for complex primals and ``has_aux``.  ``JvpCallVJP``: a call
of ``pb.jvp`` inside a function differentiated in reverse mode;
``JacfwdVJP``, ``LinearizeVJP``: functions made by ``pb.jacfwd`` and
``pb.linearize``.
"""
from __future__ import annotations

import inspect

import numpy as np

from ..checks import is_inexact
from ..errors import NonDifferentiableError
from ..runtime.forward_support import zeros_tangent
from .forward_over_forward import JVP_PARAMS, JVP_SIGNATURE, LinearizeForward, bind_jvp
from .forward_over_reverse import forward_over_reverse
from .made import MadeHandle, ReverseCallers, made_by, name_of

__all__ = ["JvpCallVJP", "JacfwdVJP", "LinearizeVJP", "nested_reverse"]


class JvpCallVJP(ReverseCallers):
    """Reverse mode over a call of ``pb.jvp``: the primals' cotangent is
    ``J^T a`` plus forward over reverse along the tangents (see the module's
    docstring), the tangents' ``J^T b``."""

    made = None
    variadic = False
    params = JVP_PARAMS
    tag_primal = False

    def __init__(self, jvp):
        self.fun = jvp            # pb.jvp (this package does not import the API)
        self.signature = JVP_SIGNATURE

    def bind(self, args, kwargs):
        return bind_jvp(args, kwargs)

    def call_primal(self, args, wrt, has_aux=False, inplace=None):
        fun, primals, tans, aux = args
        if aux:
            raise NonDifferentiableError(
                f"pullback differentiates pb.jvp of {name_of(fun)} in reverse mode without "
                "has_aux only.", hint="Return the aux value from a function of its own.")
        out = self.fun(fun, primals, tans)
        return out, (fun, tuple(primals), tuple(tans), tuple(wrt))

    def call_adjoint(self, res, ct):
        from ..runtime.core import add_cotangents
        fun, primals, tans, wrt = res
        a, b = ct if ct is not None else (None, None)
        moving = tuple(i for i, p in enumerate(primals) if is_inexact(p))
        for i in moving:
            if np.iscomplexobj(primals[i]) or np.iscomplexobj(tans[i]):
                raise NonDifferentiableError(
                    f"pullback differentiates pb.jvp of {name_of(fun)} in reverse mode only for "
                    "real primals (it uses the symmetry of a real Hessian).",
                    hint="Split a complex primal into real and imaginary parts.")
        p_bar = [None] * len(primals)
        t_bar = [None] * len(primals)
        if b is not None and moving:
            (_, _, jtb), (_, _, hbt) = forward_over_reverse(
                fun, primals, moving, False, moving, tuple(tans[i] for i in moving), ct=b)
            for i, g, h in zip(moving, jtb, hbt):
                t_bar[i] = g
                p_bar[i] = h
        if a is not None and moving:
            (_, _, jta), _ = forward_over_reverse(fun, primals, moving, False, (), (), ct=a)
            for i, g in zip(moving, jta):
                p_bar[i] = g if p_bar[i] is None else add_cotangents(p_bar[i], g)
        p_bar = tuple(g if g is not None else zeros_tangent(p) for g, p in zip(p_bar, primals))
        t_bar = tuple(g if g is not None else zeros_tangent(p) for g, p in zip(t_bar, primals))
        return (None, p_bar if 1 in wrt else None, t_bar if 2 in wrt else None, None)


class JacfwdVJP(ReverseCallers, MadeHandle):
    """The reverse-mode handle of a function made by ``pb.jacfwd`` (one array
    argument differentiated, an array output, no aux): the cotangent ``C``
    of ``J(x)`` (column ``k``: ``J e_k``) gives ``sum_k`` of the tangent of
    ``x -> J(x)^T C[..., k]`` along ``e_k``, forward over reverse ``k``
    times (each output's Hessian is symmetric)."""

    variadic = False

    def _refuse(self, why):
        raise NonDifferentiableError(
            f"pullback differentiates pb.jacfwd({name_of(self.made.fun)}) in reverse mode only "
            f"with one argument differentiated, an array or float, real, and an array "
            f"output without aux ({why}).",
            hint="Use pb.jacfwd(pb.jacfwd(f)) (forward over forward), or pb.hessian.")

    def call_primal(self, args, wrt, has_aux=False, inplace=None):
        m = self.made
        if not isinstance(m.argnums, int) or m.has_aux:
            self._refuse("argnums is a tuple or has_aux is set")
        args = tuple(args)
        out = self.fn(*args)
        return out, (args, tuple(wrt))

    def call_adjoint(self, res, ct):
        from ..runtime.core import add_cotangents
        m = self.made
        args, wrt = res
        a = m.argnums % len(args)
        x = args[a]
        if not isinstance(x, (np.ndarray, float, np.floating)) or np.iscomplexobj(x):
            self._refuse(f"argument {a} is a {type(x).__name__}")
        for i in wrt:
            if np.iscomplexobj(args[i]):
                self._refuse(f"argument {i} is complex")
        wrt = tuple(sorted(wrt))
        ct = np.asarray(ct)
        n = np.size(x)
        total = [None] * len(args)
        for k in range(n):
            unit = np.zeros(np.shape(x))
            unit.reshape(-1)[k] = 1.0
            e_k = unit if np.ndim(x) else type(x)(1.0)
            c_k = ct.reshape(ct.shape[:ct.ndim - np.ndim(x)] + (n,))[..., k] \
                if np.ndim(x) else ct
            _, (_, _, hs) = forward_over_reverse(m.fun, args, wrt, False, (a,), (e_k,), ct=c_k)
            for i, h in zip(wrt, hs):
                total[i] = h if total[i] is None else add_cotangents(total[i], h)
        return tuple(total)


class LinearizeVJP(ReverseCallers):
    """The reverse-mode handle of ``pb.linearize``'s ``f_jvp``: the transpose
    of ``t -> J t`` is ``c -> J^T c``, ``pb.vjp`` of the function."""

    made = None
    variadic = True
    tag_primal = False

    def __init__(self, fn):
        self.fn = fn
        self.made_ = made_by(fn)
        self.signature = inspect.signature(fn)

    def bind(self, args, kwargs):
        return LinearizeForward.bind(self, args, kwargs)

    def call_primal(self, args, wrt, has_aux=False, inplace=None):
        return self.fn(*args), tuple(wrt)

    def call_adjoint(self, res, ct):
        m = self.made_
        primals = m.primals
        if m.has_aux or any(np.iscomplexobj(p) for p in primals):
            raise NonDifferentiableError(
                f"pullback differentiates pb.linearize of {name_of(m.fun)} in reverse mode for "
                "real primals without has_aux only.", hint="Use pb.vjp of the function.")
        moving = tuple(i for i, p in enumerate(primals) if is_inexact(p))
        (_, _, grads), _ = forward_over_reverse(m.fun, primals, moving, False, (), (), ct=ct)
        by = dict(zip(moving, grads))
        return tuple(by.get(i) if i in res else None for i in range(len(primals)))


_jvp_reverse = None


def nested_reverse(fn):
    """The reverse handle of a call of ``pb.jvp``, else None."""
    global _jvp_reverse
    if getattr(fn, "__pullback_nested__", None) == "pb.jvp":
        if _jvp_reverse is None:
            _jvp_reverse = JvpCallVJP(fn)
        return _jvp_reverse
    return None
