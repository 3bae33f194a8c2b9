"""Dispatch: calls whose callee is known only when they run.

A call of a parameter (``fn(x)``), an alias (``f = np.sin; f(x)``), a
default argument, a container element, a ``functools.partial``, a bound
method or a callable instance cannot be resolved when the function is
transformed.  Such a call is never taken for a constant: the generated
primal hands the callee to ``dynamic_call`` (``dynamic_method_call`` for
``obj.method(...)``; generated code calls ``runtime.calls``'s, which forward
here), which unwraps it and picks its derivative:

- a user function: its own primal/adjoint pair, transformed once per
  signature and cached like any other callee;
- a function with a rule (``np.sin``): a one-line wrapper calling it, so the
  rule is inlined as in a static call;
- a ``custom_vjp``: its fwd and bwd;
- a partial, a bound method (the instance becomes the first argument) or a
  callable instance (its ``__call__``): the function underneath; a partial
  built from values being differentiated (``partial(f, x)``, a nested
  function used as a value) carries their gradients as a dict keyed like
  what it holds (``_make_function``, ``_partial_call``);
- a function that returns no float (``len``, ``np.shape``): run as is;
- anything else, pullback's own ``grad`` & co. included: a ``PullbackError``
  that names the callee's type (the generated code adds the user's line).

``mask`` lists the call's arguments that carry a gradient, by position, by
keyword name, -1 for the receiver of a method call, or -2 for the callee
itself (an object of the user's class built from those values: ``model(x)``); ``dynamic_adjoint``
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
import functools
import inspect
import itertools
import types

import numpy as np

from ..backend import codegen
from ..callees import _CALLEE, _RECEIVER, _is_callable_instance, _unwrap, forward_only
from .. import runtime
from ..runtime.calls import dynamic_adjoint  # noqa: F401  (the adjoint side: runtime's)
from ..analyses.ops import is_library, is_mutating_function
from ..errors import NoRuleError, NonDifferentiableError, PullbackError, UnsupportedSyntaxError
from ..rules.registry import is_nondifferentiable, lookup
from ..runtime import opaque
from ..runtime.opaque import is_library_code
from ..runtime.control import RAISED, attempt, nested_value, spread, star_call

__all__ = ["dynamic_call", "dynamic_method_call", "dynamic_adjoint", "refusal"]

_plans = {}
_PLANS_KEPT = 2048
_counter = itertools.count()


class _Spread:
    """The residual of a call with starred arguments: regroups the callee's
    cotangents by the call's items (a tuple for ``*xs``, a dict for ``**d``)."""

    def __init__(self, groups):
        self.groups = groups      # per mask entry: ("one", i) | ("*", seq, [i...]) | ("d", d, {k: i})

    def adjoint(self, r, ct):
        inner, res = r
        grads = dynamic_adjoint(res, ct)
        out = []
        for g in self.groups:
            if g[0] == "one":
                out.append(grads[g[1]])
            elif g[0] == "*":
                out.append(runtime.pack_like(g[1], [grads[i] for i in g[2]]))
            else:
                out.append({k: grads[i] for k, i in g[2].items()})
        return tuple(out)


def _star_call(mask, inplace, spec, callee, items, kwargs):
    """``dynamic_call`` of ``star_call``: ``mask`` holds positions of
    ``star_call``'s own arguments (2: the object a method is called on, 3...:
    the items) and keyword names."""
    how, method = spec
    materialized = []
    for i, (h, v) in enumerate(zip(how, items)):
        if h == "*" and not isinstance(v, (tuple, list, np.ndarray)):
            if i + 3 in mask:
                raise NonDifferentiableError(
                    f"pullback can send gradients through `*xs` when xs is a tuple, a list "
                    f"or an array, and here it is a {type(v).__name__}.",
                    hint="Make it a tuple first: `f(*tuple(xs))`.")
            v = tuple(v)
        materialized.append(v)
    items = tuple(materialized)
    fn, args, all_kwargs = spread(spec, callee, items, kwargs)
    inner_mask, groups, position = [], [], 0
    where = {}
    for i, (h, v) in enumerate(zip(how, items)):
        if h == "p":
            where[i + 3] = ("one", position)
            position += 1
        elif h == "*":
            where[i + 3] = ("*", v, list(range(position, position + len(v))))
            position += len(v)
        else:
            where[i + 3] = ("d", v, list(v.keys()))
    for k in mask:
        if k == 2:
            groups.append(("one", len(inner_mask)))
            inner_mask.append(_RECEIVER)
        elif isinstance(k, str):
            groups.append(("one", len(inner_mask)))
            inner_mask.append(k)
        else:
            w = where[k]
            if w[0] == "one":
                groups.append(("one", len(inner_mask)))
                inner_mask.append(w[1])
            elif w[0] == "*":
                groups.append(("*", w[1], list(range(len(inner_mask),
                                                     len(inner_mask) + len(w[2])))))
                inner_mask.extend(w[2])
            else:
                keys = {}
                for key in w[2]:
                    keys[key] = len(inner_mask)
                    inner_mask.append(key)
                groups.append(("d", w[1], keys))
    if method is not None:
        out, res = dynamic_method_call(callee, method, tuple(inner_mask), inplace, *args,
                                       **all_kwargs)
    else:
        out, res = dynamic_call(fn, tuple(inner_mask), inplace, *args, **all_kwargs)
    return out, (_Spread(groups), (None, res))


