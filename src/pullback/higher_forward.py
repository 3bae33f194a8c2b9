"""Derivatives of forward-mode derivatives: forward over forward, and reverse
over forward by the symmetry of each output's Hessian.

Forward over forward.  The tangent function forward mode generates is
Python and NumPy whose helpers have forward rules, so forward mode
transforms it again.  ``pb.jvp(f, (x,), (t,))`` called where ``x`` moves
along ``s`` and ``t`` along ``u`` has the tangent::

    (y, y_dot), (y_s, y_dot_s) = jvp(f_jvp, (x, t), (s, u))
    #  y_s = J s,  y_dot_s = f''(x)[t, s] + J u

``f_jvp`` is transformed for this once per signature without fused JAX
kernels (their tangents would need second derivatives of their own) and
cached apart from the one ``pb.jvp`` uses.  ``pb.jacfwd(f)``'s tangent is
that of each of its columns ``jvp(f, x, e_k)``; ``pb.linearize``'s
``f_jvp`` is linear in its tangent with the primals fixed.

Before / after: for ``f(x) = np.sin(x) * x``, one line of ``f_jvp(x, x_dot)``::

    sin_x_dot = x_dot * np.cos(x)

becomes, in ``f_jvp_jvp(x, x_dot, x_dot_1, x_dot_dot)`` (``x_dot_1``: the
tangent of ``x``, ``x_dot_dot``: that of the inner tangent ``x_dot``)::

    cos_x = np.cos(x)
    cos_x_dot = -x_dot_1 * np.sin(x)
    sin_x_dot = x_dot * cos_x
    sin_x_dot_dot = (broadcast_tangent(x_dot_dot, sin_x_dot) * cos_x
                     + broadcast_tangent(cos_x_dot, sin_x_dot) * x_dot)

Reverse over forward.  ``(x, t) -> (f(x), J(x) t)`` with cotangents
``(a, b)``: ``t`` gets ``J^T b``, and ``x`` gets ``J^T a + sum_i b_i H_i t``
where ``H_i`` is the (symmetric, real) Hessian of output ``i``; that sum is
the tangent of ``x -> J(x)^T b`` along ``t``, forward over reverse
(``higher.forward_over_reverse`` with the cotangent ``b``).  Exact; refused
for complex primals and ``has_aux``.
"""
from __future__ import annotations

import functools
import inspect
import threading
import weakref

import numpy as np

from .checks import check_tangents, is_inexact, signature_key
from .errors import NonDifferentiableError
from .runtime.forward_support import zeros_tangent

__all__ = ["JvpCallForward", "JvpCallVJP", "JacfwdForward", "LinearizeForward",
           "LinearizeVJP", "forward_over_forward", "nested_forward", "nested_reverse"]


#: ``pullback.higher``, which sets itself here when it is imported (this module
#: imports nothing above it: ``higher`` imports it).
higher = None


def _name(fn):
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", repr(fn))


# -- the inner tangent function, transformed to be differentiated again --------------

_inner = weakref.WeakKeyDictionary()     # ForwardDerivative -> {key: (LoadedForward, Bindings)}
_lock = threading.RLock()


def inner_forward(handle, args, wrt, has_aux=False):
    """``handle``'s tangent function for ``args`` without fused kernels
    (cached apart from the ordinary one)."""
    from .driver.bindings import Bindings
    from .lowering import kernels
    key = (tuple(signature_key(a) for a in args), tuple(wrt), has_aux,
           getattr(args, "layout", None))
    with _lock:
        cache = _inner.setdefault(handle, {})
        entry = cache.get(key)
        if entry is not None and entry[1].current():
            return entry[0]
        bindings = Bindings.capture(handle.fun)
        with kernels.options(lower=False):
            loaded = handle.transform(args, tuple(wrt), has_aux)
        cache[key] = (loaded, bindings)
    return loaded


def _plain_handle(fun, what):
    from .forward.calls import ForwardDerivative, forward_of
    handle = forward_of(fun)
    if not isinstance(handle, ForwardDerivative):
        raise NonDifferentiableError(
            f"pullback differentiates {what} of {_name(fun)} again only for a plain "
            f"function defined with def (this is a {type(fun).__name__}).",
            hint="Pass the plain function, with the values it reads as arguments.")
    return handle


