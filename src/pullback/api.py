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
from .errors import NonDifferentiableError
from .analyses import kinds as kinds_
from .checks import (check_argnum_range, check_argnums, check_cotangent,
                     check_differentiable_input, check_scalar_output, fresh_grad, is_inexact,
                     one_like, signature_key, split_aux, sums_onto)

__all__ = ["grad", "value_and_grad", "vjp", "jvp", "linearize", "jacfwd", "differentiable",
           "custom_vjp", "custom_jvp", "source"]


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

    def specialize(self, args, wrt, has_aux=False, inplace=None):
        from . import kernels     # late: kernels builds on this module's CustomVJP
        inplace = _inplace_default() if inplace is None else bool(inplace)
        large = kernels.size_class(args)     # large arrays: elementwise work is fused
        key = (tuple([signature_key(a) for a in args]), wrt, has_aux, inplace, large)
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
        param_kinds = {p: kinds_.of_value(a) for p, a in zip(self.params, args)}
        with kernels.sizing(args):
            return transform(self.fun, param_kinds, [self.params[i] for i in wrt], has_aux,
                             inplace=inplace)

    def bind(self, args, kwargs):
        if not kwargs and len(args) == len(self.params):
            return args
        b = self.signature.bind(*args, **kwargs)
        b.apply_defaults()
        return tuple(b.arguments.values())

    def call_primal(self, args, wrt, has_aux=False, inplace=None):
        loaded = self.specialize(args, wrt, has_aux, inplace)
        try:
            out, res = loaded.primal(*args)
        except Exception as err:
            loaded.annotate(err)
            raise
        return out, (loaded, res, wrt)

    def call_adjoint(self, res, ct):
        loaded, r, wrt = res
        try:
            grads = loaded.adjoint(r, ct)
        except Exception as err:
            loaded.annotate(err)
            raise
        full = [None] * len(self.params)
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
        self.where = [self.inner.params.index(p) for p in self.params]

    def bind(self, args, kwargs):
        b = self.signature.bind(*args, **kwargs)
        b.apply_defaults()
        return tuple(b.arguments.values())

    def call_primal(self, args, wrt, has_aux=False, inplace=None):
        inner = self.inner.bind(self.lead, {**self.keywords, **dict(zip(self.params, args))})
        return self.inner.call_primal(inner, tuple(sorted(self.where[i] for i in wrt)),
                                      has_aux, inplace)

    def call_adjoint(self, res, ct):
        full = self.inner.call_adjoint(res, ct)
        return tuple(full[j] for j in self.where)


_handles = weakref.WeakKeyDictionary()
_LOCKS_LOCK = threading.Lock()


def derivative_of(fun):
    """The handle that differentiates ``fun`` (created once per function)."""
    if isinstance(fun, CustomVJP):
        return fun
    if getattr(fun, "__pullback_forward_only__", False):
        from .dispatch import forward_only
        message, hint = forward_only(fun)
        raise NonDifferentiableError(message, hint=hint)
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


def jvp(fun, primals, tangents, has_aux=False):
    """``fun(*primals)`` and its directional derivative along ``tangents``
    (JAX's conventions: tuples of primals and tangents, pytrees of arrays,
    tuple outputs; with ``has_aux``, ``(out, out_dot, aux)``).

    Forward mode, as a source transform (``pullback.forward``): one run of
    the tangent function, whatever the size of the output.  A tangent is
    taken for every float or complex primal; the tangent of an integer or
    boolean primal is ignored.

    >>> import numpy as np
    >>> jvp(lambda x: np.sin(x), (np.zeros(2),), (np.ones(2),))
    (array([0., 0.]), array([1., 1.]))
    """
    from . import forward
    primals, tangents = _jvp_arguments(fun, primals, tangents)
    wrt = tuple(i for i, a in enumerate(primals) if is_inexact(a))
    out, out_dot = forward.jvp_call(fun, primals, {}, wrt, tuple(tangents[i] for i in wrt),
                                    has_aux, top=True)
    if has_aux:
        value, aux = split_aux(fun, out, True)
        return value, out_dot, aux
    return out, out_dot


def _jvp_arguments(fun, primals, tangents):
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("jvp takes the primals and the tangents as tuples (as JAX): "
                        "pb.jvp(f, (x,), (x_dot,)).")
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise ValueError(f"jvp got {len(primals)} primals but {len(tangents)} tangents; "
                         "pass one tangent per primal.")
    for i, (p, t) in enumerate(zip(primals, tangents)):
        _check_tangent(i, p, t)
    return primals, tangents


