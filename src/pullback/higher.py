"""Derivatives of derivatives: forward over reverse, and reverse over reverse
by the symmetry of the Hessian.

The primal and adjoint pullback generates are Python and NumPy, and the
run-time helpers they call have forward rules (``rules.runtime_helpers``), so
forward mode transforms them like any user function.  The tangent of
``grad f`` at ``x`` along ``t`` (a Hessian-vector product) is then::

    (out, res), (out_dot, res_dot) = jvp(f_primal, (x,), (t,))
    grads, grads_dot = jvp(f_adjoint, (res, 1.0), (res_dot, 0.0))

The inner derivative is transformed for this once per signature, without
fused JAX kernels (their partials would need second derivatives of their
own) and with out-of-place accumulation (``x_bar = x_bar + ...``: forward
mode then sees no write into a buffer it does not own); it is cached apart
from the derivative ``pb.grad`` uses.

Reverse over reverse: ``x -> grad_a f(x)`` is a gradient, so its vjp with a
cotangent ``c`` is ``sum_a c_a d/dx grad_a f(x)``, the Hessian applied to
``c`` placed at the arguments ``a``; the Hessian of a real scalar function
is symmetric, so that is the jvp of ``grad f`` (all arguments) along ``c``:
forward over reverse again.  ``pb.grad(pb.grad(f))``, ``pb.vjp(pb.grad(f),
x)`` and a ``pb.grad`` called inside a differentiated function go there
(``GradVJP``); a third derivative is forward over that (``GradForward`` of a
``GradVJP``: the forward transform runs over the tangent function forward
mode generated, whose helpers have forward rules too).

Before / after: for ``f(x) = np.sum(np.sin(x) * x**3)``, ``pb.jvp(pb.grad(f),
(x,), (t,))`` runs the tangent functions of ``f_primal`` and ``f_adjoint``;
two lines of the adjoint::

    sin_x_bar = unbroadcast(sin_x_x_pow_3_bar * x_pow_3, sin_x)
    x_bar = x_bar + sin_x_bar * np.cos(x)

become (``f_adjoint_jvp``; ``x_dot``, ``x_pow_3_dot`` are the residuals' tangents)::

    prod = sin_x_x_pow_3_bar * x_pow_3
    prod_dot = broadcast_tangent(sin_x_x_pow_3_bar_dot, prod) * x_pow_3 + ...
    sin_x_bar = unbroadcast(prod, sin_x)
    sin_x_bar_dot = unbroadcast(prod_dot, sin_x)
    cos_x = np.cos(x)
    cos_x_dot = -x_dot * np.sin(x)
    ...

(``pb.source(pb.grad(f), x)`` shows them.)
"""
from __future__ import annotations

import functools
import inspect
import threading
import types
import weakref

import numpy as np

from .checks import (check_argnums, check_scalar_output, is_inexact, one_like,
                     signature_key, split_aux)
from .again import again
from .errors import NonDifferentiableError, PullbackError
from .runtime.forward_support import add_tangents as _add_tangents, zeros_tangent

__all__ = ["made_by", "GradVJP", "GradForward", "PullbackForward", "PullbackVJP",
           "forward_over_reverse", "inner_transform", "source_of"]


# -- what a function made by pb.grad / pb.value_and_grad / pb.vjp holds -------------

class Made:
    """How a function made by pullback's API was made: the function it
    differentiates and the options (``pb.grad``: ``argnums``, ``has_aux``)."""

    def __init__(self, kind, fun, argnums=0, has_aux=False, primals=None):
        self.kind = kind     # "grad", "value_and_grad", "vjp", "jacfwd" or "linearize"
        self.fun = fun
        self.argnums = argnums
        self.argnums_t = check_argnums(argnums) if kind != "vjp" else ()
        self.has_aux = has_aux
        self.primals = primals           # pb.vjp: the primals it was taken at


def made_by(fn):
    """The ``Made`` of a function made by ``pb.grad``, ``pb.value_and_grad``
    or ``pb.vjp`` (its pullback), else None."""
    return getattr(fn, "__pullback_made__", None)


def base_signature(fn):
    """The signature of the function under the derivatives ``fn`` was made of."""
    while made_by(fn) is not None:
        fn = made_by(fn).fun
    try:
        return inspect.signature(fn, follow_wrapped=False)
    except (TypeError, ValueError):
        return inspect.signature(fn)


# -- the inner derivative, transformed to be differentiated again --------------------

_inner = weakref.WeakKeyDictionary()     # Derivative handle -> {key: (Loaded, Bindings)}
_lock = threading.RLock()