def forward_over_forward(fun, primals, tangents, p_dot, t_dot, has_aux=False):
    """``pb.jvp(fun, primals, tangents)`` and its tangent when the primals
    move along ``p_dot`` and the tangents along ``t_dot`` (tuples, one per
    primal, an entry None where it does not move; either may be None):
    ``((out, out_dot), (out_s, out_dot_s))``, with ``has_aux`` ``out`` is
    ``(value, aux)``."""
    primals, tangents = check_tangents(primals, tangents)
    wrt = tuple(i for i, a in enumerate(primals) if is_inexact(a))
    n = len(primals)
    mask, moves = [], []
    for i in wrt:
        if p_dot is not None and p_dot[i] is not None:
            mask.append(i)
            moves.append(p_dot[i])
    for k, i in enumerate(wrt):
        if t_dot is not None and t_dot[i] is not None:
            mask.append(n + k)
            moves.append(t_dot[i])
    from .forward.calls import CustomJVP, forward_of
    if isinstance(forward_of(fun), CustomJVP) and not has_aux:
        return _custom_again(forward_of(fun), primals, tangents, p_dot, t_dot)
    handle = _plain_handle(fun, "pb.jvp")
    args = handle.bind(primals, {})
    if getattr(args, "layout", None) is not None:
        raise NonDifferentiableError(
            f"pullback differentiates pb.jvp of {_name(fun)} again only for a function "
            "with positional parameters (no *args, **kwargs or keyword-only ones).",
            hint="Give the function named parameters.")
    return _again(handle, args, wrt, tuple(tangents[i] for i in wrt), mask, moves, has_aux)


def _custom_again(fn, primals, tangents, p_dot, t_dot):
    """Forward over a ``pb.custom_jvp`` function: its rule, a Python function
    of ``(primals, tangents)``, differentiated forwards."""
    from .forward import calls
    if fn.rule is None:
        raise TypeError(f"custom_jvp function {fn.__name__} has no rule yet: decorate "
                        f"its rule with @{fn.__name__}.defjvp before differentiating.")
    primals = fn.bind(primals, {})
    full = tuple(t if is_inexact(p) else zeros_tangent(p) for p, t in zip(primals, tangents))

    def moved(d):
        if d is None or all(x is None for x in d):
            return None
        return tuple(zeros_tangent(p) if x is None else x for p, x in zip(primals, d))
    mask = tuple(k for k, d in ((0, moved(p_dot)), (1, moved(t_dot))) if d is not None)
    moves = tuple(d for d in (moved(p_dot), moved(t_dot)) if d is not None)
    if not mask:
        out, t = fn.rule(tuple(primals), full)
        return (out, t), (zeros_tangent(out), zeros_tangent(t))
    return calls.jvp_call(fn.rule, (tuple(primals), full), {}, mask, moves, top=True)


def _again(handle, args, wrt, inner_t, mask, moves, has_aux=False):
    """The tangent function of ``handle`` at ``args`` (tangents ``inner_t``
    for the parameters ``wrt``), differentiated forwards again: its
    positions ``mask`` (``args`` then ``inner_t``) move along ``moves``."""
    from .forward import calls
    loaded = inner_forward(handle, args, wrt, has_aux)
    if not mask:
        out, out_dot = loaded.jvp(*args, *inner_t)
        return (out, out_dot), (zeros_tangent(out), zeros_tangent(out_dot))
    try:
        return calls.jvp_call(loaded.jvp, tuple(args) + inner_t, {}, tuple(mask),
                              tuple(moves), top=True)
    except Exception as err:
        loaded.annotate(err)
        raise


class CalleeTangentForward:
    """Forward mode over a generated tangent function's call of a callee's
    tangent function (``fwd(tangents, *args)``, ``ForwardDerivative.for_callers``)."""

    def __init__(self, handle, mask):
        self.handle, self.mask = handle, tuple(mask)

    def call_kw(self, args, kwargs, keys, tangents):
        h = self.handle
        inner_t = tuple(args[0])
        call_args = tuple(args[1:])
        given_t, given = None, {}
        for k, t in zip(keys, tangents):
            if t is None:
                continue
            if k == 0:
                given_t = t
            else:
                given[k - 1 if isinstance(k, int) else k] = t
        if getattr(h, "variadic", False) or not isinstance(h.fun, type(_name)):
            raise NonDifferentiableError(
                f"pullback differentiates the tangent of {_name(h.fun)} again only for a "
                "plain function with positional parameters.",
                hint="Give the function named parameters.")
        full = h.bind(call_args, dict(kwargs))
        params = list(h.params)
        mask, moves = [], []
        where = {}
        if given:
            sig = inspect.signature(h.fun, follow_wrapped=False)
            bound = sig.bind(*range(len(call_args)), **{k: k for k in kwargs}).arguments
            where = {m: params.index(p) for p, m in bound.items()}
        by_param = {}
        for k, t in given.items():
            i = where[k]
            by_param[i] = t if i not in by_param else by_param[i] + t
        for i in sorted(by_param):
            mask.append(i)
            moves.append(by_param[i])
        if given_t is not None:
            for k, t in enumerate(given_t):
                if t is not None:
                    mask.append(len(full) + k)
                    moves.append(t)
        return _again(h, full, self.mask, inner_t, mask, moves)


