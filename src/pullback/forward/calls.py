"""Calls in forward mode: which handle differentiates a callee
(``forward_of``), and the dispatcher for function values.

A user function called from a differentiated one runs its own tangent
function (its handle, ``forward.handles``), specialised (and cached) for its arguments' abstract signature
and for which of its parameters carry a tangent; since that happens when
the call runs, recursion works as in reverse mode.  A call of a function
value (a parameter, a partial, a bound method, a callable instance, a
NumPy function passed around) goes through ``dynamic_jvp``, which unwraps
it as ``dispatch`` does and picks its forward rule::

    y, y_dot = dynamic_jvp(fn, (0,), (x_dot,), x)     # y = fn(x)

>>> import numpy as np
>>> dynamic_jvp(np.sin, (0,), (1.0,), 0.0)
(np.float64(0.0), np.float64(1.0))
"""
from __future__ import annotations

import functools
import inspect
import types
import weakref

import numpy as np

from ..analyses.callable_facts import is_library
from ..runtime import opaque_routes
from ..runtime.opaque import is_library_code
from ..callees import _RECEIVER, _unwrap as _unwrap_callee
from ..call_layouts import argument_places
from ..custom_rules import CustomVJP
from ..errors import NoRuleError, NonDifferentiableError, PullbackError, UnsupportedSyntaxError
from .handles import CustomJVP, ForwardDerivative
from ..rules.registry import is_nondifferentiable, lookup
from ..runtime import control, forward_support as support

__all__ = ["ForwardDerivative", "CustomJVP", "forward_of", "dynamic_jvp",
           "dynamic_method_jvp", "jvp_call"]

#: ``pullback.higher`` (derivatives of derivatives), which sets itself here when
#: it is imported (``import pullback`` imports it): this module imports no pass.
higher_order = None


_handles = weakref.WeakKeyDictionary()


def forward_of(fun):
    """The handle that gives ``fun``'s tangent function (one per function)."""
    if isinstance(fun, CustomJVP):
        return fun
    if getattr(fun, "jvp_of", None) is not None and isinstance(fun, CustomVJP):
        # pb.checkpoint, pb.forward: the function's own tangent
        return forward_of(fun.jvp_of)
    if isinstance(fun, CustomVJP):
        raise NonDifferentiableError(
            f"forward mode has no rule for {getattr(fun, '__name__', fun)}, a pb.custom_vjp "
            "function (it has a reverse rule only).",
            hint="Use pb.vjp or pb.grad for this function, or define it with pb.custom_jvp "
                 "and its defjvp rule.")
    made_by = getattr(fun, "__pullback_api__", None)
    higher = higher_order             # a derivative of a derivative, or generated code's callee
    if made_by is not None and higher is not None:
        handle = higher.forward_handle(fun)
        if handle is not None:
            return handle
        raise NonDifferentiableError(
            f"forward mode cannot differentiate a function made by {made_by} again.",
            hint="Differentiate the original function: pb.grad, pb.value_and_grad, pb.vjp, "
                 "pb.linearize and (in forward mode) pb.jacfwd functions can be "
                 "differentiated again.")
    if made_by is not None:
        raise NonDifferentiableError(
            f"forward mode cannot differentiate a function made by {made_by}.")
    handle = higher.callee_forward(fun) if higher is not None else None
    if handle is not None:
        return handle
    if not isinstance(fun, types.FunctionType):
        from ..frontend.parse import parse
        parse(fun)          # raises SourceUnavailableError, saying what to do
    handle = _handles.get(fun)
    if handle is None:
        handle = _handles.setdefault(fun, ForwardDerivative(fun))     # (threads: the first)
    return handle


def is_forward_callable(fn):
    higher = higher_order
    return isinstance(fn, CustomJVP) or (higher is not None and (
        higher.made_by(fn) is not None or higher.callee_forward(fn) is not None))


# -- function values -------------------------------------------------------------------

def dynamic_jvp(callee, mask, tangents, *args, **kwargs):
    """``callee(*args, **kwargs)`` and its tangent, the arguments keyed by
    ``mask`` (positions, keyword names, -1 for a method's receiver) having
    the ``tangents``; -2: the callee itself depends on the inputs."""
    if -2 in mask:
        from ..callees import _is_callable_instance
        from .. import runtime
        if _is_callable_instance(callee) and runtime.is_instance(callee):
            # model(x): the object's tangent (an object of its class holding its
            # attributes' tangents) goes in as the receiver of model.__call__
            return dynamic_method_jvp(callee, "__call__", tuple(_RECEIVER if k == -2 else k
                                                               for k in mask),
                                      tangents, *args, **kwargs)
        if isinstance(callee, functools.partial):
            return _partial_jvp(callee, mask, tangents, args, kwargs)
        if _is_callable_instance(callee) or runtime.is_instance(callee) \
                or isinstance(callee, types.MethodType):
            raise NonDifferentiableError(
                f"Forward mode cannot yet follow a tangent through the {type(callee).__name__} "
                "called here, which is built from values being differentiated.",
                hint="Use pb.grad, pb.vjp or pb.jacrev (reverse mode), or pass those values "
                     "to the call as arguments.")
        keep = [i for i, k in enumerate(mask) if k != -2]      # a function: no tangent
        mask = tuple(mask[i] for i in keep)
        tangents = tuple(tangents[i] for i in keep)
    return jvp_call(callee, args, kwargs, mask, tangents)


