"""Forward mode over the calls a generated primal or adjoint makes (forward
over reverse): the bridge from the code reverse mode generates to the
higher-order versions of its callees.

A generated primal calls a user callee's primal (``Derivative.for_callers``),
a function value through ``dynamic_call`` / ``dynamic_method_call``, and
run-time helpers; its adjoint calls the callees' adjoints.  When forward
mode transforms that code (``pb.hessian``, ``pb.jvp(pb.grad(f))``),
``callee_forward`` gives each such call its forward handle: the callee's own
primal transformed forwards, its residuals' tangents handed on to its
adjoint::

    f_primal:      y, g_res = g_primal(x)
    f_adjoint:     x_bar = g_adjoint(g_res, y_bar)
    forward over:  (y, g_res), (y_dot, g_res_dot) = CalleePrimalForward(g).call((x,), (0,), (x_dot,))
                   x_bar, x_bar_dot = CalleeAdjointForward(g).call((g_res, y_bar), (0, 1),
                                                                   (g_res_dot, y_bar_dot))

A run-time helper without a forward rule (``prod_grad``) is transformed
forwards from its own source like a user function.
"""
from __future__ import annotations

import functools
import inspect
import types
import weakref

import numpy as np

from ..errors import NonDifferentiableError
from ..runtime.forward_support import add_tangents, zeros_tangent
from ..runtime.opaque import is_library_code
from .attempt_forward import attempt_adjoint_forward, attempt_call_forward
from .handles import forward_handle
from .inner import annotated, inner_transform, jvp
from .made import ForwardCallers, name_of, params_of
from .reverse_over_reverse import GradVJP, PullbackVJP
from .routed_calls import (callee_value_call, held, held_callee_call, inserted,
                           library_method_call, opaque_forward)
from .star_forward import star_adjoint_forward, star_call_forward
from .tangent_calls import nested_forward

__all__ = ["CalleePrimalForward", "CalleeAdjointForward", "DynamicCallForward",
           "DynamicMethodForward", "DynamicAdjointForward", "callee_forward"]


def _underlying(handle):
    """The handle of the function under ``pb.checkpoint`` / ``pb.forward``
    (whose own tangent is the function's), else ``handle``."""
    if getattr(handle, "jvp_of", None) is not None:
        from ..callees import derivative_of
        return derivative_of(handle.jvp_of)
    return handle


class CalleePrimalForward(ForwardCallers):
    """Forward mode over a generated primal's call of a callee's primal
    (``Derivative.for_callers``): the callee's own primal transformed
    forwards, its residuals' tangents handed on to its adjoint."""

    def __init__(self, handle, mask):
        self.handle, self.mask = handle, mask
        self.fun = getattr(handle, "fun", handle)
        self.params = list(getattr(handle, "params", []))

    def bind(self, args, kwargs):
        return self.handle.bind(tuple(args), kwargs)

    def call(self, args, wrt, tangents, has_aux=False):
        from ..callees import Derivative
        from ..custom_rules import CustomVJP
        h = _underlying(self.handle)
        # a Flat keeps its layout (the call of a function with *args / **kwargs)
        args = h.bind(args if isinstance(args, tuple) else tuple(args), {})
        if isinstance(h, Derivative):
            loaded = inner_transform(h, args, self.mask, False)
            (out, r), (out_dot, r_dot) = annotated(
                loaded, lambda: jvp(loaded.primal, args, wrt, tangents))
            return (out, (loaded, r, self.mask, len(args), None)), \
                (out_dot, (None, r_dot, None, None, None))
        if isinstance(h, CustomVJP):
            h._check()
            (out, r), (out_dot, r_dot) = jvp(h.fwd, args, wrt, tangents)
            given = dict(zip(wrt, tangents))
            a_dot = tuple(given.get(i, zeros_tangent(a)) for i, a in enumerate(args))
            return (out, (r, args)), (out_dot, (r_dot, a_dot))
        if isinstance(h, (GradVJP, PullbackVJP)):
            fwd = forward_handle(h.fn)
            out, out_dot = fwd.call(args, wrt, tangents)
            res = (args, tuple(self.mask)) if isinstance(h, GradVJP) else tuple(self.mask)
            given = dict(zip(wrt, tangents))
            a_dot = tuple(given.get(i, zeros_tangent(a)) for i, a in enumerate(args))
            res_dot = (a_dot, None) if isinstance(h, GradVJP) else None
            return (out, res), (out_dot, res_dot)
        raise NonDifferentiableError(
            f"pullback cannot differentiate the derivative of {name_of(self.fun)} again "
            f"(a {type(h).__name__}).", hint="Call a plain function defined with def.")