class DynamicJvpForward:
    """Forward mode over a generated tangent function's ``dynamic_jvp(callee,
    mask, tangents, *args)`` (a call of a function value): the callee's
    tangent function, transformed forwards again.  Plain functions,
    partials, bound methods and rules' functions, tangents by position only."""

    def call_kw(self, args, kwargs, keys, tangents):
        from .callees import _unwrap
        from .driver import dispatch
        from .forward.calls import ForwardDerivative, forward_of
        from .rules.registry import lookup
        callee, mask, inner = args[0], tuple(args[1]), tuple(args[2])
        rest = tuple(args[3:])
        from .runtime import control
        if callee is control.nested_value or callee is functools.partial or (
                isinstance(callee, functools.partial) and -2 in mask):
            raise NonDifferentiableError(
                "pullback does not yet take a forward derivative of a forward derivative "
                "(pb.jacfwd of pb.jacfwd, pb.jvp inside pb.jvp) through a function value "
                "built from values being differentiated (a partial, or a nested function or "
                "lambda used as a value).",
                hint="Take one of the two derivatives in reverse mode (pb.jacfwd(pb.grad(f)), "
                     "pb.hessian), or pass those values to the function as arguments.")
        given_inner, given = None, {}
        for k, t in zip(keys, tangents):
            if t is None or k == 1:
                continue
            if k == 0:
                raise NonDifferentiableError(
                    "pullback cannot differentiate a tangent again through a function value "
                    "that depends on the inputs.",
                    hint="Pass the values the function reads as arguments.")
            if k == 2:
                given_inner = t
            elif isinstance(k, int):
                given[k - 3] = t
            else:
                self._refuse(callee)
        fn, args2, kwargs2, mask2 = _unwrap(callee, rest, dict(kwargs), mask)
        if not all(isinstance(k, int) and k >= 0 for k in mask2):
            self._refuse(fn)
        if lookup(fn) is not None:
            fn = dispatch._rule_wrapper(fn, len(args2), tuple(kwargs2))
        handle = forward_of(fn)
        if not isinstance(handle, ForwardDerivative) or handle.variadic:
            self._refuse(fn)
        full = handle.bind(tuple(args2), dict(kwargs2))    # (the keywords after the positions)
        shift = len(args2) - len(rest)
        wrt = tuple(sorted(set(mask2)))
        if len(wrt) != len(mask2):
            self._refuse(fn)
        order = {k: j for j, k in enumerate(mask2)}
        inner_t = tuple(inner[order[i]] for i in wrt)
        pos, moves = [], []
        for k in sorted(given):
            pos.append(k + shift)
            moves.append(given[k])
        if given_inner is not None:
            for k, i in enumerate(wrt):
                t = given_inner[order[i]]
                if t is not None:
                    pos.append(len(full) + k)
                    moves.append(t)
        return _again(handle, full, wrt, inner_t, pos, moves)

    @staticmethod
    def _refuse(fn):
        raise NonDifferentiableError(
            f"pullback differentiates a tangent again through a call of the function value "
            f"{_name(fn)} only with tangents in positional arguments, for a function "
            "defined with def, a partial or a bound method.", hint="Call the function directly.")


# -- pb.jvp called inside a function differentiated in forward mode --------------------

_JVP_PARAMS = ["fun", "primals", "tangents", "has_aux"]
_JVP_SIGNATURE = inspect.Signature(
    [inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in _JVP_PARAMS[:3]]
    + [inspect.Parameter("has_aux", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=False)])


