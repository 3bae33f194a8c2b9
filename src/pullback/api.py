"""The public functions: grad, value_and_grad, vjp, jvp, linearize, jacfwd,
differentiable, custom_vjp, custom_jvp, hessian, hvp, check_grads, checkpoint,
forward (``reverse_jacobians``: jacrev, jacobian; ``sources``: source,
kernel_sources).  Functions made by grad, value_and_grad and vjp can be
differentiated again (``higher``).  ``__init__`` re-exports them; nothing else here is
public.  The handles they work through are ``callees``' (reverse mode) and
``forward.calls``' (forward mode); the transforms come from the drivers
(``driver.jit``, ``driver.forward_jit``)."""
from __future__ import annotations

import functools
import types

import numpy as np

from .callees import CustomVJP, Derivative, derivative_of
from .checks import (check_argnum_range, check_argnums, check_callable, check_cotangent,
                     check_differentiable_input, check_scalar_output, check_tangents,
                     fresh_grad, is_inexact, jax_boundary, one_like, split_aux)
from .driver import jit  # noqa: F401  (installs the just-in-time driver: Derivative.driver)
from .driver import forward_jit  # noqa: F401  (forward mode's: ForwardDerivative.driver)
from .higher import Made
from .runtime.forward_support import zeros_tangent
from . import custom_rules, pytree_boundary, pytrees
from .pytree_boundary import to_user_grad
from .pytrees import needs_boundary

__all__ = ["grad", "value_and_grad", "vjp", "jvp", "linearize", "jacfwd", "differentiable",
           "custom_vjp", "custom_jvp", "hessian", "hvp"]


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


def value_and_grad(fun, argnums=0, has_aux=False, *, inplace=None):
    """A function returning ``fun``'s value and its gradient.

    >>> import numpy as np
    >>> value_and_grad(lambda x: np.sum(x ** 2))(np.array([1.0, 2.0]))
    (np.float64(5.0), array([2., 4.]))
    """
    value_and_grad_f = _differentiated(fun, argnums, has_aux, inplace, True)
    return _wraps(value_and_grad_f, fun, "pb.value_and_grad",
                  Made("value_and_grad", fun, argnums, has_aux))


def grad(fun, argnums=0, has_aux=False, *, inplace=None):
    """The gradient of a real scalar-valued ``fun`` with respect to the
    arguments ``argnums`` (an int gives one gradient, a tuple a tuple).

    >>> import numpy as np
    >>> grad(lambda x: np.sum(np.sin(x)))(np.zeros(2))
    array([1., 1.])
    """
    grad_f = _differentiated(fun, argnums, has_aux, inplace, False)
    return _wraps(grad_f, fun, "pb.grad", Made("grad", fun, argnums, has_aux))


def _differentiated(fun, argnums, has_aux, inplace, with_value):
    """The function ``value_and_grad`` (``with_value``) or ``grad`` returns,
    before ``_wraps``: one closure for both, so that ``pb.grad(f)(x)`` makes
    and calls one function, not a ``grad`` around a ``value_and_grad``."""
    argnums_t = check_argnums(argnums)
    wrt = tuple(sorted(set(argnums_t)))
    one = isinstance(argnums, int)
    # every argnum is in range for a call of n arguments where n > top and n >= bottom
    top, bottom = max(argnums_t), -min(argnums_t)
    made = []       # fun's handle, once made: a function's handle never changes

    # the checks on each call cost as much as a small function's gradient: the
    # common case (floats and float arrays, no aux) is tested inline, the
    # checks' functions called only for what it does not cover
    def value_and_grad_f(*args, **kwargs):
        if made:
            handle = made[0]
        else:
            handle = derivative_of(fun)      # (a weak-keyed lookup: once)
            if type(fun) is types.FunctionType and type(handle) is Derivative:
                made.append(handle)
        bound = handle.bind(args, kwargs)
        args, jx = jax_boundary(bound)          # JAX arrays: read as NumPy
        n = len(args)
        if n <= top or n < bottom:
            check_argnum_range(fun, argnums_t, n)     # (raises)
        if jx is not None and jx.traced:        # JAX tracers: under jax.jit
            from .backend import namespace
            out = namespace.value_and_grad(fun, handle, args, argnums, wrt, has_aux)
            return out if with_value else _grad_only(out, has_aux)
        plain = True        # every differentiated argument a float or a NumPy array
        for i in argnums_t:
            a = args[i]
            t = type(a)
            if t is float or (t is np.ndarray and a.dtype.kind in "fc"):
                continue
            plain = False
            check_differentiable_input(fun, handle, i, a)
        out, res = handle.call_primal(args, wrt, has_aux, inplace)
        value, aux = split_aux(fun, out, has_aux) if has_aux else (out, None)
        check_scalar_output(fun, value)
        grads = handle.call_adjoint(res, one_like(value))
        g = tuple([grads[i] if grads[i] is not None else fresh_grad(None, args[i])
                   for i in argnums_t])
        if not plain and any(needs_boundary(args[i]) for i in argnums_t):
            # registered and plain objects
            g = tuple(to_user_grad(gi, args[i]) for gi, i in zip(g, argnums_t))
        if jx is not None:          # ... and handed back as JAX arrays
            value, g = jx.back(value), tuple(jx.back(gi, bound[i]) for gi, i in zip(g, argnums_t))
        result = g[0] if one else g
        if with_value:
            return ((value, aux), result) if has_aux else (value, result)
        return (result, aux) if has_aux else result

    return value_and_grad_f


