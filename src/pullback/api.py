"""The public functions: grad, value_and_grad, vjp, jvp, linearize, jacfwd,
differentiable, custom_vjp, custom_jvp, source, hessian, hvp (and
kernel_sources, the fused kernels' source).  Functions made by grad,
value_and_grad and vjp can be differentiated again (``higher``).  ``__init__`` re-exports them; nothing else here is
public.  The handles they work through are ``callees``' (reverse mode) and
``forward.calls``' (forward mode); the transforms come from the drivers
(``driver.jit``, ``driver.forward_jit``)."""
from __future__ import annotations

import functools
import types

import numpy as np

from .analyses import kinds as kinds_
from .callees import CustomVJP, Derivative, derivative_of
from .checks import (check_argnum_range, check_argnums, check_cotangent,
                     check_differentiable_input, check_scalar_output, check_tangents,
                     fresh_grad, is_inexact, jax_boundary, one_like, split_aux)
from .driver import jit  # noqa: F401  (installs the just-in-time driver: Derivative.driver)
from .driver import forward_jit  # noqa: F401  (forward mode's: ForwardDerivative.driver)
from .higher import Made
from .runtime.backends import is_foreign
from .runtime.forward_support import zeros_tangent
from . import pytrees, runtime
from .pytrees import needs_boundary, to_user_grad
from .checks import fun_name

__all__ = ["grad", "value_and_grad", "vjp", "jvp", "linearize", "jacfwd", "differentiable",
           "custom_vjp", "custom_jvp", "source", "hessian", "hvp"]


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
    argnums_t = check_argnums(argnums)
    wrt = tuple(sorted(set(argnums_t)))
    made = []       # fun's handle, once made: a function's handle never changes

    @functools.wraps(fun)
    def value_and_grad_f(*args, **kwargs):
        if made:
            handle = made[0]
        else:
            handle = derivative_of(fun)      # (a weak-keyed lookup: once)
            if type(fun) is types.FunctionType and type(handle) is Derivative:
                made.append(handle)
        bound = handle.bind(args, kwargs)
        args, jx = jax_boundary(bound)          # JAX arrays: read as NumPy
        check_argnum_range(fun, argnums_t, len(args))
        if jx is not None and jx.traced:        # JAX tracers: under jax.jit
            from .backend import namespace
            return namespace.value_and_grad(fun, handle, args, argnums, wrt, has_aux)
        for i in argnums_t:
            check_differentiable_input(fun, handle, i, args[i])
        out, res = handle.call_primal(args, wrt, has_aux, inplace)
        value, aux = split_aux(fun, out, has_aux)
        check_scalar_output(fun, value)
        grads = handle.call_adjoint(res, one_like(value))
        g = tuple([fresh_grad(grads[i], args[i]) for i in argnums_t])
        if any(needs_boundary(args[i]) for i in argnums_t):   # registered and plain objects
            g = tuple(to_user_grad(gi, args[i]) for gi, i in zip(g, argnums_t))
        if jx is not None:          # ... and handed back as JAX arrays
            value, g = jx.back(value), tuple(jx.back(gi, bound[i]) for gi, i in zip(g, argnums_t))
        result = g[0] if isinstance(argnums, int) else g
        return ((value, aux), result) if has_aux else (value, result)

    value_and_grad_f.__pullback_api__ = "pb.value_and_grad"
    value_and_grad_f.__pullback_made__ = Made("value_and_grad", fun, argnums, has_aux)
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
    grad_f.__pullback_made__ = Made("grad", fun, argnums, has_aux)
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
    args, jx = jax_boundary(tuple(primals))     # JAX arrays: read as NumPy
    if jx is not None and jx.traced:            # JAX tracers: under jax.jit
        from .backend import namespace
        return namespace.vjp(fun, handle, args, has_aux)
    wrt = tuple(i for i, a in enumerate(args) if is_inexact(a))
    out, res = handle.call_primal(args, wrt, has_aux, inplace)
    value, aux = split_aux(fun, out, has_aux)

    def pullback(ct):
        if jx is not None:
            ct = jax_boundary((ct,))[0][0]
        check_cotangent(fun, value, ct)
        if needs_boundary(value):       # an object's cotangent: by attribute
            ct = pytrees.to_internal_cotangent(ct, value)
        grads = handle.call_adjoint(res, ct)
        grads = tuple(fresh_grad(g, a) if g is not None else None for g, a in zip(grads, args))
        grads = tuple(to_user_grad(g, a) if g is not None and needs_boundary(a) else g
                      for g, a in zip(grads, args))
        return grads if jx is None else tuple(jx.back(g, a) for g, a in zip(grads, primals))

    pullback.__pullback_api__ = "pb.vjp"
    pullback.__pullback_made__ = Made("vjp", fun, has_aux=has_aux, primals=args)
    if jx is not None:              # ... and handed back as JAX arrays
        value = jx.back(value)
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
        out_dot = pytrees.to_user_tangent(out_dot, value)
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
                 pytrees.to_internal_tangent(t, p, f"primal {i}") if needs_boundary(p) else t
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
        return pytrees.to_user_tangent(out_dot, out) if needs_boundary(out) else out_dot

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
                tangents = tuple(pytrees.to_internal_tangent(t, args[i]) for t, i in
                                 zip(tangents, wrt))
            out, out_dot = calls.jvp_call(fun, args, {}, wrt, tangents, has_aux, top=True)
            value = out[0] if has_aux and isinstance(out, (tuple, list)) else out
            if needs_boundary(value):
                out_dot = pytrees.to_user_tangent(out_dot, value)
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


