"""Describing values and finding them again: how the on-disk cache
(``cache``) and artifacts (``aot``, ``artifacts``) store the values a
transform's text binds, and the globals a function reads.

``describe(value, home_globals)`` gives JSON-able data that ``resolve``
turns back into the same value in another process, or None where the value
cannot be found again by name (then nothing is cached)::

    unbroadcast     ->  ["object", "pullback.runtime", "unbroadcast"]
    np              ->  ["module", "numpy"]
    dense_primal    ->  ["callee", ".", "dense", [0, 1, 2], "primal"]

``fingerprint(fn)`` describes what every global and closure name ``fn``
mentions resolves to now (a module by name, a function by import path and
parameters, data by type), so that rebinding one misses.

>>> import numpy as np
>>> describe(np, {}), describe(np.sin, {})
(['module', 'numpy'], ['object', 'numpy', 'sin'])
"""
from __future__ import annotations

import importlib
import inspect
import sys
import types


def _find(module, qualname, home):
    """The object at ``module``/``qualname``; module ``"."`` means the globals
    dict ``home``.  Raises ``LookupError`` (or the import's error)."""
    parts = qualname.split(".") if qualname else []
    if module == ".":
        if not parts or parts[0] not in home:
            raise LookupError(qualname)
        obj, parts = home[parts[0]], parts[1:]
    else:
        obj = sys.modules.get(module) or importlib.import_module(module)
    for p in parts:
        obj = getattr(obj, p)
    return obj


def path_of(obj, home_globals):
    """``(module, qualname)`` by which ``obj`` is found again (module ``"."``
    for the module whose globals are ``home_globals``), or None.  Only
    modules already imported are consulted: describing imports nothing."""
    home = home_globals.get("__name__")
    name = getattr(obj, "__name__", None)
    tries = [(getattr(obj, "__module__", None), getattr(obj, "__qualname__", None) or name)]
    if (tries[0][0] or "").startswith("pullback.runtime."):
        # the package re-exports its helpers, and reaches the others (runtime.control)
        # as attributes, so that an artifact imports only pullback.runtime
        sub = tries[0][0][len("pullback.runtime."):]
        tries[:0] = [("pullback.runtime", name), ("pullback.runtime", f"{sub}.{tries[0][1]}")]
    tries += [(m, name) for m in ("numpy", "math", "builtins", "operator")]
    for module, qualname in tries:
        if not isinstance(module, str) or not isinstance(qualname, str) or "<" in qualname:
            continue
        where = "." if module == home else module
        if where != "." and module not in sys.modules:
            continue
        try:
            if _find(where, qualname, home_globals) is obj:
                return where, qualname
        except Exception:
            continue
    if getattr(obj, "jvp_of", None) is not None:
        # pb.checkpoint(f) or pb.forward(f) bound to a name of its own
        # (`step_ck = pb.checkpoint(step)`): that name
        for key, value in list(home_globals.items()):
            if value is obj and isinstance(key, str) and key.isidentifier():
                return ".", key
    return None


def _callee(value):
    """``(handle, mask, which, inplace, flags)`` if ``value`` is a callee
    primal or adjoint made by ``for_callers``, else None; ``flags`` name the
    variant of the primal: ``"compact"`` (its residuals hold the adjoint),
    ``"positional"`` (its call site passes every argument by position)."""
    from ..callees import Derivative
    from ..custom_rules import CustomVJP
    tag = getattr(value, "__pullback_callee__", None)
    if tag is not None:
        flags = [f for f in ("compact", "positional")
                 if getattr(value, f"__pullback_{f}__", False)]
        return tag[0], tag[1], "primal", tag[2], flags
    owner = getattr(value, "__self__", None)
    if isinstance(owner, (Derivative, CustomVJP)) \
            and getattr(value, "__func__", None) is type(owner).call_adjoint:
        masks = [key[0] for key, pair in getattr(owner, "_masked", {}).items()
                 if pair[1] is value]
        return owner, masks[0] if masks else None, "adjoint", True, []
    return None


