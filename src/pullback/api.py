"""The public functions: grad, value_and_grad, vjp, differentiable, custom_vjp,
source (and kernel_sources, the fused kernels' source).  ``__init__``
re-exports them; nothing else here is public.  The handles they work through
are ``callees``'; the transforms come from the driver (``driver.jit``)."""
from __future__ import annotations

import functools

import numpy as np

from .analyses import kinds as kinds_
from .callees import CustomVJP, derivative_of
from .checks import (check_argnum_range, check_argnums, check_cotangent,
                     check_differentiable_input, check_scalar_output, fresh_grad, is_inexact,
                     one_like, split_aux)
from .driver import jit  # noqa: F401  (installs the just-in-time driver: Derivative.driver)

__all__ = ["grad", "value_and_grad", "vjp", "jvp", "differentiable", "custom_vjp", "source"]


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
    from . import pipeline      # late: importing pullback does not load the compiler
    param_kinds = {p: kinds_.NUMBER for p in handle.params}
    return pipeline.transform(fun, param_kinds, [handle.params[i] for i in sorted(set(wrt))]).source


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