class _Attempt:
    """The residual of a ``try`` body run by ``attempt``: the body's, or, when
    an exception left it, zeros (no gradient flows through a body that did
    not finish)."""

    def adjoint(self, r, ct):
        res, zeros = r
        return zeros if res is None else dynamic_adjoint(res, ct)


def _attempt(mask, inplace, body, args):
    """``dynamic_call`` of ``attempt(body, *args)`` (``frontend.exceptions``):
    ``mask`` holds positions among ``attempt``'s own arguments (1...: the
    body's)."""
    if (0 in mask and not isinstance(body, functools.partial)) \
            or not all(isinstance(k, int) for k in mask):
        raise NonDifferentiableError(
            "pullback cannot send a gradient through the function value that runs a `try` "
            "body.", hint="Pass the values the `try` body reads as arguments.")
    # the body holding values being differentiated (a nested function it reads, such as
    # a closure over them: `nested_value(try_body, thunk=thunk)`): as the callee, its
    # cotangent that of what it holds (_partial_call)
    inner = tuple(_CALLEE if k == 0 else k - 1 for k in mask)
    if 0 in mask:
        pass
    elif isinstance(body, types.FunctionType) and not is_library(body):
        # the body is transformed before it runs: an error of the transform is
        # never taken for one the user's handler catches
        from ..callees import derivative_of
        derivative_of(body).specialize(tuple(args), tuple(sorted(set(inner))),
                                       inplace=inplace)
    try:
        out, res = dynamic_call(body, inner, inplace, *args)
    except BaseException as err:
        if isinstance(err, PullbackError):
            raise
        zeros = tuple(runtime.zeros_like(body if k == 0 else args[k - 1]) for k in mask)
        return (RAISED, err), (_Attempt(), (None, zeros))
    return out, (_Attempt(), (res, None))


class _NoCalleeGradient:
    """The residual of a call whose callee value depends on the inputs but is
    a function, which carries no gradient: a zero at the callee's place."""

    def __init__(self, at):
        self.at = at

    def adjoint(self, r, ct):
        grads = list(dynamic_adjoint(r, ct))
        grads.insert(self.at, 0.0)
        return tuple(grads)


class _NoReceiverGradient:
    """The residual of ``obj.f(x)`` for a staticmethod ``f``: the object is
    not passed on, its cotangent is zeros of its shape."""

    def __init__(self, at, obj):
        self.at, self.obj = at, obj

    def adjoint(self, r, ct):
        grads = list(dynamic_adjoint(r, ct))
        grads.insert(self.at, runtime.zeros_like(self.obj))
        return tuple(grads)


class _HeldCallee:
    """The residual of ``obj.attr(x)`` where ``attr`` is a value ``obj`` holds:
    the callee's cotangent is that of ``obj``'s attribute ``attr``."""

    def __init__(self, at, name):
        self.at, self.name = at, name

    def adjoint(self, r, ct):
        grads = list(dynamic_adjoint(r, ct))
        grads[self.at] = runtime.FieldGrads({self.name: grads[self.at]})
        return tuple(grads)


class _MadeFunction:
    """The residual of ``partial(f, x, k=y)`` (or ``nested_value(lifted, y=y)``,
    a nested function used as a value) built from values being
    differentiated: the cotangent of the function value is a dict keyed like
    what it holds (``runtime.function_values``), whose entries go back to
    the values it was built from.  ``keys``: per entry of the call's mask,
    the key of the held value, or ("func", n, names) for a partial that
    Python merged into the new one (its first n arguments and its keywords
    ``names`` are the inner one's)."""

    def __init__(self, keys, held):
        self.keys, self.held = keys, held

    def adjoint(self, r, ct):
        from ..runtime import function_values as fv
        out = []
        for key, value in zip(self.keys, self.held):
            if isinstance(key, tuple):
                _, n, names = key
                inner = {k: fv.entry(ct, k) for k in list(range(n)) + list(names)}
                out.append(runtime.project({k: v for k, v in inner.items() if v is not None},
                                           value))
            else:
                e = fv.entry(ct, key)
                out.append(runtime.zeros_like(value) if e is None else e)
        return tuple(out)


