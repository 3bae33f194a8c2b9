"""Checks generated code makes on the arguments of a function that writes
into them (``frontend.writes`` puts the calls in; moved here from
``frontend.written`` so that an ahead-of-time artifact of such a function
imports only ``pullback.runtime``)::

    def step_primal(s, v, dt):          # step writes into s, updates v
        arguments_apart('s', s, 'v', v)
        number_argument(v, 'v')         # v -= dt rebinds a number
        ...

>>> import numpy as np
>>> number_argument(1.0, "v")
>>> number_argument(np.float64(1.0), "v")
"""
from __future__ import annotations

import functools
import inspect
import numbers
import types

import numpy as np

from .calls import _HOOKS, _hook

__all__ = ["arguments_apart", "result_apart", "number_argument", "view_of", "alias_of",
           "held_array_write", "held_arrays_apart", "follow_path", "instance_attribute",
           "held_writes_of_value"]


def _refuse(message, hint):
    from ..errors import UnsupportedSyntaxError
    return UnsupportedSyntaxError(message, hint=hint)


def arguments_apart(*pairs):
    """Refuse, when the function runs, arguments written into that share
    memory with another argument: NumPy would show the write through both
    (``pairs``: name, value, name, value...)."""
    arrays = [(n, v) for n, v in zip(pairs[::2], pairs[1::2]) if isinstance(v, np.ndarray)]
    for i, (n, v) in enumerate(arrays):
        for m, w in arrays[i + 1:]:
            if np.shares_memory(v, w):
                raise _refuse(
                    f"The arguments `{n}` and `{m}` share memory, and the function writes "
                    "into one of them, so NumPy would show the write through the other.",
                    f"Pass a copy: `{m}.copy()`.")


def result_apart(result, *pairs):
    """Refuse a result that shares memory with an argument the function
    writes into (``return s`` from ``step(s)``; ``pairs``: name, value...)."""
    for n, v in zip(pairs[::2], pairs[1::2]):
        if isinstance(v, np.ndarray) and isinstance(result, np.ndarray) \
                and np.shares_memory(result, v):
            raise _refuse(
                f"The function returns an array that shares memory with its argument `{n}`, "
                "which it writes into; pullback does not follow the two as one.",
                f"Return a copy (`{n}.copy()`), or nothing: the caller's `{n}` changes.")


def number_argument(x, name):
    """A variant's parameter updated with ``op=`` that is not an array: a
    number, which the update rebinds; a 0-d array would change in place."""
    if isinstance(x, np.ndarray) and x.ndim:
        raise _refuse(
            f"`{name}` is an array that the function updates in place (`{name} op= v`), but "
            "this code was transformed for a number there (the generic entry of an "
            "ahead-of-time artifact is).",
            "Give `pullback compile` a --signature with an array there "
            "(`f(float64[:], float)`), or call the function through pullback.")
    if isinstance(x, np.ndarray):
        raise _refuse(
            f"`{name}` is a 0-d array that the function updates in place (`{name} op= v`), "
            "which pullback does not follow.",
            f"Pass a number (`float({name})`) or a 1-d array of one element.")


def view_of(view, base, view_name, base_name):
    """Check, where ``view = base[...]`` runs in a function whose later
    writes through either name pullback spells out (``frontend.view_writes``),
    that ``view`` is a view of the array ``base``: a slice of a list is a
    copy, and an integer index of a vector gives a number."""
    if isinstance(base, np.ndarray) and isinstance(view, np.ndarray) \
            and np.shares_memory(view, base):
        return
    raise _refuse(
        f"`{view_name}` is written into later, and pullback follows such a write to "
        f"`{base_name}` only where `{view_name}` is a view of the array `{base_name}`; here "
        f"`{base_name}` is a {type(base).__name__} and `{view_name}` a "
        f"{type(view).__name__} that does not share its memory.",
        f"Write into `{base_name}` itself, or make `{view_name}` a new value: "
        f"`{view_name} = {base_name}[...].copy()`.")