def inner_transform(handle, args, wrt, has_aux=False):
    """``handle``'s transform for ``args`` without fused kernels and with
    out-of-place accumulation (cached apart from the ordinary one)."""
    from .driver.bindings import Bindings
    from .lowering import kernels
    layout = handle.layout_of(args)
    key = (tuple(signature_key(a) for a in args), wrt, has_aux, layout)
    with _lock:
        cache = _inner.setdefault(handle, {})
        entry = cache.get(key)
        if entry is not None and entry[1].current():
            return entry[0]
        bindings = Bindings.capture(handle.fun)
        with again(), kernels.options(lower=False):
            loaded = handle.transform(args, wrt, has_aux, inplace=False)
        cache[key] = (loaded, bindings)
    return loaded


def _jvp(fn, args, mask, tangents):
    """``fn(*args)`` and its tangent, the arguments at ``mask`` carrying ``tangents``."""
    from .forward import calls
    keep = [(k, t) for k, t in zip(mask, tangents) if t is not None]
    return calls.jvp_call(fn, tuple(args), {}, tuple(k for k, _ in keep),
                          tuple(t for _, t in keep), top=True)


def _annotated(loaded, run):
    """``run()``; an error in ``loaded``'s generated code (when it runs, or when
    forward mode transforms it) is given the user's line it came from."""
    try:
        return run()
    except PullbackError as err:
        where = err.location
        if where is not None and where.filename == getattr(loaded, "filename", None):
            user = loaded.user_line(where.lineno)
            if user is not None:
                import linecache
                text = linecache.getline(loaded.user_file, user).strip()
                err.add_note("in the derivative of this line, differentiated again (forward "
                             f'over reverse):\n  File "{loaded.user_file}", line {user}\n'
                             f"    {text}")
        else:
            loaded.annotate(err)
        raise
    except Exception as err:
        loaded.annotate(err)
        raise


def forward_over_reverse(fun, args, argnums, has_aux, wrt, tangents, ct=None, ct_dot=None):
    """The value, aux and gradients of ``fun`` at ``args`` (with respect to
    ``argnums``, a sorted tuple), and their tangents when the arguments
    ``wrt`` move along ``tangents``: ``((value, aux, grads), (value_dot,
    aux_dot, grads_dot))``, ``grads`` one per index of ``argnums``.  The
    output cotangent is 1 (``ct``/``ct_dot``: another, and its tangent)."""
    from .callees import Bound, CustomVJP, Derivative, derivative_of
    handle = derivative_of(fun)
    if isinstance(handle, Bound):
        lead = handle.lead
        if handle.keywords or handle.variadic:
            raise NonDifferentiableError(
                "pullback differentiates a gradient of a partial with keyword arguments or of "
                "a method taking *args only once.", hint="Differentiate a plain function.")
        shift = len(lead)
        return forward_over_reverse(handle.inner.fun if isinstance(handle.inner, Derivative)
                                    else handle.inner, tuple(lead) + tuple(args),
                                    tuple(a + shift for a in argnums), has_aux,
                                    tuple(k + shift for k in wrt), tangents, ct, ct_dot)
    if isinstance(handle, GradVJP):
        return _over_grad(handle, args, argnums, has_aux, wrt, tangents, ct, ct_dot)
    if isinstance(handle, CustomVJP):
        handle._check()
        primal, adjoint, loaded = handle.fwd, handle.bwd, None
        select = None
    elif isinstance(handle, Derivative):
        args = handle.bind(tuple(args), {})
        loaded = inner_transform(handle, args, tuple(argnums), has_aux)
        primal, adjoint = loaded.primal, loaded.adjoint
        select = argnums
    else:
        raise NonDifferentiableError(f"pullback cannot differentiate the gradient of "
                                     f"{getattr(fun, '__name__', fun)} again.")

    def run():
        (out, res), (out_dot, res_dot) = _jvp(primal, args, wrt, tangents)
        value, aux = split_aux(fun, out, has_aux)
        value_dot, aux_dot = split_aux(fun, out_dot, has_aux) if has_aux else (out_dot, None)
        if ct is None:
            check_scalar_output(fun, value)
        c = one_like(value) if ct is None else ct
        grads, grads_dot = _jvp(adjoint, (res, c), (0, 1), (res_dot, ct_dot))
        return value, aux, grads, value_dot, aux_dot, grads_dot
    value, aux, grads, value_dot, aux_dot, grads_dot = \
        _annotated(loaded, run) if loaded is not None else run()
    if select is None:            # a custom_vjp's bwd: one cotangent per argument
        from . import runtime
        grads = tuple(runtime.project(grads[i], args[i]) for i in argnums)
        grads_dot = tuple(runtime.project(grads_dot[i], args[i])
                          if grads_dot[i] is not None else zeros_tangent(args[i])
                          for i in argnums)
    grads = tuple(_fresh(g, args[i]) for g, i in zip(grads, argnums))
    grads_dot = tuple(_fresh_tangent(d, args[i]) for d, i in zip(grads_dot, argnums))
    return (value, aux, grads), (value_dot, aux_dot, grads_dot)