def _partial_jvp(callee, mask, tangents, args, kwargs):
    """``g(*args)`` for a partial ``g`` (a nested function used as a value)
    whose held values have tangents: a dict keyed like what ``g`` holds
    (``runtime.function_values``), whose entries go in with the call's own."""
    from ..runtime import function_values as fv
    control.check_live(callee)
    at = list(mask).index(-2)
    held_t = tangents[at]
    func = callee.func
    if fv.carries(func) or isinstance(func, types.MethodType) and fv.carries(func.__self__):
        raise NonDifferentiableError(
            f"The function called here is a partial of a {type(func).__name__} that holds "
            "values being differentiated; pullback cannot follow a tangent to them through "
            "the partial.", hint="Call the object directly, passing the partial's arguments.")
    n = len(callee.args)
    inner_mask = [k + n if isinstance(k, int) and k >= 0 else k
                  for i, k in enumerate(mask) if i != at]
    inner_t = [t for i, t in enumerate(tangents) if i != at]
    for k, _ in fv.held(callee, kwargs):
        t = fv.entry(held_t, k)
        if t is not None:
            inner_mask.append(k)
            inner_t.append(t)
    return jvp_call(func, callee.args + tuple(args), {**callee.keywords, **kwargs},
                    tuple(inner_mask), tuple(inner_t))


def _make_function_jvp(callee, args, kwargs, mask, tangents):
    """``partial(f, x, k=y)`` or ``nested_value(lifted, y=y)`` built from values
    with tangents: the partial, and its tangent, a dict keyed like what it
    holds (a partial Python merged into the new one gives its entries)."""
    value = callee(*args, **kwargs)
    func = args[0]
    merged = isinstance(func, functools.partial) and value.func is not func
    out = {}
    for k, t in zip(mask, tangents):
        if t is None:
            continue
        if k == 0:
            if not merged or set(func.keywords) & set(kwargs):
                raise NonDifferentiableError(
                    f"pullback cannot follow a tangent through a partial of a "
                    f"{type(func).__name__} that is built from values being differentiated.",
                    hint="Pass those values to the function as arguments instead.")
            out.update({e: v for e, v in t.items() if v is not None}
                       if isinstance(t, dict) else {})
        elif isinstance(k, int):
            out[k - 1 + (len(func.args) if merged else 0)] = t
        else:
            out[k] = t
    return value, out


def dynamic_method_jvp(obj, name, mask, tangents, *args, **kwargs):
    """``obj.name(*args, **kwargs)``; ``-1`` in ``mask``: ``obj`` carries a tangent."""
    method = getattr(obj, name)
    from .. import runtime
    if isinstance(obj, (np.ndarray, np.generic)) and lookup(f"ndarray.{name}") is not None:
        # an array method with a rule (`y.sum()` of a `y` not proven an array when
        # compiled): a wrapper calling it, as the reverse dispatcher does
        from ..driver import plans
        wrapper = plans._rule_wrapper(name, len(args) + 1, tuple(kwargs), method=True)
        mask = tuple(0 if k == _RECEIVER else k + 1 if isinstance(k, int) else k
                     for k in mask)
        return jvp_call(wrapper, (obj,) + tuple(args), kwargs, mask, tangents)
    if _RECEIVER in mask and runtime.is_instance(obj) and name in runtime.attributes_of(obj):
        # self.activation(z), self.inner(x): a value the object holds, called
        at = list(mask).index(_RECEIVER)
        tangents = list(tangents)
        tangents[at] = getattr(tangents[at], name, 0.0)
        return dynamic_jvp(runtime.attributes_of(obj)[name], tuple(-2 if k == _RECEIVER else k for k in mask),
                           tuple(tangents), *args, **kwargs)
    if _RECEIVER in mask and (isinstance(obj, types.ModuleType) or isinstance(
            inspect.getattr_static(type(obj), name, None), staticmethod)):
        # self.log_normal(x, m, s) of a staticmethod, a module's function: the object
        # is not passed on
        keep = [i for i, k in enumerate(mask) if k != _RECEIVER]
        mask = tuple(mask[i] for i in keep)
        tangents = tuple(tangents[i] for i in keep)
    if _RECEIVER in mask and not (isinstance(method, types.MethodType)
                                  and method.__self__ is obj) and not is_library_code(method):
        raise NonDifferentiableError(
            f"`.{name}` of a {type(obj).__name__} is not a method defined in Python, so "
            "pullback cannot follow a tangent through the object it is called on.",
            hint="Pass the values the call depends on as arguments.")
    return jvp_call(method, args, kwargs, mask, tangents)