def alias_of(alias, base, alias_name, base_name):
    """Where ``alias = base`` runs in a function whose later writes through
    either name pullback spells out (``frontend.view_writes``): True for an
    array (a write through one name changes the other), False for a number
    or a tuple (an update rebinds the name); a list or another mutable
    object is refused."""
    if isinstance(base, np.ndarray):
        return True
    if isinstance(base, (numbers.Number, np.generic, tuple, str, bytes)):
        return False
    raise _refuse(
        f"`{alias_name} = {base_name}` makes two names of one {type(base).__name__}, which "
        f"the function then changes through one of them; pullback follows that for arrays "
        "and numbers only.",
        f"Make `{alias_name}` a copy: `{alias_name} = {base_name}.copy()`.")


# -- writes into arrays that objects and containers hold --------------------------------

def _held_arrays(values, limit=2000):
    """The arrays held by ``values`` (the function's arguments) inside
    objects and containers (list, tuple and dict items, instance attributes
    from ``__dict__`` and ``__slots__``, recursively), and the arguments that
    are arrays (one the function writes into by name is its own copy by
    then: ``frontend.writes`` copies it on entry)."""
    found, seen, work = [], set(), [(v, 0) for v in values]
    while work and len(seen) < limit:
        v, depth = work.pop()
        if id(v) in seen or v is None or isinstance(v, (numbers.Number, str, bytes, type)):
            continue
        seen.add(id(v))
        if isinstance(v, np.ndarray):
            found.append(v)
            continue
        if depth > 6:
            continue
        if isinstance(v, (list, tuple)):
            items = list(v)
        elif isinstance(v, dict):
            items = list(v.values())
        else:
            items = _attributes(v)
        work.extend((item, depth + 1) for item in items)
    return found


def _attributes(obj):
    if isinstance(obj, (types.ModuleType, types.FunctionType, types.MethodType,
                        types.BuiltinFunctionType)):
        return []
    out = list(getattr(obj, "__dict__", {}).values()) if isinstance(
        getattr(obj, "__dict__", None), dict) else []
    for cls in type(obj).__mro__:
        slots = cls.__dict__.get("__slots__", ())
        for name in ((slots,) if isinstance(slots, str) else slots):
            if name not in ("__dict__", "__weakref__"):
                try:
                    out.append(object.__getattribute__(obj, name))
                except AttributeError:
                    pass
    return out


def _callers(value, arguments):
    """Whether the array ``value`` shares memory with an array held by one of
    ``arguments`` (inside an object or a container)."""
    return any(np.shares_memory(value, a) for a in _held_arrays(arguments))


def held_array_write(value, root, text, *arguments):
    """Refuse, before it runs, a write into ``value`` (``text``: ``p.w``, the
    array a statement such as ``p.w[0] = v`` writes into, reached from the
    name ``root`` by attributes or items) when that array is held by an
    argument of the function, inside an object or a container: the write
    would change the caller's array (a transform never does, README
    "Mutation": it may run the function more than once, and the gradient
    would not see the write).  An array the function made, held by an object
    it built, is its own, and the write runs as Python runs it.

    >>> class P: pass
    >>> p = P(); p.w = np.zeros(2)
    >>> held_array_write(np.zeros(2), P(), "q.w", p)       # not the caller's: runs
    >>> held_array_write(p.w, p, "p.w", p)
    Traceback (most recent call last):
    ...
    pullback.errors.UnsupportedSyntaxError: This statement writes into the array `p.w`, which is the caller's (an argument of the function is that array or holds it); pullback never changes the caller's arrays, and does not follow a write into what an attribute or an item holds.
    ...
    """
    if not isinstance(value, np.ndarray) or isinstance(root, np.ndarray) \
            or not _callers(value, arguments):
        return
    last = text.rsplit(".", 1)[-1] if "." in text else "w"
    raise _refuse(
        f"This statement writes into the array `{text}`, which is the caller's (an argument "
        "of the function is that array or holds it); pullback never changes the caller's "
        "arrays, and does not follow a write into what an attribute or an item holds.",
        f"Write into a copy and keep it in a local name (`{last} = {text}.copy(); "
        f"{last}[...] = v`), or pass the array as an argument of its own (pullback "
        "follows writes into array arguments, on its own copy).")


