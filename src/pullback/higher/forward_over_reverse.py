"""Forward over reverse: the jvp of a gradient (Hessian-vector products).

The primal and adjoint pullback generates are Python and NumPy, and the
run-time helpers they call have forward rules (``rules.runtime_helpers``), so
forward mode transforms them like any user function.  The tangent of
``grad f`` at ``x`` along ``t`` (a Hessian-vector product) is then::

    (out, res), (out_dot, res_dot) = jvp(f_primal, (x,), (t,))
    grads, grads_dot = jvp(f_adjoint, (res, 1.0), (res_dot, 0.0))

The inner derivative is transformed for this once per signature
(``inner.inner_transform``).  ``pb.jvp(pb.grad(f))``, ``pb.hessian`` and
``pb.hvp`` come here through ``GradForward``, the forward handle of a
function made by ``pb.grad``; ``PullbackForward`` is that of a pullback made
by ``pb.vjp``.

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

import numpy as np

from ..checks import check_scalar_output, is_inexact, one_like, split_aux
from ..errors import NonDifferentiableError
from ..runtime.forward_support import zeros_tangent
from .inner import annotated, inner_transform, jvp
from .made import ForwardCallers, MadeHandle, made_by, name_of

__all__ = ["forward_over_reverse", "GradForward", "JacrevForward", "PullbackForward", "source_of",
           "fresh", "fresh_tangent"]


def forward_over_reverse(fun, args, argnums, has_aux, wrt, tangents, ct=None, ct_dot=None,
                         _inside=False, user_view=True):
    """The value, aux and gradients of ``fun`` at ``args`` (with respect to
    ``argnums``, a sorted tuple), and their tangents when the arguments
    ``wrt`` move along ``tangents``: ``((value, aux, grads), (value_dot,
    aux_dot, grads_dot))``, ``grads`` one per index of ``argnums``.  The
    output cotangent is 1 (``ct``/``ct_dot``: another, and its tangent).

    A handle with a ``forward_over_reverse`` method of its own (the gradient
    of a gradient, ``reverse_over_reverse.GradVJP``) is asked for it."""
    from ..callees import Bound, Derivative, derivative_of
    from ..custom_rules import CustomVJP
    from ..pytree_boundary import to_internal_tangent, to_user_grad
    from ..pytrees import needs_boundary
    objects = set() if _inside else {i for i in set(argnums) | set(wrt)
                                     if -len(args) <= i < len(args) and needs_boundary(args[i])}
    if objects:
        # registered and plain objects are read by attribute inside: their tangents as
        # the tangent functions read them (from the user's view, or from an internal
        # cotangent, a dict of attributes, where the gradient of a gradient comes here),
        # their gradients in the user's view (``user_view``) or the adjoint's
        def inward(t, x):
            if t is None or type(t) is type(x):
                return to_internal_tangent(t, x) if t is not None else t
            return to_internal_tangent(to_user_grad(t, x), x)
        tangents = tuple(inward(t, args[k]) if k in objects else t
                         for t, k in zip(tangents, wrt))
        got = forward_over_reverse(fun, args, argnums, has_aux, wrt, tangents, ct, ct_dot,
                                   _inside=True)
        if not user_view:
            return got
        (value, aux, grads), (value_dot, aux_dot, grads_dot) = got
        grads = tuple(to_user_grad(g, args[i]) if i in objects else g
                      for g, i in zip(grads, argnums))
        grads_dot = tuple(to_user_grad(d, args[i]) if i in objects else d
                          for d, i in zip(grads_dot, argnums))
        return (value, aux, grads), (value_dot, aux_dot, grads_dot)
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
    own = getattr(handle, "forward_over_reverse", None)
    if own is not None:
        return own(args, argnums, has_aux, wrt, tangents, ct, ct_dot)
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
        (out, res), (out_dot, res_dot) = jvp(primal, args, wrt, tangents)
        value, aux = split_aux(fun, out, has_aux)
        value_dot, aux_dot = split_aux(fun, out_dot, has_aux) if has_aux else (out_dot, None)
        if ct is None:
            check_scalar_output(fun, value)
        c = one_like(value) if ct is None else ct
        grads, grads_dot = jvp(adjoint, (res, c), (0, 1), (res_dot, ct_dot))
        return value, aux, grads, value_dot, aux_dot, grads_dot
    value, aux, grads, value_dot, aux_dot, grads_dot = \
        annotated(loaded, run) if loaded is not None else run()
    if select is None:            # a custom_vjp's bwd: one cotangent per argument
        from .. import runtime
        grads = tuple(runtime.project(grads[i], args[i]) for i in argnums)
        grads_dot = tuple(runtime.project(grads_dot[i], args[i])
                          if grads_dot[i] is not None else zeros_tangent(args[i])
                          for i in argnums)
    grads = tuple(fresh(g, args[i]) for g, i in zip(grads, argnums))
    grads_dot = tuple(fresh_tangent(d, args[i]) for d, i in zip(grads_dot, argnums))
    return (value, aux, grads), (value_dot, aux_dot, grads_dot)


def fresh(g, x):
    """A gradient ``g`` of ``x``, zeros for None."""
    from .. import runtime
    return runtime.zeros_like(x) if g is None else g


def fresh_tangent(d, x):
    """A tangent ``d`` of ``x`` the caller may keep: zeros for None, a
    read-only array copied."""
    if d is None:
        return zeros_tangent(x)
    if isinstance(d, np.ndarray) and not d.flags.writeable:
        return np.array(d)
    return d


class GradForward(ForwardCallers, MadeHandle):
    """The forward-mode handle of a function made by ``pb.grad`` or
    ``pb.value_and_grad`` (``forward.calls.forward_of``)."""

    caller_name = "grad_jvp"

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


class JacrevForward(ForwardCallers, MadeHandle):
    """The forward-mode handle of a function made by ``pb.jacrev``
    (``pb.jacfwd(pb.jacrev(f))``, JAX's Hessian): row ``k`` of the Jacobian
    is the gradient of output element ``k``, so its tangent is forward over
    reverse with that element's unit cotangent.  One argument (an int
    ``argnums``), array or float outputs and inputs, no aux."""

    caller_name = "jacrev_jvp"

    def call(self, args, wrt, tangents, has_aux=False):
        m = self.made
        args = tuple(args)
        a = m.argnums % len(args) if isinstance(m.argnums, int) else None
        if a is None or m.has_aux or has_aux or not is_inexact(args[a]) \
                or isinstance(args[a], (tuple, list, dict)):
            raise NonDifferentiableError(
                f"pullback differentiates pb.jacrev({name_of(m.fun)}) in forward mode only for "
                "one array or float argument (an int argnums) and no aux output.",
                hint="Use pb.hessian, or pb.jacfwd(pb.grad(f)) for a scalar function.")
        jac = self.fn(*args)
        out_shape = np.shape(jac)[:np.ndim(jac) - np.ndim(args[a])]
        rows = []
        for k in range(int(np.prod(out_shape))):
            ct = None
            if out_shape:
                ct = np.zeros(out_shape)
                ct.reshape(-1)[k] = 1.0
            _, (_, _, grads_dot) = forward_over_reverse(
                m.fun, args, (a,), False, tuple(wrt), tuple(tangents), ct=ct)
            rows.append(np.asarray(grads_dot[0]))
        jac_dot = np.stack(rows).reshape(np.shape(jac)) if rows else np.zeros(np.shape(jac))
        if not isinstance(jac, np.ndarray):
            jac_dot = type(jac)(jac_dot[()]) if isinstance(jac, float) else jac_dot[()]
        return jac, jac_dot


class PullbackForward(ForwardCallers):
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


def source_of(fn, *example_args):
    """The source forward over reverse runs for ``fn`` (made by ``pb.grad`` or
    ``pb.value_and_grad``) at ``example_args``: the tangent functions of the
    inner primal and adjoint."""
    from ..callees import Derivative, derivative_of
    from ..forward import calls
    m = made_by(fn)
    handle = derivative_of(m.fun)
    if not isinstance(handle, Derivative):
        raise TypeError(f"{name_of(m.fun)} has a user-given rule or is bound; pass the plain "
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