def _fresh(g, x):
    from . import runtime
    return runtime.zeros_like(x) if g is None else g


def _fresh_tangent(d, x):
    if d is None:
        return zeros_tangent(x)
    if isinstance(d, np.ndarray) and not d.flags.writeable:
        return np.array(d)
    return d


# -- reverse over reverse: the vjp of a gradient ------------------------------------

class GradVJP:
    """The reverse-mode handle of a function made by ``pb.grad`` or
    ``pb.value_and_grad``: its vjp is a Hessian-vector product, computed
    forward over reverse (the Hessian is symmetric)."""

    def __init__(self, fn):
        self.fn = fn
        self.made = made_by(fn)
        self.fun = self.made.fun
        self.signature = base_signature(fn)
        self.params = list(self.signature.parameters)
        self.variadic = False
        self._masked = {}

    def bind(self, args, kwargs):
        if not kwargs and len(args) == len(self.params):
            return tuple(args)
        b = self.signature.bind(*args, **kwargs)
        b.apply_defaults()
        return tuple(b.arguments.values())

    def call_primal(self, args, wrt, has_aux=False, inplace=None):
        args = tuple(args)
        out = self.fn(*args)
        return out, (args, tuple(wrt))

    def split_ct(self, ct):
        """The cotangents of (value, aux, grads) in the output's structure."""
        m = self.made
        single = isinstance(m.argnums, int)
        if m.kind == "grad":
            g_ct, aux_ct = (ct[0], ct[1]) if m.has_aux else (ct, None)
            v_ct = None
        else:
            head, g_ct = ct
            v_ct, aux_ct = (head[0], head[1]) if m.has_aux else (head, None)
        g_ct = (g_ct,) if single else tuple(g_ct)
        return v_ct, aux_ct, g_ct

    def call_adjoint(self, res, ct):
        args, wrt = res
        m = self.made
        v_ct, aux_ct, g_ct = self.split_ct(ct)
        if aux_ct is not None and any(np.any(np.asarray(leaf) != 0) for leaf in _leaves(aux_ct)):
            raise NonDifferentiableError(
                f"The aux output of the gradient of {_name(m.fun)} is differentiated here; "
                "pullback differentiates a gradient's aux output only as a constant.",
                hint="Return the value from a function of its own and differentiate that, or "
                     "stop the outer derivative from reading the aux output.")
        for i in wrt:
            if np.iscomplexobj(args[i]) if not isinstance(args[i], (tuple, list, dict)) \
                    else any(np.iscomplexobj(v) for v in _leaves(args[i])):
                raise NonDifferentiableError(
                    f"pullback differentiates the gradient of {_name(m.fun)} again only for "
                    "real arguments (its reverse-over-reverse uses the symmetry of a real "
                    "Hessian).", hint="Split a complex argument into real and imaginary parts.")
        # the cotangent of grad_a f, placed at the arguments a: a direction
        direction = {}
        for a, c in zip(m.argnums_t, g_ct):
            if c is None:
                continue
            direction[a] = c if a not in direction else _add(direction[a], c)
        moving = tuple(sorted(set(wrt) | set(direction)))
        tangents = tuple(direction[i] if i in direction else zeros_tangent(args[i])
                         for i in moving)
        outs = tuple(sorted(set(wrt)))
        (value, aux, grads), (_, _, hv) = forward_over_reverse(
            m.fun, args, outs, m.has_aux, moving, tangents)
        full = [None] * len(args)
        for i, h, g in zip(outs, hv, grads):
            if v_ct is not None:      # value_and_grad: the value's cotangent times the gradient
                h = _add(h, _scale(g, v_ct))
            full[i] = h
        return tuple(full)

    def for_callers(self, mask, inplace=True):
        pair = self._masked.get(mask)
        if pair is None:
            def primal(*args, **kwargs):
                return self.call_primal(self.bind(args, kwargs), mask)
            primal.__pullback_callee__ = (self, mask, inplace)
            pair = self._masked[mask] = (primal, self.call_adjoint)
        return pair


