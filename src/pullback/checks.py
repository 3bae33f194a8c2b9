"""Checks of the public API's arguments and results, with the messages that
say how to fix a call (JAX's conventions: ``TypeError`` for a value that
carries no gradient, ``ValueError`` for a shape), and the small helpers
``api`` builds its results with, and the boundary where JAX arrays are read
as NumPy arrays and results handed back as JAX arrays (``jax_boundary``;
the design of the array backends is in ``runtime.backends``)."""
from __future__ import annotations

import numbers

import numpy as np

from . import pytrees, runtime
from .errors import PullbackError
from .runtime.backends import backend_of, is_foreign


def signature_key(x):
    t = type(x)
    if t is float or t is int:        # scalar code: the common case
        return t
    if t is np.ndarray:
        return (np.ndarray, x.dtype.str, x.ndim)
    if isinstance(x, np.generic):
        return (np.generic, x.dtype.str)
    check_array_type(x)
    if is_foreign(x):                   # Dask, CuPy: transformed as NumPy arrays are
        return (type(x), x.dtype.str, x.ndim)
    return type(x)


_FOREIGN = ("jax", "jaxlib", "torch", "cupy", "dask", "tensorflow", "xarray", "pandas")


def check_array_type(x):
    """Refuse arrays whose operators mean something else than plain NumPy's
    (``np.matrix``: ``*`` is a matrix product; masked arrays) and arrays of
    other libraries, which the generated NumPy code would silently convert."""
    t = type(x)
    if t is np.ndarray or isinstance(x, np.generic):
        return
    if isinstance(x, np.ndarray):
        raise TypeError(
            f"pullback differentiates plain NumPy arrays, and this argument is a "
            f"{t.__module__}.{t.__qualname__} (a subclass whose operators and functions "
            "behave differently). Pass np.asarray(x) (for a masked array, x.filled(v) or "
            "np.where on the mask).")
    if is_foreign(x):
        return                  # Dask, CuPy (runtime.backends)
    module = (getattr(t, "__module__", "") or "").split(".")[0]
    if module in ("jax", "jaxlib") or hasattr(t, "__jax_array__"):
        raise TypeError(
            f"This argument is a JAX array ({t.__module__}.{t.__qualname__}), which "
            "pb.grad, pb.value_and_grad, pb.vjp and pb.jvp take (as NumPy arrays, handing "
            "back JAX arrays); this function does not. Pass np.asarray(x).")
    if module in _FOREIGN or hasattr(t, "__array_namespace__"):
        raise TypeError(
            f"pullback differentiates NumPy, Dask, CuPy and JAX arrays and Python numbers, "
            f"and this argument is a {t.__module__}.{t.__qualname__}. Pass np.asarray(x).")


def is_inexact(x):
    """A float or complex value, or a structure (tuple, list, dict, namedtuple,
    dataclass) of them: something with a gradient."""
    t = type(x)
    if t is np.ndarray:
        return x.dtype.kind in "fc"
    if t is float or t is complex:
        return True
    if isinstance(x, (bool, np.bool_)):
        return False
    if isinstance(x, (float, complex)):
        return True
    if isinstance(x, (np.ndarray, np.generic)):
        check_array_type(x)
        return np.issubdtype(x.dtype, np.inexact)
    check_array_type(x)
    if is_foreign(x):
        return x.dtype.kind in "fc"
    reg = pytrees.registration(x)
    if reg is not None:             # a registered class: its children, as JAX
        pytrees.check_readable(x)
        return all(is_inexact(c) for c in reg[0](x)[0] if c is not None)
    if runtime.is_structure(x):
        leaves = runtime.fields_of(x)
        return all(is_inexact(v) for _, v in leaves)    # {} or (): no leaves, as JAX
    if pytrees.is_plain_object(x):  # an object of the user's class holding floats
        try:
            return pytrees.object_inexact(x)
        except PullbackError:       # __slots__, a cycle: check_differentiable_input says
            return False
    return False


def check_callable(fun, api):
    """Refuse a ``fun`` that is not callable, naming the ``api`` it was given to."""
    if not callable(fun):
        raise TypeError(f"{api} expects a function to differentiate, got {fun!r} "
                        f"(a {type(fun).__name__}).")


def check_argnums(argnums):
    if isinstance(argnums, int) and not isinstance(argnums, bool):
        return (argnums,)
    if isinstance(argnums, tuple) and argnums and all(
            isinstance(i, int) and not isinstance(i, bool) for i in argnums):
        return argnums
    raise TypeError(f"argnums must be an int or a non-empty tuple of ints, got {argnums!r}.")


def check_argnum_range(fun, argnums, n):
    for i in argnums:
        if not -n <= i < n:
            raise ValueError(f"argnums={i} is out of range: {fun_name(fun)} was called with "
                             f"{n} positional argument{'s' if n != 1 else ''}.")


