"""The callee handles: what differentiates one user function.

``derivative_of(fn)`` gives the handle, made once per function: a
``Derivative`` (transformed by the compiler, one transform per abstract
signature of the arguments), a ``CustomVJP`` (``pb.custom_vjp``: the user's
own rule) or a ``Bound`` (a partial, a bound method or a callable instance:
the function underneath).  Every handle has the same protocol:
``call_primal(args, wrt)`` gives the output and residuals, ``call_adjoint(res,
ct)`` one cotangent per parameter, and ``for_callers(mask)`` the pair that
generated code calls for a call site.

A function with ``*args``, ``**kwargs`` or keyword-only parameters is
called with its arguments flattened (``call_layouts.flatten_call``): a
``Flat`` tuple, one value per parameter of its ``Layout``, and is transformed
once per layout.  ``Derivative.call_primal`` also closes the ``with`` blocks
a primal left open (``runtime.control``).  What a call site runs, the
primal wrapper and the spreading of gradients, is made in ``call_sites``;
``CustomVJP`` lives in ``custom_rules``.

Generated code, the reverse pass and the runtime dispatcher hold handles, so
this module sits low in the tree: it imports no pass.  A ``Derivative``
transforms itself through the just-in-time driver (``driver.jit``), which
installs itself as ``Derivative.driver``.
"""
from __future__ import annotations

import functools
import inspect
import types
import weakref

import numpy as np

from . import runtime
from .call_layouts import Flat, flatten_call
from .call_sites import _NONE, _SAME, _SPREAD, _caller_primal, _pick, _run_adjoint, _settle, \
    _spread, _unwind
from .custom_rules import CustomVJP
from .runtime import control
from .runtime.control import entered_count, open_contexts
from .errors import NonDifferentiableError
from .own_code import refuse_own

_RECEIVER = -1      # in a call-site mask: the receiver of a method call
_CALLEE = -2        # in a call-site mask: the callee itself (an object with __call__)


#: ``pullback.higher`` (derivatives of derivatives), which sets itself here when
#: it is imported (``import pullback`` imports it): this module imports no pass.
higher_order = None
class_calls = None      # analyses.callable_facts.called_class, once imported