def _bind_jvp(args, kwargs):
    b = _JVP_SIGNATURE.bind(*args, **kwargs)
    b.apply_defaults()
    return tuple(b.arguments[p] for p in _JVP_PARAMS)


class JvpCallForward:
    """Forward mode over a call of ``pb.jvp`` (``forward.calls.jvp_call``)."""

    params = _JVP_PARAMS

    def call_kw(self, args, kwargs, keys, tangents):
        fun, primals, tans, has_aux = _bind_jvp(args, kwargs)
        given = {}
        for k, t in zip(keys, tangents):
            if t is None:
                continue
            i = k if isinstance(k, int) else _JVP_PARAMS.index(k)
            if i == 0:
                raise NonDifferentiableError(
                    "pullback cannot follow a tangent through the function given to pb.jvp "
                    "(it reads a value being differentiated).",
                    hint="Pass the values the function reads to pb.jvp as primals.")
            if i == 3:
                continue
            given[i] = t
        (out, out_dot), (out_s, out_dot_s) = forward_over_forward(
            fun, primals, tans, given.get(1), given.get(2), has_aux)
        if has_aux:
            (value, aux), (value_s, aux_s) = out, out_s
            return (value, out_dot, aux), (value_s, out_dot_s, aux_s)
        return (out, out_dot), (out_s, out_dot_s)


# -- pb.jvp called inside a function differentiated in reverse mode --------------------

class JvpCallVJP:
    """Reverse mode over a call of ``pb.jvp``: the primals' cotangent is
    ``J^T a`` plus forward over reverse along the tangents (see the module's
    docstring), the tangents' ``J^T b``."""

    made = None
    variadic = False
    params = _JVP_PARAMS

    def __init__(self, jvp):
        self.fun = jvp            # pb.jvp (this module does not import the API)
        self.signature = _JVP_SIGNATURE
        self._pairs = {}

    def bind(self, args, kwargs):
        return _bind_jvp(args, kwargs)

    def call_primal(self, args, wrt, has_aux=False, inplace=None):
        fun, primals, tans, aux = args
        if aux:
            raise NonDifferentiableError(
                f"pullback differentiates pb.jvp of {_name(fun)} in reverse mode without "
                "has_aux only.", hint="Return the aux value from a function of its own.")
        out = self.fun(fun, primals, tans)
        return out, (fun, tuple(primals), tuple(tans), tuple(wrt))

    def call_adjoint(self, res, ct):
        from .runtime.core import add_cotangents
        fun, primals, tans, wrt = res
        a, b = ct if ct is not None else (None, None)
        moving = tuple(i for i, p in enumerate(primals) if is_inexact(p))
        for i in moving:
            if np.iscomplexobj(primals[i]) or np.iscomplexobj(tans[i]):
                raise NonDifferentiableError(
                    f"pullback differentiates pb.jvp of {_name(fun)} in reverse mode only for "
                    "real primals (it uses the symmetry of a real Hessian).",
                    hint="Split a complex primal into real and imaginary parts.")
        p_bar = [None] * len(primals)
        t_bar = [None] * len(primals)
        if b is not None and moving:
            (_, _, jtb), (_, _, hbt) = higher.forward_over_reverse(
                fun, primals, moving, False, moving, tuple(tans[i] for i in moving), ct=b)
            for i, g, h in zip(moving, jtb, hbt):
                t_bar[i] = g
                p_bar[i] = h
        if a is not None and moving:
            (_, _, jta), _ = higher.forward_over_reverse(fun, primals, moving, False, (), (), ct=a)
            for i, g in zip(moving, jta):
                p_bar[i] = g if p_bar[i] is None else add_cotangents(p_bar[i], g)
        p_bar = tuple(g if g is not None else zeros_tangent(p) for g, p in zip(p_bar, primals))
        t_bar = tuple(g if g is not None else zeros_tangent(p) for g, p in zip(t_bar, primals))
        return (None, p_bar if 1 in wrt else None, t_bar if 2 in wrt else None, None)

    def for_callers(self, mask, inplace=True):
        pair = self._pairs.get(mask)
        if pair is None:
            def primal(*args, **kwargs):
                return self.call_primal(self.bind(args, kwargs), mask)
            pair = self._pairs[mask] = (primal, self.call_adjoint)
        return pair


# -- functions made by pb.jacfwd and pb.linearize ----------------------------------------