def check_differentiable_input(fun, handle, i, x):
    if is_inexact(x):
        return
    params = getattr(handle, "params", ())
    name = params[i] if -len(params) <= i < len(params) and not getattr(
        handle, "variadic", False) else str(i)
    what = type(x).__name__ if not isinstance(x, (np.ndarray, np.generic)) \
        and not is_foreign(x) else f"an array of {x.dtype}"
    if pytrees.is_plain_object(x):
        pytrees.object_inexact(x)       # __slots__ or a cycle: refused with the reason
        raise TypeError(
            f"pb.grad cannot differentiate {fun_name(fun)} with respect to argument {i} "
            f"({name}), an object of class {what} that holds no float attribute (ints, "
            "strings and functions carry no gradient). Store floats in it, or leave "
            f"{i} out of argnums.")
    reg = pytrees.registration(x)
    if reg is not None:
        raise TypeError(
            f"pb.grad cannot differentiate {fun_name(fun)} with respect to argument {i} "
            f"({name}), a registered {what} with children that are not floats (as JAX, "
            "every child of a differentiated pytree must be a float or complex value or "
            "array). Make integer children aux data of its flatten function.")
    if isinstance(x, (bool, numbers.Integral, np.ndarray, np.generic)) or is_foreign(x):
        raise TypeError(
            f"pb.grad cannot differentiate {fun_name(fun)} with respect to argument {i} "
            f"({name}), which is {what}: integer and boolean values carry no gradient. "
            f"Pass a float (3.0, or x.astype(float)) or leave {i} out of argnums.")
    raise TypeError(
        f"pb.grad cannot differentiate {fun_name(fun)} with respect to argument {i} ({name}) "
        f"of type {what}: pass a float, a complex number or a NumPy array of floats.")


def split_aux(fun, out, has_aux):
    if not has_aux:
        return out, None
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise TypeError(f"With has_aux=True, {fun_name(fun)} must return a pair "
                        f"(output, aux), but it returned {type(out).__name__}.")
    return out[0], out[1]


def check_scalar_output(fun, value):
    if type(value) in _REAL_SCALARS:
        return                  # the common case
    if value is None:
        raise TypeError(f"pb.grad requires a scalar output, but {fun_name(fun)} returned None: "
                        f"add a `return` (on every path through the function).")
    if is_foreign(value) and value.ndim == 0 and value.dtype.kind == "f":
        return                  # a Dask or CuPy scalar (a lazy value, for Dask)
    if np.ndim(value) != 0 or not isinstance(value, (numbers.Number, np.ndarray, np.generic)):
        shape = np.shape(value) if isinstance(value, np.ndarray) else None
        what = f"an array of shape {shape}" if shape is not None else type(value).__name__
        raise TypeError(
            f"pb.grad requires a scalar output, but {fun_name(fun)} returned {what}. "
            "Reduce it to a scalar (for example with .sum()), or use pb.vjp for a "
            "non-scalar output.")
    if isinstance(value, (bool, numbers.Integral, np.integer, np.bool_)) or (
            isinstance(value, np.ndarray) and value.dtype.kind in "biu"):
        raise TypeError(
            f"pb.grad requires a float output, but {fun_name(fun)} returned "
            f"{type(value).__name__} {value!r}: an integer carries no gradient. If the "
            f"value is meant to vary with the input, compute it in floats (return 0.0, "
            f"not 0).")
    if np.iscomplexobj(value):
        raise TypeError(
            f"pb.grad requires a real output, but {fun_name(fun)} returned a complex value. "
            "Take its real part or its absolute value (np.real(y), np.abs(y) ** 2), or use "
            "pb.vjp, which accepts complex outputs.")


def sums_onto(gshape, shape):
    """Whether a cotangent of ``gshape`` is ``shape`` broadcast (and so can be
    summed back onto it)."""
    try:
        return np.broadcast_shapes(gshape, shape) == tuple(gshape)
    except ValueError:
        return False


_REAL_SCALARS = frozenset({float, np.float64, np.float32, np.float16, np.longdouble})


def check_cotangent(fun, value, ct):
    if isinstance(value, (tuple, list)):
        if not isinstance(ct, (tuple, list)) or len(ct) != len(value):
            raise ValueError(f"{fun_name(fun)} returned a {type(value).__name__} of "
                             f"{len(value)}, so its pullback needs a cotangent of the same "
                             f"structure, not {type(ct).__name__}.")
        for v, c in zip(value, ct):
            check_cotangent(fun, v, c)
        return
    if type(value) is not np.ndarray and (pytrees.registration(value) is not None
                                          or pytrees.is_plain_object(value)):
        return      # an object: its class is checked where it is read (pytrees)
    if np.shape(ct) != np.shape(value):
        raise ValueError(f"The cotangent passed to the pullback of {fun_name(fun)} has shape "
                         f"{np.shape(ct)}, but its output has shape {np.shape(value)}.")


