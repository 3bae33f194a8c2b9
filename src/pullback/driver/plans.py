"""Plans: what a callee known only at run time does, once per signature.

``driver.dispatch`` hands each call of a function value to the plan of its
callee, number of arguments, keyword names, mask and mode, made once and
kept (``_plan``): a ``_Differentiated`` callee runs its primal/adjoint pair
(a user function, a ``custom_vjp``, a rule's one-line wrapper, a derivative
made by ``pb.grad``); a ``_Constant`` one (no float out: ``len``) runs as it
is; library code runs checked (``_Opaque``, ``runtime.opaque``); anything
else is refused, with ``refusal``'s reason where there is one::

    np.sin      ->  _Differentiated(wrapper `def sin(_a0): return _callee(_a0)`)
    len         ->  _Constant
    sig.bind    ->  _Opaque

>>> import numpy as np
>>> plan = _plan(np.sin, 1, (), (0,), True)
>>> y, res = plan.primal((0.0,), {})
>>> type(plan).__name__, y, plan.adjoint(res[1], 1.0)
('_Differentiated', np.float64(0.0), (1.0,))
"""
from __future__ import annotations

import builtins
import inspect
import itertools
import types

from ..backend import codegen
from .. import runtime
from ..analyses.callable_facts import is_library, is_mutating_function
from ..errors import NoRuleError, NonDifferentiableError, UnsupportedSyntaxError
from ..rules.numpy_ufunc_methods import refusal_hint
from ..rules.registry import is_nondifferentiable, lookup
from ..runtime import opaque, opaque_routes
from ..runtime.opaque import is_library_code
from ..runtime.control import attempt, nested_value

__all__ = ["refusal"]

_plans = {}
_PLANS_KEPT = 2048
_counter = itertools.count()


def refusal(fn):
    """Why a call of ``fn`` cannot be differentiated yet, or None."""
    if fn is attempt or fn is nested_value:
        return None
    if getattr(fn, "__pullback_made__", None) is not None \
            or getattr(fn, "__pullback_nested__", None) is not None:
        return None         # a derivative made by pb.grad / pb.value_and_grad / pb.vjp, pb.jvp
    if getattr(fn, "__pullback_api__", None) or (
            isinstance(fn, types.FunctionType)
            and (fn.__module__ or "").split(".")[0] == "pullback"
            and not getattr(fn, "__pullback_rule_wrapper__", False)):
        return ("pullback cannot differentiate this call of a function "
                f"made by pullback ({getattr(fn, '__pullback_api__', None) or fn.__name__}) "
                "inside a function being differentiated.",
                "Compute the inner derivative outside the differentiated function, or "
                "give the inner step a rule with pb.custom_vjp.")
    if is_mutating_function(fn):
        return (f"pullback cannot differentiate {fn.__name__}, which changes its argument "
                "in place.", "Build the new array with indexing writes into an array the "
                "function creates, or with np.where.")
    return None


class _Constant:
    """A callee that returns no float: run as it is, no gradient."""

    def __init__(self, fn, mask):
        self.fn, self.mask = fn, mask

    def primal(self, args, kwargs):
        picked = tuple(args[k] if isinstance(k, int) else kwargs[k] for k in self.mask)
        return self.fn(*args, **kwargs), (self, picked)

    def adjoint(self, picked, ct):
        return tuple(runtime.zeros_like(a) for a in picked)


#: pullback's functions that make a derivative function from a function (and ints)
_MAKERS = frozenset({"grad", "value_and_grad", "jacfwd", "jacrev", "jacobian", "hessian"})


class _Maker:
    """``pb.grad(f, argnums)`` made inside a function being differentiated, from
    values the transform could not prove constant (a closure's parameters):
    run as it is where, when it runs, none of them carries a gradient (``f`` a
    plain function, ``argnums`` ints); the derivative function it makes is
    differentiated when it is called (``pullback.higher``)."""

    def __init__(self, fn, mask, why):
        self.fn, self.mask, self.why = fn, mask, why

    def primal(self, args, kwargs):
        from ..runtime.function_values import carries
        picked = tuple(args[k] if isinstance(k, int) else kwargs[k] for k in self.mask)
        if any(carries(v) and not isinstance(v, types.FunctionType) for v in picked):
            raise NonDifferentiableError(self.why[0], hint=self.why[1])
        return self.fn(*args, **kwargs), (self, picked)

    def adjoint(self, picked, ct):
        return tuple(runtime.zeros_like(a) for a in picked)


class _Opaque:
    """Library code (no rule, no source pullback follows): run as plain
    Python, then checked to have only moved the values being differentiated;
    each result leaf's cotangent goes back to the argument's leaf it is
    (``runtime.opaque``)."""

    def __init__(self, fn, mask):
        self.fn, self.mask = fn, mask

    def primal(self, args, kwargs):
        out, res = opaque.call(self.fn, args, kwargs, self.mask)
        return out, (self, res)

    def adjoint(self, res, ct):
        return opaque_routes.adjoint(res, ct)


