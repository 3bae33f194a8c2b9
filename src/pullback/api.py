"""The public functions: grad, value_and_grad, vjp, differentiable, custom_vjp,
source.  ``__init__`` re-exports them; nothing else here is public."""
from __future__ import annotations

import functools
import inspect
import os
import threading
import types
import weakref

import numpy as np

from . import runtime
from .bindings import Bindings
from . import dispatch as _dispatch
from .dispatch import (close_contexts, drop_handlers, entered_count, handle_exception,
                       open_contexts, open_handlers, take_entered)
from .errors import NonDifferentiableError
from .analyses import kinds as kinds_
from .checks import (check_argnum_range, check_argnums, check_cotangent,
                     check_differentiable_input, check_scalar_output, fresh_grad, is_inexact,
                     one_like, signature_key, split_aux, sums_onto)

__all__ = ["grad", "value_and_grad", "vjp", "jvp", "differentiable", "custom_vjp", "source"]


# -- per-function handles -----------------------------------------------------

class Derivative:
    """Transforms of one user function, one per abstract signature, cached."""

    def __init__(self, fun):
        self.fun = fun
        self.signature = inspect.signature(fun, follow_wrapped=False)
        self.params = list(self.signature.parameters)
        self.cache = {}          # key -> (Loaded, Bindings it was made under)
        self._masked = {}
        self._locks = {}
        # *args, **kwargs or keyword-only parameters: each call is flattened to
        # one positional argument per value (frontend.Layout), and the function
        # is transformed once per layout
        self.variadic = any(p.kind not in (p.POSITIONAL_OR_KEYWORD, p.POSITIONAL_ONLY)
                            for p in self.signature.parameters.values())

    def specialize(self, args, wrt, has_aux=False, inplace=None):
        from . import kernels     # late: kernels builds on this module's CustomVJP
        inplace = _inplace_default() if inplace is None else bool(inplace)
        large = kernels.size_class(args)     # large arrays: elementwise work is fused
        layout = self.layout_of(args)
        key = (tuple([signature_key(a) for a in args]), wrt, has_aux, inplace, large, layout)
        entry = self.cache.get(key)
        if entry is not None and entry[1].current():
            return entry[0]
        with self._lock_for(key):       # one transform per key, however many threads
            entry = self.cache.get(key)
            if entry is not None and entry[1].current():
                return entry[0]
            # what the transform resolves (globals, closure cells) is recorded first
            # and checked on every later call: a rebinding makes it transform again
            bindings = Bindings.capture(self.fun)
            # an up-to-date artifact, else the on-disk cache, else the compiler
            from . import cache as disk
            options = {}
            if not inplace:
                options["inplace"] = False
            if large:
                options["large"] = True
            if layout is not None:
                options["layout"] = [layout.nvar, list(layout.kwnames)]
            loaded = disk.obtain(self.fun, key[0], wrt, has_aux,
                                 lambda: self.transform(args, wrt, has_aux, inplace),
                                 options or None)
            self.cache[key] = (loaded, bindings)
        return loaded

    def _lock_for(self, key):
        with _LOCKS_LOCK:
            lock = self._locks.get(key)
            if lock is None:
                lock = self._locks[key] = threading.RLock()
        return lock

    def transform(self, args, wrt, has_aux=False, inplace=True):
        from . import kernels
        from .pipeline import transform
        layout = self.layout_of(args)
        params = self.params if layout is None else layout.params
        param_kinds = {p: kinds_.of_value(a) for p, a in zip(params, args)}
        with kernels.sizing(args):
            return transform(self.fun, param_kinds, [params[i] for i in wrt], has_aux,
                             inplace=inplace, layout=layout)

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
            if not kwargs and len(args) == len(self.params):
                return args
            b = self.signature.bind(*args, **kwargs)
            b.apply_defaults()
            return tuple(b.arguments.values())
        if isinstance(args, Flat) and not kwargs:
            return args
        from .frontend import flatten_call
        return flatten_call(self.fun, self.signature, args, kwargs)

    def call_primal(self, args, wrt, has_aux=False, inplace=None):
        if self.variadic and not isinstance(args, Flat):
            args = self.bind(args, {})
        loaded = self.specialize(args, wrt, has_aux, inplace)
        # `with np.errstate` and `try` blocks are followed only once one exists
        # (a flag their helpers and desugar set): none open before it was set
        tracked = _dispatch.blocks_used
        depth, mark, tries = (open_contexts(), entered_count(), open_handlers()) if tracked \
            else (0, 0, 0)
        try:
            out, res = loaded.primal(*args)
        except Exception as err:
            if tracked or _dispatch.blocks_used:
                if open_contexts() > depth:      # `with np.errstate` left by the exception
                    close_contexts(depth, err)
                if entered_count() > mark:
                    take_entered(mark)
            loaded.annotate(err)
            if (tracked or _dispatch.blocks_used) and open_handlers() > tries:
                new = handle_exception(tries, err)   # a `try` body it left: handlers run
                if new is not err:
                    raise new
            raise
        errstate = None
        if tracked or _dispatch.blocks_used:
            if open_contexts() > depth:          # ... or by a `return` inside it
                close_contexts(depth)
            if open_handlers() > tries:
                drop_handlers(tries)
            errstate = take_entered(mark) if entered_count() > mark else None
        return out, (loaded, res, wrt, len(args), errstate)

    def call_adjoint(self, res, ct):
        loaded, r, wrt, n, errstate = res
        try:
            if errstate:
                with np.errstate(**errstate):
                    grads = loaded.adjoint(r, ct)
            else:
                grads = loaded.adjoint(r, ct)
        except Exception as err:
            loaded.annotate(err)
            raise
        full = [None] * n
        for i, g in zip(wrt, grads):
            full[i] = g
        return tuple(full)

    def for_callers(self, mask, inplace=True):
        """A (primal, adjoint) pair for call sites whose active arguments are
        the parameters in ``mask``, in a caller whose gradients accumulate in
        place or not (``inplace``): a callee follows its caller."""
        pair = self._masked.get((mask, inplace))
        if pair is None:
            def primal(*args, **kwargs):
                args = self.bind(args, kwargs)
                return self.call_primal(args, mask, inplace=inplace)
            primal.__pullback_callee__ = (self, mask, inplace)   # describable (cache.describe)
            pair = self._masked[(mask, inplace)] = (primal, self.call_adjoint)
        return pair