def one_like(value):
    if type(value) is np.float64:
        # the same double as np.float64(1); a Python float keeps scalar
        # adjoints on Python's float arithmetic (several times faster than
        # NumPy scalars', in every step of a loop's adjoint)
        return 1.0
    if isinstance(value, np.generic):
        return value.dtype.type(1)      # a scalar stays a scalar (0-d arrays are slow)
    if isinstance(value, np.ndarray):
        return np.ones_like(value)
    return type(value)(1) if isinstance(value, (int, float)) else 1.0


def fresh_grad(g, x):
    """Gradients come back as fresh objects of the input's type."""
    if g is None:
        return runtime.zeros_like(x)
    return g


def fun_name(fun):
    return getattr(fun, "__qualname__", None) or getattr(fun, "__name__", repr(fun))


def check_tangents(primals, tangents):
    """``pb.jvp``'s primals and tangents as tuples, one tangent per primal of
    its primal's structure, shape and realness (JAX's conventions)."""
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


# -- JAX: taken at the boundary --------------------------------------------------

class _JaxBoundary:
    """The device the JAX arguments live on, and the way back to JAX arrays."""

    traced = False      # (TRACED: the arguments hold tracers, under jax.jit)

    def __init__(self, device):
        self.device = device

    def back(self, value, like=None):
        """``value`` (a NumPy array or number, or a structure of them) as JAX
        arrays on the inputs' device; with ``like`` (an argument), only where
        ``like`` held a JAX array."""
        import jax
        if value is None:
            return None
        if runtime.is_structure(value) and (like is None or runtime.is_structure(like)):
            items = dict(runtime.fields_of(like)) if like is not None else {}
            return runtime.rebuild_like(value, {k: self.back(v, items.get(k) if like is not None
                                                      else None)
                                        for k, v in runtime.fields_of(value)})
        if like is not None and backend_of(like) != "jax":
            return value
        if isinstance(value, (np.ndarray, np.generic, float, int, complex)) \
                and not isinstance(value, bool):
            return jax.device_put(np.asarray(value), self.device)
        return value


def _has_jax(a):
    if backend_of(a) == "jax":
        return True
    if runtime.is_structure(a):
        return any(_has_jax(v) for _, v in runtime.fields_of(a))
    return runtime.is_instance(a) and _has_tracer(a)     # an object under jax.jit


def _to_host(a, found):
    if runtime.is_structure(a):
        return runtime.rebuild_like(a, {k: _to_host(v, found) for k, v in runtime.fields_of(a)})
    if backend_of(a) != "jax":
        return a
    import jax
    if isinstance(a, jax.core.Tracer):
        raise TypeError(
            "pullback differentiates concrete arrays, and this argument is a traced JAX "
            f"value ({type(a).__name__}: inside jax.jit, jax.grad or jax.vmap). Call the "
            "pullback function outside JAX's transforms, or differentiate with jax.grad.")
    if not found:
        devices = a.devices() if hasattr(a, "devices") else ()
        found.append(next(iter(devices)) if len(devices) == 1 else None)
    return np.asarray(a)


class _Traced(_JaxBoundary):
    traced = True


#: what ``jax_boundary`` gives for arguments that hold JAX tracers
TRACED = _Traced(None)


def _has_tracer(a, seen=None):
    import jax
    if isinstance(a, jax.core.Tracer):
        return True
    if isinstance(a, (tuple, list)):
        return any(_has_tracer(v, seen) for v in a)
    if runtime.is_structure(a):
        return any(_has_tracer(v, seen) for _, v in runtime.fields_of(a))
    # a registered pytree or an object of the user's class: by attribute (once
    # each: an object may hold itself)
    if not runtime.is_instance(a):
        return False
    seen = set() if seen is None else seen
    if id(a) in seen:
        return False
    seen.add(id(a))
    return any(_has_tracer(v, seen) for v in runtime.attributes_of(a).values())


def jax_boundary(args):
    """``(args, boundary)``: the arguments with every JAX array read as a NumPy
    array, and a ``_JaxBoundary`` whose ``back`` turns results into JAX
    arrays again; ``(args, None)`` when no argument holds a JAX array (the
    common case: one type test per argument)."""
    for a in args:
        t = type(a)
        if t is np.ndarray or t is float or t is int:
            continue
        if _has_jax(a):
            break
    else:
        return args, None
    if _has_tracer(args):           # under jax.jit: the namespace build (backend.namespace)
        return args, TRACED
    found = []
    host = tuple(_to_host(a, found) for a in args)
    if type(args) is not tuple:         # a bound call's flattened arguments (Flat)
        host = type(args)(host, args.layout) if hasattr(args, "layout") else host
    return host, _JaxBoundary(found[0] if found else None)
