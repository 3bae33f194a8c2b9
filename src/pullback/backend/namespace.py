"""The namespace build: a transform's generated primal and adjoint, run on
JAX's traced arrays under ``jax.jit``.

Called with JAX tracers (``jax.jit(pb.grad(f))(x)``), pullback cannot read
the arguments as NumPy arrays.  It takes the transform it would use for NumPy
arrays of the same dtypes and ranks, built out of place (no ``x_bar[i] += g``:
``x_bar = x_bar + unindex(g, x, i)``) and without fused kernels, and builds its
functions again from the same source with two bindings changed: the names
that held NumPy (``np``, ``numpy``, ``from numpy import sin``) hold
``jax.numpy``, and the runtime helpers are their namespace-generic versions
(``GENERIC``: indexed scatters by ``.at[index].add``, no buffer written).
Arguments may be structures of traced arrays (tuples, lists, dicts,
namedtuples, dataclasses, registered pytrees: a dict of an MLP's parameters):
the transform is the one for the same structure of NumPy stand-ins, the
generic helpers take structures apart as NumPy's do, and a gradient comes
back with its argument's structure (``unflatten`` for a registered pytree).
One generated source, two bindings; the NumPy build is untouched, so NumPy
keeps its fast path (the traced path starts only where ``checks.jax_boundary``
finds a tracer, after its type tests).

Whether that can work is decided on the generated source
(``backend.traceability``):
no Python ``if``/``while``/conversion to a number on a value computed from the
traced inputs, no write into an array, no helper or NumPy function without a
generic form.  ``pb.source`` states the answer in its header; a call under
``jax.jit`` that is not traceable raises ``NotTraceableError`` with the
first reason and the user's line.  The generic helpers and the jax.numpy
twins are in ``backend.generic``.

Before, a NumPy function; after, its gradient traced by ``jax.jit``:

>>> from pullback.testing import function_from_source
>>> import jax, jax.numpy as jnp, pullback as pb
>>> f = function_from_source('''
... def f(x):
...     return np.sum(np.sin(x) * x)
... ''')
>>> jax.jit(pb.grad(f))(jnp.zeros(2)).tolist()
[0.0, 0.0]
"""
from __future__ import annotations

import copy
import types

import numpy as np

from .. import pytree_boundary, pytrees
from ..checks import _has_tracer
from ..errors import NotTraceableError
from ..runtime import core as _core
from .generic import _callee_of, _generic_helpers, _generic_of, _shape
from .twins import _numpy_twin
from .traceability import Reason, traceability

__all__ = ["value_and_grad", "vjp", "jvp", "is_traced", "build"]


# -- building and running -------------------------------------------------------------

def is_traced(args):
    """Whether ``args`` (a tuple, possibly of structures) hold a JAX tracer."""
    return any(_holds_tracer(a) for a in args)


def _stand_in(a, seen=None):
    """A NumPy value of ``a``'s abstract signature (dtype and rank), as small
    as can be: the transform is chosen by signature, never by size (and a
    size-1 stand-in keeps fused kernels out).  A structure (tuple, list, dict,
    namedtuple, dataclass), a registered pytree object or an object of the
    user's class stands in as the same structure of stand-ins."""
    import jax
    if isinstance(a, (jax.core.Tracer, jax.Array)) or (
            isinstance(a, np.ndarray) and type(a) is not np.ndarray) or type(a) is np.ndarray:
        return np.zeros((1,) * a.ndim, dtype=np.dtype(a.dtype))
    if not _has_tracer(a) and not _holds_jax(a):
        return a
    if _core.is_structure(a):
        return _core.rebuild_like(a, {k: _stand_in(v, seen) for k, v in _core.fields_of(a)})
    reg = pytrees.registration(a)
    if reg is not None:
        children, aux = reg[0](a)
        return reg[1](aux, [_stand_in(c, seen) for c in children])
    if _core.is_instance(a):
        seen = set() if seen is None else seen
        if id(a) in seen:
            raise NotTraceableError(
                f"pullback does not run generated code under jax.jit on a "
                f"{type(a).__name__} that holds itself.",
                hint="Pass the arrays it holds as arguments, or call pullback outside jax.jit.")
        seen.add(id(a))
        new = copy.copy(a)
        for k, v in vars(a).items():
            object.__setattr__(new, k, _stand_in(v, seen))
        return new
    raise NotTraceableError(
        "pullback runs generated code under jax.jit on arrays, numbers and structures of "
        f"them (tuples, lists, dicts, dataclasses, registered pytrees); this argument is a "
        f"{type(a).__name__} holding JAX arrays.",
        hint="Pass the arrays as separate arguments, or call pullback outside jax.jit.")