def follow_path(value, path):
    """The values ``path`` reaches from ``value``: each step an attribute
    name (``("attr", "w")``), a constant item (``("item", 0)``) or every item
    (``("item", None)``, an index known only when it runs)."""
    values = [value]
    for kind, key in path:
        out = []
        for v in values:
            if kind == "attr":
                try:
                    out.append(getattr(v, key))
                except Exception:
                    pass
            elif key is None:
                if isinstance(v, dict):
                    out.extend(v.values())
                elif isinstance(v, (list, tuple)):
                    out.extend(v)
            else:
                try:
                    out.append(v[key])
                except Exception:
                    pass
        values = out
    return values


def _method_writes(obj, name):
    """``(attribute chain, source line, array)`` of each write the method
    ``name`` of ``obj``'s class makes into an array ``obj`` holds
    (``self.w[0] = v``), also through the methods it calls on ``self``."""
    fn = inspect.getattr_static(type(obj), name, None)
    if not isinstance(fn, types.FunctionType):
        return []
    params = list(inspect.signature(fn, follow_wrapped=False).parameters)
    if not params:
        return []
    out = []
    for chain, line, _ in _hook("self_array_writes")(type(obj), fn, params[0]):
        for a in follow_path(obj, tuple(("attr", k) for k in chain)):
            out.append((chain, line, a))
    return out


def unseen_method_write(obj, name):
    """Refuse, before it runs as plain Python, a call ``obj.name(...)`` given
    a differentiated value, where ``obj`` holds none and its class was not
    known when transforming (``o = Buf.make(3); o.add(0, x[0])``), whose
    method writes into an array ``obj`` holds (``self.vals[i] += x``) or
    stores into an attribute holding a float or an array (``self.total =
    self.total + x``): the value would go into ``obj`` with no gradient, and
    the reads of it after the call would be differentiated as constants (was
    a zero gradient)."""
    found = [w for w in _method_writes(obj, name) if isinstance(w[2], np.ndarray)]
    if found:
        chain, line, _ = found[0]
        what = f"writes into the array `self.{'.'.join(chain)}` of its object (`{line}`)"
        attr = chain[-1]
    else:
        fn = inspect.getattr_static(type(obj), name, None)
        params = list(inspect.signature(fn, follow_wrapped=False).parameters) \
            if isinstance(fn, types.FunctionType) else []
        store = _HOOKS["method_store"](type(obj), fn, params[0]) \
            if params and "method_store" in _HOOKS else None
        attr = store[0] if store is not None else None
        value = getattr(obj, attr, None) if attr is not None else None
        if not (isinstance(value, (float, complex, np.inexact)) or (
                isinstance(value, np.ndarray) and value.dtype.kind in "fc")):
            return          # (a counter, a flag, a log: nothing a gradient follows)
        what = f"stores into the attribute `self.{attr}` of its object"
    from ..errors import UnsupportedSyntaxError
    cls = type(obj).__name__
    raise UnsupportedSyntaxError(
        f"pullback cannot differentiate this call of `{cls}.{name}`: it is given a "
        f"differentiated value and {what}, which holds none; its result unused, the call "
        "runs as plain Python, so what it puts there would carry no gradient.",
        hint=f"Make `{name}` return the new values (`{attr} = ...; return {attr}`) and bind "
             f"them, or build the object from the values (`obj = {cls}(...)`).")