class CalleeAdjointForward(ForwardCallers):
    """Forward mode over a generated adjoint's call of a callee's adjoint."""

    params = ["res", "ct"]

    def __init__(self, handle):
        self.handle = handle

    def bind(self, args, kwargs):
        return tuple(args)

    def call(self, args, wrt, tangents, has_aux=False):
        from ..callees import Derivative
        from ..custom_rules import CustomVJP
        from .. import runtime
        h = _underlying(self.handle)
        res, ct = args
        given = dict(zip(wrt, tangents))
        res_dot, ct_dot = given.get(0), given.get(1)
        if isinstance(h, Derivative):
            loaded, r, mask, n, _ = res
            r_dot = res_dot[1] if res_dot is not None else None
            grads, grads_dot = annotated(loaded, lambda: jvp(
                loaded.adjoint, (r, ct), (0, 1), (r_dot, ct_dot)))
            full, full_dot = [None] * n, [None] * n
            for i, g, d in zip(mask, grads, grads_dot):
                full[i], full_dot[i] = g, d
            return tuple(full), tuple(full_dot)
        if isinstance(h, CustomVJP):
            r, a = res
            r_dot = res_dot[0] if res_dot is not None else None
            grads, grads_dot = jvp(h.bwd, (r, ct), (0, 1), (r_dot, ct_dot))
            out = h.call_adjoint(res, ct)
            out_dot = tuple(None if d is None else runtime.project(d, x)
                            for d, x in zip(grads_dot, a))
            return out, out_dot
        if isinstance(h, GradVJP):
            # GradVJP.call_adjoint and its tangent: a third derivative taken
            # inside a differentiated function; refused for now
            raise NonDifferentiableError(
                "pullback does not yet take the derivative of a second derivative of "
                f"{name_of(h.fun)} computed inside a differentiated function.",
                hint="Nest pb.grad three times around the plain function instead.")
        raise NonDifferentiableError(
            f"pullback cannot differentiate the derivative of {name_of(getattr(h, 'fun', h))} "
            "again.", hint="Call a plain function defined with def.")