def source(fun, *example_args, argnums=None, mode="reverse"):
    """The generated primal and adjoint of ``fun`` as Python source
    (``mode="forward"``: its tangent function).  For a gradient made by
    ``pb.grad`` or ``pb.value_and_grad`` (``pb.source(pb.grad(f), x)``): the
    primal and adjoint its derivatives differentiate, then their tangent
    functions (forward over reverse, which ``pb.jvp``, ``pb.hessian`` and
    ``pb.hvp`` of it run).

    Without example arguments the generic transform is shown (every parameter
    a real number or array); with them, the one specialised to their types.
    """
    from . import higher
    if higher.made_by(fun) is not None and higher.made_by(fun).kind in ("grad",
                                                                        "value_and_grad"):
        return higher.source_of(fun, *example_args)
    if mode == "forward":
        return _forward_source(fun, example_args, argnums)
    if mode != "reverse":
        raise ValueError(f"mode must be 'reverse' or 'forward', not {mode!r}.")
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
    from .backend.traceability import with_header  # (says whether jax.jit traces it)
    if example_args:
        return with_header(handle.specialize(example_args if getattr(handle, "variadic", False)
                                             else tuple(example_args), tuple(sorted(set(wrt)))),
                           handle.fun)
    from . import pipeline      # late: importing pullback does not load the compiler
    param_kinds = {p: kinds_.NUMBER for p in handle.params}
    return with_header(pipeline.transform(fun, param_kinds,
                                          [handle.params[i] for i in sorted(set(wrt))]), fun)


def _forward_source(fun, example_args, argnums):
    from .forward.calls import CustomJVP, forward_of
    handle = forward_of(fun)
    if isinstance(handle, CustomJVP):
        raise TypeError(f"{handle.__name__} has a user-given rule; there is no generated "
                        "source to show.")
    n = len(handle.params)
    wrt = tuple(range(n)) if argnums is None else check_argnums(argnums)
    wrt = tuple(sorted(set(wrt)))
    if example_args:
        args = tuple(example_args)
        wrt = tuple(i for i in wrt if is_inexact(args[i]))
        return handle.specialize(args, wrt).source
    from . import pipeline      # late: importing pullback does not load the compiler
    param_kinds = {p: kinds_.NUMBER for p in handle.params}
    return pipeline.forward_transform(fun, param_kinds, [handle.params[i] for i in wrt]).source


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


def kernel_sources(fn, *example_args, argnums=None):
    """The source of every fused kernel in ``fn``'s transform (for the same
    arguments as ``pb.source``; without example arguments, the transform for
    large arrays)."""
    from . import pipeline      # late: importing pullback does not load the compiler
    from .lowering import kernels
    handle = derivative_of(fn)
    n = len(handle.params)
    wrt = tuple(range(n)) if argnums is None else check_argnums(argnums)
    if example_args:
        with kernels.sizing(example_args):
            loaded = handle.transform(tuple(example_args), tuple(sorted(set(wrt))))
    else:
        with kernels.options(lower=kernels.option("lower", True)):
            loaded = pipeline.transform(fn, {p: kinds_.NUMBER for p in handle.params},
                                        [handle.params[i] for i in sorted(set(wrt))])
    seen, out = set(), []
    for value in loaded.helpers.values():
        tag = getattr(value, "__pullback_kernel__", None)
        if tag is not None and id(tag[0]) not in seen:
            seen.add(id(tag[0]))
            out.append(tag[0].source)
    return "\n\n\n".join(out)


# -- Jacobians by reverse mode, gradient checks, checkpointing, forced forward mode ---------

__all__ += ["jacrev", "jacobian", "check_grads", "checkpoint", "forward"]


def _check_callable(fun, api):
    if not callable(fun):
        raise TypeError(f"{api} expects a function to differentiate, got {fun!r} "
                        f"(a {type(fun).__name__}).")