def _grad_only(out, has_aux):
    """``grad``'s result from ``value_and_grad``'s."""
    (_, aux), g = out if has_aux else ((None, None), out[1])
    return (g, aux) if has_aux else g


def _wraps(made, fun, api, how):
    """``functools.wraps(fun)(made)``, with pullback's marks: which API made
    it (``api``) and how (``how``, a ``Made``).  A plain function's
    attributes are copied directly: ``functools.wraps`` costs as much as the
    rest of ``pb.grad(f)``."""
    if type(fun) is types.FunctionType:
        for attr in functools.WRAPPER_ASSIGNMENTS:
            setattr(made, attr, getattr(fun, attr))
        if fun.__dict__:
            made.__dict__.update(fun.__dict__)
        made.__wrapped__ = fun
    else:
        functools.update_wrapper(made, fun)
    made.__pullback_api__ = api
    made.__pullback_made__ = how
    return made


def vjp(fun, *primals, has_aux=False, inplace=None):
    """``fun``'s output and a function that pulls a cotangent of the output
    back to one cotangent per primal (a tuple, as in JAX).

    >>> import numpy as np
    >>> out, back = vjp(lambda x, y: x * y, np.array([1.0, 2.0]), 3.0)
    >>> back(np.array([1.0, 1.0]))
    (array([3., 3.]), 3.0)
    """
    handle = derivative_of(fun)
    n = len(primals)
    args, jx = jax_boundary(_with_defaults(handle, tuple(primals)))   # JAX arrays: as NumPy
    if jx is not None and jx.traced:            # JAX tracers: under jax.jit
        from .backend import namespace
        return namespace.vjp(fun, handle, args, has_aux)
    # one cotangent per primal given (JAX's): parameters left to their defaults get none
    wrt = tuple(i for i, a in enumerate(args[:n]) if is_inexact(a))
    out, res = handle.call_primal(args, wrt, has_aux, inplace)
    value, aux = split_aux(fun, out, has_aux)

    def pullback(ct):
        if jx is not None:
            ct = jax_boundary((ct,))[0][0]
        check_cotangent(fun, value, ct)
        if needs_boundary(value):       # an object's cotangent: by attribute
            ct = pytree_boundary.to_internal_cotangent(ct, value)
        grads = handle.call_adjoint(res, ct)[:n]
        grads = tuple(fresh_grad(g, a) if g is not None else None for g, a in zip(grads, args))
        grads = tuple(to_user_grad(g, a) if g is not None and needs_boundary(a) else g
                      for g, a in zip(grads, args))
        return grads if jx is None else tuple(jx.back(g, a) for g, a in zip(grads, primals))

    pullback.__pullback_api__ = "pb.vjp"
    pullback.__pullback_made__ = Made("vjp", fun, has_aux=has_aux, primals=args)
    if jx is not None:              # ... and handed back as JAX arrays
        value = jx.back(value)
    return (value, pullback, aux) if has_aux else (value, pullback)


custom_rules._api_vjp[0] = vjp     # (custom_jvp in reverse mode: TransposedJVP)


