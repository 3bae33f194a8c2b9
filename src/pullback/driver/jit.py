"""The just-in-time driver: a handle's transform for the arguments at hand.

``callees.Derivative.specialize`` comes here (``Derivative.driver``): the
handle's own cache of transforms, one per abstract signature of the
arguments, is checked first; else ``obtain`` gives the transform from an
up-to-date artifact (``artifacts``), else the on-disk cache (``cache``), else
the compiler (``pipeline.transform``), whose result is then cached::

    pb.grad(f)(x)  ->  derivative_of(f).call_primal  ->  specialize
                   ->  obtain: artifact | cache | transform (pipeline)
"""
from __future__ import annotations

import os
import sys
import threading

import numpy as np

from .bindings import Bindings
from ..callees import Derivative
from ..checks import signature_key
from ..runtime import set_odeint_vjp
from ..runtime.backends import foreign_arguments, functional_only
from ..runtime import calls as runtime_calls

__all__ = ["specialize", "transform", "obtain"]

_LOCKS_LOCK = threading.Lock()


_SCALAR_TYPES = frozenset((float, int))      # their signature key is the type itself
_kernels = None


def specialize(handle, args, wrt, has_aux=False, inplace=None):
    """The ``Loaded`` transform of ``handle`` (a ``callees.Derivative``) for
    ``args``: the handle's own cache while what it resolved is unchanged, else
    ``obtain``.

    Scalar code calls its user functions many times (a recursion, a loop of
    calls), so a call whose arguments are all Python floats and ints is
    looked up first by the tuple of their types alone (``handle.scalar_cache``,
    filled below only for such calls): no signature keys, no sizing."""
    global _kernels
    if inplace is None:         # (_inplace_default's common case inline: the name unset)
        inplace = True if _ENV_DATA is not None and _INPLACE_KEY not in _ENV_DATA \
            else _inplace_default()
    else:
        inplace = bool(inplace)
    if handle.scalar_cache:         # (empty for a function only ever given arrays)
        entry = handle.scalar_cache.get((tuple(map(type, args)), wrt, has_aux, inplace))
        if entry is not None and entry[1].current():
            return entry[0]
    if _kernels is None:     # late: importing pullback does not load the compiler
        from ..lowering import kernels as _kernels
    # a function called again with arrays of the dtypes and ranks of its last
    # call (the common case at the top level): that call's transform, with no
    # signature keys built, no dict lookup, and the arrays sized here (plain
    # arrays: large from the threshold's number of elements, as size_class)
    memo = handle.last_arrays
    if memo is not None and memo[0] == wrt and memo[1] == (has_aux, inplace) \
            and len(args) == len(memo[2]):
        threshold, large = _kernels.current_threshold(), False
        for a, (dtype, ndim) in zip(args, memo[2]):
            if type(a) is not np.ndarray or a.dtype is not dtype or a.ndim != ndim:
                break
            if a.size >= threshold:
                large = True
        else:
            entry = memo[3]
            if large is memo[4] and entry[1].current():
                return entry[0]
    large = _kernels.size_class(args)    # large arrays: elementwise work is fused
    layout = handle.layout_of(args)      # *args/**kwargs: one transform per call layout
    key = (tuple([signature_key(a) for a in args]), wrt, has_aux, inplace, large, layout)
    entry = handle.cache.get(key)
    if entry is not None and entry[1].current():
        if not large and layout is None and _SCALAR_TYPES.issuperset(key[0]):
            _remember(handle, key, entry)      # (arrays: no call)
        elif layout is None:
            _remember_arrays(handle, args, key, entry)
        return entry[0]
    with _lock_for(handle, key):       # one transform per key, however many threads
        entry = handle.cache.get(key)
        if entry is not None and entry[1].current():
            return entry[0]
        # what the transform resolves (globals, closure cells) is recorded first
        # and checked on every later call: a rebinding makes it transform again
        bindings = Bindings.capture(handle.fun)
        # an up-to-date artifact, else the on-disk cache, else the compiler
        options = {}
        if inplace and functional_only(args):   # Dask: a graph, not a buffer
            inplace = False
        if not inplace:
            options["inplace"] = False
        if large:
            options["large"] = True
        if layout is not None:
            options["layout"] = [layout.nvar, list(layout.kwnames)]
        loaded = obtain(handle.fun, key[0], wrt, has_aux,
                        lambda: transform(handle, args, wrt, has_aux, inplace),
                        options or None)
        if foreign_arguments(args):     # Dask, CuPy: NumPy's names bound to their library
            loaded = _foreign_build(handle, args, loaded)
        entry = handle.cache[key] = (loaded, bindings)
        _remember(handle, key, entry)
    return loaded


def _foreign_build(handle, args, loaded):
    from ..backend import foreign      # (late, as the compiler)
    twin = foreign.twin_for(args)
    return loaded if twin is None else foreign.bind(loaded, handle.fun, twin)


def _remember(handle, key, entry):
    """Enter ``entry`` in the handle's scalar cache if its arguments are all
    Python floats and ints: their signature keys are then their types (the
    scalar cache's key), and such a call is never large nor has a layout."""
    if key[4] or key[5] is not None or not _SCALAR_TYPES.issuperset(key[0]):
        return
    handle.scalar_cache[key[:4]] = entry