class Flat(tuple):
    """The arguments of one call of a function with ``*args``, ``**kwargs`` or
    keyword-only parameters, one per value, and their ``layout``."""

    def __new__(cls, values, layout):
        self = super().__new__(cls, values)
        self.layout = layout
        return self


class CustomVJP:
    """A function with a user-given rule, in JAX's shape::

        @pb.custom_vjp
        def f(x):
            return np.sin(x)

        def f_fwd(x):
            return np.sin(x), np.cos(x)        # output, residuals

        def f_bwd(cos_x, g):
            return (g * cos_x,)                 # one cotangent per argument

        f.defvjp(f_fwd, f_bwd)
    """

    def __init__(self, fun):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.fwd = None
        self.bwd = None
        self.params = list(inspect.signature(fun, follow_wrapped=False).parameters)

    def defvjp(self, fwd, bwd):
        self.fwd, self.bwd = fwd, bwd
        return self

    def __call__(self, *args, **kwargs):
        return self.fun(*args, **kwargs)

    def bind(self, args, kwargs):
        b = inspect.signature(self.fun, follow_wrapped=False).bind(*args, **kwargs)
        b.apply_defaults()
        return tuple(b.arguments.values())

    def _check(self):
        if self.fwd is None:
            raise TypeError(f"custom_vjp function {self.__name__} has no rule yet: call "
                            f"{self.__name__}.defvjp(fwd, bwd) before differentiating it.")

    def call_primal(self, args, wrt, has_aux=False, inplace=None):
        self._check()
        out, res = self.fwd(*args)
        return out, (res, args)

    def call_adjoint(self, res, ct):
        r, args = res
        grads = self.bwd(r, ct)
        if not isinstance(grads, tuple) or len(grads) != len(args):
            raise TypeError(
                f"The bwd rule of {self.__name__} must return a tuple with one cotangent "
                f"per argument ({len(args)}), but returned {type(grads).__name__}"
                + (f" of length {len(grads)}" if isinstance(grads, tuple) else "") + ".")
        for i, (g, a) in enumerate(zip(grads, args)):
            if g is not None and not sums_onto(np.shape(g), np.shape(a)):
                raise ValueError(
                    f"The bwd rule of {self.__name__} returned a cotangent of shape "
                    f"{np.shape(g)} for argument {i}, which has shape {np.shape(a)}. "
                    f"Return one of the argument's shape (or one that broadcasts from it).")
        return tuple(None if g is None else runtime.project(g, a)
                     for g, a in zip(grads, args))

    def for_callers(self, mask, inplace=True):
        def primal(*args, **kwargs):
            return self.call_primal(self.bind(args, kwargs), mask)
        primal.__pullback_callee__ = (self, mask, inplace)   # describable (cache.describe)
        return primal, self.call_adjoint