def _over_grad(handle, args, argnums, has_aux, wrt, tangents, ct, ct_dot):
    """Forward over a gradient's own reverse mode (third derivatives).

    ``handle.fn`` is ``g = grad_a f``; its gradient (with a cotangent ``c``)
    is the jvp of ``grad f`` along ``c`` placed at ``a`` (``GradVJP``), and
    the tangent of that along ``tangents`` is one more forward pass over the
    tangent functions of ``f``'s primal and adjoint: forward over forward
    over reverse.  Returns what ``forward_over_reverse`` returns."""
    from .callees import Derivative, derivative_of
    m = handle.made
    if m.kind != "grad" or m.has_aux or has_aux or ct is not None or ct_dot is not None:
        raise NonDifferentiableError(
            f"pullback takes a third derivative of {_name(m.fun)} as pb.grad(pb.grad(pb.grad(f))) "
            "(or pb.jvp / pb.hessian of pb.grad(f)), without aux outputs or value_and_grad in "
            "the middle.", hint="Nest pb.grad, pb.jvp and pb.hessian of a plain function.")
    base = derivative_of(m.fun)
    if not isinstance(base, Derivative):
        raise NonDifferentiableError(
            f"pullback takes third derivatives of plain functions only, not of "
            f"{_name(m.fun)}.", hint="Pass the function itself.")
    from .forward import calls
    args = base.bind(tuple(args), {})
    inner_wrt = tuple(sorted(set(argnums) | set(m.argnums_t)))
    loaded = inner_transform(base, args, inner_wrt, False)

    def run():
        # the value of g = grad_a f, which must be a scalar: its cotangent is 1
        out, res = loaded.primal(*args)
        grads0 = loaded.adjoint(res, one_like(out))
        value = grads0[inner_wrt.index(m.argnums_t[0])]
        check_scalar_output(handle.fn, value)
        c = one_like(value)
        direction = {m.argnums_t[0]: c}
        moving = tuple(sorted(set(wrt) | set(direction)))
        dir_t = tuple(direction[i] if i in direction else zeros_tangent(args[i])
                      for i in moving)
        p_jvp = calls.forward_of(loaded.primal).specialize(args, moving).jvp
        # stage 1: the primal's tangent function, along `tangents` of the arguments
        ((out, res), (_, res_d)), ((_, res_t), (_, res_d_t)) = _jvp(
            p_jvp, args + dir_t, wrt, tangents)
        a_jvp = calls.forward_of(loaded.adjoint).specialize((res, one_like(out)), (0,)).jvp
        # stage 2: the adjoint's tangent function (its tangent: the Hessian along c)
        (grads, grads_d), (grads_t, grads_d_t) = _jvp(
            a_jvp, (res, one_like(out), res_d), (0, 2), (res_t, res_d_t))
        return value, grads, grads_d, grads_t, grads_d_t
    value, grads, grads_d, grads_t, grads_d_t = _annotated(loaded, run)
    pick = [inner_wrt.index(i) for i in argnums]
    a = inner_wrt.index(m.argnums_t[0])
    value_dot = _fresh_tangent(grads_t[a], args[m.argnums_t[0]])
    out = tuple(_fresh(grads_d[k], args[i]) for k, i in zip(pick, argnums))
    out_dot = tuple(_fresh_tangent(grads_d_t[k], args[i]) for k, i in zip(pick, argnums))
    return (value, None, out), (value_dot, None, out_dot)


# -- forward over reverse: the jvp of a gradient ------------------------------------

