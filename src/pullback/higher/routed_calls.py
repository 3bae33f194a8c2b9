"""Forward over reverse of the calls ``driver.dispatch`` routes to another
call: a callable object's ``__call__`` (``model(x)``), a function value an
object holds (``self.activation(z)``), a function value carrying no gradient,
and library code that only moves data (``runtime.opaque``).  Each mirrors the
route the reverse call takes, so that the residual is the one the generated
adjoint reads (``dispatch._HeldCallee``, ``_NoCalleeGradient``,
``plans._Opaque``), and ``higher.reverse_calls.DynamicAdjointForward`` runs
that adjoint forwards (``held``, ``inserted``).

Before / after (``net(x)`` in a generated primal, ``net`` a ``Stack`` with
``__call__``)::

    out, r = dynamic_call(net, (-2, 0), False, x)
    forward:  DynamicMethodForward over dynamic_method_call(net, '__call__', (-1, 0), False, x)
"""
from __future__ import annotations

import types

from ..errors import NonDifferentiableError
from .made import name_of

__all__ = ["callee_value_call", "held_callee_call", "library_method_call", "opaque_forward",
           "held", "inserted"]


def callee_value_call(forward, callee, mask, inplace, rest, kwargs, keys, tangents,
                      method_forward):
    """``model(x)`` where ``model``, an object of the user's class with
    ``__call__``, holds values with tangents: ``model.__call__(x)``, the
    object the receiver; a plain function value carries no gradient; as
    ``dispatch._callee_call`` routes them (None: refused there).
    ``method_forward``: ``reverse_calls.DynamicMethodForward`` (passed in: that
    module imports this one)."""
    from ..callees import _CALLEE, _RECEIVER, _is_callable_instance
    from ..driver import dispatch
    from ..runtime import is_instance
    keep = [(k, t) for k, t in zip(keys, tangents) if t is not None and k not in (1, 2)]
    if _is_callable_instance(callee) and is_instance(callee):
        mask2 = tuple(_RECEIVER if k == _CALLEE else k for k in mask)
        return method_forward().call_kw(
            (callee, "__call__", mask2, inplace) + rest, kwargs,
            tuple(k + 1 if isinstance(k, int) and k > 0 else k for k, _ in keep),
            tuple(t for _, t in keep))
    if isinstance(callee, types.MethodType) or _is_callable_instance(callee) \
            or is_instance(callee):
        return None
    keep = [(k, t) for k, t in keep if k != 0]
    (out, r), (out_dot, r_dot) = forward.call_kw(
        (callee, tuple(k for k in mask if k != _CALLEE), inplace) + rest, kwargs,
        tuple(k for k, _ in keep), tuple(t for _, t in keep))
    return (out, (dispatch._NoCalleeGradient(mask.index(_CALLEE)), r)), (out_dot, (None, r_dot))


def held_callee_call(obj, name, mask, inplace, rest, kwargs, moved, call_forward):
    """``DynamicMethodForward`` of ``obj.name(*args)`` where ``obj`` holds the
    value called (``moved``: the tangents keyed as ``dynamic_call`` takes
    the method's function, 3: ``obj``; ``call_forward``:
    ``reverse_calls.DynamicCallForward``)."""
    from ..callees import _CALLEE, _RECEIVER
    from ..driver import dispatch
    from ..runtime.objects import field_tangent
    value = vars(obj)[name]
    given = {(0 if k == 3 else k - 1 if isinstance(k, int) else k): t
             for k, t in moved.items()}
    if 0 in given:
        given[0] = field_tangent(given[0], obj, name)
    (out, r), (out_dot, r_dot) = call_forward().call_kw(
        (value, tuple(_CALLEE if k == _RECEIVER else k for k in mask), inplace) + rest, kwargs,
        tuple(given), tuple(given.values()))
    return (out, (dispatch._HeldCallee(mask.index(_RECEIVER), name), r)), \
        (out_dot, (None, r_dot))


def library_method_call(method, mask, inplace, rest, kwargs, moved):
    """``DynamicMethodForward`` of ``obj.name(*args)``, a C method of an object
    holding values with tangents (``d.get(k, 0.0)``), planned as the reverse
    call plans it; None where that is not library code moving data."""
    from ..callees import _RECEIVER, _unwrap
    from ..driver import plans
    fn, args, kwargs2, mask2 = _unwrap(method, rest, dict(kwargs), tuple(mask))
    if len(args) != len(rest):
        return None
    plan = plans._plan(fn, len(args), tuple(kwargs2), mask2, inplace)
    if not isinstance(plan, plans._Opaque):
        return None
    given = {(_RECEIVER if k == 3 else k - 4 if isinstance(k, int) else k): t
             for k, t in moved.items()}
    return opaque_forward(plan, fn, args, kwargs2, mask2, given)


def opaque_forward(plan, fn, args, kwargs, mask, given):
    from ..runtime import opaque_routes
    from ..callees import _RECEIVER
    from ..runtime.forward_support import kept_structure
    if any(k not in mask for k in given):
        raise NonDifferentiableError(
            f"pullback cannot differentiate the gradient of {name_of(fn)} again: an argument "
            "whose gradient it does not take carries a tangent.",
            hint="Pass the values it reads as arguments of a function defined with def.")
    # refused where it changes an argument holding tangents (their tangents would not follow)
    moving = tuple(fn.__self__ if k == _RECEIVER else args[k] if isinstance(k, int)
                   else kwargs[k] for k in given)
    out, res = kept_structure(moving, plan.primal, args, kwargs)
    out_dot = opaque_routes.routed_tangent(fn, out, res[1][0], [given.get(k) for k in mask])
    return (out, res), (out_dot, None)


def held(grads, plan):
    from .. import runtime
    grads = list(grads)
    grads[plan.at] = runtime.FieldGrads({plan.name: grads[plan.at]})
    return tuple(grads)


def inserted(grads, at, obj):
    from .. import runtime
    grads = list(grads)
    grads.insert(at, runtime.zeros_like(obj))
    return tuple(grads)