def _leaves(a, seen=None):
    """The arrays and numbers in ``a`` (a value or a structure of values;
    an object that holds itself is read once)."""
    if _core.is_structure(a):
        return [x for _, v in _core.fields_of(a) for x in _leaves(v, seen)]
    if hasattr(a, "shape") or not _core.is_instance(a):
        return [a]
    seen = set() if seen is None else seen
    if id(a) in seen:
        return []
    seen.add(id(a))
    reg = pytrees.registration(a)
    children = reg[0](a)[0] if reg is not None else vars(a).values()
    return [x for c in children for x in _leaves(c, seen)]


def _holds_jax(a):
    import jax
    return any(isinstance(x, jax.Array) for x in _leaves(a))


def _holds_tracer(a):
    import jax
    return any(isinstance(x, jax.core.Tracer) for x in _leaves(a))


def _kind(a):
    """The dtype kind of a leaf ("f", "c", "i", "b", ...)."""
    if isinstance(a, bool):
        return "b"
    return np.dtype(a.dtype).kind if hasattr(a, "dtype") else np.result_type(a).kind


def _inexact(a):
    """Whether ``a`` carries a gradient: a float or complex leaf, or a
    structure whose leaves all are (as the NumPy path's ``is_inexact``)."""
    leaves = _leaves(a)
    if len(leaves) == 1 and leaves[0] is a:
        return a is not None and not isinstance(a, (str, bytes)) and _kind(a) in "fc"
    return all(_inexact(x) for x in leaves)


def _to_user(g, a):
    """The gradient the user sees for the argument ``a`` from the adjoint's
    ``g`` (already projected: a structure's is the same structure): a
    registered pytree's is ``unflatten(aux, child_gradients)``, a plain
    object's a copy whose float attributes hold their gradients.  (Not
    ``pytree_boundary.to_user_grad``: it tells float children by NumPy's types and
    would keep a traced child as its own gradient.)"""
    if hasattr(a, "shape") or not (_core.is_structure(a) or _core.is_instance(a)):
        return g
    if _core.is_structure(a):
        return _core.rebuild_like(a, {k: _to_user(_core._entry(g, k), v)
                                      for k, v in _core.fields_of(a)})
    attrs = vars(a)
    reg = pytrees.registration(a)
    if reg is not None:
        children, aux = reg[0](a)
        names = {id(v): k for k, v in attrs.items()}
        grads = []
        for c in children:
            k = names.get(id(c))
            if k is None:
                raise NotTraceableError(
                    f"pullback hands back the gradient of a {type(a).__name__} under jax.jit "
                    "when each child its flatten gives is one of the object's attributes; "
                    "this child is not.", hint="Flatten to the attributes themselves, or call "
                    "pullback outside jax.jit.")
            grads.append(_to_user(_core._entry(g, k), c))
        return reg[1](aux, grads)
    new = copy.copy(a)                 # a plain object: its floats' gradients
    for k, v in attrs.items():
        if _core.is_structure(v) or _core.is_instance(v) or (
                v is not None and not isinstance(v, (str, bytes, bool) + _core._NO_GRADIENT)
                and _kind(v) in "fc"):
            object.__setattr__(new, k, _to_user(_core._entry(g, k), v))
    return new