class GradForward:
    """The forward-mode handle of a function made by ``pb.grad`` or
    ``pb.value_and_grad`` (``forward.calls.forward_of``)."""

    def __init__(self, fn):
        self.fn = fn
        self.made = made_by(fn)
        self.signature = base_signature(fn)
        self.params = list(self.signature.parameters)
        self._callers = {}

    def bind(self, args, kwargs):
        if not kwargs and len(args) == len(self.params):
            return tuple(args)
        b = self.signature.bind(*args, **kwargs)
        b.apply_defaults()
        return tuple(b.arguments.values())

    def call(self, args, wrt, tangents, has_aux=False):
        m = self.made
        args = tuple(args)
        argnums = tuple(sorted(set(m.argnums_t)))
        (value, aux, grads), (value_dot, aux_dot, grads_dot) = forward_over_reverse(
            m.fun, args, argnums, m.has_aux, tuple(wrt), tuple(tangents))
        by = dict(zip(argnums, grads))
        by_dot = dict(zip(argnums, grads_dot))
        g = tuple(by[i] for i in m.argnums_t)
        g_dot = tuple(by_dot[i] for i in m.argnums_t)
        if isinstance(m.argnums, int):
            g, g_dot = g[0], g_dot[0]
        if m.kind == "grad":
            out, out_dot = ((g, aux), (g_dot, aux_dot)) if m.has_aux else (g, g_dot)
        else:
            head, head_dot = ((value, aux), (value_dot, aux_dot)) if m.has_aux \
                else (value, value_dot)
            out, out_dot = (head, g), (head_dot, g_dot)
        if has_aux:         # the caller's has_aux: the output is (out, aux)
            out_dot = out_dot[0]
        return out, out_dot

    def for_callers(self, mask):
        fwd = self._callers.get(mask)
        if fwd is None:
            def fwd(tangents, *args, **kwargs):
                return self.call(self.bind(args, kwargs), mask, tangents)
            fwd.__name__ = "grad_jvp"
            self._callers[mask] = fwd
        return fwd


class PullbackForward:
    """The forward-mode handle of a pullback made by ``pb.vjp``: linear in
    the cotangent, so its tangent is itself applied to the cotangent's
    tangent (the primals it was taken at are constants, as in JAX)."""

    def __init__(self, fn):
        self.fn = fn
        self.params = ["ct"]

    def bind(self, args, kwargs):
        if kwargs or len(args) != 1:
            raise TypeError("a pullback made by pb.vjp takes one cotangent.")
        return tuple(args)

    def call(self, args, wrt, tangents, has_aux=False):
        out = self.fn(*args)
        if not wrt:
            return out, zeros_tangent(out)
        return out, self.fn(tangents[0])

    def for_callers(self, mask):
        def fwd(tangents, *args, **kwargs):
            return self.call(self.bind(args, kwargs), mask, tangents)
        return fwd


class PullbackVJP:
    """The reverse-mode handle of a pullback made by ``pb.vjp``: the
    transpose of ``ct -> J^T ct`` is ``w -> J w``, a jvp of the function."""

    def __init__(self, fn):
        self.fn = fn
        self.made = made_by(fn)
        self.params = ["ct"]
        self.signature = inspect.Signature(
            [inspect.Parameter("ct", inspect.Parameter.POSITIONAL_OR_KEYWORD)])
        self.variadic = False

    def bind(self, args, kwargs):
        return PullbackForward.bind(self, args, kwargs)

    def call_primal(self, args, wrt, has_aux=False, inplace=None):
        out = self.fn(*args)
        return out, tuple(wrt)

    def call_adjoint(self, res, ct):
        from .forward import calls
        m = self.made
        if not res:
            return (None,)
        primals = m.primals
        wrt = tuple(i for i, p in enumerate(primals) if is_inexact(p))
        t = tuple(ct[i] if ct[i] is not None else zeros_tangent(primals[i]) for i in wrt)
        _, out_dot = calls.jvp_call(m.fun, primals, {}, wrt, t, m.has_aux, top=True)
        return (out_dot,)

    def for_callers(self, mask, inplace=True):
        def primal(*args, **kwargs):
            return self.call_primal(self.bind(args, kwargs), mask)
        primal.__pullback_callee__ = (self, mask, inplace)
        return primal, self.call_adjoint


# -- calls of user functions inside the generated code -------------------------------

class CalleePrimalForward:
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
        from .callees import CustomVJP, Derivative
        h = self.handle
        if getattr(h, "jvp_of", None) is not None:      # pb.checkpoint, pb.forward
            from .callees import derivative_of
            h = derivative_of(h.jvp_of)
        args = h.bind(tuple(args), {})
        if isinstance(h, Derivative):
            loaded = inner_transform(h, args, self.mask, False)
            (out, r), (out_dot, r_dot) = _annotated(
                loaded, lambda: _jvp(loaded.primal, args, wrt, tangents))
            return (out, (loaded, r, self.mask, len(args), None)), \
                (out_dot, (None, r_dot, None, None, None))
        if isinstance(h, CustomVJP):
            h._check()
            (out, r), (out_dot, r_dot) = _jvp(h.fwd, args, wrt, tangents)
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
            f"pullback cannot differentiate the derivative of {_name(self.fun)} again "
            f"(a {type(h).__name__}).", hint="Call a plain function defined with def.")

    def for_callers(self, mask):
        def fwd(tangents, *args, **kwargs):
            return self.call(self.bind(args, kwargs), mask, tangents)
        return fwd