def _remember_arrays(handle, args, key, entry):
    """Keep ``entry`` as ``handle``'s transform for arrays of the dtypes and
    ranks of ``args`` (all plain NumPy arrays; see ``specialize``)."""
    if args and all(type(a) is np.ndarray for a in args):
        handle.last_arrays = (key[1], key[2:4], tuple((a.dtype, a.ndim) for a in args), entry,
                              key[4])


def _lock_for(handle, key):
    with _LOCKS_LOCK:
        lock = handle._locks.get(key)
        if lock is None:
            lock = handle._locks[key] = threading.RLock()
    return lock


def transform(handle, args, wrt, has_aux=False, inplace=True):
    """A new transform of ``handle``'s function for ``args`` (the compiler)."""
    from .. import pipeline
    from ..analyses import kinds as kinds_
    from ..lowering import kernels
    layout = handle.layout_of(args)
    params = handle.params if layout is None else layout.params
    param_kinds = {p: kinds_.of_value(a) for p, a in zip(params, args)}
    with kernels.sizing(args):
        return pipeline.transform(handle.fun, param_kinds, [params[i] for i in wrt],
                                  has_aux, inplace=inplace, layout=layout)


# os.environ.get costs a microsecond when the name is unset (a KeyError
# raised and caught), on every top-level call; CPython keeps the environment
# in a dict of bytes on POSIX, read directly when it is there
_ENV_DATA = getattr(os.environ, "_data", None)
_INPLACE_KEY = b"PULLBACK_INPLACE"
if not (isinstance(_ENV_DATA, dict) and os.name == "posix"):
    _ENV_DATA = None


def _inplace_default():
    """In-place gradient accumulation is on unless ``PULLBACK_INPLACE=0``."""
    if _ENV_DATA is not None:
        raw = _ENV_DATA.get(_INPLACE_KEY)
        if raw is None:
            return True
    return os.environ.get("PULLBACK_INPLACE", "1").strip().lower() not in ("0", "false", "no",
                                                                          "off")


def obtain(fn, sig_key, wrt, has_aux, make, options=None):
    """The ``Loaded`` transform of ``fn`` for the abstract signature
    ``sig_key`` (see ``checks.signature_key``) and ``wrt`` (argument indices):
    from an up-to-date artifact, else the on-disk cache, else ``make()``,
    whose result is then cached."""
    from . import artifacts, cache
    material = cache.identity(fn, sig_key, wrt, has_aux)
    if material is not None and options:
        material["options"] = dict(options)
    if material is not None and not has_aux and not options:
        loaded = artifacts.lookup(fn, material)
        if loaded is not None:
            cache.stats["artifact_hits"] += 1
            return loaded
    use_cache = material is not None and cache.enabled()
    if use_cache:
        loaded = cache.load(fn, material)
        if loaded is not None:
            cache.stats["cache_hits"] += 1
            return loaded
    cache.stats["transforms"] += 1
    loaded = make()
    if use_cache:
        cache.store(fn, material, loaded)
    return loaded


def _field_vjp(func, y, t, args, ct, tfirst):
    """``func(y, t, *args)`` (``func(t, y, *args)`` with ``tfirst``) and the
    cotangents of ``y``, ``t`` and each of ``args`` for the output cotangent
    ``ct``, from pullback's own derivative of ``func`` (the dispatcher that
    differentiates calls of function values).  Installed by the driver (imported
    with pullback), so that a cached or ahead-of-time adjoint finds it."""
    from . import dispatch      # late: importing pullback does not load the compiler
    call = (t, y) + tuple(args) if tfirst else (y, t) + tuple(args)
    out, res = dispatch.dynamic_call(func, tuple(range(len(call))), False, *call)
    grads = dispatch.dynamic_adjoint(res, ct)
    yb, tb = (grads[1], grads[0]) if tfirst else (grads[0], grads[1])
    return out, yb, tb, tuple(grads[2:])


Derivative.driver = sys.modules[__name__]       # see Derivative.driver
set_odeint_vjp(_field_vjp)                      # scipy.integrate.odeint's adjoint


_late = {}      # the compiler's modules the hooks below call, imported at their first use


def _dispatcher():
    dispatch = _late.get("dispatch")
    if dispatch is None:        # late: importing pullback does not load the compiler
        from . import dispatch
        _late["dispatch"] = dispatch
    return dispatch


def _writes_variant(fn):
    from ..frontend.written import variant      # (late, as above)
    return variant(fn)


def _held_writes(fn):
    module = _late.get("held_writes")
    if module is None:      # (late, as above; every call of a function value asks)
        from ..frontend import held_writes as module
        _late["held_writes"] = module
    return module.held_writes(fn)


def _self_array_writes(cls, fn, self_name):
    from ..frontend.call_guards import self_array_writes as found   # (late, as above)
    return found(cls, fn, self_name, set())


# generated code's dynamic_call comes here; an artifact's call of a function
# writing into its arguments gets its variant (derivative_of(f, writes=True));
# runtime.arguments asks what a function value or a method writes through its
# parameters (frontend.held_writes)
def _array_attribute_rule(attr):
    """``(rule, linear)`` of an array's attribute ``attr`` (``ndarray.T``), for
    runtime.attribute_cotangent / attribute_tangent, which import no compiler module."""
    from ..rules.registry import LINEAR, lookup
    rule = lookup(f"ndarray.{attr}")
    return rule, rule is not None and rule.jvp == LINEAR


runtime_calls.install(dispatcher=_dispatcher, writes_variant=_writes_variant,
                      held_writes=_held_writes, self_array_writes=_self_array_writes,
                      array_attribute_rule=_array_attribute_rule)
