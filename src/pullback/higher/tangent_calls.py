"""Forward mode over the calls a generated tangent function makes (forward
over forward): each callee's tangent function, transformed forwards again.

A tangent function calls a user callee as ``fwd(tangents, *args)``
(``ForwardDerivative.for_callers``), a function value as
``dynamic_jvp(callee, mask, tangents, *args)``, ``pb.jvp`` as itself, and
sums tangents with ``add_tangents``; ``nested_forward`` gives each its
forward handle::

    f_jvp:      y, y_dot = g_jvp((x_dot,), x)
    f_jvp_jvp:  (y, y_dot), (y_s, y_dot_s) = CalleeTangentForward(g).call_kw(
                    ((x_dot,), x), {}, (0, 1), ((x_dot_s,), x_s))
"""
from __future__ import annotations

import functools

from ..errors import NonDifferentiableError
from ..runtime.forward_support import zeros_tangent
from .forward_over_forward import JvpCallForward, again_forward
from .made import name_of, params_of

__all__ = ["CalleeTangentForward", "DynamicJvpForward", "AddTangentsForward",
           "nested_forward"]


class CalleeTangentForward:
    """Forward mode over a generated tangent function's call of a callee's
    tangent function (``fwd(tangents, *args)``, ``ForwardDerivative.for_callers``)."""

    def __init__(self, handle, mask):
        self.handle, self.mask = handle, tuple(mask)

    def call_kw(self, args, kwargs, keys, tangents):
        h = self.handle
        inner_t = tuple(args[0])
        call_args = tuple(args[1:])
        given_t, given = None, {}
        for k, t in zip(keys, tangents):
            if t is None:
                continue
            if k == 0:
                given_t = t
            else:
                given[k - 1 if isinstance(k, int) else k] = t
        if not isinstance(h.fun, type(name_of)):
            raise NonDifferentiableError(
                f"pullback differentiates the tangent of {name_of(h.fun)} again only for a "
                "plain function defined with def.",
                hint="Call a plain function defined with def.")
        full, by_param = params_of(h, h.fun, call_args, kwargs, given)
        mask = sorted(by_param)
        moves = [by_param[i] for i in mask]
        if given_t is not None:
            for k, t in enumerate(given_t):
                if t is not None:
                    mask.append(len(full) + k)
                    moves.append(t)
        return again_forward(h, full, self.mask, inner_t, mask, moves)


class DynamicJvpForward:
    """Forward mode over a generated tangent function's ``dynamic_jvp(callee,
    mask, tangents, *args)`` (a call of a function value): the callee's
    tangent function, transformed forwards again.  Plain functions,
    partials, bound methods and rules' functions, tangents by position only."""

    def call_kw(self, args, kwargs, keys, tangents):
        from ..callees import _unwrap
        from ..driver import plans
        from ..forward.calls import forward_of
        from ..forward.handles import ForwardDerivative
        from ..rules.registry import lookup
        callee, mask, inner = args[0], tuple(args[1]), tuple(args[2])
        rest = tuple(args[3:])
        from ..runtime import control
        if callee is control.nested_value or callee is functools.partial or (
                isinstance(callee, functools.partial) and -2 in mask):
            raise NonDifferentiableError(
                "pullback does not yet take a forward derivative of a forward derivative "
                "(pb.jacfwd of pb.jacfwd, pb.jvp inside pb.jvp) through a function value "
                "built from values being differentiated (a partial, or a nested function or "
                "lambda used as a value).",
                hint="Take one of the two derivatives in reverse mode (pb.jacfwd(pb.grad(f)), "
                     "pb.hessian), or pass those values to the function as arguments.")
        given_inner, given = None, {}
        for k, t in zip(keys, tangents):
            if t is None or k == 1:
                continue
            if k == 0:
                raise NonDifferentiableError(
                    "pullback cannot differentiate a tangent again through a function value "
                    "that depends on the inputs.",
                    hint="Pass the values the function reads as arguments.")
            if k == 2:
                given_inner = t
            elif isinstance(k, int):
                given[k - 3] = t
            else:
                self._refuse(callee)
        fn, args2, kwargs2, mask2 = _unwrap(callee, rest, dict(kwargs), mask)
        if not all(isinstance(k, int) and k >= 0 for k in mask2):
            self._refuse(fn)
        if lookup(fn) is not None:
            fn = plans._rule_wrapper(fn, len(args2), tuple(kwargs2))
        handle = forward_of(fn)
        if not isinstance(handle, ForwardDerivative):
            self._refuse(fn)
        # (the keywords after the positions; a function with *args: one value per
        # parameter, the positions first, as the call gave them)
        full = handle.bind(tuple(args2), dict(kwargs2))
        shift = len(args2) - len(rest)
        wrt = tuple(sorted(set(mask2)))
        if len(wrt) != len(mask2):
            self._refuse(fn)
        order = {k: j for j, k in enumerate(mask2)}
        inner_t = tuple(inner[order[i]] for i in wrt)
        pos, moves = [], []
        for k in sorted(given):
            pos.append(k + shift)
            moves.append(given[k])
        if given_inner is not None:
            for k, i in enumerate(wrt):
                t = given_inner[order[i]]
                if t is not None:
                    pos.append(len(full) + k)
                    moves.append(t)
        return again_forward(handle, full, wrt, inner_t, pos, moves)

    @staticmethod
    def _refuse(fn):
        raise NonDifferentiableError(
            f"pullback differentiates a tangent again through a call of the function value "
            f"{name_of(fn)} only with tangents in positional arguments, for a function "
            "defined with def, a partial or a bound method.", hint="Call the function directly.")


class AddTangentsForward:
    """Forward mode over ``forward_support.add_tangents(*terms)``, linear in
    every term (a term that does not move has a zero tangent)."""

    def call_kw(self, args, kwargs, keys, tangents):
        from ..runtime.forward_support import add_tangents
        given = {k: t for k, t in zip(keys, tangents) if t is not None}
        out = add_tangents(*args)
        if not given:
            return out, zeros_tangent(out)
        return out, add_tangents(*(given.get(i, zeros_tangent(a)) for i, a in enumerate(args)))


_jvp_forward = JvpCallForward()


def nested_forward(fn):
    """The forward handle of a call of a pullback API function that forward
    mode differentiates (``pb.jvp``) or of a tangent function's callee, else None."""
    from ..runtime import forward_support
    if getattr(fn, "__pullback_nested__", None) == "pb.jvp":
        return _jvp_forward
    if fn is forward_support.add_tangents:
        return AddTangentsForward()
    from ..forward import calls
    if fn is calls.dynamic_jvp:
        return DynamicJvpForward()
    tag = getattr(fn, "__pullback_forward__", None)
    if tag is not None:
        from ..forward.handles import ForwardDerivative
        if isinstance(tag[0], ForwardDerivative):
            return CalleeTangentForward(*tag)
    return None
