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

What a callee of one signature does is its plan, made once (``driver.plans``).

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

import functools
import inspect
import types

import numpy as np

from ..callees import _CALLEE, _RECEIVER, _is_callable_instance, _unwrap
from .. import runtime
from ..runtime.calls import dynamic_adjoint  # noqa: F401  (the adjoint side: runtime's)
from ..analyses.callable_facts import is_library
from ..errors import NonDifferentiableError, PullbackError
from ..rules.registry import lookup
from ..runtime.opaque import is_library_code
from ..runtime.control import RAISED, attempt, nested_value, spread, star_call
from .plans import _plan, _rule_wrapper, refusal

__all__ = ["dynamic_call", "dynamic_method_call", "dynamic_adjoint", "refusal"]

class _Spread:
    """The residual of a call with starred arguments: regroups the callee's
    cotangents by the call's items (a tuple for ``*xs``, a dict for ``**d``)."""

    def __init__(self, groups):
        self.groups = groups      # per mask entry: ("one", i) | ("*", seq, [i...]) | ("d", d, {k: i})

    def adjoint(self, r, ct):
        inner, res = r
        return self.regroup(dynamic_adjoint(res, ct))

    def regroup(self, grads):
        """The callee's cotangents (or their tangents) grouped by the call's items."""
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
    fn, args, all_kwargs, inner_mask, groups = star_route(mask, spec, callee, items, kwargs)
    if spec[1] is not None:
        out, res = dynamic_method_call(callee, spec[1], inner_mask, inplace, *args,
                                       **all_kwargs)
    else:
        out, res = dynamic_call(fn, inner_mask, inplace, *args, **all_kwargs)
    return out, (_Spread(groups), (None, res))


def star_route(mask, spec, callee, items, kwargs):
    """A call with starred arguments spread: ``(fn, args, kwargs, inner_mask,
    groups)``, ``inner_mask`` the callee's positions (``_RECEIVER``) and keyword
    names of ``mask``'s entries, ``groups`` per entry where its parts went
    (``_Spread``; forward over reverse maps tangents by it too)."""
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
    return fn, args, all_kwargs, tuple(inner_mask), groups


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
    if type(callee) is not types.FunctionType:     # (a plain function is itself)
        callee, args, kwargs, mask = _unwrap(callee, args, kwargs, mask)
    plan = _plan(callee, len(args), tuple(kwargs) if kwargs else (), mask, inplace)
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
    if _RECEIVER in mask and runtime.is_instance(obj) and name in getattr(obj, "__dict__", ()):
        # `self.activation(z)`, `self.layer1(x)`: a value held by the object, called
        at = mask.index(_RECEIVER)
        out, res = dynamic_call(obj.__dict__[name], tuple(_CALLEE if k == _RECEIVER else k
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