def held_arrays_apart(writes, *arguments):
    """Refuse, before a call of a user function that runs as plain Python,
    a write it would make into an array held by one of the caller's
    ``arguments`` inside an object or a container (``hh(p)`` with ``hh``
    doing ``p.w[0] = 5.0``).  ``writes``: ``(callee, parameter, argument
    value, path, source text)`` for each write the callee makes through a
    path from a parameter (``frontend.held_writes``)."""
    import ast
    for callee, param, value, path, text in writes:
        path = ast.literal_eval(path) if isinstance(path, str) else path
        if isinstance(value, np.ndarray):
            continue        # an array argument written into: the variant's
        method = path[-1][1] if path and path[-1][0] == "call" else None
        steps = path[:-1] if method is not None else path
        reached_by = [(r, steps, text) for r in follow_path(value, steps)]
        if method is not None:
            reached_by = [(a, steps + tuple(("attr", k) for k in chain), line)
                          for obj, _, _ in reached_by
                          for chain, line, a in _method_writes(obj, method)]
        for reached, steps, text in reached_by:
            if isinstance(reached, np.ndarray) and _callers(reached, arguments):
                shown = param + "".join(f".{k}" if kind == "attr" else
                                        "[...]" if k is None else f"[{k!r}]"
                                        for kind, k in steps)
                raise _refuse(
                    f"This call of `{callee}` writes into the array `{shown}` (`{text}`), "
                    "which is the caller's (an argument of the function is that array or "
                    "holds it); pullback never changes the caller's arrays, and does not "
                    "follow a write into what an attribute or an item holds.",
                    f"Make `{callee}` return the new array (`w = {shown}.copy(); w[...] = "
                    f"v; return w`) or a new object, and use that instead of changing "
                    f"`{param}` in place.")


def instance_attribute(obj, attr):
    """Check, where ``vars(obj)["w"]`` (or ``obj.__dict__["w"]``) runs as
    ``obj.w``, that the two read the same value: Python's errors where the
    read fails (no ``__dict__``, no key), a refusal where the class would
    answer ``obj.w`` otherwise (a data descriptor such as a property, its own
    ``__getattribute__``)."""
    vars(obj)[attr]
    cls = type(obj)
    descriptor = next((vars(c)[attr] for c in cls.__mro__ if attr in vars(c)), None)
    if cls.__getattribute__ is not object.__getattribute__ or (
            descriptor is not None and hasattr(type(descriptor), "__set__")):
        raise _refuse(
            f"`vars(obj)[{attr!r}]` reads the object's own dictionary, and `{cls.__name__}` "
            f"answers `obj.{attr}` otherwise (a property or another data descriptor named "
            f"`{attr}`, or a `__getattribute__` of its own), so the two are not one here; "
            "pullback follows the read only where they are.",
            f"Read the attribute as `obj.{attr}`, or keep the value in an attribute of "
            "another name.")


def unwrapped(fn, kwargs=None):
    """``(function, leading arguments, keywords)``: the function under the
    partials and bound methods ``fn`` wraps, with the arguments they hold
    (``kwargs`` added after a partial's own keywords)."""
    first, kwargs = [], dict(kwargs or {})
    while isinstance(fn, (functools.partial, types.MethodType)):
        if isinstance(fn, functools.partial):
            first, kwargs = list(fn.args) + first, {**fn.keywords, **kwargs}
            fn = fn.func
        else:
            first, fn = [fn.__self__] + first, fn.__func__
    return fn, first, kwargs


def held_writes_of_value(fn, args, kwargs, *arguments):
    """``held_arrays_apart`` for a call of a function value (``g = hh; g(p)``),
    whose function is known only when the call runs.  Generated code calls
    this before every such call, so a plain function that writes nothing
    through its parameters (what ``held_writes`` finds is kept per function)
    costs a type test, an attribute test and the hook's dictionary lookup."""
    first = ()
    if type(fn) is not types.FunctionType:
        fn, first, kwargs = unwrapped(fn, kwargs)
        if not isinstance(fn, types.FunctionType):
            return
    if getattr(fn, "__pullback_variant__", None):
        return
    found = (_HOOKS.get("held_writes") or _hook("held_writes"))(fn)
    if not found:
        return
    try:
        bound = inspect.signature(fn, follow_wrapped=False).bind_partial(
            *first, *args, **kwargs).arguments
    except TypeError:
        return          # (the call itself raises)
    held_arrays_apart(tuple((fn.__name__, q, bound[q], path, line) for q in found
                            if q in bound for path, line in found[q]), *arguments)