def _make_function(callee, mask, args, kwargs):
    """``dynamic_call`` of ``functools.partial(f, *args, **kwargs)`` or of
    ``nested_value(lifted, **captured)`` where values being differentiated
    go in: the partial, and a residual whose adjoint hands the entries of its
    cotangent back (``_MadeFunction``)."""
    value = callee(*args, **kwargs)
    func = args[0]
    merged = isinstance(func, functools.partial) and value.func is not func
    keys, held = [], []
    for k in mask:
        if k == 0:
            if not merged or set(func.keywords) & set(kwargs):
                raise NonDifferentiableError(
                    f"pullback cannot send a gradient through a partial of a "
                    f"{type(func).__name__} that is built from values being differentiated.",
                    hint="Pass those values to the function as arguments instead.")
            keys.append(("func", len(func.args), tuple(func.keywords)))
        elif isinstance(k, int):
            keys.append(k - 1 + (len(func.args) if merged else 0))
        else:
            keys.append(k)
        held.append(args[k] if isinstance(k, int) else kwargs[k])
    return value, (_MadeFunction(keys, held), None)


class _HeldValues:
    """The residual of ``g(x)`` where ``g``, a partial (a nested function used
    as a value), holds values being differentiated: the function underneath
    was called with them as arguments too, and their gradients, keyed as
    ``g`` holds them, are the callee's cotangent."""

    def __init__(self, at, ncall, keys):
        self.at, self.ncall, self.keys = at, ncall, keys

    def adjoint(self, r, ct):
        return self.regroup(dynamic_adjoint(r, ct))

    def regroup(self, grads):
        """The inner call's cotangents (the call's own, then the held values')
        as the outer call's: the held values' as one dict at the callee's place."""
        grads = list(grads)
        own = grads[:self.ncall]
        own.insert(self.at, dict(zip(self.keys, grads[self.ncall:])))
        return tuple(own)


def _partial_call(callee, mask, inplace, args, kwargs):
    """``g(*args, **kwargs)`` for a partial ``g`` whose held values carry a
    gradient: ``g.func`` called with them and the call's arguments, the held
    values differentiated too."""
    func, inner_mask, args, kwargs, regroup = partial_route(callee, mask, args, kwargs)
    out, res = dynamic_call(func, inner_mask, inplace, *args, **kwargs)
    return out, (regroup, res)


def partial_route(callee, mask, args, kwargs):
    """The call ``_partial_call`` makes for ``callee(*args, **kwargs)`` (a
    partial, ``_CALLEE`` in ``mask``): the function underneath, its mask
    (the call's arguments, then the held values that may carry a gradient),
    its arguments, and the ``_HeldValues`` that regroups its cotangents."""
    from ..runtime import control, function_values as fv
    control.check_live(callee)
    func = callee.func
    if fv.carries(func) or isinstance(func, types.MethodType) and fv.carries(func.__self__):
        raise NonDifferentiableError(
            f"The function called here is a partial of a {type(func).__name__} that holds "
            "values being differentiated; pullback cannot send a gradient to them through "
            "the partial.", hint="Call the object directly, passing the partial's arguments.")
    n = len(callee.args)
    at = mask.index(_CALLEE)
    call_mask = [k + n if isinstance(k, int) and k >= 0 else k for k in mask if k != _CALLEE]
    keys = [k for k, v in fv.held(callee, kwargs) if fv.carries(v)]
    return (func, tuple(call_mask) + tuple(keys), callee.args + tuple(args),
            {**callee.keywords, **kwargs}, _HeldValues(at, len(call_mask), keys))