class CalleeAdjointForward:
    """Forward mode over a generated adjoint's call of a callee's adjoint."""

    params = ["res", "ct"]

    def __init__(self, handle):
        self.handle = handle

    def bind(self, args, kwargs):
        return tuple(args)

    def call(self, args, wrt, tangents, has_aux=False):
        from .callees import CustomVJP, Derivative
        from . import runtime
        h = self.handle
        if getattr(h, "jvp_of", None) is not None:      # pb.checkpoint, pb.forward
            from .callees import derivative_of
            h = derivative_of(h.jvp_of)
        res, ct = args
        given = dict(zip(wrt, tangents))
        res_dot, ct_dot = given.get(0), given.get(1)
        if isinstance(h, Derivative):
            loaded, r, mask, n, _ = res
            r_dot = res_dot[1] if res_dot is not None else None
            grads, grads_dot = _annotated(loaded, lambda: _jvp(
                loaded.adjoint, (r, ct), (0, 1), (r_dot, ct_dot)))
            full, full_dot = [None] * n, [None] * n
            for i, g, d in zip(mask, grads, grads_dot):
                full[i], full_dot[i] = g, d
            return tuple(full), tuple(full_dot)
        if isinstance(h, CustomVJP):
            r, a = res
            r_dot = res_dot[0] if res_dot is not None else None
            grads, grads_dot = _jvp(h.bwd, (r, ct), (0, 1), (r_dot, ct_dot))
            out = h.call_adjoint(res, ct)
            out_dot = tuple(None if d is None else runtime.project(d, x)
                            for d, x in zip(grads_dot, a))
            return out, out_dot
        if isinstance(h, GradVJP):
            a, mask = res
            a_dot = res_dot[0] if res_dot is not None else None
            return _adjoint_of_grad_forward(h, a, mask, ct, a_dot, ct_dot)
        raise NonDifferentiableError(
            f"pullback cannot differentiate the derivative of {_name(getattr(h, 'fun', h))} "
            "again.", hint="Call a plain function defined with def.")

    def for_callers(self, mask):
        def fwd(tangents, *args, **kwargs):
            return self.call(self.bind(args, kwargs), mask, tangents)
        return fwd


def _adjoint_of_grad_forward(h, args, mask, ct, args_dot, ct_dot):
    """``GradVJP.call_adjoint`` and its tangent: a third derivative taken
    inside a differentiated function; refused for now."""
    raise NonDifferentiableError(
        f"pullback does not yet take the derivative of a second derivative of {_name(h.fun)} "
        "computed inside a differentiated function.",
        hint="Nest pb.grad three times around the plain function instead.")


class DynamicCallForward:
    """Forward mode over a generated primal's ``dynamic_call(callee, mask,
    inplace, *args)`` (a function value, dispatched when the call runs): the
    dispatcher's plan, its callee's primal transformed forwards."""

    params = ["callee", "mask", "inplace"]

    def call_kw(self, args, kwargs, keys, tangents):
        from .callees import _unwrap
        from .driver import dispatch
        callee, mask, inplace = args[0], args[1], args[2]
        rest = tuple(args[3:])
        routed = _function_value_call(self, callee, mask, inplace, rest, kwargs, keys, tangents)
        if routed is not None:
            return routed
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
        plan = dispatch._plan(fn, len(rest2), tuple(kwargs2), mask2, inplace)
        if isinstance(plan, dispatch._Constant):
            out, res = plan.primal(rest2, kwargs2)
            return (out, res), (zeros_tangent(out), None)
        tag = getattr(plan.pair[0], "__pullback_callee__", None)
        if not isinstance(plan, dispatch._Differentiated) or tag is None:
            raise NonDifferentiableError(
                f"pullback cannot differentiate the gradient of {_name(fn)} again.",
                hint="Call a plain function defined with def.")
        handle, pmask, _ = tag
        full, by_param = _params_of(handle, fn, rest2, kwargs2, given)
        wrt = tuple(sorted(by_param))
        (out, r), (out_dot, r_dot) = CalleePrimalForward(handle, tuple(pmask)).call(
            full, wrt, tuple(by_param[i] for i in wrt))
        return (out, (plan, r)), (out_dot, (None, r_dot))


