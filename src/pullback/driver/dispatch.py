"""Dispatch: calls whose callee is known only when they run.

A call of a parameter (``fn(x)``), an alias (``f = np.sin; f(x)``), a
default argument, a container element, a ``functools.partial``, a bound
method or a callable instance cannot be resolved when the function is
transformed.  Such a call is never taken for a constant: the generated
primal hands the callee to ``dynamic_call`` (``dynamic_method_call`` for
``obj.method(...)``), which unwraps it and picks its derivative:

- a user function: its own primal/adjoint pair, transformed once per
  signature and cached like any other callee;
- a function with a rule (``np.sin``): a one-line wrapper calling it, so the
  rule is inlined as in a static call;
- a ``custom_vjp``: its fwd and bwd;
- a partial, a bound method (the instance becomes the first argument) or a
  callable instance (its ``__call__``): the function underneath;
- a function that returns no float (``len``, ``np.shape``): run as is;
- anything else, pullback's own ``grad`` & co. included: a ``PullbackError``
  that names the callee's type (the generated code adds the user's line).

``mask`` lists the call's arguments that carry a gradient, by position, by
keyword name, or -1 for the receiver of a method call; ``dynamic_adjoint``
returns one cotangent per entry of ``mask``, in its order::

    y, y_res = dynamic_call(fn, (0,), True, x)        # primal: y = fn(x)
    fn_grads = dynamic_adjoint(y_res, y_bar)          # adjoint
    x_bar = fn_grads[0]

>>> import numpy as np
>>> y, res = dynamic_call(np.sin, (0,), True, 0.0)
>>> y, dynamic_adjoint(res, 1.0)
(np.float64(0.0), (1.0,))
"""
from __future__ import annotations

import builtins
import inspect
import itertools
import types

from ..backend import codegen
from ..callees import _RECEIVER, _unwrap, forward_only
from .. import runtime
from ..analyses.ops import is_library, is_mutating_function
from ..errors import NoRuleError, NonDifferentiableError, UnsupportedSyntaxError
from ..rules.registry import is_nondifferentiable, lookup

__all__ = ["dynamic_call", "dynamic_method_call", "dynamic_adjoint", "refusal"]

_plans = {}
_PLANS_KEPT = 2048
_counter = itertools.count()


def dynamic_call(callee, mask, inplace, *args, **kwargs):
    """``callee(*args, **kwargs)`` and the residual its adjoint needs."""
    fn, args, kwargs, mask = _unwrap(callee, args, kwargs, mask)
    plan = _plan(fn, len(args), tuple(kwargs), mask, inplace)
    return plan.primal(args, kwargs)


def dynamic_method_call(obj, name, mask, inplace, *args, **kwargs):
    """``obj.name(*args, **kwargs)``; ``-1`` in ``mask``: ``obj`` carries a gradient."""
    method = getattr(obj, name)
    if _RECEIVER in mask and not (isinstance(method, types.MethodType)
                                  and method.__self__ is obj):
        raise NonDifferentiableError(
            f"`.{name}` of a {type(obj).__name__} is not a method defined in Python, so "
            "pullback cannot send a gradient to the object it is called on.",
            hint="Pass the values the call depends on as arguments.")
    return dynamic_call(method, mask, inplace, *args, **kwargs)


def dynamic_adjoint(res, ct):
    """One cotangent per entry of the call's ``mask``."""
    plan, r = res
    return plan.adjoint(r, ct)


def refusal(fn):
    """Why a call of ``fn`` cannot be differentiated yet, or None."""
    if getattr(fn, "__pullback_forward_only__", False):
        return forward_only(fn)
    if getattr(fn, "__pullback_api__", None) or (
            isinstance(fn, types.FunctionType)
            and (fn.__module__ or "").split(".")[0] == "pullback"):
        return ("Derivatives of derivatives are not supported yet: this calls a function "
                f"made by pullback ({getattr(fn, '__pullback_api__', None) or fn.__name__}) "
                "inside a function being differentiated.",
                "Compute the inner derivative outside the differentiated function, or "
                "give the inner step a rule with pb.custom_vjp.")
    if is_mutating_function(fn):
        return (f"pullback cannot differentiate {fn.__name__}, which changes its argument "
                "in place.", "Build the new array with indexing writes into an array the "
                "function creates, or with np.where.")
    return None


# -- plans: what a callee of one signature does --------------------------------