def _with_defaults(handle, args):
    """``args`` and the defaults of the parameters after them (``f(x, scale=2.0)``
    called as ``vjp(f, x)``), for a function of fixed parameters; else ``args``."""
    params = getattr(handle, "params", None)
    if getattr(handle, "variadic", True) or params is None or len(args) >= len(params):
        return args
    try:
        return tuple(handle.bind(args, {}))
    except TypeError:
        return args          # (a missing argument: the call itself says so)


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
    from .forward import calls
    (primals, tangents), jx = jax_boundary((primals, tangents))   # JAX: read as NumPy
    if jx is not None and jx.traced:            # JAX tracers: under jax.jit
        from .backend import namespace
        return namespace.jvp(fun, primals, tangents, has_aux)
    primals, tangents = check_tangents(primals, tangents)
    wrt = tuple(i for i, a in enumerate(primals) if is_inexact(a) and not (
        tangents[i] is None and pytrees.is_plain_object(a)))   # None: an object held constant
    tangents = _internal_tangents(primals, tangents)
    out, out_dot = calls.jvp_call(fun, primals, {}, wrt, tuple(tangents[i] for i in wrt),
                                  has_aux, top=True)
    value = out[0] if has_aux and isinstance(out, (tuple, list)) and len(out) == 2 else out
    if needs_boundary(value):       # an object's tangent: an object of its class
        out_dot = pytree_boundary.to_user_tangent(out_dot, value)
    if jx is not None:              # ... and handed back as JAX arrays
        out, out_dot = (jx.back(out[0]), out[1]) if has_aux else jx.back(out), jx.back(out_dot)
    if has_aux:
        value, aux = split_aux(fun, out, True)
        return value, out_dot, aux
    return out, out_dot


def _internal_tangents(primals, tangents):
    """The tangents of registered and plain objects as the tangent function
    reads them (objects whose attributes are tangents)."""
    if not any(needs_boundary(p) for p in primals):
        return tangents
    for i, (p, t) in enumerate(zip(primals, tangents)):
        if t is p and pytrees.is_plain_object(p):
            raise TypeError(
                f"The tangent of primal {i} is the primal itself (a {type(p).__name__}): pass "
                "None to hold the object constant, or an object of its class whose float "
                "attributes are the tangents (t = copy.copy(p); t.w = ...).")
    return tuple(t if t is None and pytrees.is_plain_object(p) else
                 pytree_boundary.to_internal_tangent(t, p, f"primal {i}") if needs_boundary(p) else t
                 for i, (p, t) in enumerate(zip(primals, tangents)))


jvp.__pullback_nested__ = "pb.jvp"      # called inside a differentiated function: higher.forward_over_forward


def linearize(fun, *primals):
    """``fun(*primals)`` and a function of tangents giving the directional
    derivative at ``primals`` (as JAX's ``linearize``; the tangent function
    is run again for each call, so each costs about one ``jvp``).

    >>> import numpy as np
    >>> y, f_jvp = linearize(np.sin, 0.0)
    >>> f_jvp(2.0)
    np.float64(2.0)
    """
    from .forward import calls
    primals = tuple(primals)
    wrt = tuple(i for i, a in enumerate(primals) if is_inexact(a))
    zeros = tuple(zeros_tangent(primals[i]) for i in wrt)
    out, _ = calls.jvp_call(fun, primals, {}, wrt, zeros, top=True)

    def f_jvp(*tangents):
        _, tangents = check_tangents(primals, tangents)
        tangents = _internal_tangents(primals, tangents)
        out_dot = calls.jvp_call(fun, primals, {}, wrt, tuple(tangents[i] for i in wrt),
                                 top=True)[1]
        return pytree_boundary.to_user_tangent(out_dot, out) if needs_boundary(out) else out_dot

    f_jvp.__pullback_api__ = "pb.linearize"
    f_jvp.__pullback_made__ = Made("linearize", fun, primals=primals)
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
    check_argnums(argnums)

    @functools.wraps(fun)
    def jacfwd_f(*args, **kwargs):
        from .forward import calls, jacobian
        if kwargs:
            args = calls.forward_of(fun).bind(args, kwargs) if isinstance(
                fun, types.FunctionType) else args

        def column(args, wrt, tangents, has_aux):
            if any(needs_boundary(args[i]) for i in wrt):    # objects: their tangents
                tangents = tuple(pytree_boundary.to_internal_tangent(t, args[i]) for t, i in
                                 zip(tangents, wrt))
            out, out_dot = calls.jvp_call(fun, args, {}, wrt, tangents, has_aux, top=True)
            value = out[0] if has_aux and isinstance(out, (tuple, list)) else out
            if needs_boundary(value):
                out_dot = pytree_boundary.to_user_tangent(out_dot, value)
            return out, out_dot
        return jacobian.jacfwd_eval(fun, argnums, has_aux, args, column)

    jacfwd_f.__pullback_api__ = "pb.jacfwd"
    jacfwd_f.__pullback_made__ = Made("jacfwd", fun, argnums, has_aux)
    return jacfwd_f


def custom_jvp(fun):
    """Give ``fun`` a forward rule of your own with ``@fun.defjvp`` (as JAX):
    the rule takes ``(primals, tangents)`` and returns ``(out, out_dot)``."""
    from .forward.calls import CustomJVP
    return CustomJVP(fun)


