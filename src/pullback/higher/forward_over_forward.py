"""Forward over forward: the jvp of a jvp, and of ``pb.jacfwd`` and
``pb.linearize`` functions.

The tangent function forward mode generates is Python and NumPy whose
helpers have forward rules, so forward mode transforms it again.
``pb.jvp(f, (x,), (t,))`` called where ``x`` moves along ``s`` and ``t``
along ``u`` has the tangent::

    (y, y_dot), (y_s, y_dot_s) = jvp(f_jvp, (x, t), (s, u))
    #  y_s = J s,  y_dot_s = f''(x)[t, s] + J u

``f_jvp`` is transformed for this once per signature (``inner.inner_forward``).
``pb.jacfwd(f)``'s tangent is that of each of its columns ``jvp(f, x, e_k)``
(``JacfwdForward``); ``pb.linearize``'s ``f_jvp`` is linear in its tangent
with the primals fixed (``LinearizeForward``); a call of ``pb.jvp`` inside a
function differentiated forwards is ``JvpCallForward``.

Before / after: for ``f(x) = np.sin(x) * x``, one line of ``f_jvp(x, x_dot)``::

    sin_x_dot = x_dot * np.cos(x)

becomes, in ``f_jvp_jvp(x, x_dot, x_dot_1, x_dot_dot)`` (``x_dot_1``: the
tangent of ``x``, ``x_dot_dot``: that of the inner tangent ``x_dot``)::

    cos_x = np.cos(x)
    cos_x_dot = -x_dot_1 * np.sin(x)
    sin_x_dot = x_dot * cos_x
    sin_x_dot_dot = (broadcast_tangent(x_dot_dot, sin_x_dot) * cos_x
                     + broadcast_tangent(cos_x_dot, sin_x_dot) * x_dot)
"""
from __future__ import annotations

import inspect

from ..checks import check_tangents, is_inexact
from ..errors import NonDifferentiableError
from ..runtime.forward_support import zeros_tangent
from .inner import inner_forward
from .made import ForwardCallers, MadeHandle, made_by, name_of

__all__ = ["forward_over_forward", "again_forward", "JvpCallForward", "JacfwdForward",
           "LinearizeForward", "JVP_PARAMS", "JVP_SIGNATURE", "bind_jvp"]


def _plain_handle(fun, what):
    from ..forward.calls import forward_of
    from ..forward.handles import ForwardDerivative
    handle = forward_of(fun)
    if not isinstance(handle, ForwardDerivative):
        raise NonDifferentiableError(
            f"pullback differentiates {what} of {name_of(fun)} again only for a plain "
            f"function defined with def (this is a {type(fun).__name__}).",
            hint="Pass the plain function, with the values it reads as arguments.")
    return handle


def forward_over_forward(fun, primals, tangents, p_dot, t_dot, has_aux=False):
    """``pb.jvp(fun, primals, tangents)`` and its tangent when the primals
    move along ``p_dot`` and the tangents along ``t_dot`` (tuples, one per
    primal, an entry None where it does not move; either may be None):
    ``((out, out_dot), (out_s, out_dot_s))``, with ``has_aux`` ``out`` is
    ``(value, aux)``."""
    primals, tangents = check_tangents(primals, tangents)
    wrt = tuple(i for i, a in enumerate(primals) if is_inexact(a))
    from ..forward.calls import forward_of
    from ..forward.handles import CustomJVP
    if isinstance(forward_of(fun), CustomJVP) and not has_aux:
        return _custom_again(forward_of(fun), primals, tangents, p_dot, t_dot)
    handle = _plain_handle(fun, "pb.jvp")
    # the primals fill the positional parameters, then *args, in order: primal i
    # is argument i of the bound call (defaults and keyword-only ones after them,
    # one per value for a function with *args: ``call_layouts.Flat``)
    args = handle.bind(primals, {})
    n = len(args)
    mask, moves = [], []
    for i in wrt:
        if p_dot is not None and p_dot[i] is not None:
            mask.append(i)
            moves.append(p_dot[i])
    for k, i in enumerate(wrt):
        if t_dot is not None and t_dot[i] is not None:
            mask.append(n + k)
            moves.append(t_dot[i])
    return again_forward(handle, args, wrt, tuple(tangents[i] for i in wrt), mask, moves,
                         has_aux)


def _custom_again(fn, primals, tangents, p_dot, t_dot):
    """Forward over a ``pb.custom_jvp`` function: its rule, a Python function
    of ``(primals, tangents)``, differentiated forwards."""
    from ..forward import calls
    if fn.rule is None:
        raise TypeError(f"custom_jvp function {fn.__name__} has no rule yet: decorate "
                        f"its rule with @{fn.__name__}.defjvp before differentiating.")
    primals = fn.bind(primals, {})
    full = tuple(t if is_inexact(p) else zeros_tangent(p) for p, t in zip(primals, tangents))

    def moved(d):
        if d is None or all(x is None for x in d):
            return None
        return tuple(zeros_tangent(p) if x is None else x for p, x in zip(primals, d))
    mask = tuple(k for k, d in ((0, moved(p_dot)), (1, moved(t_dot))) if d is not None)
    moves = tuple(d for d in (moved(p_dot), moved(t_dot)) if d is not None)
    if not mask:
        out, t = fn.rule(tuple(primals), full)
        return (out, t), (zeros_tangent(out), zeros_tangent(t))
    return calls.jvp_call(fn.rule, (tuple(primals), full), {}, mask, moves, top=True)


