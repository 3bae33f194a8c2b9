"""Forward mode over a call with starred arguments in a generated primal and
adjoint.

``f(*xs, **d)`` is normalized into ``star_call(how, method, f, xs, d)``; a
generated primal calls ``dynamic_call(star_call, mask, inplace, how, method,
f, *items)`` (``driver.dispatch._star_call``), which spreads the items
(``dispatch.star_route``) and calls ``f`` through ``dynamic_call`` (or a
method through ``dynamic_method_call``); the adjoint regroups the callee's
gradients by the items (``dispatch._Spread``).  Forward over reverse (the
gradient of such a function differentiated again) spreads the items'
tangents by the same route and runs the callee's call forwards::

    primal:   out, r = dynamic_call(star_call, (3,), False, ('*',), None, f, args)
    forward:  (out, r), (out_dot, r_dot)
                  = DynamicCallForward over dynamic_call(f, (0, 1), False, *args)
                    with args_dot spread as args is
    adjoint:  (args_bar,) = dynamic_adjoint(r, out_bar)    (f's, regrouped)
"""
from __future__ import annotations

from ..errors import NonDifferentiableError

__all__ = ["star_call_forward", "star_adjoint_forward"]


def star_call_forward(forward, mask, inplace, rest, kwargs, keys, tangents, method_forward):
    """``DynamicCallForward.call_kw`` of ``dynamic_call(star_call, mask,
    inplace, how, method, callee, *items)``: ``keys`` are positions among
    ``dynamic_call``'s own arguments (5: the callee or the object a method is
    called on, 6...: the items) and keyword names; ``method_forward``:
    ``reverse_calls.DynamicMethodForward`` (passed in: that module imports this one)."""
    from ..callees import _RECEIVER
    from ..driver import dispatch
    spec, target, items = tuple(rest[:2]), rest[2], tuple(rest[3:])
    given = {}
    for k, t in zip(keys, tangents):
        if t is None or (isinstance(k, int) and k < 5):   # star_call, mask, inplace, how, method
            continue
        given[k - 3 if isinstance(k, int) else k] = t
    fn, args, all_kwargs, inner_mask, groups = dispatch.star_route(
        tuple(mask), spec, target, items, kwargs)
    # the tangents go where the items go: the same route, for the entries with one
    _, _, _, where, parts = dispatch.star_route(tuple(given), spec, target, items, kwargs)
    inner = {}
    for (k, t), part in zip(given.items(), parts):
        if part[0] == "one":
            inner[where[part[1]]] = t
        elif part[0] == "*":
            for j, i in enumerate(part[2]):
                inner[where[i]] = t[j]
        else:
            for key, i in part[2].items():
                inner[where[i]] = t[key]
    method = spec[1]
    if method is None:
        if _RECEIVER in inner:
            raise NonDifferentiableError(
                "pullback cannot differentiate the gradient of a call of a function value "
                "built from the inputs with `*xs` or `**d` again.",
                hint="Call the function by its name.")
        shifted = {(k + 3 if isinstance(k, int) else k): t for k, t in inner.items()}
        (out, r), (out_dot, r_dot) = forward.call_kw(
            (fn, inner_mask, inplace) + tuple(args), all_kwargs, tuple(shifted),
            tuple(shifted.values()))
    else:
        # dynamic_method_call(obj, name, mask, inplace, *args): the object at 0
        shifted = {(0 if k == _RECEIVER else k + 4 if isinstance(k, int) else k): t
                   for k, t in inner.items()}
        (out, r), (out_dot, r_dot) = method_forward().call_kw(
            (target, method, inner_mask, inplace) + tuple(args), all_kwargs, tuple(shifted),
            tuple(shifted.values()))
    return (out, (dispatch._Spread(groups), (None, r))), (out_dot, (None, (None, r_dot)))


def star_adjoint_forward(forward, plan, r, ct, res_dot, ct_dot):
    """``DynamicAdjointForward.call`` of ``dynamic_adjoint`` of a starred
    call's residual ``(_Spread, (None, r))``: the callee's adjoint forwards,
    its gradients and their tangents regrouped by the call's items."""
    inner = res_dot[1] if res_dot is not None else None
    out, out_dot = forward.call((r[1], ct), (0, 1),
                                (None if inner is None else inner[1], ct_dot))
    return plan.regroup(out), plan.regroup(out_dot)