class Bound:
    """A partial, a bound method or a callable instance: the function
    underneath, called with the arguments the object holds (``self``, the
    partial's arguments); gradients are those of the remaining parameters."""

    def __init__(self, obj):
        from .dispatch import _unwrap
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
_LOCKS_LOCK = threading.Lock()


def derivative_of(fun):
    """The handle that differentiates ``fun`` (created once per function)."""
    if isinstance(fun, CustomVJP):
        return fun
    made_by = getattr(fun, "__pullback_api__", None)
    if made_by is not None:
        raise NonDifferentiableError(
            f"Derivatives of derivatives are not supported yet: this differentiates a "
            f"function made by {made_by}.",
            hint="Differentiate the original function once; for second derivatives, use "
                 "finite differences of pb.grad for now.")
    if not isinstance(fun, types.FunctionType):
        from .dispatch import _is_callable_instance
        if isinstance(fun, (functools.partial, types.MethodType)) \
                or _is_callable_instance(fun):
            return Bound(fun)
        from .frontend import parse
        parse(fun)          # raises SourceUnavailableError, saying what to do
    handle = _handles.get(fun)
    if handle is None:
        handle = _handles[fun] = Derivative(fun)
    return handle


# -- the public API ------------------------------------------------------------

def differentiable(fun):
    """Mark ``fun`` as differentiable: it still runs as written, is compiled by
    ``pullback compile``, and its calls inside other differentiated functions
    use its own primal/adjoint pair.

    >>> @differentiable
    ... def f(x):
    ...     return x * x
    >>> f(3.0)
    9.0
    """
    fun.__pullback_differentiable__ = True
    derivative_of(fun)
    return fun


def custom_vjp(fun):
    """Give ``fun`` a rule of your own with ``fun.defvjp(fwd, bwd)`` (as JAX)."""
    return CustomVJP(fun)


def _inplace_default():
    """In-place gradient accumulation is on unless ``PULLBACK_INPLACE=0``."""
    return os.environ.get("PULLBACK_INPLACE", "1").strip().lower() not in ("0", "false", "no",
                                                                          "off")


def value_and_grad(fun, argnums=0, has_aux=False, *, inplace=None):
    """A function returning ``fun``'s value and its gradient.

    >>> import numpy as np
    >>> value_and_grad(lambda x: np.sum(x ** 2))(np.array([1.0, 2.0]))
    (np.float64(5.0), array([2., 4.]))
    """
    argnums_t = check_argnums(argnums)
    wrt = tuple(sorted(set(argnums_t)))

    @functools.wraps(fun)
    def value_and_grad_f(*args, **kwargs):
        handle = derivative_of(fun)
        args = handle.bind(args, kwargs)
        check_argnum_range(fun, argnums_t, len(args))
        for i in argnums_t:
            check_differentiable_input(fun, handle, i, args[i])
        out, res = handle.call_primal(args, wrt, has_aux, inplace)
        value, aux = split_aux(fun, out, has_aux)
        check_scalar_output(fun, value)
        grads = handle.call_adjoint(res, one_like(value))
        g = tuple(fresh_grad(grads[i], args[i]) for i in argnums_t)
        result = g[0] if isinstance(argnums, int) else g
        return ((value, aux), result) if has_aux else (value, result)

    value_and_grad_f.__pullback_api__ = "pb.value_and_grad"
    return value_and_grad_f


def grad(fun, argnums=0, has_aux=False, *, inplace=None):
    """The gradient of a real scalar-valued ``fun`` with respect to the
    arguments ``argnums`` (an int gives one gradient, a tuple a tuple).

    >>> import numpy as np
    >>> grad(lambda x: np.sum(np.sin(x)))(np.zeros(2))
    array([1., 1.])
    """
    vg = value_and_grad(fun, argnums, has_aux, inplace=inplace)

    @functools.wraps(fun)
    def grad_f(*args, **kwargs):
        (_, aux), g = vg(*args, **kwargs) if has_aux else (((None, None), vg(*args, **kwargs)[1]))
        return (g, aux) if has_aux else g

    grad_f.__pullback_api__ = "pb.grad"
    return grad_f