class Derivative:
    """Transforms of one user function, one per abstract signature, cached."""

    #: The just-in-time driver (``driver.jit``), which sets itself here when it
    #: is imported (``import pullback`` imports it): a handle transforms itself
    #: through it, and this module imports nothing of the compiler.
    driver = None

    def __init__(self, fun):
        refuse_own(fun)          # pullback's machinery is never transformed (own_code)
        self.fun = fun
        self.signature = inspect.signature(fun, follow_wrapped=False)
        self.params = list(self.signature.parameters)
        self.cache = {}          # key -> (Loaded, Bindings it was made under)
        self.scalar_cache = {}   # the same entries for all-scalar calls, by argument types
        self.last_arrays = None  # the entry of the last call with arrays (driver.jit)
        self._masked = {}
        self._locks = {}
        # *args, **kwargs or keyword-only parameters: each call is flattened to
        # one positional argument per value (``Layout``), and the
        # function is transformed once per layout
        self._by_keyword = all(p.kind is p.POSITIONAL_OR_KEYWORD
                               for p in self.signature.parameters.values())
        self.variadic = any(p.kind not in (p.POSITIONAL_OR_KEYWORD, p.POSITIONAL_ONLY)
                            for p in self.signature.parameters.values())

    def specialize(self, args, wrt, has_aux=False, inplace=None):
        """The ``Loaded`` transform for ``args`` (``driver.jit.specialize``)."""
        return self.driver.specialize(self, args, wrt, has_aux, inplace)

    def transform(self, args, wrt, has_aux=False, inplace=True):
        """A new transform for ``args`` (``driver.jit.transform``)."""
        return self.driver.transform(self, args, wrt, has_aux, inplace)

    def layout_of(self, args):
        """The layout of flattened ``args`` (None for a function whose
        parameters are all positional)."""
        if not self.variadic:
            return None
        layout = getattr(args, "layout", None)
        if layout is None:
            raise TypeError(f"{self.fun.__qualname__} takes *args, **kwargs or keyword-only "
                            "parameters: its arguments must be bound first.")
        return layout

    def param_name(self, i, args=None):
        layout = getattr(args, "layout", None)
        params = self.params if layout is None else layout.params
        return params[i] if 0 <= i < len(params) else str(i)

    def bind(self, args, kwargs):
        if not self.variadic:
            n = len(self.params)
            if not kwargs and len(args) == n:
                return args
            if self._by_keyword and len(args) + len(kwargs) == n:
                # a lifted closure's captured values come by keyword
                # (`g_lifted(x, y=y)`): every remaining parameter named once
                try:
                    return args + tuple([kwargs[p] for p in self.params[len(args):]])
                except KeyError:
                    pass        # Signature.bind says what is wrong
            b = self.signature.bind(*args, **kwargs)
            b.apply_defaults()
            return tuple(b.arguments.values())
        if isinstance(args, Flat) and not kwargs:
            return args
        return flatten_call(self.fun, self.signature, args, kwargs)

    def call_primal(self, args, wrt, has_aux=False, inplace=None):
        if self.variadic and not isinstance(args, Flat):
            args = self.bind(args, {})
        return self.run_primal(self.specialize(args, wrt, has_aux, inplace), args, wrt)

    def run_primal(self, loaded, args, wrt):
        """``loaded.primal(*args)`` and the residuals ``call_adjoint`` reads."""
        # the `with` blocks the primal enters (runtime.control): those it leaves
        # open are closed here; they are followed only once one exists (a flag
        # their helpers and frontend.exceptions set): none is open before it was set
        tracked = control.blocks_used
        depth, mark = (open_contexts(), entered_count()) if tracked else (0, 0)
        try:
            out, res = loaded.primal(*args)
        except Exception as err:
            _unwind(tracked, depth, mark, err)
            loaded.annotate(err)
            raise
        errstate = _settle(depth, mark) if tracked or control.blocks_used else None
        return out, (loaded, res, wrt, len(args), errstate)

    def call_adjoint(self, res, ct):
        loaded, r, wrt, n, errstate = res
        if errstate:
            grads = _run_adjoint(loaded, errstate, r, ct)
        else:
            try:
                grads = loaded.adjoint(r, ct)
            except Exception as err:
                loaded.annotate(err)
                raise
        # the spreading function of the last (wrt, n) this transform was called
        # with: a transform is made for one wrt, so this is found without a
        # dict lookup on every call of a callee
        last = loaded.spread
        if last is None or last[0] is not wrt or last[1] != n:
            spread = _SPREAD.get((wrt, n))
            if spread is None:
                spread = _spread(wrt, n)
            last = loaded.spread = (wrt, n, spread, _pick(wrt, n))
        if type(grads) is tuple:            # C calls only: no Python frame
            pick = last[3]
            if pick is _SAME:
                return grads
            if pick is not None:
                return pick(grads + _NONE)
        return last[2](grads)

    def for_callers(self, mask, inplace=True, compact=False):
        """A (primal, adjoint) pair for call sites whose active arguments are
        the parameters in ``mask``, in a caller whose gradients accumulate in
        place or not (``inplace``): a callee follows its caller.

        With ``compact``, the primal's residuals are ``(adjoint, r)`` and the
        call site runs ``res[0](res[1], ct)``: the gradients of the
        parameters in ``mask`` only, in order, straight from the callee's
        generated adjoint (no handle, no spreading among the parameters in
        between); the pair's adjoint is None."""
        pair = self._masked.get((mask, inplace, compact))
        if pair is None:
            n = -1 if self.variadic else len(self.params)
            bind = self.bind
            primal = _caller_primal(n, False, compact)(bind, self.call_primal, self.run_primal,
                                                       self.scalar_cache, mask, inplace)
            primal.__pullback_callee__ = (self, mask, inplace)   # describable (cache.describe)
            primal.__pullback_compact__ = compact
            if 0 < n <= 64:
                # for a call site passing exactly n arguments by position
                # (reverse/context.callee): no **kwargs dict made per call
                fast = _caller_primal(n, True, compact)(bind, self.call_primal, self.run_primal,
                                                        self.scalar_cache, mask, inplace)
                fast.__pullback_callee__ = primal.__pullback_callee__  # the same callee
                fast.__pullback_compact__ = compact
                fast.__pullback_positional__ = True
                primal.positional = fast
            pair = self._masked[(mask, inplace, compact)] = \
                (primal, None if compact else self.call_adjoint)
        return pair