class DynamicCallForward:
    """Forward mode over a generated primal's ``dynamic_call(callee, mask,
    inplace, *args)`` (a function value, dispatched when the call runs): the
    dispatcher's plan, its callee's primal transformed forwards."""

    params = ["callee", "mask", "inplace"]

    def call_kw(self, args, kwargs, keys, tangents):
        from ..callees import _unwrap
        from ..driver import plans
        callee, mask, inplace = args[0], args[1], args[2]
        rest = tuple(args[3:])
        routed = _function_value_call(self, callee, mask, inplace, rest, kwargs, keys, tangents)
        if routed is not None:
            return routed
        from ..runtime import control
        if callee is control.attempt:       # a `try` body (higher.attempt_forward)
            return attempt_call_forward(self, mask, inplace, rest, kwargs, keys, tangents)
        if callee is control.star_call:     # `f(*xs, **d)` (higher.star_forward)
            return star_call_forward(self, mask, inplace, rest, kwargs, keys, tangents,
                                     DynamicMethodForward)
        given = {}
        for k, t in zip(keys, tangents):
            if t is None:
                continue
            if isinstance(k, int) and k < 3:
                if k == 0:
                    raise NonDifferentiableError(
                        "pullback cannot differentiate a gradient again through a function "
                        "value that depends on the inputs.",
                        hint="Pass the values the function reads as arguments.")
                continue
            given[k - 3 if isinstance(k, int) else k] = t
        fn, rest2, kwargs2, mask2 = _unwrap(callee, rest, dict(kwargs), tuple(mask))
        shift = len(rest2) - len(rest)
        given = {(k + shift if isinstance(k, int) else k): t for k, t in given.items()}
        plan = plans._plan(fn, len(rest2), tuple(kwargs2), mask2, inplace)
        if isinstance(plan, plans._Constant):
            out, res = plan.primal(rest2, kwargs2)
            return (out, res), (zeros_tangent(out), None)
        if isinstance(plan, plans._Opaque):
            # library code that only moves data (runtime.opaque): each leaf of its result
            # has the tangent of the argument's leaf it is; its adjoint is linear in ct
            return opaque_forward(plan, fn, rest2, kwargs2, mask2, given)
        tag = getattr(plan.pair[0], "__pullback_callee__", None) \
            if isinstance(plan, plans._Differentiated) else None    # (a library call: none)
        if tag is None:
            raise NonDifferentiableError(
                f"pullback cannot differentiate the gradient of {name_of(fn)} again.",
                hint="Call a plain function defined with def.")
        handle, pmask, _ = tag
        under = _underlying(handle)     # pb.checkpoint(f): bound by f's parameters
        full, by_param = params_of(under, getattr(under, "fun", fn), rest2, kwargs2, given)
        wrt = tuple(sorted(by_param))
        (out, r), (out_dot, r_dot) = CalleePrimalForward(handle, tuple(pmask)).call(
            full, wrt, tuple(by_param[i] for i in wrt))
        return (out, (plan, r)), (out_dot, (None, r_dot))


def _function_value_call(forward, callee, mask, inplace, rest, kwargs, keys, tangents):
    """``DynamicCallForward`` of a call that builds a function value
    (``partial(f, x)``, ``nested_value(lifted, y=y)``) or calls one whose held
    values carry a gradient, as ``driver.dispatch`` routes them; None for
    any other call."""
    from ..callees import _CALLEE
    from ..driver import dispatch
    from ..forward import calls as forward_calls
    from ..runtime import control
    if callee is control.nested_value or callee is functools.partial:
        value, res = dispatch._make_function(callee, mask, rest, kwargs)
        given = [(k - 3 if isinstance(k, int) else k, t) for k, t in zip(keys, tangents)
                 if t is not None and not (isinstance(k, int) and k < 3)]
        _, value_dot = forward_calls._make_function_jvp(
            callee, rest, kwargs, tuple(k for k, _ in given), tuple(t for _, t in given))
        return (value, res), (value_dot, None)
    if _CALLEE in mask and not isinstance(callee, functools.partial):
        return callee_value_call(forward, callee, mask, inplace, rest, kwargs, keys, tangents,
                                     DynamicMethodForward)
    if not (isinstance(callee, functools.partial) and _CALLEE in mask):
        return None
    func, inner_mask, args2, kwargs2, regroup = dispatch.partial_route(
        callee, mask, rest, kwargs)
    n = len(callee.args)
    keys2, tangents2 = [], []
    for k, t in zip(keys, tangents):
        if t is None or k in (1, 2):
            continue
        if k == 0:              # the held values' tangents: a dict keyed as they are held
            from ..runtime import function_values as fv
            for key, _ in fv.held(callee, kwargs):
                e = fv.entry(t, key)
                if e is not None:
                    keys2.append(key + 3 if isinstance(key, int) else key)
                    tangents2.append(e)
            continue
        keys2.append(k + n if isinstance(k, int) else k)
        tangents2.append(t)
    (out, r), (out_dot, r_dot) = forward.call_kw(
        (func, inner_mask, inplace) + tuple(args2), kwargs2, tuple(keys2), tuple(tangents2))
    return (out, (regroup, r)), (out_dot, (None, r_dot))