def _check_tangent(i, p, t, path=""):
    if runtime.is_structure(p):
        if not runtime.is_structure(t) or type(t) is not type(p) or len(
                runtime.fields_of(t)) != len(runtime.fields_of(p)):
            raise ValueError(f"The tangent of primal {i}{path} must have the primal's "
                             f"structure ({type(p).__name__} of {len(runtime.fields_of(p))}), "
                             f"but it is a {type(t).__name__}.")
        tv = dict(runtime.fields_of(t))
        for k, v in runtime.fields_of(p):
            if k not in tv:
                raise ValueError(f"The tangent of primal {i}{path} has no entry {k!r}.")
            _check_tangent(i, v, tv[k], f"{path}[{k!r}]")
        return
    if is_inexact(p) and np.iscomplexobj(t) and not np.iscomplexobj(p):
        raise TypeError(f"A complex tangent was given for a real primal (primal {i}{path}); "
                        "a real input moves along real directions only: pass a real "
                        "tangent, or a complex primal.")
    if is_inexact(p) and np.shape(p) != np.shape(t):
        raise ValueError(f"A tangent of shape {np.shape(t)} was given for a primal of shape "
                         f"{np.shape(p)} (primal {i}{path}); each tangent must match its "
                         "primal.")


def linearize(fun, *primals):
    """``fun(*primals)`` and a function of tangents giving the directional
    derivative at ``primals`` (as JAX's ``linearize``; the tangent function
    is run again for each call, so each costs about one ``jvp``).

    >>> import numpy as np
    >>> y, f_jvp = linearize(np.sin, 0.0)
    >>> f_jvp(2.0)
    np.float64(2.0)
    """
    from . import forward
    primals = tuple(primals)
    wrt = tuple(i for i, a in enumerate(primals) if is_inexact(a))
    zeros = tuple(forward.support.zeros_tangent(primals[i]) for i in wrt)
    out, _ = forward.jvp_call(fun, primals, {}, wrt, zeros, top=True)

    def f_jvp(*tangents):
        _, tangents = _jvp_arguments(fun, primals, tangents)
        return forward.jvp_call(fun, primals, {}, wrt, tuple(tangents[i] for i in wrt),
                                top=True)[1]

    f_jvp.__pullback_api__ = "pb.linearize"
    return out, f_jvp


def jacfwd(fun, argnums=0, has_aux=False):
    """The Jacobian of ``fun`` with respect to the arguments ``argnums``, by
    forward mode: one ``jvp`` per input element (as JAX's ``jacfwd``; an int
    gives one Jacobian, a tuple a tuple).  The Jacobian of an output of
    shape ``S`` with respect to an input of shape ``T`` has shape ``S + T``;
    pytrees of arrays on either side give the nested structure JAX gives.

    >>> import numpy as np
    >>> jacfwd(lambda x: x ** 2)(np.array([1.0, 2.0]))
    array([[2., 0.],
           [0., 4.]])
    """
    argnums_t = check_argnums(argnums)

    @functools.wraps(fun)
    def jacfwd_f(*args, **kwargs):
        from . import forward
        if kwargs:
            args = forward.forward_of(fun).bind(args, kwargs) if isinstance(
                fun, types.FunctionType) else args
        check_argnum_range(fun, argnums_t, len(args))
        for i in argnums_t:
            if not is_inexact(args[i]):
                raise TypeError(f"jacfwd requires float or complex inputs, but argument {i} "
                                f"is a {type(args[i]).__name__}.")
        wrt = tuple(sorted(set(argnums_t)))
        leaves = [(i, path, leaf) for i in wrt for path, leaf in _leaves(args[i])]
        zeros = {i: forward.support.zeros_tangent(args[i]) for i in wrt}
        out = aux = None
        columns = []            # per input leaf: the tangent outputs, one per element
        for i, path, leaf in leaves:
            cols = []
            for k in range(max(np.size(leaf), 1) if np.ndim(leaf) else 1):
                unit = np.zeros(np.shape(leaf), dtype=np.result_type(leaf))
                unit.reshape(-1)[k] = 1
                tangent = {j: _with_leaf(zeros[j], path, unit if np.ndim(leaf)
                                         else type(leaf)(1) if isinstance(leaf, (float, complex))
                                         else unit[()]) if j == i else zeros[j] for j in wrt}
                o, d = forward.jvp_call(fun, args, {}, wrt, tuple(tangent[j] for j in wrt),
                                        has_aux, top=True)
                if has_aux:
                    o, aux = o
                out = o
                cols.append(d)
            columns.append((i, path, leaf, cols))
        # JAX's layout: the output's structure outside, the inputs' inside
        out_leaves = list(_leaves(out))

        def per_output(opath, oleaf):
            by_arg = {}
            for i, path, leaf, cols in columns:
                picked = [_at(c, opath) for c in cols]
                by_arg.setdefault(i, []).append((path, _stack_columns(oleaf, picked,
                                                                      np.shape(leaf))))
            inner = tuple(_rebuild(args[i], by_arg[i]) for i in argnums_t)
            return inner[0] if isinstance(argnums, int) else inner
        result = _rebuild(out, [(opath, per_output(opath, oleaf))
                                for opath, oleaf in out_leaves])
        return (result, aux) if has_aux else result

    jacfwd_f.__pullback_api__ = "pb.jacfwd"
    return jacfwd_f