def vjp(fun, *primals, has_aux=False, inplace=None):
    """``fun``'s output and a function that pulls a cotangent of the output
    back to one cotangent per primal (a tuple, as in JAX).

    >>> import numpy as np
    >>> out, back = vjp(lambda x, y: x * y, np.array([1.0, 2.0]), 3.0)
    >>> back(np.array([1.0, 1.0]))
    (array([3., 3.]), 3.0)
    """
    handle = derivative_of(fun)
    args = tuple(primals)
    wrt = tuple(i for i, a in enumerate(args) if is_inexact(a))
    out, res = handle.call_primal(args, wrt, has_aux, inplace)
    value, aux = split_aux(fun, out, has_aux)

    def pullback(ct):
        check_cotangent(fun, value, ct)
        grads = handle.call_adjoint(res, ct)
        return tuple(fresh_grad(g, a) if g is not None else None for g, a in zip(grads, args))

    pullback.__pullback_api__ = "pb.vjp"
    return (value, pullback, aux) if has_aux else (value, pullback)


def jvp(fun, primals, tangents):
    """``fun(*primals)`` and the directional derivative along ``tangents``.

    Computed from reverse mode: one adjoint sweep per element of the output
    (two for a complex output), sharing one primal run.  That is exact, and
    cheap for the small outputs jvp is mostly used on; a forward-mode
    transform would make it cheap for large outputs too.

    >>> import numpy as np
    >>> jvp(lambda x: np.sin(x), (np.zeros(2),), (np.ones(2),))
    (array([0., 0.]), array([1., 1.]))
    """
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise ValueError(f"jvp got {len(primals)} primals but {len(tangents)} tangents; "
                         "pass one tangent per primal.")
    for p, t in zip(primals, tangents):
        if np.shape(p) != np.shape(t):
            raise ValueError(f"A tangent of shape {np.shape(t)} was given for a primal of "
                             f"shape {np.shape(p)}; each tangent must match its primal.")
    handle = derivative_of(fun)
    wrt = tuple(i for i, a in enumerate(primals) if is_inexact(a))
    out, res = handle.call_primal(primals, wrt)
    if isinstance(out, tuple):
        raise TypeError("pb.jvp supports a single array or scalar output for now; "
                        "call it once per output.")

    def pair(grads):
        return sum(np.real(np.sum(np.asarray(g) * np.asarray(t)))
                   for g, t in zip(grads, tangents) if g is not None)

    flat = np.zeros(np.size(out), dtype=np.result_type(out))
    basis = np.zeros(np.size(out), dtype=np.result_type(out))
    for k in range(np.size(out)):
        basis[k] = 1
        ct = basis.reshape(np.shape(out))
        flat[k] = pair(handle.call_adjoint(res, ct))
        if np.iscomplexobj(out):
            basis[k] = -1j
            flat[k] += 1j * pair(handle.call_adjoint(res, ct))
        basis[k] = 0
    tangent_out = flat.reshape(np.shape(out))
    if not isinstance(out, np.ndarray):
        tangent_out = type(out)(tangent_out[()]) if isinstance(out, (float, complex)) \
            else tangent_out[()]
    return out, tangent_out


def source(fun, *example_args, argnums=None):
    """The generated primal and adjoint of ``fun`` as Python source.

    Without example arguments the generic transform is shown (every parameter
    a real number or array); with them, the one specialised to their types.
    """
    handle = derivative_of(fun)
    if isinstance(handle, CustomVJP):
        raise TypeError(f"{handle.__name__} has a user-given rule; there is no generated "
                        "source to show.")
    if getattr(handle, "variadic", False) and not example_args:
        raise TypeError(f"{getattr(fun, '__name__', fun)} takes *args, **kwargs or keyword-"
                        "only parameters, so its transform depends on the call: pass example "
                        "arguments, pb.source(f, *args).")
    if getattr(handle, "variadic", False):
        example_args = handle.bind(tuple(example_args), {})
    n = len(example_args) if getattr(handle, "variadic", False) else len(handle.params)
    wrt = tuple(range(n)) if argnums is None else check_argnums(argnums)
    if example_args:
        return handle.specialize(example_args if getattr(handle, "variadic", False)
                                 else tuple(example_args), tuple(sorted(set(wrt)))).source
    from .pipeline import transform
    param_kinds = {p: kinds_.NUMBER for p in handle.params}
    return transform(fun, param_kinds, [handle.params[i] for i in sorted(set(wrt))]).source