class DynamicMethodForward:
    """Forward mode over ``dynamic_method_call(obj, name, mask, inplace,
    *args)``: routed as the dispatcher routes it, to ``dynamic_call`` of the
    method's function with the object first."""

    params = ["obj", "name", "mask", "inplace"]

    def call_kw(self, args, kwargs, keys, tangents):
        from ..callees import _RECEIVER
        from ..driver import dispatch, plans
        from ..rules.registry import lookup
        from ..runtime import is_instance
        obj, name, mask, inplace = args[:4]
        rest = tuple(args[4:])
        given = {}
        for k, t in zip(keys, tangents):
            if t is None or k in (1, 2, 3):
                continue
            given[k] = t
        # the call as dispatch.dynamic_call sees it: (callee, mask, inplace, obj, *args)
        moved = {(3 if k == 0 else k if isinstance(k, int) else k): t for k, t in given.items()}
        mask2 = tuple(0 if k == _RECEIVER else k + 1 if isinstance(k, int) else k
                      for k in mask)
        if isinstance(obj, (np.ndarray, np.generic)) and lookup(f"ndarray.{name}") is not None:
            callee = plans._rule_wrapper(name, len(rest) + 1, tuple(kwargs), method=True)
        else:
            method = getattr(obj, name)
            if _RECEIVER in mask and is_instance(obj) and name in getattr(obj, "__dict__", ()):
                # `self.activation(z)`: a value the object holds, called; its tangent is
                # that of the object's field (dispatch._HeldCallee)
                return held_callee_call(obj, name, mask, inplace, rest, kwargs, moved,
                                        DynamicCallForward)
            if _RECEIVER in mask and (isinstance(obj, types.ModuleType) or isinstance(
                    inspect.getattr_static(type(obj), name, None), staticmethod)):
                # a staticmethod (a module's function): the object is not passed on, and
                # its gradient is zeros (dispatch._NoReceiverGradient)
                at = mask.index(_RECEIVER)
                moved.pop(3, None)
                (out, r), (out_dot, r_dot) = DynamicCallForward().call_kw(
                    (method, tuple(k for k in mask if k != _RECEIVER), inplace) + rest, kwargs,
                    tuple(k - 1 if isinstance(k, int) else k for k in moved),
                    tuple(moved.values()))
                return (out, (dispatch._NoReceiverGradient(at, obj), r)), (out_dot, (None, r_dot))
            if not (isinstance(method, type(self.call_kw)) and method.__self__ is obj):
                if 0 in given and _RECEIVER in mask and is_library_code(method):
                    # `velocity.get(name, 0.0)`, a C method of a dict holding values with
                    # tangents: library code that moves data (runtime.opaque)
                    routed = library_method_call(method, mask, inplace, rest, kwargs, moved)
                    if routed is not None:
                        return routed
                if 0 in given:
                    raise NonDifferentiableError(
                        f"`.{name}` of a {type(obj).__name__} is not a method defined in "
                        "Python, so pullback cannot follow a tangent through its object.",
                        hint="Pass the values the call depends on as arguments.")
                keys2 = tuple(k - 1 if isinstance(k, int) else k for k in moved)
                return DynamicCallForward().call_kw(
                    (method, mask, inplace) + rest, kwargs, keys2, tuple(moved.values()))
            callee = method.__func__
        return DynamicCallForward().call_kw(
            (callee, mask2, inplace, obj) + rest, kwargs, tuple(moved), tuple(moved.values()))