class JacfwdForward:
    """The forward-mode handle of a function made by ``pb.jacfwd``: each
    column ``jvp(f, x, e_k)`` differentiated again (forward over forward)."""

    def __init__(self, fn):
        self.fn = fn
        self.made = higher.made_by(fn)
        self.signature = higher.base_signature(fn)
        self.params = list(self.signature.parameters)

    def bind(self, args, kwargs):
        if not kwargs and len(args) == len(self.params):
            return tuple(args)
        b = self.signature.bind(*args, **kwargs)
        b.apply_defaults()
        return tuple(b.arguments.values())

    def call(self, args, wrt, tangents, has_aux=False):
        from .forward.jacobian import jacfwd_eval
        m = self.made
        args = tuple(args)
        given = dict(zip(wrt, tangents))
        p_dot = tuple(given.get(i) for i in range(len(args)))
        made = []

        def column(args_, cols_wrt, col_tangents, aux):
            full = [zeros_tangent(a) for a in args_]
            for j, t in zip(cols_wrt, col_tangents):
                full[j] = t
            (o, d), (o_s, d_s) = forward_over_forward(m.fun, args_, tuple(full), p_dot,
                                                      None, aux)
            made.append((o_s, d_s))
            return o, d

        out = jacfwd_eval(m.fun, m.argnums, m.has_aux, args, column)
        it = iter(made)

        def column_s(args_, cols_wrt, col_tangents, aux):
            o_s, d_s = next(it)
            return o_s, d_s
        out_s = jacfwd_eval(m.fun, m.argnums, m.has_aux, args, column_s)
        if has_aux:
            out_s = out_s[0]
        return out, out_s

    def for_callers(self, mask):
        def fwd(tangents, *args, **kwargs):
            return self.call(self.bind(args, kwargs), mask, tangents)
        return fwd


class JacfwdVJP:
    """The reverse-mode handle of a function made by ``pb.jacfwd`` (one array
    argument differentiated, an array output, no aux): the cotangent ``C``
    of ``J(x)`` (column ``k``: ``J e_k``) gives ``sum_k`` of the tangent of
    ``x -> J(x)^T C[..., k]`` along ``e_k``, forward over reverse ``k``
    times (each output's Hessian is symmetric)."""

    variadic = False

    def __init__(self, fn):
        self.fn = fn
        self.made = higher.made_by(fn)
        self.signature = higher.base_signature(fn)
        self.params = list(self.signature.parameters)

    def bind(self, args, kwargs):
        return JacfwdForward.bind(self, args, kwargs)

    def _refuse(self, why):
        raise NonDifferentiableError(
            f"pullback differentiates pb.jacfwd({_name(self.made.fun)}) in reverse mode only "
            f"with one argument differentiated, an array or float, real, and an array "
            f"output without aux ({why}).",
            hint="Use pb.jacfwd(pb.jacfwd(f)) (forward over forward), or pb.hessian.")

    def call_primal(self, args, wrt, has_aux=False, inplace=None):
        m = self.made
        if not isinstance(m.argnums, int) or m.has_aux:
            self._refuse("argnums is a tuple or has_aux is set")
        args = tuple(args)
        out = self.fn(*args)
        return out, (args, tuple(wrt))

    def call_adjoint(self, res, ct):
        from .runtime.core import add_cotangents
        m = self.made
        args, wrt = res
        a = m.argnums % len(args)
        x = args[a]
        if not isinstance(x, (np.ndarray, float, np.floating)) or np.iscomplexobj(x):
            self._refuse(f"argument {a} is a {type(x).__name__}")
        for i in wrt:
            if np.iscomplexobj(args[i]):
                self._refuse(f"argument {i} is complex")
        wrt = tuple(sorted(wrt))
        ct = np.asarray(ct)
        n = np.size(x)
        total = [None] * len(args)
        for k in range(n):
            unit = np.zeros(np.shape(x))
            unit.reshape(-1)[k] = 1.0
            e_k = unit if np.ndim(x) else type(x)(1.0)
            c_k = ct.reshape(ct.shape[:ct.ndim - np.ndim(x)] + (n,))[..., k] \
                if np.ndim(x) else ct
            _, (_, _, hs) = higher.forward_over_reverse(m.fun, args, wrt, False, (a,), (e_k,),
                                                 ct=c_k)
            for i, h in zip(wrt, hs):
                total[i] = h if total[i] is None else add_cotangents(total[i], h)
        return tuple(total)

    def for_callers(self, mask, inplace=True):
        def primal(*args, **kwargs):
            return self.call_primal(self.bind(args, kwargs), mask)
        primal.__pullback_callee__ = (self, mask, inplace)
        return primal, self.call_adjoint