def jacrev(fun, argnums=0, has_aux=False):
    """The Jacobian of ``fun`` with respect to the arguments ``argnums``, by
    reverse mode (as JAX's ``jacrev``): one primal run, then one adjoint
    sweep per output element.  An output of shape ``S`` and an input of
    shape ``T`` give a Jacobian of shape ``S + T``; pytrees on either side
    give JAX's nesting (the output's structure outside, the inputs'
    inside), and a tuple ``argnums`` a tuple.  Inputs must be float or
    complex, outputs real floats (``pb.vjp`` takes the others).

    >>> import numpy as np
    >>> jacrev(lambda x: x[0] * x[1:])(np.array([2.0, 3.0, 5.0]))
    array([[3., 2., 0.],
           [5., 0., 2.]])
    """
    _check_callable(fun, "pb.jacrev")
    argnums_t = check_argnums(argnums)

    @functools.wraps(fun)
    def jacrev_f(*args, **kwargs):
        from .forward import jacobian
        handle = derivative_of(fun)
        args = handle.bind(args, kwargs)
        n = len(args)
        check_argnum_range(fun, argnums_t, n)
        picked = tuple(i % n for i in argnums_t)
        for i in picked:
            _check_jacobian_input(fun, handle, i, args[i], "pb.jacrev")
        wrt = tuple(sorted(set(picked)))
        out, res = handle.call_primal(args, wrt, has_aux, None)
        value, aux = split_aux(fun, out, has_aux)
        out_leaves = list(jacobian.leaves(value))
        for path, leaf in out_leaves:
            _check_jacobian_output(fun, path, leaf)
        objects = needs_boundary(value)     # registered and plain objects: user's view
        zero_ct = pytrees.zero_tree(value) if objects else runtime.zeros_like(value)
        in_leaves = {i: list(jacobian.leaves(args[i])) for i in wrt}

        shape_of, dtype_of = jacobian.shape_of, jacobian.dtype_of   # (Dask: not computed)

        def per_output(opath, oleaf):
            rows = {(i, path): [] for i in wrt for path, _ in in_leaves[i]}
            oshape = shape_of(oleaf)
            array = isinstance(oleaf, np.ndarray) or is_foreign(oleaf)
            for k in range(int(np.prod(oshape))):
                unit = np.zeros(oshape, dtype=dtype_of(oleaf))
                unit.reshape(-1)[k] = 1
                ct = jacobian.with_leaf(zero_ct, opath, unit if array
                                        else type(oleaf)(1) if isinstance(oleaf, float)
                                        else unit[()])
                if objects:
                    ct = pytrees.to_internal_cotangent(ct, value)
                grads = handle.call_adjoint(res, ct)
                for i in wrt:
                    g = fresh_grad(grads[i], args[i])
                    if needs_boundary(args[i]):
                        g = to_user_grad(g, args[i])
                    for path, leaf in in_leaves[i]:
                        row = jacobian.at(g, path)
                        rows[(i, path)].append(row if is_foreign(row) else np.asarray(row))
            by_arg = {}
            for i in wrt:
                pieces = []
                for path, leaf in in_leaves[i]:
                    shape = oshape + shape_of(leaf)
                    got = rows[(i, path)]
                    jac = (np.stack(got) if got else np.zeros((0,) + shape_of(leaf),
                                                            dtype=dtype_of(leaf)))
                    jac = jac.reshape(shape)
                    if not jac.ndim and not array:
                        jac = jac[()]
                    pieces.append((path, jac))
                by_arg[i] = jacobian.rebuild(args[i], pieces)
            inner = tuple(by_arg[i] for i in picked)
            return inner[0] if isinstance(argnums, int) else inner

        result = jacobian.rebuild(value, [(opath, per_output(opath, oleaf))
                                          for opath, oleaf in out_leaves])
        return (result, aux) if has_aux else result

    jacrev_f.__pullback_api__ = "pb.jacrev"
    jacrev_f.__pullback_made__ = Made("jacrev", fun, argnums, has_aux)   # (higher.handles)
    return jacrev_f


def jacobian(fun, argnums=0, has_aux=False):
    """The Jacobian of ``fun``: ``jacrev`` (as JAX's ``jax.jacobian``).

    >>> import numpy as np
    >>> jacobian(lambda x: np.sin(x))(np.zeros(2))
    array([[1., 0.],
           [0., 1.]])
    """
    _check_callable(fun, "pb.jacobian")
    jac = jacrev(fun, argnums, has_aux)
    jac.__pullback_api__ = "pb.jacobian"
    return jac


def _check_jacobian_input(fun, handle, i, x, api):
    if is_inexact(x):
        return
    try:
        check_differentiable_input(fun, handle, i, x)
    except TypeError as err:
        raise TypeError(str(err).replace("pb.grad", api)) from None


def _check_jacobian_output(fun, path, leaf):
    where = "" if not path else " at " + "".join(f"[{k!r}]" for k in path)
    if is_foreign(leaf) and leaf.dtype.kind == "f":
        return                  # a Dask or CuPy array (not computed to be checked)
    if isinstance(leaf, (bool, np.bool_)) or not isinstance(
            leaf, (float, int, np.ndarray, np.generic, complex)) \
            or np.result_type(leaf).kind not in "f":
        kind = type(leaf).__name__ if not isinstance(leaf, (np.ndarray, np.generic)) \
            else f"an array of {leaf.dtype}"
        raise TypeError(
            f"pb.jacrev needs real float outputs, but {fun_name(fun)} returned {kind}{where}. "
            "Return floats (for a complex output, its real and imaginary parts), or use "
            "pb.vjp with cotangents of your own.")


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
    _check_callable(f, "pb.check_grads")
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
    _check_callable(fun, "pb.checkpoint")
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
    _check_callable(fun, "pb.forward")
    return forward_partials_of(fun, store)