def again_forward(handle, args, wrt, inner_t, mask, moves, has_aux=False):
    """The tangent function of ``handle`` at ``args`` (tangents ``inner_t``
    for the parameters ``wrt``), differentiated forwards again: its
    positions ``mask`` (``args`` then ``inner_t``) move along ``moves``."""
    from ..forward import calls
    loaded = inner_forward(handle, args, wrt, has_aux)
    if not mask:
        out, out_dot = loaded.jvp(*args, *inner_t)
        return (out, out_dot), (zeros_tangent(out), zeros_tangent(out_dot))
    try:
        return calls.jvp_call(loaded.jvp, tuple(args) + inner_t, {}, tuple(mask),
                              tuple(moves), top=True)
    except Exception as err:
        loaded.annotate(err)
        raise


# -- pb.jvp called inside a function differentiated in forward mode --------------------

JVP_PARAMS = ["fun", "primals", "tangents", "has_aux"]
JVP_SIGNATURE = inspect.Signature(
    [inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in JVP_PARAMS[:3]]
    + [inspect.Parameter("has_aux", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=False)])


def bind_jvp(args, kwargs):
    """The arguments of a call of ``pb.jvp``, one per parameter."""
    b = JVP_SIGNATURE.bind(*args, **kwargs)
    b.apply_defaults()
    return tuple(b.arguments[p] for p in JVP_PARAMS)


class JvpCallForward:
    """Forward mode over a call of ``pb.jvp`` (``forward.calls.jvp_call``)."""

    params = JVP_PARAMS

    def call_kw(self, args, kwargs, keys, tangents):
        fun, primals, tans, has_aux = bind_jvp(args, kwargs)
        given = {}
        for k, t in zip(keys, tangents):
            if t is None:
                continue
            i = k if isinstance(k, int) else JVP_PARAMS.index(k)
            if i == 0:
                raise NonDifferentiableError(
                    "pullback cannot follow a tangent through the function given to pb.jvp "
                    "(it reads a value being differentiated).",
                    hint="Pass the values the function reads to pb.jvp as primals.")
            if i == 3:
                continue
            given[i] = t
        (out, out_dot), (out_s, out_dot_s) = forward_over_forward(
            fun, primals, tans, given.get(1), given.get(2), has_aux)
        if has_aux:
            (value, aux), (value_s, aux_s) = out, out_s
            return (value, out_dot, aux), (value_s, out_dot_s, aux_s)
        return (out, out_dot), (out_s, out_dot_s)


# -- functions made by pb.jacfwd and pb.linearize ----------------------------------------

class JacfwdForward(ForwardCallers, MadeHandle):
    """The forward-mode handle of a function made by ``pb.jacfwd``: each
    column ``jvp(f, x, e_k)`` differentiated again (forward over forward)."""

    def call(self, args, wrt, tangents, has_aux=False):
        from ..forward.jacobian import jacfwd_eval
        m = self.made
        args = tuple(args)
        given = dict(zip(wrt, tangents))
        p_dot = tuple(given.get(i) for i in range(len(args)))
        made = []

        def column(args_, cols_wrt, col_tangents, aux):
            full = [zeros_tangent(a) for a in args_]
            for j, t in zip(cols_wrt, col_tangents):
                full[j] = t
            (o, d), (o_s, d_s) = forward_over_forward(m.fun, args_, tuple(full), p_dot,
                                                      None, aux)
            made.append((o_s, d_s))
            return o, d

        out = jacfwd_eval(m.fun, m.argnums, m.has_aux, args, column)
        it = iter(made)

        def column_s(args_, cols_wrt, col_tangents, aux):
            o_s, d_s = next(it)
            return o_s, d_s
        out_s = jacfwd_eval(m.fun, m.argnums, m.has_aux, args, column_s)
        if has_aux:
            out_s = out_s[0]
        return out, out_s


class LinearizeForward(ForwardCallers):
    """The forward-mode handle of ``pb.linearize``'s ``f_jvp``: linear in its
    tangents, the primals fixed, so its tangent is itself applied to theirs."""

    def __init__(self, fn):
        self.fn = fn
        self.params = [f"tangent_{i}" for i in range(len(made_by(fn).primals))]

    def bind(self, args, kwargs):
        if kwargs:
            raise TypeError("the function made by pb.linearize takes its tangents by position.")
        return tuple(args)

    def call(self, args, wrt, tangents, has_aux=False):
        out = self.fn(*args)
        given = dict(zip(wrt, tangents))
        if not given:
            return out, zeros_tangent(out)
        return out, self.fn(*(given.get(i, zeros_tangent(a)) for i, a in enumerate(args)))