class LinearizeForward:
    """The forward-mode handle of ``pb.linearize``'s ``f_jvp``: linear in its
    tangents, the primals fixed, so its tangent is itself applied to theirs."""

    def __init__(self, fn):
        self.fn = fn
        self.params = [f"tangent_{i}" for i in range(len(higher.made_by(fn).primals))]

    def bind(self, args, kwargs):
        if kwargs:
            raise TypeError("the function made by pb.linearize takes its tangents by position.")
        return tuple(args)

    def call(self, args, wrt, tangents, has_aux=False):
        out = self.fn(*args)
        given = dict(zip(wrt, tangents))
        if not given:
            return out, zeros_tangent(out)
        return out, self.fn(*(given.get(i, zeros_tangent(a)) for i, a in enumerate(args)))

    def for_callers(self, mask):
        def fwd(tangents, *args, **kwargs):
            return self.call(self.bind(args, kwargs), mask, tangents)
        return fwd


class LinearizeVJP:
    """The reverse-mode handle of ``pb.linearize``'s ``f_jvp``: the transpose
    of ``t -> J t`` is ``c -> J^T c``, ``pb.vjp`` of the function."""

    made = None
    variadic = True

    def __init__(self, fn):
        self.fn = fn
        self.made_ = higher.made_by(fn)
        self.signature = inspect.signature(fn)

    def bind(self, args, kwargs):
        return LinearizeForward.bind(self, args, kwargs)

    def call_primal(self, args, wrt, has_aux=False, inplace=None):
        return self.fn(*args), tuple(wrt)

    def call_adjoint(self, res, ct):
        m = self.made_
        primals = m.primals
        if m.has_aux or any(np.iscomplexobj(p) for p in primals):
            raise NonDifferentiableError(
                f"pullback differentiates pb.linearize of {_name(m.fun)} in reverse mode for "
                "real primals without has_aux only.", hint="Use pb.vjp of the function.")
        moving = tuple(i for i, p in enumerate(primals) if is_inexact(p))
        (_, _, grads), _ = higher.forward_over_reverse(m.fun, primals, moving, False, (), (), ct=ct)
        by = dict(zip(moving, grads))
        return tuple(by.get(i) if i in res else None for i in range(len(primals)))

    def for_callers(self, mask, inplace=True):
        def primal(*args, **kwargs):
            return self.call_primal(self.bind(args, kwargs), mask)
        return primal, self.call_adjoint


class AddTangentsForward:
    """Forward mode over ``forward_support.add_tangents(*terms)``, linear in
    every term (a term that does not move has a zero tangent)."""

    def call_kw(self, args, kwargs, keys, tangents):
        from .runtime.forward_support import add_tangents
        given = {k: t for k, t in zip(keys, tangents) if t is not None}
        out = add_tangents(*args)
        if not given:
            return out, zeros_tangent(out)
        return out, add_tangents(*(given.get(i, zeros_tangent(a)) for i, a in enumerate(args)))


# -- hooks ---------------------------------------------------------------------------

_jvp_forward = JvpCallForward()
_jvp_reverse = None


def nested_forward(fn):
    """The forward handle of a call of a pullback API function that forward
    mode differentiates (``pb.jvp``), else None."""
    from .runtime import forward_support
    if getattr(fn, "__pullback_nested__", None) == "pb.jvp":
        return _jvp_forward
    if fn is forward_support.add_tangents:
        return AddTangentsForward()
    from .forward import calls
    if fn is calls.dynamic_jvp:
        return DynamicJvpForward()
    tag = getattr(fn, "__pullback_forward__", None)
    if tag is not None:
        from .forward.calls import ForwardDerivative
        if isinstance(tag[0], ForwardDerivative):
            return CalleeTangentForward(*tag)
    return None


def nested_reverse(fn):
    """The reverse handle of a call of ``pb.jvp``, else None."""
    global _jvp_reverse
    if getattr(fn, "__pullback_nested__", None) == "pb.jvp":
        if _jvp_reverse is None:
            _jvp_reverse = JvpCallVJP(fn)
        return _jvp_reverse
    return None