class Bound:
    """A partial, a bound method or a callable instance: the function
    underneath, called with the arguments the object holds (``self``, the
    partial's arguments); gradients are those of the remaining parameters."""

    def __init__(self, obj):
        fn, self.lead, self.keywords, _ = _unwrap(obj, (), {}, ())
        self.inner = derivative_of(fn)
        self.signature = inspect.signature(obj, follow_wrapped=False)
        self.params = list(self.signature.parameters)
        self.variadic = getattr(self.inner, "variadic", False)
        if not self.variadic:
            self.where = [self.inner.params.index(p) for p in self.params]

    def bind(self, args, kwargs):
        if self.variadic:
            # the function underneath flattens the call; the object's own
            # arguments are those after what it holds
            flat = self.inner.bind(self.lead + tuple(args), {**self.keywords, **kwargs})
            return Flat(flat[len(self.lead):], flat.layout)
        b = self.signature.bind(*args, **kwargs)
        b.apply_defaults()
        return tuple(b.arguments.values())

    def call_primal(self, args, wrt, has_aux=False, inplace=None):
        if self.variadic:
            if not isinstance(args, Flat):
                args = self.bind(args, {})
            n = len(self.lead)
            return self.inner.call_primal(Flat(self.lead + tuple(args), args.layout),
                                          tuple(n + i for i in wrt), has_aux, inplace)
        inner = self.inner.bind(self.lead, {**self.keywords, **dict(zip(self.params, args))})
        return self.inner.call_primal(inner, tuple(sorted(self.where[i] for i in wrt)),
                                      has_aux, inplace)

    def call_adjoint(self, res, ct):
        full = self.inner.call_adjoint(res, ct)
        if self.variadic:
            return tuple(full[len(self.lead):])
        return tuple(full[j] for j in self.where)


_handles = weakref.WeakKeyDictionary()