def _leaves(x, path=()):
    if runtime.is_structure(x):
        for k, v in runtime.fields_of(x):
            yield from _leaves(v, path + (k,))
    else:
        yield path, x


def _with_leaf(tree, path, value):
    if not path:
        return value
    k = path[0]
    fields = dict(runtime.fields_of(tree))
    fields[k] = _with_leaf(fields[k], path[1:], value)
    return runtime.rebuild_like(tree, fields)


def _at(tree, path):
    for k in path:
        tree = dict(runtime.fields_of(tree))[k]
    return tree


def _stack_columns(out, cols, in_shape):
    """Tangents of the output leaf ``out``, one per input element, as the
    Jacobian of shape ``out.shape + in_shape``."""
    stacked = np.stack([np.asarray(c) for c in cols], axis=-1)
    jac = stacked.reshape(np.shape(out) + tuple(in_shape))
    if not np.ndim(jac) and not isinstance(out, np.ndarray):
        return jac[()]
    return jac


def _rebuild(arg, pieces):
    if len(pieces) == 1 and pieces[0][0] == ():
        return pieces[0][1]
    tree = arg
    for path, jac in pieces:
        tree = _with_leaf(tree, path, jac)
    return tree


def custom_jvp(fun):
    """Give ``fun`` a forward rule of your own with ``@fun.defjvp`` (as JAX):
    the rule takes ``(primals, tangents)`` and returns ``(out, out_dot)``."""
    from .forward import CustomJVP
    return CustomJVP(fun)


def source(fun, *example_args, argnums=None, mode="reverse"):
    """The generated primal and adjoint of ``fun`` as Python source
    (``mode="forward"``: its tangent function).

    Without example arguments the generic transform is shown (every parameter
    a real number or array); with them, the one specialised to their types.
    """
    if mode == "forward":
        return _forward_source(fun, example_args, argnums)
    if mode != "reverse":
        raise ValueError(f"mode must be 'reverse' or 'forward', not {mode!r}.")
    handle = derivative_of(fun)
    if isinstance(handle, CustomVJP):
        raise TypeError(f"{handle.__name__} has a user-given rule; there is no generated "
                        "source to show.")
    n = len(handle.params)
    wrt = tuple(range(n)) if argnums is None else check_argnums(argnums)
    if example_args:
        return handle.specialize(tuple(example_args), tuple(sorted(set(wrt)))).source
    from .pipeline import transform
    param_kinds = {p: kinds_.NUMBER for p in handle.params}
    return transform(fun, param_kinds, [handle.params[i] for i in sorted(set(wrt))]).source


def _forward_source(fun, example_args, argnums):
    from . import forward
    handle = forward.forward_of(fun)
    if isinstance(handle, forward.CustomJVP):
        raise TypeError(f"{handle.__name__} has a user-given rule; there is no generated "
                        "source to show.")
    n = len(handle.params)
    wrt = tuple(range(n)) if argnums is None else check_argnums(argnums)
    wrt = tuple(sorted(set(wrt)))
    if example_args:
        args = tuple(example_args)
        wrt = tuple(i for i in wrt if is_inexact(args[i]))
        return handle.specialize(args, wrt).source
    param_kinds = {p: kinds_.NUMBER for p in handle.params}
    return forward.transform(fun, param_kinds, [handle.params[i] for i in wrt]).source