def _function_value_call(forward, callee, mask, inplace, rest, kwargs, keys, tangents):
    """``DynamicCallForward`` of a call that builds a function value
    (``partial(f, x)``, ``nested_value(lifted, y=y)``) or calls one whose held
    values carry a gradient, as ``driver.dispatch`` routes them; None for
    any other call."""
    from .callees import _CALLEE
    from .driver import dispatch
    from .forward import calls as forward_calls
    from .runtime import control
    if callee is control.nested_value or callee is functools.partial:
        value, res = dispatch._make_function(callee, mask, rest, kwargs)
        given = [(k - 3 if isinstance(k, int) else k, t) for k, t in zip(keys, tangents)
                 if t is not None and not (isinstance(k, int) and k < 3)]
        _, value_dot = forward_calls._make_function_jvp(
            callee, rest, kwargs, tuple(k for k, _ in given), tuple(t for _, t in given))
        return (value, res), (value_dot, None)
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
            from .runtime import function_values as fv
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
        from .callees import _RECEIVER
        from .driver import dispatch
        from .rules.registry import lookup
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
            callee = dispatch._rule_wrapper(name, len(rest) + 1, tuple(kwargs), method=True)
        else:
            method = getattr(obj, name)
            if not (isinstance(method, type(self.call_kw)) and method.__self__ is obj):
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
        from .driver import dispatch
        (plan, r), ct = args
        given = dict(zip(wrt, tangents))
        res_dot, ct_dot = given.get(0), given.get(1)
        if isinstance(plan, dispatch._MadeFunction):     # linear in ct
            out = plan.adjoint(r, ct)
            return out, (plan.adjoint(r, ct_dot) if ct_dot is not None
                         else tuple(zeros_tangent(o) for o in out))
        if isinstance(plan, dispatch._HeldValues):
            inner_dot = res_dot[1] if res_dot is not None else None
            out, out_dot = self.call((r, ct), (0, 1), (inner_dot, ct_dot))
            return plan.regroup(out), plan.regroup(out_dot)
        if isinstance(plan, dispatch._Constant):
            out = plan.adjoint(r, ct)
            return out, tuple(zeros_tangent(o) for o in out)
        handle = plan.pair[0].__pullback_callee__[0]
        r_dot = res_dot[1] if res_dot is not None else None
        full, full_dot = CalleeAdjointForward(handle).call(
            (r, ct), (0, 1), (r_dot, ct_dot))
        return tuple(full[i] for i in plan.positions), \
            tuple(full_dot[i] for i in plan.positions)


def _params_of(handle, fn, args, kwargs, given):
    """A call's arguments bound to ``handle``'s parameters, and the tangents
    ``given`` (by position or keyword) by parameter index."""
    from .driver.dispatch import _Marker
    if getattr(handle, "variadic", False):
        flat = handle.bind(tuple(_Marker(i) for i in range(len(args))),
                           {k: _Marker(k) for k in kwargs})
        where = {m.key: i for i, m in enumerate(flat) if isinstance(m, _Marker)}
    else:
        sig = getattr(handle, "signature", None) or inspect.signature(fn, follow_wrapped=False)
        params = list(sig.parameters)
        markers = sig.bind(*range(len(args)), **{k: k for k in kwargs}).arguments
        where = {m: params.index(p) for p, m in markers.items()
                 if not isinstance(m, (tuple, dict))}
    by_param = {}
    for k, t in given.items():
        if k not in where:
            raise NonDifferentiableError(
                f"pullback cannot differentiate the gradient of {_name(fn)} again through its "
                "*args or **kwargs.", hint="Give the function named parameters.")
        i = where[k]
        by_param[i] = t if i not in by_param else by_param[i] + t
    return handle.bind(tuple(args), dict(kwargs)), by_param


_helpers = weakref.WeakKeyDictionary()


def _is_runtime_helper(fn):
    from .rules.registry import is_nondifferentiable, lookup
    return isinstance(fn, types.FunctionType) \
        and (fn.__module__ or "").startswith("pullback.runtime.") \
        and fn.__module__ not in ("pullback.runtime.calls", "pullback.runtime.control") \
        and lookup(fn) is None and not is_nondifferentiable(fn)