def _user_location(fallback=None):
    """Where the user's code called into pullback: the innermost frame
    outside the package (the line that calls ``pb.grad(pb.grad(f))(x)``),
    else the definition of ``fallback`` (a function), else None."""
    import linecache
    import sys
    from .errors import Location
    frame = sys._getframe(1)
    while frame is not None and \
            (frame.f_globals.get("__name__") or "").split(".")[0] == "pullback":
        frame = frame.f_back
    if frame is not None:
        filename, lineno = frame.f_code.co_filename, frame.f_lineno
    elif getattr(fallback, "__code__", None) is not None:
        filename, lineno = fallback.__code__.co_filename, fallback.__code__.co_firstlineno
    else:
        return None
    line = linecache.getline(filename, lineno)
    if not line:
        return Location(filename, lineno)
    start, end = len(line) - len(line.lstrip()), len(line.rstrip())
    try:        # the call itself, where Python records its columns (3.11+)
        first, last, col, end_col = list(frame.f_code.co_positions())[frame.f_lasti // 2]
        if first == last == lineno and col is not None and end_col is not None:
            start, end = col, end_col
    except (AttributeError, IndexError, TypeError, ValueError):
        pass
    return Location(filename, lineno, start, end, line)


def derivative_of(fun):
    """The handle that differentiates ``fun`` (created once per function)."""
    if type(fun) is types.FunctionType:     # every call of pb.grad's result: made already?
        handle = _handles.get(fun)
        if handle is not None:
            return handle
    if isinstance(fun, CustomVJP):
        return fun
    if getattr(fun, "__pullback_forward_only__", False):
        from .custom_rules import transposed
        return transposed(fun)          # a pb.custom_jvp function: its rule transposed
    if getattr(fun, "__pullback_nested__", None) is not None and higher_order is not None:
        return higher_order.nested_reverse(fun)        # pb.jvp called inside
    made_by = getattr(fun, "__pullback_api__", None)
    if made_by is not None:
        handle = higher_order.reverse_handle(fun) if higher_order is not None else None
        if handle is not None:
            return handle
        inner = getattr(fun, "__wrapped__", None)
        code = getattr(inner, "__code__", None)
        of = f" of `{getattr(inner, '__qualname__', inner)}`" if inner is not None else ""
        if code is not None:
            of += f" (defined in {code.co_filename}, line {code.co_firstlineno})"
        raise NonDifferentiableError(
            f"pullback cannot differentiate a function made by {made_by}{of} again.",
            _user_location(inner),
            hint="Differentiate the original function: pb.grad, pb.value_and_grad, pb.vjp, "
                 "pb.linearize and (in forward mode) pb.jacfwd functions can be "
                 "differentiated again.")
    if not isinstance(fun, types.FunctionType):
        if isinstance(fun, (functools.partial, types.MethodType)) \
                or _is_callable_instance(fun):
            return Bound(fun)
        from .rules.registry import lookup
        if lookup(fun) is not None:     # pb.grad(np.sin), as jax.grad(jnp.sin)
            return derivative_of(_calling(fun))
        from .frontend.parse import parse
        parse(fun)          # raises SourceUnavailableError, saying what to do
    handle = _handles.get(fun)
    if handle is None:
        # (threads asking at once all get the first handle stored: one transform)
        handle = _handles.setdefault(fun, Derivative(fun))
    return handle


_callers = {}      # a rule-bearing callable -> the Python function calling it


def _calling(fn):
    """``def sin(*args, **kwargs): return fn(*args, **kwargs)``, made once per
    ``fn``: a Python function whose one call has ``fn``'s rule."""
    caller = _callers.get(fn)
    if caller is None:
        from .backend import codegen
        name = "".join(c if c.isalnum() else "_" for c in getattr(fn, "__name__", "callee"))
        text = f"def {name}(*args, **kwargs):\n    return _callee(*args, **kwargs)\n"
        filename = f"<pullback rule of {name}>"
        codegen.register_source(filename, text)
        namespace = {"_callee": fn, "__name__": __name__}
        exec(compile(text, filename, "exec"), namespace)
        caller = _callers[fn] = namespace[name]
    return caller


def forward_only(fn):
    """The refusal of a ``pb.custom_jvp`` function in reverse mode: ``(message, hint)``."""
    name = getattr(fn, "__name__", "this function")
    return (f"{name} is a pb.custom_jvp function: it has a forward rule only, and reverse "
            "mode (pb.grad, pb.vjp) cannot use it yet.",
            "Use pb.jvp for it, or define the function with pb.custom_vjp and defvjp.")


# -- unwrapping -----------------------------------------------------------------

def _unwrap(fn, args, kwargs, mask):
    """The function underneath partials, bound methods and callable instances,
    with the arguments they hold prepended and ``mask`` shifted to match."""
    while True:
        if isinstance(fn, functools.partial):
            control.check_live(fn)
            n = len(fn.args)
            args, kwargs = fn.args + args, {**fn.keywords, **kwargs}
            mask = tuple(k + n if isinstance(k, int) and k >= 0 else k for k in mask)
            fn = fn.func
        elif isinstance(fn, types.MethodType):
            args = (fn.__self__,) + args
            mask = tuple(k + 1 if isinstance(k, int) and k >= 0 else
                         0 if k == _RECEIVER else k for k in mask)
            fn = fn.__func__
        elif isinstance(fn, (staticmethod, classmethod)):
            fn = fn.__func__
        elif type(fn).__name__ == "Followed" and hasattr(fn, "follow"):
            fn = fn.function          # a state function (frontend.followed)
        elif _is_callable_instance(fn):
            fn = fn.__call__          # a bound method of the instance
        elif isinstance(fn, type) and _called_class(fn) is not None:
            fn = _called_class(fn)    # `cls(...)`, `Model(**d)`: its __init__, rewritten
        else:
            return fn, args, kwargs, mask


def _called_class(cls):
    # set by analyses.callable_facts when it is imported (it imports this module);
    # generated code runs after a transform, which imports it, did
    return class_calls(cls) if class_calls is not None else None


def _is_callable_instance(obj):
    if isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType, np.ufunc)):
        return False
    return not isinstance(obj, CustomVJP) and not getattr(
        obj, "__pullback_forward_only__", False) and isinstance(
        getattr(type(obj), "__call__", None), types.FunctionType)


# -- calls of functions with *args, **kwargs or keyword-only parameters -----------


runtime.calls.install(derivative_of=derivative_of)   # an artifact's callee handles