def describe(value, home_globals):
    """A JSON-able description of a helper value (see the module docstring),
    or None if it cannot be found again."""
    if isinstance(value, types.ModuleType):
        return ["module", value.__name__]
    callee = _callee(value)
    if callee is not None:
        handle, mask, which, inplace, flags = callee
        path = path_of(_target(handle), home_globals)
        if path is None:
            return None
        desc = ["callee", path[0], path[1], None if mask is None else list(mask), which]
        if flags:
            return desc + [inplace, flags]
        return desc if inplace else desc + [False]      # a caller accumulating out of place
    path = path_of(value, home_globals)
    return None if path is None else ["object", path[0], path[1]]


def _target(handle):
    """The object a user writes for ``handle``: the function, or the custom_vjp."""
    from ..custom_rules import CustomVJP
    return handle if isinstance(handle, CustomVJP) else handle.fun


def resolve(desc, fn):
    """The value ``desc`` describes, for generated code of ``fn`` run just in
    time: a callee is ``derivative_of(callee).for_callers(mask)``, as the
    compiler itself binds it."""
    kind = desc[0]
    if kind == "module":
        return sys.modules.get(desc[1]) or importlib.import_module(desc[1])
    obj = _find(desc[1], desc[2], fn.__globals__)
    if kind == "object":
        return obj
    from ..callees import derivative_of
    handle = derivative_of(obj)
    if desc[3] is None:
        return handle.call_adjoint
    inplace = desc[5] if len(desc) > 5 else True
    flags = desc[6] if len(desc) > 6 else ()
    if "compact" in flags:
        primal = handle.for_callers(tuple(desc[3]), inplace, True)[0]
    else:
        pair = handle.for_callers(tuple(desc[3]), inplace)
        if desc[4] == "adjoint":
            return pair[1]
        primal = pair[0]
    # (a positional primal found as the compiler binds it: no **kwargs per call)
    return getattr(primal, "positional", primal) if "positional" in flags else primal


def fingerprint(fn):
    """What every global and closure name ``fn`` mentions resolves to now, as
    JSON-able data; None if some callable there cannot be described."""
    names, stack = set(), [fn.__code__]
    while stack:
        code = stack.pop()
        names.update(code.co_names)
        stack.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    env = {n: fn.__globals__[n] for n in names if n in fn.__globals__}
    for n, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            env[n] = cell.cell_contents
        except ValueError:
            env[n] = _Empty
    out = {}
    for n in sorted(env):
        d = _fingerprint_value(env[n], names, fn.__globals__, 2)
        if d is None:
            return None
        out[n] = d
    return out


class _Empty:
    """An empty closure cell."""


def _fingerprint_value(v, names, home, depth):
    from ..custom_rules import CustomVJP
    if isinstance(v, types.ModuleType):
        d = ["module", v.__name__]
    elif isinstance(v, CustomVJP):
        path = path_of(v, home)
        d = None if path is None else ["custom", *path, list(v.params)]
    elif isinstance(v, types.FunctionType):
        path = path_of(v, home)
        d = None if path is None else ["function", *path, list(inspect.signature(v, follow_wrapped=False).parameters)]
    elif callable(v):
        path = path_of(v, home)
        d = None if path is None else ["object", *path]
    else:
        t = type(v)
        where = "." if t.__module__ == home.get("__name__") else t.__module__
        d = ["value", where, t.__qualname__]
        if hasattr(v, "dtype") and hasattr(v, "ndim"):      # an array: its kind too
            d += [str(v.dtype), int(v.ndim)]
    if d is None or depth == 0:
        return d
    try:
        attrs = vars(v)
    except TypeError:
        return d
    for attr in sorted(names & set(attrs)):
        sub = _fingerprint_value(attrs[attr], names, home, depth - 1)
        if sub is None:
            return None
        d.append([attr, sub])
    return d