def _traced_callee(value):
    """A callee's primal or adjoint for traced arguments: its own namespace
    build, made when it is first called (the callee's arguments are known
    then), with the same calling convention as ``Derivative.for_callers``."""
    tag = getattr(value, "__pullback_callee__", None)
    if tag is None:                                 # the adjoint
        def adjoint(res, ct):
            run_adjoint, r, mask, n = res
            return _spread(run_adjoint(r, ct), mask, n)
        return adjoint
    handle, mask = tag[0], tag[1]

    def primal(*args, **kwargs):
        if kwargs or getattr(handle, "variadic", False) or len(args) != len(handle.params):
            args = handle.bind(args, kwargs)
        _, (run_primal, run_adjoint) = _traced_build(handle.fun, handle, args, mask, False)
        out, r = run_primal(*args)
        return out, (run_adjoint, r, mask, len(args))
    return primal


def build(loaded, fn):
    """The primal and adjoint of ``loaded`` with NumPy bound to jax.numpy and
    the generic helpers in place of NumPy's."""
    import jax.numpy as jnp
    generic = _generic_helpers()
    helpers = {}
    for name, value in loaded.helpers.items():
        key = _generic_of(value)
        helpers[name] = generic[key] if key is not None else \
            _traced_callee(value) if _callee_of(value) is not None else \
            _traced_forward_callee(value) if hasattr(value, "__pullback_forward__") else \
            _numpy_twin(value, jnp)
    globals_ = {k: _numpy_twin(v, jnp) for k, v in fn.__globals__.items()}
    code = compile(loaded.text, loaded.filename, "exec")
    make = next(c for c in code.co_consts
                if isinstance(c, types.CodeType) and c.co_name == "__pullback_make__")
    inner = {c.co_name: c for c in make.co_consts if isinstance(c, types.CodeType)}
    closure = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))

    def function(name):
        c = inner[name]
        cells = tuple(_twin_cell(closure[v], jnp) if v in closure and v not in helpers
                      else types.CellType(helpers[v]) for v in c.co_freevars)
        return _guarded(types.FunctionType(c, globals_, name, None, cells), loaded, fn)

    return function(loaded.primal.__name__), function(loaded.adjoint.__name__)


def _tracer_errors():
    import jax
    names = ("ConcretizationTypeError", "TracerArrayConversionError",
             "TracerBoolConversionError", "TracerIntegerConversionError",
             "NonConcreteBooleanIndexError")
    return tuple(getattr(jax.errors, n) for n in names if hasattr(jax.errors, n))


def _guarded(run, loaded, fn):
    """``run`` (a generated function of the namespace build), turning an
    error JAX raises where a traced value is needed concrete, or an array
    written into, into a ``NotTraceableError`` at the user's line: what the
    traceability check could not see (a library function given a tracer)
    is still refused as pullback's own error, never as a JAX internal one."""
    caught = _tracer_errors()

    def guarded(*args):
        try:
            return run(*args)
        except caught as err:
            raise _not_traceable(err, loaded, fn, "needs a traced value as a concrete one "
                                 f"({type(err).__name__})") from err
        except TypeError as err:
            # jax.numpy refusing what NumPy takes (a write into an array, a
            # list where an array is needed: `np.take(x, [0, 2])`)
            what = "writes into a JAX array, which is immutable" if "immutable" in str(err) \
                else f"is refused by jax.numpy ({str(err).splitlines()[0]})"
            raise _not_traceable(err, loaded, fn, what) from err
    guarded.__name__ = run.__name__
    return guarded


def _not_traceable(err, loaded, fn, what):
    tb, lineno = err.__traceback__, None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == loaded.filename:
            lineno = tb.tb_lineno
        tb = tb.tb_next
    user = loaded.user_line(lineno) if lineno is not None else None
    reason = Reason(what, loaded.user_file, user)
    return NotTraceableError(
        f"{getattr(fn, '__qualname__', fn)}'s derivative cannot run under jax.jit: a call in "
        f"its generated code {what}.", reason.location(),
        "Call the pullback function outside jax.jit (it takes concrete JAX arrays), or "
        "differentiate with jax.grad.")


def _twin_cell(cell, jnp):
    """The user's closure cell, or a new one holding jax.numpy's twin where
    the cell holds NumPy or one of its functions."""
    try:
        value = cell.cell_contents
    except ValueError:
        return cell
    twin = _numpy_twin(value, jnp)
    return cell if twin is value else types.CellType(twin)