class _Differentiated:
    """A callee with a primal/adjoint pair (a handle's ``for_callers``)."""

    def __init__(self, handle, fn, nargs, kwnames, mask, inplace):
        if getattr(handle, "variadic", False):
            # *args / **kwargs: the handle flattens each call, one value per parameter
            flat = handle.bind(tuple(_Marker(i) for i in range(nargs)),
                               {k: _Marker(k) for k in kwnames})
            where = {m.key: i for i, m in enumerate(flat) if isinstance(m, _Marker)}
        else:
            sig = handle.signature if getattr(handle, "made", None) is not None \
                else inspect.signature(fn, follow_wrapped=False)
            params = list(sig.parameters)
            markers = sig.bind(*range(nargs), **{k: k for k in kwnames}).arguments
            where = {}
            for p, m in markers.items():
                if isinstance(m, (tuple, dict)):
                    continue       # *args / **kwargs of a custom_vjp: refused below
                where[m] = params.index(p)
        missing = [k for k in mask if k not in where]
        if missing:
            raise UnsupportedSyntaxError(
                f"pullback cannot differentiate {getattr(fn, '__qualname__', fn)} "
                "through its *args or **kwargs parameter.",
                hint="Give the function named parameters.")
        self.positions = tuple(where[k] for k in mask)
        self.pair = handle.for_callers(tuple(sorted(set(self.positions))), inplace)
        self.mask = mask
        # a call passing every parameter by position calls the pair's positional
        # primal (callees.Derivative.for_callers): no *args tuple unpacked into a
        # **kwargs call, no generic binding (the residuals are the same)
        self.call = self.pair[0]
        if not kwnames and getattr(handle, "params", None) is not None \
                and not getattr(handle, "variadic", True) and nargs == len(handle.params):
            self.call = getattr(self.pair[0], "positional", self.pair[0])

    def primal(self, args, kwargs):
        out, res = self.call(*args, **kwargs) if kwargs else self.call(*args)
        return out, (self, res)

    def adjoint(self, res, ct):
        full = self.pair[1](res, ct)
        return tuple([full[i] for i in self.positions])


class _Marker:
    """Stands for the call's argument ``key`` (a position or a keyword) while
    its place among the flattened parameters is found."""

    def __init__(self, key):
        self.key = key


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
    if why is not None and getattr(fn, "__pullback_api__", None) is None \
            and getattr(fn, "__name__", None) in _MAKERS \
            and getattr(fn, "__module__", "").split(".")[0] == "pullback":
        return _Maker(fn, mask, why)
    if why is not None:
        raise NonDifferentiableError(why[0], hint=why[1])
    if isinstance(fn, CustomVJP) or getattr(fn, "__pullback_forward_only__", False):
        return _Differentiated(derivative_of(fn), fn.fun, nargs, kwnames, mask, inplace)
    if getattr(fn, "__pullback_made__", None) is not None \
            or getattr(fn, "__pullback_nested__", None) is not None:  # pb.grad(f), pb.jvp inside
        return _Differentiated(derivative_of(fn), fn, nargs, kwnames, mask, inplace)
    if lookup(fn) is not None:
        wrapper = _rule_wrapper(fn, nargs, kwnames)
        return _Differentiated(derivative_of(wrapper), wrapper, nargs, kwnames, mask, inplace)
    if is_nondifferentiable(fn):
        return _Constant(fn, mask)
    if isinstance(fn, types.FunctionType) and not is_library(fn):
        _refuse_writes(fn)
        return _Differentiated(derivative_of(fn), fn, nargs, kwnames, mask, inplace)
    if is_library_code(fn):
        return _Opaque(fn, mask)
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
    raise NoRuleError(
        f"pullback has no differentiation rule for {name} (a {type(fn).__name__}), which "
        "is called here with a value being differentiated.",
        hint=refusal_hint(fn) or f"Give {name} a rule with pb.custom_vjp (define fwd and bwd), "
             "or call a NumPy function that has a rule or a function defined with def.")


def _refuse_writes(fn):
    """A function that writes into its argument, called through a value:
    the caller cannot know its array changes (a direct call goes to the
    function's variant, frontend.writes, which hands the new value back)."""
    from ..frontend.call_guards import no_writer
    no_writer(fn)


_wrappers = {}


def _rule_wrapper(fn, nargs, kwnames, method=False):
    """``def sin(_a0): return _callee(_a0)``: a Python function calling ``fn``,
    so that a rule-bearing callee is differentiated by its rule; with
    ``method``, ``fn`` names an array method: ``return _a0.reshape(_a1)``."""
    key = (fn, nargs, kwnames, method)
    wrapper = _wrappers.get(key)
    if wrapper is not None:
        return wrapper
    name = "".join(c if c.isalnum() else "_" for c in (
        fn if method else getattr(fn, "__name__", "callee")))
    positional = [f"_a{i}" for i in range(nargs)]
    params = ", ".join(positional + list(kwnames))
    if method:
        call = ", ".join(positional[1:] + [f"{k}={k}" for k in kwnames])
        text = f"def {name or 'callee'}({params}):\n    return _a0.{fn}({call})\n"
    else:
        call = ", ".join(positional + [f"{k}={k}" for k in kwnames])
        text = f"def {name or 'callee'}({params}):\n    return _callee({call})\n"
    filename = f"<pullback dispatch {name} #{next(_counter)}>"
    codegen.register_source(filename, text)
    namespace = {"_callee": fn, "__builtins__": builtins, "__name__": __name__}
    exec(compile(text, filename, "exec"), namespace)
    wrapper = _wrappers[key] = namespace[name or "callee"]
    wrapper.__pullback_rule_wrapper__ = True
    return wrapper