def _star_call(args, kwargs, mask, tangents, has_aux):
    """``star_call(how, method, callee, *items, **kwargs)`` (normalize's
    call with ``*xs`` or ``**d``) and its tangent: the call is spread, and the
    tangent of a spread item with it (``mask`` holds positions among
    ``star_call``'s own arguments, 2: the callee or the object a method is
    called on, 3...: the items, and keyword names), as reverse mode's
    ``dispatch._star_call`` spreads its gradients."""
    how, method, callee = args[0], args[1], args[2]
    items = list(args[3:])
    given = dict(zip(mask, tangents))
    for i, (h, v) in enumerate(zip(how, items)):
        if h == "*" and not isinstance(v, (tuple, list, np.ndarray)):
            if i + 3 in given:
                raise NonDifferentiableError(
                    f"pullback can follow a tangent through `*xs` when xs is a tuple, a list "
                    f"or an array, and here it is a {type(v).__name__}.",
                    hint="Make it a tuple first: `f(*tuple(xs))`.")
            items[i] = tuple(v)
    fn, call_args, call_kwargs = control.spread((how, method), callee, items, kwargs)
    inner_mask, inner_tangents, position = [], [], 0
    for i, (h, v) in enumerate(zip(how, items)):
        t = given.get(i + 3)
        if h == "p":
            if t is not None:
                inner_mask.append(position)
                inner_tangents.append(t)
            position += 1
        elif h == "*":
            if t is not None:
                inner_mask.extend(range(position, position + len(v)))
                inner_tangents.extend(t[j] for j in range(len(v)))
            position += len(v)
        elif t is not None:
            inner_mask.extend(v.keys())
            inner_tangents.extend(t[k] for k in v.keys())
    for k in mask:
        if isinstance(k, str):
            inner_mask.append(k)
            inner_tangents.append(given[k])
    if 2 in given:
        if method is None:
            raise NonDifferentiableError(
                "pullback cannot follow a tangent through a function value called with "
                "`*xs` or `**d`.", hint="Call the function by its name.")
        return dynamic_method_jvp(callee, method, tuple(inner_mask) + (_RECEIVER,),
                                  tuple(inner_tangents) + (given[2],), *call_args,
                                  **call_kwargs)
    return jvp_call(fn, call_args, call_kwargs, tuple(inner_mask), tuple(inner_tangents),
                    has_aux)


def jvp_call(callee, args, kwargs, mask, tangents, has_aux=False, top=False):
    """``callee(*args, **kwargs)`` and its tangent (``top``: called by
    ``pb.jvp`` itself, where any Python function is differentiated, as by
    ``pb.grad``; inside a function, pullback's own functions are refused)."""
    from ..driver import dispatch, plans   # late: importing pullback does not load the compiler
    if callee is control.attempt:
        return _attempt(args[0], args[1:], tuple(mask), tangents)
    if callee is control.star_call:
        return _star_call(args, kwargs, tuple(mask), tangents, has_aux)
    if callee is control.nested_value or callee is functools.partial:
        return _make_function_jvp(callee, args, kwargs, tuple(mask), tangents)
    higher = higher_order
    special = higher is not None and (higher.made_by(callee) is not None
                                      or higher.callee_forward(callee) is not None)
    if special:          # a derivative made by pullback, or generated code's callee
        handle = forward_of(callee)
        if hasattr(handle, "call_kw"):
            return handle.call_kw(tuple(args), kwargs, tuple(mask), tuple(tangents))
        full, by_param = _by_params(handle, args, kwargs, mask, tangents)
        wrt = tuple(sorted(by_param))
        return handle.call(full, wrt, tuple(by_param[i] for i in wrt), has_aux)
    fn, args, kwargs, mask = _unwrap(callee, args, kwargs, tuple(mask))
    if isinstance(fn, CustomJVP):
        return _by_handle(fn, fn.fun, args, kwargs, mask, tangents, has_aux)
    if top and isinstance(fn, types.FunctionType) and lookup(fn) is None:
        return _by_handle(forward_of(fn), fn, args, kwargs, mask, tangents, has_aux)
    why = dispatch.refusal(fn)
    if why is not None:
        raise NonDifferentiableError(why[0], hint=why[1])
    if isinstance(fn, CustomVJP):
        handle = forward_of(fn)       # raises for a custom_vjp, saying what to do
        return _by_handle(handle, fn.fun, args, kwargs, mask, tangents, has_aux)
    if lookup(fn) is not None:
        wrapper = plans._rule_wrapper(fn, len(args), tuple(kwargs))
        return _by_handle(forward_of(wrapper), wrapper, args, kwargs, mask, tangents, has_aux)
    if is_nondifferentiable(fn):
        out = fn(*args, **kwargs)
        return out, support.zeros_tangent(out)
    if isinstance(fn, types.FunctionType) and not is_library(fn):
        return _by_handle(forward_of(fn), fn, args, kwargs, mask, tangents, has_aux)
    if is_library_code(fn):     # run, checked to have only moved data (runtime.opaque)
        return opaque_routes.forward(fn, args, kwargs, tuple(mask), tuple(tangents))
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
    raise NoRuleError(
        f"pullback has no differentiation rule for {name} (a {type(fn).__name__}), which "
        "is called here with a value being differentiated.",
        hint=plans.refusal_hint(fn) or f"Give {name} a forward rule with pb.custom_jvp, "
             "or call a NumPy function that has a rule or a function defined with def.")