def _spread(grads, wrt, n):
    """The adjoint's gradients (one per parameter in ``wrt``) as one per
    parameter, ``None`` for the others."""
    full = [None] * n
    for k, i in enumerate(wrt):
        full[i] = grads[k]
    return tuple(full)


def _traced_build(fun, handle, args, wrt, has_aux):
    stand_ins = tuple(_stand_in(a) for a in args)
    if hasattr(args, "layout"):         # a call of a *args/**kwargs function, bound
        stand_ins = type(args)(stand_ins, args.layout)
    loaded = handle.specialize(stand_ins, wrt, has_aux, inplace=False)
    traced = [i for i, a in enumerate(args) if _holds_tracer(a)]
    reason = traceability(loaded, handle.fun, traced)
    if reason is not None:
        raise NotTraceableError(
            f"{getattr(fun, '__qualname__', fun)}'s derivative cannot run under jax.jit: "
            f"its generated code has {reason.what}.", reason.location(),
            "Call the pullback function outside jax.jit (it takes concrete JAX arrays), "
            "write the branch with np.where, or differentiate with jax.grad. pb.source(f) "
            "says in its header whether jax.jit can trace f's gradient.")
    return loaded, build(loaded, handle.fun)


def _check_scalar(fun, value):
    from ..checks import fun_name
    shape = _shape(value)
    dtype = np.dtype(value.dtype) if hasattr(value, "dtype") else np.result_type(value)
    if shape != () or dtype.kind != "f":
        what = f"an array of shape {shape}" if shape != () else f"a value of {dtype}"
        raise TypeError(f"pb.grad requires a real float scalar output, but {fun_name(fun)} "
                        f"returned {what} (under jax.jit). Reduce it to a float scalar, or "
                        "use pb.vjp.")


def value_and_grad(fun, handle, args, argnums, wrt, has_aux):
    """``pb.value_and_grad(fun, argnums, has_aux)(*args)`` for arguments that
    hold JAX tracers (under ``jax.jit``)."""
    import jax.numpy as jnp
    argnums_t = argnums if isinstance(argnums, tuple) else (argnums,)
    _, (primal, adjoint) = _traced_build(fun, handle, args, wrt, has_aux)
    for i in argnums_t:
        for leaf in _leaves(args[i]):
            if leaf is not None and not isinstance(leaf, (str, bytes)) \
                    and _kind(leaf) not in "fc" and (leaf is args[i] or _kind(leaf) == "b"):
                raise TypeError(f"pb.grad is asked for the gradient of argument {i}, which "
                                "is or holds a value of "
                                f"{'bool' if _kind(leaf) == 'b' else np.result_type(leaf)}: "
                                "an integer or boolean carries no gradient.")
    out, res = primal(*args)
    value, aux = (out[0], out[1]) if has_aux else (out, None)
    _check_scalar(fun, value)
    grads = _spread(adjoint(res, jnp.ones_like(value)), wrt, len(args))
    g = tuple(_to_user(grads[i], args[i]) for i in argnums_t)
    result = g[0] if isinstance(argnums, int) else g
    return ((value, aux), result) if has_aux else (value, result)


def vjp(fun, handle, args, has_aux):
    """``pb.vjp(fun, *args)`` for arguments that hold JAX tracers."""
    wrt = tuple(i for i, a in enumerate(args) if _inexact(a))
    _, (primal, adjoint) = _traced_build(fun, handle, args, wrt, has_aux)
    out, res = primal(*args)
    value, aux = (out[0], out[1]) if has_aux else (out, None)

    def pullback(ct):
        if pytrees.needs_boundary(value):       # an object's cotangent: by attribute
            ct = pytree_boundary.to_internal_cotangent(ct, value)
        grads = _spread(adjoint(res, ct), wrt, len(args))
        return tuple(None if g is None else _to_user(g, a) for g, a in zip(grads, args))

    pullback.__pullback_api__ = "pb.vjp"
    return (value, pullback, aux) if has_aux else (value, pullback)