def callee_forward(fn):
    """The forward handle of a generated call's callee primal or adjoint, or None."""
    from .runtime import calls as runtime_calls
    if getattr(fn, "__pullback_nested__", None) is not None \
            or getattr(fn, "__pullback_forward__", None) is not None \
            or fn is _add_tangents or getattr(fn, "__name__", None) == "dynamic_jvp":
        # pb.jvp called inside, or a tangent function's callee (forward over forward)
        from .higher_forward import nested_forward
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
            from .forward.calls import ForwardDerivative
            h = _helpers[fn] = ForwardDerivative(fn)
        return h
    tag = getattr(fn, "__pullback_callee__", None)
    if tag is not None:
        handle, mask, _ = tag
        return CalleePrimalForward(handle, tuple(mask))
    owner = getattr(fn, "__self__", None)
    if owner is not None and getattr(fn, "__name__", None) == "call_adjoint":
        from .callees import Bound, CustomVJP, Derivative
        if isinstance(owner, (Derivative, CustomVJP, Bound, GradVJP, PullbackVJP)):
            return CalleeAdjointForward(owner)
    return None


def nested_reverse(fn):
    """The reverse handle of a call of ``pb.jvp`` (``higher_forward``)."""
    from .higher_forward import nested_reverse
    return nested_reverse(fn)


# -- handles, made once per function ------------------------------------------------

_reverse = weakref.WeakKeyDictionary()
_forward = weakref.WeakKeyDictionary()


def reverse_handle(fn):
    """``callees.derivative_of`` of a function made by pullback's API."""
    m = made_by(fn)
    if m is None:
        return None
    h = _reverse.get(fn)
    if h is None:
        if m.kind in ("jacfwd", "linearize"):
            from .higher_forward import JacfwdVJP, LinearizeVJP
            h = _reverse[fn] = (JacfwdVJP if m.kind == "jacfwd" else LinearizeVJP)(fn)
        else:
            h = _reverse[fn] = PullbackVJP(fn) if m.kind == "vjp" else GradVJP(fn)
    return h


def forward_handle(fn):
    """``forward.calls.forward_of`` of a function made by pullback's API."""
    m = made_by(fn)
    if m is None:
        return None
    h = _forward.get(fn)
    if h is None:
        from . import higher_forward
        if m.kind == "jacfwd":
            h = _forward[fn] = higher_forward.JacfwdForward(fn)
        elif m.kind == "linearize":
            h = _forward[fn] = higher_forward.LinearizeForward(fn)
        else:
            h = _forward[fn] = PullbackForward(fn) if m.kind == "vjp" else GradForward(fn)
    return h


# -- small helpers -------------------------------------------------------------------

def _name(fn):
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", repr(fn))


def _leaves(x):
    from .runtime.core import fields_of, is_structure
    if x is None:
        return []
    if is_structure(x):
        out = []
        for _, v in fields_of(x):
            out.extend(_leaves(v))
        return out
    return [x]


def _add(a, b):
    from .runtime.core import add_cotangents
    return add_cotangents(a, b)


def _scale(g, s):
    from .runtime.core import fields_of, is_structure, rebuild_like
    if is_structure(g):
        return rebuild_like(g, {k: _scale(v, s) for k, v in fields_of(g)})
    return g * s


def source_of(fn, *example_args):
    """The source forward over reverse runs for ``fn`` (made by ``pb.grad`` or
    ``pb.value_and_grad``) at ``example_args``: the tangent functions of the
    inner primal and adjoint."""
    from .callees import Derivative, derivative_of
    from .forward import calls
    m = made_by(fn)
    handle = derivative_of(m.fun)
    if not isinstance(handle, Derivative):
        raise TypeError(f"{_name(m.fun)} has a user-given rule or is bound; pass the plain "
                        "function to see its generated source.")
    if not example_args:
        raise TypeError("pb.source of a gradient needs example arguments: "
                        "pb.source(pb.grad(f), x).")
    args = handle.bind(tuple(example_args), {})
    argnums = tuple(sorted(set(m.argnums_t)))
    loaded = inner_transform(handle, args, argnums, m.has_aux)
    wrt = tuple(i for i, a in enumerate(args) if is_inexact(a))
    out, res = loaded.primal(*args)
    value = split_aux(m.fun, out, m.has_aux)[0]
    p = calls.forward_of(loaded.primal).specialize(args, wrt)
    a = calls.forward_of(loaded.adjoint).specialize((res, one_like(value)), (0,))
    return ("# forward over reverse: the tangent functions of the primal and the adjoint\n"
            + loaded.source + "\n\n" + p.source + "\n\n" + a.source)


def _install():
    """Hand this module's handles to the modules below it (``callees``,
    ``forward.calls``), which import nothing above them."""
    import sys
    from . import callees, higher_forward
    from .forward import calls
    callees.higher_order = sys.modules[__name__]
    calls.higher_order = sys.modules[__name__]
    higher_forward.higher = sys.modules[__name__]


_install()