class DynamicAdjointForward:
    """Forward mode over a generated adjoint's ``dynamic_adjoint(res, ct)``."""

    params = ["res", "ct"]

    def bind(self, args, kwargs):
        return tuple(args)

    def call(self, args, wrt, tangents, has_aux=False):
        from ..driver import dispatch, plans
        (plan, r), ct = args
        given = dict(zip(wrt, tangents))
        res_dot, ct_dot = given.get(0), given.get(1)
        if isinstance(plan, dispatch._MadeFunction):     # linear in ct
            out = plan.adjoint(r, ct)
            return out, (plan.adjoint(r, ct_dot) if ct_dot is not None
                         else tuple(zeros_tangent(o) for o in out))
        if isinstance(plan, (dispatch._HeldValues, dispatch._NoReceiverGradient,
                             dispatch._NoCalleeGradient, dispatch._HeldCallee)):
            inner_dot = res_dot[1] if res_dot is not None else None
            out, out_dot = self.call((r, ct), (0, 1), (inner_dot, ct_dot))
            if isinstance(plan, dispatch._HeldValues):
                return plan.regroup(out), plan.regroup(out_dot)
            if isinstance(plan, dispatch._HeldCallee):    # the field's, as the object's
                return held(out, plan), held(out_dot, plan)
            # a staticmethod's object, a function value: zeros, whose tangent is zeros
            obj = getattr(plan, "obj", 0.0)
            return inserted(out, plan.at, obj), inserted(out_dot, plan.at, obj)
        if isinstance(plan, plans._Constant):
            out = plan.adjoint(r, ct)
            return out, tuple(zeros_tangent(o) for o in out)
        if isinstance(plan, plans._Opaque):        # linear in ct, the routes fixed
            out = plan.adjoint(r, ct)
            return out, (plan.adjoint(r, ct_dot) if ct_dot is not None
                         else tuple(zeros_tangent(o) for o in out))
        if isinstance(plan, dispatch._Attempt):
            return attempt_adjoint_forward(self, r, ct, res_dot, ct_dot)
        if isinstance(plan, dispatch._Spread):
            return star_adjoint_forward(self, plan, r, ct, res_dot, ct_dot)
        handle = plan.pair[0].__pullback_callee__[0]
        r_dot = res_dot[1] if res_dot is not None else None
        full, full_dot = CalleeAdjointForward(handle).call(
            (r, ct), (0, 1), (r_dot, ct_dot))
        return tuple(full[i] for i in plan.positions), \
            tuple(full_dot[i] for i in plan.positions)


_helpers = weakref.WeakKeyDictionary()


def _is_runtime_helper(fn):
    from ..own_code import is_source_helper
    from ..rules.registry import is_nondifferentiable, lookup
    return isinstance(fn, types.FunctionType) and is_source_helper(fn) \
        and lookup(fn) is None and not is_nondifferentiable(fn)


def callee_forward(fn):
    """The forward handle of a generated call's callee primal or adjoint, or None."""
    from ..runtime import calls as runtime_calls
    if getattr(fn, "__pullback_nested__", None) is not None \
            or getattr(fn, "__pullback_forward__", None) is not None \
            or fn is add_tangents or getattr(fn, "__name__", None) == "dynamic_jvp":
        # pb.jvp called inside, or a tangent function's callee (forward over forward)
        return nested_forward(fn)
    if fn is runtime_calls.dynamic_call:
        return DynamicCallForward()
    if fn is runtime_calls.dynamic_adjoint:
        return DynamicAdjointForward()
    if fn is runtime_calls.dynamic_method_call:
        return DynamicMethodForward()
    if _is_runtime_helper(fn):
        # a helper without a forward rule (``prod_grad``): its own source,
        # transformed forwards like a user function
        h = _helpers.get(fn)
        if h is None:
            from ..forward.handles import ForwardDerivative
            h = _helpers[fn] = ForwardDerivative(fn)
        return h
    tag = getattr(fn, "__pullback_callee__", None)
    if tag is not None and getattr(fn, "__pullback_compact__", False):
        # a compact call site's primal (reverse.context.compact_callee), whose
        # residuals hold the callee's adjoint: made only in code that is not
        # differentiated again (higher.inner.inner_transform), so never here
        raise AssertionError(f"pullback: the compact primal of {name_of(tag[0].fun)} in code "
                             "differentiated again")
    if tag is not None:
        handle, mask, _ = tag
        return CalleePrimalForward(handle, tuple(mask))
    owner = getattr(fn, "__self__", None)
    if owner is not None and getattr(fn, "__name__", None) == "call_adjoint":
        from ..callees import Bound, Derivative
        from ..custom_rules import CustomVJP
        if isinstance(owner, (Derivative, CustomVJP, Bound, GradVJP, PullbackVJP)):
            return CalleeAdjointForward(owner)
    return None