def _by_params(handle, args, kwargs, mask, tangents):
    """A handle's arguments bound to its parameters, and the tangents by
    parameter index (keys of ``mask``: positions or keyword names)."""
    full = handle.bind(tuple(args), kwargs)
    params = list(handle.params)
    by_param = {}
    for k, t in zip(mask, tangents):
        if t is None:
            continue
        i = k if isinstance(k, int) else params.index(k)
        by_param[i] = t if i not in by_param else by_param[i] + t
    return full, by_param


def _attempt(body, args, mask, tangents):
    """``attempt(body, *args)`` (a ``try`` body, ``frontend.exceptions``): the
    body's value and tangent, or ``(2, error)`` with no tangent when an
    exception left it."""
    if 0 in mask or not all(isinstance(k, int) for k in mask):
        raise NonDifferentiableError(
            "pullback cannot follow a tangent through the function value that runs a `try` "
            "body.", hint="Pass the values the `try` body reads as arguments.")
    try:
        return jvp_call(body, args, {}, tuple(k - 1 for k in mask), tangents)
    except BaseException as err:
        if isinstance(err, PullbackError):
            raise
        return (control.RAISED, err), (None, None)


def _unwrap(fn, args, kwargs, mask):
    if isinstance(fn, CustomJVP):
        return fn, args, kwargs, mask
    return _unwrap_callee(fn, args, kwargs, mask)


def _positions(handle, fn, nargs, keys):
    """``call_layouts.argument_places`` for a call of ``fn`` with ``nargs``
    positional arguments and the keywords ``keys``, kept on the handle
    (``inspect`` binding costs more than a small jvp itself)."""
    # (kept only for the handle's own function: a memo holding another
    # function would keep it, and the handle, alive)
    memo = handle.__dict__.setdefault("_positions", {}) \
        if fn is getattr(handle, "fun", None) else {}
    key = (nargs, keys)
    where = memo.get(key)
    if where is None:
        where = argument_places(handle, fn, nargs, keys)
        if len(memo) < 64:
            memo[key] = where
    return where


def _by_handle(handle, fn, args, kwargs, mask, tangents, has_aux):
    if getattr(handle, "variadic", False):
        # *args / **kwargs: the handle flattens the call, one value per parameter
        where = argument_places(handle, fn, len(args), tuple(kwargs))
    else:
        where = _positions(handle, fn, len(args), tuple(kwargs))
    missing = [k for k in mask if k not in where]
    if missing:
        raise UnsupportedSyntaxError(
            f"pullback cannot yet differentiate {getattr(fn, '__qualname__', fn)} "
            "through its *args or **kwargs parameter.",
            hint="Give the function named parameters.")
    by_param = {}
    for k, t in zip(mask, tangents):
        i = where[k]
        by_param[i] = t if i not in by_param else by_param[i] + t
    full = handle.bind(args, kwargs)
    wrt = tuple(sorted(i for i in by_param if by_param[i] is not None))
    return handle.call(full, wrt, tuple(by_param[i] for i in wrt), has_aux)


# rules of NumPy functions that call a user function (runtime.callback_support:
# np.piecewise, np.apply_along_axis) reach its tangent here
from ..runtime.calls import install as _install_hooks  # noqa: E402
_install_hooks(dynamic_jvp=dynamic_jvp)