def hessian(fun, argnums=0, has_aux=False):
    """The Hessian of a real scalar-valued ``fun`` with respect to the
    arguments ``argnums`` (as JAX's ``hessian``: the Jacobian, by forward
    mode, of the gradient; forward over reverse).  For an input of shape
    ``S`` the Hessian has shape ``S + S``; a tuple ``argnums`` gives a
    nested tuple (``H[i][j]`` the block of arguments ``i`` and ``j``); with
    ``has_aux``, ``(hessian, aux)``.

    >>> import numpy as np
    >>> hessian(lambda x: np.sum(x ** 3))(np.array([1.0, 2.0]))
    array([[ 6.,  0.],
           [ 0., 12.]])
    """
    h = jacfwd(grad(fun, argnums, has_aux), argnums, has_aux)
    h.__pullback_api__ = "pb.hessian"
    return h


def hvp(fun, primals, tangents, has_aux=False):
    """The Hessian-vector product of a real scalar-valued ``fun`` at
    ``primals`` (a tuple) along ``tangents`` (a tuple of the same structure):
    ``H @ v``, where ``H`` is the Hessian with respect to every primal, in
    the structure of the primals (one array for one primal, a tuple for
    several); with ``has_aux``, ``(hvp, aux)``.  One forward-over-reverse
    pass (``jvp(grad(fun), primals, tangents)``), about the cost of a few
    gradients, whatever the size of the input.

    >>> import numpy as np
    >>> hvp(lambda x: np.sum(x ** 3), (np.array([1.0, 2.0]),), (np.array([1.0, 0.0]),))
    array([6., 0.])
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("hvp takes the primals and the tangents as tuples (as jvp): "
                        "pb.hvp(f, (x,), (v,)).")
    argnums = 0 if len(primals) == 1 else tuple(range(len(primals)))
    got = jvp(grad(fun, argnums, has_aux), tuple(primals), tuple(tangents), has_aux=has_aux)
    return (got[1], got[2]) if has_aux else got[1]


# -- gradient checks, checkpointing, forced forward mode ---------------------------------

__all__ += ["check_grads", "checkpoint", "forward"]


def check_grads(f, args, order, modes=("fwd", "rev"), atol=None, rtol=None, eps=None):
    """Check ``f``'s derivatives at ``args`` (a tuple) along random
    directions, as JAX's ``jax.test_util.check_grads``: ``"fwd"`` compares
    ``pb.jvp`` with central differences of ``f``; ``"rev"`` compares
    ``pb.vjp`` with central differences through ``<vjp(ct), t> == <ct, df(t)>``,
    and, with both modes, with ``pb.jvp`` through the same identity.
    ``order=2`` checks the derivative functions themselves again (the
    ``jvp`` of ``jvp``, the ``vjp`` of ``vjp``...).  Raises
    ``AssertionError`` naming the mode, the order and the largest error.

    >>> import numpy as np
    >>> check_grads(lambda x: np.sum(np.sin(x)), (np.ones(3),), order=1)
    """
    from . import checking
    check_callable(f, "pb.check_grads")
    checking.check_grads(f, args, order, modes, atol, rtol, eps,
                         jvp=jvp, vjp=vjp, grad=grad)


def checkpoint(fun):
    """``fun``, differentiated without storing its residuals: the primal
    keeps only ``fun``'s arguments, and the adjoint runs ``fun``'s primal
    again before its own adjoint (memory for one more primal run).  Use it
    as a decorator, or inline: ``x = pb.checkpoint(step)(x, w)`` in a loop.
    Forward mode differentiates ``fun`` as it is.

    >>> import numpy as np
    >>> step = checkpoint(lambda x: np.sin(x) * x)
    >>> loss = lambda x: step(step(x))
    >>> round(grad(loss)(1.0), 12)      # s'(s(x)) s'(x), s(x) = x sin(x)
    1.805082886525
    """
    from .checkpointing import checkpoint_of
    check_callable(fun, "pb.checkpoint")
    return checkpoint_of(fun)


def forward(fun, store=True):
    """``fun`` (a real-valued function of a few scalars or small arrays),
    differentiated by forward mode inside a reverse-mode derivative: its
    primal runs ``fun``'s tangent function once per scalar input and keeps
    the partial derivatives (``store=False``: keeps the arguments and
    computes the partials in the adjoint); the adjoint multiplies them by
    the output's cotangent.  Pays where ``fun`` takes many steps to compute
    from few inputs.  Forward mode differentiates ``fun`` as it is.

    >>> import numpy as np
    >>> f = forward(lambda a, b: a * np.exp(b))
    >>> grad(f, argnums=(0, 1))(2.0, 0.0)
    (1.0, 2.0)
    """
    from .checkpointing import forward_partials_of
    check_callable(fun, "pb.forward")
    return forward_partials_of(fun, store)