class _Constant:
    """A callee that returns no float: run as it is, no gradient."""

    def __init__(self, fn, mask):
        self.fn, self.mask = fn, mask

    def primal(self, args, kwargs):
        picked = tuple(args[k] if isinstance(k, int) else kwargs[k] for k in self.mask)
        return self.fn(*args, **kwargs), (self, picked)

    def adjoint(self, picked, ct):
        return tuple(runtime.zeros_like(a) for a in picked)


class _Differentiated:
    """A callee with a primal/adjoint pair (a handle's ``for_callers``)."""

    def __init__(self, handle, fn, nargs, kwnames, mask, inplace):
        sig = inspect.signature(fn, follow_wrapped=False)
        params = list(sig.parameters)
        markers = sig.bind(*range(nargs), **{k: k for k in kwnames}).arguments
        where = {}
        for p, m in markers.items():
            if isinstance(m, (tuple, dict)):
                continue       # *args / **kwargs: the transform refuses them
            where[m] = params.index(p)
        missing = [k for k in mask if k not in where]
        if missing:
            raise UnsupportedSyntaxError(
                f"pullback cannot yet differentiate {getattr(fn, '__qualname__', fn)} "
                "through its *args or **kwargs parameter.",
                hint="Give the function named parameters.")
        self.positions = tuple(where[k] for k in mask)
        self.pair = handle.for_callers(tuple(sorted(set(self.positions))), inplace)
        self.mask = mask

    def primal(self, args, kwargs):
        out, res = self.pair[0](*args, **kwargs)
        return out, (self, res)

    def adjoint(self, res, ct):
        full = self.pair[1](res, ct)
        return tuple(full[i] for i in self.positions)


def _plan(fn, nargs, kwnames, mask, inplace):
    try:
        key = (fn, nargs, kwnames, mask, inplace)
        plan = _plans.get(key)
    except TypeError:           # an unhashable callee: planned on every call
        key, plan = None, None
    if plan is None:
        plan = _make_plan(fn, nargs, kwnames, mask, inplace)
        if key is not None:
            if len(_plans) >= _PLANS_KEPT:
                _plans.clear()
            _plans[key] = plan
    return plan


def _make_plan(fn, nargs, kwnames, mask, inplace):
    from ..callees import CustomVJP, derivative_of
    why = refusal(fn)
    if why is not None:
        raise NonDifferentiableError(why[0], hint=why[1])
    if isinstance(fn, CustomVJP):
        return _Differentiated(fn, fn.fun, nargs, kwnames, mask, inplace)
    if lookup(fn) is not None:
        wrapper = _rule_wrapper(fn, nargs, kwnames)
        return _Differentiated(derivative_of(wrapper), wrapper, nargs, kwnames, mask, inplace)
    if is_nondifferentiable(fn):
        return _Constant(fn, mask)
    if isinstance(fn, types.FunctionType) and not is_library(fn):
        return _Differentiated(derivative_of(fn), fn, nargs, kwnames, mask, inplace)
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
    raise NoRuleError(
        f"pullback has no differentiation rule for {name} (a {type(fn).__name__}), which "
        "is called here with a value being differentiated.",
        hint=f"Give {name} a rule with pb.custom_vjp (define fwd and bwd), or call a NumPy "
             "function that has a rule or a function defined with def.")


_wrappers = {}


def _rule_wrapper(fn, nargs, kwnames):
    """``def sin(_a0): return _callee(_a0)``: a Python function calling ``fn``,
    so that a rule-bearing callee is differentiated by its rule."""
    key = (fn, nargs, kwnames)
    wrapper = _wrappers.get(key)
    if wrapper is not None:
        return wrapper
    name = "".join(c if c.isalnum() else "_" for c in getattr(fn, "__name__", "callee"))
    positional = [f"_a{i}" for i in range(nargs)]
    params = ", ".join(positional + list(kwnames))
    call = ", ".join(positional + [f"{k}={k}" for k in kwnames])
    text = f"def {name or 'callee'}({params}):\n    return _callee({call})\n"
    filename = f"<pullback dispatch {name} #{next(_counter)}>"
    codegen.register_source(filename, text)
    namespace = {"_callee": fn, "__builtins__": builtins, "__name__": __name__}
    exec(compile(text, filename, "exec"), namespace)
    wrapper = _wrappers[key] = namespace[name or "callee"]
    return wrapper