def _callee_call(callee, mask, inplace, args, kwargs):
    """``dynamic_call`` where the callee itself depends on the values being
    differentiated (``_CALLEE`` in ``mask``): an object of the user's class
    with ``__call__`` (``model(x)``, ``layer(x)``) gets the gradient of its
    attributes, as the receiver of ``model.__call__(x)``; a partial (a
    nested function used as a value) the gradients of what it holds; a
    plain function (an activation read off a layer) carries none; a bound
    method would hide values that carry one, and is refused."""
    if _is_callable_instance(callee) and runtime.is_instance(callee):
        mask = tuple(_RECEIVER if k == _CALLEE else k for k in mask)
        return dynamic_method_call(callee, "__call__", mask, inplace, *args, **kwargs)
    if isinstance(callee, functools.partial):
        return _partial_call(callee, mask, inplace, args, kwargs)
    if isinstance(callee, types.MethodType) \
            or _is_callable_instance(callee) or runtime.is_instance(callee):
        raise NonDifferentiableError(
            f"The function called here (a {type(callee).__name__}) is built from values "
            "being differentiated, and pullback cannot send a gradient through a function "
            "value.",
            hint="Pass those values to the function as arguments instead (for "
                 "`m = obj.method; m(y)`, call `obj.method(y)`, or make `m` a lambda: "
                 "`m = lambda y: obj.method(y)`).")
    at = mask.index(_CALLEE)
    inner = tuple(k for k in mask if k != _CALLEE)
    out, res = dynamic_call(callee, inner, inplace, *args, **kwargs)
    return out, (_NoCalleeGradient(at), res)


def dynamic_call(callee, mask, inplace, *args, **kwargs):
    """``callee(*args, **kwargs)`` and the residual its adjoint needs."""
    if _CALLEE in mask:
        return _callee_call(callee, mask, inplace, args, kwargs)
    if callee is attempt:
        return _attempt(mask, inplace, args[0], args[1:])
    if callee is star_call:
        return _star_call(mask, inplace, args[:2], args[2], args[3:], kwargs)
    if callee is nested_value or callee is functools.partial:
        return _make_function(callee, mask, args, kwargs)
    fn, args, kwargs, mask = _unwrap(callee, args, kwargs, mask)
    plan = _plan(fn, len(args), tuple(kwargs), mask, inplace)
    return plan.primal(args, kwargs)


def dynamic_method_call(obj, name, mask, inplace, *args, **kwargs):
    """``obj.name(*args, **kwargs)``; ``-1`` in ``mask``: ``obj`` carries a gradient."""
    method = getattr(obj, name)
    if isinstance(obj, (np.ndarray, np.generic)) and lookup(f"ndarray.{name}") is not None:
        # an array method with a rule (``x.reshape(*shape)``): a wrapper calling it
        wrapper = _rule_wrapper(name, len(args) + 1, tuple(kwargs), method=True)
        mask = tuple(0 if k == _RECEIVER else k + 1 if isinstance(k, int) else k
                     for k in mask)
        return dynamic_call(wrapper, mask, inplace, obj, *args, **kwargs)
    if _RECEIVER in mask and runtime.is_instance(obj) and name in vars(obj):
        # `self.activation(z)`, `self.layer1(x)`: a value held by the object, called
        at = mask.index(_RECEIVER)
        out, res = dynamic_call(vars(obj)[name], tuple(_CALLEE if k == _RECEIVER else k
                                                       for k in mask), inplace, *args, **kwargs)
        return out, (_HeldCallee(at, name), res)
    if _RECEIVER in mask and (isinstance(obj, types.ModuleType) or isinstance(
            inspect.getattr_static(type(obj), name, None), staticmethod)):
        # `self.log_normal(x, m, s)` of a staticmethod, `self.mod.grad(f)` of a module
        # held by an object: the object is not passed on (a module carries no gradient)
        at = mask.index(_RECEIVER)
        out, res = dynamic_call(method, tuple(k for k in mask if k != _RECEIVER), inplace,
                                *args, **kwargs)
        return out, (_NoReceiverGradient(at, obj), res)
    if _RECEIVER in mask and not (isinstance(method, types.MethodType)
                                  and method.__self__ is obj) and not is_library_code(method):
        raise NonDifferentiableError(
            f"`.{name}` of a {type(obj).__name__} is not a method defined in Python, so "
            "pullback cannot send a gradient to the object it is called on.",
            hint="Pass the values the call depends on as arguments.")
    return dynamic_call(method, mask, inplace, *args, **kwargs)


def refusal(fn):
    """Why a call of ``fn`` cannot be differentiated yet, or None."""
    if getattr(fn, "__pullback_forward_only__", False):
        return forward_only(fn)
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
        return opaque.adjoint(res, ct)


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

    def primal(self, args, kwargs):
        out, res = self.pair[0](*args, **kwargs)
        return out, (self, res)

    def adjoint(self, res, ct):
        full = self.pair[1](res, ct)
        return tuple(full[i] for i in self.positions)


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
    if isinstance(fn, CustomVJP):
        return _Differentiated(fn, fn.fun, nargs, kwnames, mask, inplace)
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
        hint=f"Give {name} a rule with pb.custom_vjp (define fwd and bwd), or call a NumPy "
             "function that has a rule or a function defined with def.")


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

