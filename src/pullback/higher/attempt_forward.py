"""Forward mode over a ``try`` body in a generated primal and adjoint.

A ``try`` runs its body as a function (``frontend.exceptions``): the
generated primal calls ``dynamic_call(attempt, mask, inplace, body, *args)``
(``driver.dispatch._attempt``) and the adjoint ``dynamic_adjoint`` of its
residual (``dispatch._Attempt``).  ``attempt`` is pullback's machinery and is
never transformed (``own_code``); forward mode over these two calls (the
gradient of a function with a ``try``, differentiated again) is the body's
own call, forwards::

    primal:   tried, r = dynamic_call(attempt, (1,), False, try_body, x)
    forward:  (tried, r), (tried_dot, r_dot)
                  = DynamicCallForward over dynamic_call(try_body, (0,), False, x)
    adjoint:  x_bar = dynamic_adjoint(r, tried_bar)      (the body's adjoint)

An exception that leaves the body is handed on as the primal's is, with no
tangent: no gradient flows through a body that did not finish.
"""
from __future__ import annotations

from ..errors import NonDifferentiableError, PullbackError
from ..runtime.forward_support import zeros_tangent

__all__ = ["attempt_call_forward", "attempt_adjoint_forward"]


def attempt_call_forward(forward, mask, inplace, rest, kwargs, keys, tangents):
    """``DynamicCallForward.call_kw`` of ``dynamic_call(attempt, mask,
    inplace, body, *args)``: ``keys`` are positions among ``dynamic_call``'s
    own arguments (3: the body, 4...: its arguments)."""
    from .. import runtime
    from ..callees import _CALLEE
    from ..driver import dispatch
    from ..runtime.control import RAISED
    body, args = rest[0], tuple(rest[1:])
    if not all(isinstance(k, int) for k in mask) or kwargs:
        raise NonDifferentiableError(
            "pullback cannot differentiate the gradient of a `try` body called with keyword "
            "arguments again.", hint="Take one derivative of this function.")
    inner = tuple(_CALLEE if k == 0 else k - 1 for k in mask)
    keys2, tangents2 = [], []
    for k, t in zip(keys, tangents):
        if t is None or not isinstance(k, int) or k < 3:
            continue
        keys2.append(0 if k == 3 else k - 1)     # the body: the callee; then its arguments
        tangents2.append(t)
    try:
        (out, r), (out_dot, r_dot) = forward.call_kw(
            (body, inner, inplace) + args, {}, tuple(keys2), tuple(tangents2))
    except BaseException as err:
        if isinstance(err, PullbackError):
            raise
        zeros = tuple(runtime.zeros_like(body if k == 0 else args[k - 1]) for k in mask)
        return ((RAISED, err), (dispatch._Attempt(), (None, zeros))), \
            ((None, None), (None, None))
    return (out, (dispatch._Attempt(), (r, None))), (out_dot, (None, (r_dot, None)))


def attempt_adjoint_forward(forward, r, ct, res_dot, ct_dot):
    """``DynamicAdjointForward.call`` of ``dynamic_adjoint`` of an ``attempt``'s
    residual ``(_Attempt(), r)``: the body's adjoint forwards, or the zeros of
    a body that raised."""
    res, zeros = r
    if res is None:
        return zeros, tuple(zeros_tangent(z) for z in zeros)
    inner = res_dot[1] if res_dot is not None else None
    return forward.call((res, ct), (0, 1), (None if inner is None else inner[0], ct_dot))