def _forward_build(fun, handle, args, wrt, has_aux):
    """The tangent function of ``handle`` for ``args`` (which hold tracers)
    with tangents for the parameters ``wrt``, built on jax.numpy, after the
    traceability check (the tangents count as traced)."""
    stand_ins = tuple(_stand_in(a) for a in args)
    if hasattr(args, "layout"):         # a call of a *args/**kwargs function, bound
        stand_ins = type(args)(stand_ins, args.layout)
    loaded = handle.specialize(stand_ins, wrt, has_aux)
    traced = [i for i, a in enumerate(args) if _holds_tracer(a)]
    traced += [len(args) + k for k in range(len(wrt))]          # the tangents
    reason = traceability(loaded._loaded, handle.fun, traced)
    if reason is not None:
        raise NotTraceableError(
            f"{getattr(fun, '__qualname__', fun)}'s tangent function cannot run under "
            f"jax.jit: its generated code has {reason.what}.", reason.location(),
            "Call pb.jvp outside jax.jit (it takes concrete JAX arrays), write the branch "
            "with np.where, or differentiate with jax.jvp.")
    return build(loaded._loaded, handle.fun)[0]


def _traced_forward_callee(value):
    """A callee's tangent function as generated tangent code holds it
    (``ForwardDerivative.for_callers``: ``fwd(tangents, *args)``), for traced
    arguments: its own namespace build, made and checked when it is first
    called (its arguments are known then), as reverse mode's callees."""
    handle, mask = value.__pullback_forward__

    def fwd(tangents, *args, **kwargs):
        args = handle.bind(args, kwargs)
        return _forward_build(handle.fun, handle, args, mask, False)(*args, *tangents)
    fwd.__name__ = value.__name__
    return fwd


def _same_structure(p, t):
    """Whether the tangent ``t`` has the primal ``p``'s leaves and shapes."""
    pl, tl = _leaves(p), _leaves(t)
    return len(pl) == len(tl) and all(
        x is None or isinstance(x, (str, bytes)) or _shape(x) == _shape(y)
        for x, y in zip(pl, tl))


def jvp(fun, primals, tangents, has_aux):
    """``pb.jvp(fun, primals, tangents)`` for primals or tangents that hold
    JAX tracers: the tangent function (forward mode), built as above.
    Primals may be structures of traced arrays (a dict of parameters); each
    tangent is the same structure."""
    from ..forward.calls import forward_of
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise ValueError(f"pb.jvp takes one tangent per primal: {len(primals)} primals, "
                         f"{len(tangents)} tangents.")
    for p, t in zip(primals, tangents):
        if not _same_structure(p, t):
            what = f"of shape {_shape(p)}" if hasattr(p, "shape") else \
                f"of type {type(p).__name__}"
            raise ValueError(f"A tangent that does not match its primal ({what}) was given; "
                             "each tangent must have its primal's structure and shapes.")
    handle = forward_of(fun)
    if not hasattr(handle, "specialize") or getattr(handle, "variadic", False):
        raise NotTraceableError(
            f"pb.jvp runs under jax.jit for plain Python functions with named parameters; "
            f"{getattr(fun, '__qualname__', fun)} is not one.",
            hint="Call pb.jvp outside jax.jit, or differentiate with jax.jvp.")
    wrt = tuple(i for i, a in enumerate(primals) if _inexact(a))
    for i in wrt:
        if pytrees.needs_boundary(primals[i]):
            raise NotTraceableError(
                f"pb.jvp runs under jax.jit on arrays, numbers and tuples, lists and dicts "
                f"of them; primal {i} holds a {type(primals[i]).__name__} object.",
                hint="Pass its arrays as a dict or as separate arguments, or call pb.jvp "
                     "outside jax.jit.")
    tangent_fn = _forward_build(fun, handle, primals, wrt, has_aux)
    out, out_dot = tangent_fn(*primals, *(tangents[i] for i in wrt))
    if has_aux:
        return out[0], out_dot, out[1]
    return out, out_dot
