"""Objects of the user's classes changed by their methods, as values.

A method that stores into ``self`` (``self.x = self.x + dt * self.v``) is
differentiated as a function returning the changed object
(``frontend.method_state``): each store makes a new object,
``self = with_attribute(self, 'x', value)``, a shallow copy of the old one
with one attribute set, and the caller rebinds its name to what the method
returns.  The old object is never changed, so what the tape holds of it stays
valid, and the cotangent of the new object (a dict of its attributes'
cotangents) splits into the stored value's and the old object's.

>>> class S:
...     pass
>>> s = S(); s.x = 1.0; s.n = 2
>>> t = with_attribute(s, "x", 5.0)
>>> (t.x, t.n, s.x, type(t) is S)
(5.0, 2, 1.0, True)
>>> other_fields({"x": 3.0, "n": None}, "x")
{'n': None}

A property read on an object whose class is known only when the read runs
(``q = Normal.from_natural(a, b); q.mean``) is a call of the function that
``property_getter`` picks then: the property's getter, which pullback
differentiates as it does any function it is handed, or, for a stored
attribute, a function that reads it::

    m = q.mean    ->    mean_getter = property_getter(q, 'mean')
                        m = mean_getter(q)

>>> class P:
...     def __init__(self, w):
...         self.w = w
...     @property
...     def twice(self):
...         return 2 * self.w
>>> property_getter(P(1.0), "twice") is P.twice.fget
True
>>> read = property_getter(P(1.0), "w")
>>> read.__name__, read(P(4.0))
('read_w', 4.0)
"""
from __future__ import annotations

import abc
import functools
import linecache
import types

import numpy as np

from .cached_properties import followed_cached
from .structures import field_cotangent  # noqa: F401  (the rule's other half)

__all__ = ["with_attribute", "other_fields", "rebinds", "field_tangent", "property_getter",
           "plain_metaclass", "check_out", "where_mask", "check_array_method", "window_start",
           "rotation_start", "global_value", "set_global", "deleted_span"]

# Metaclasses whose classes make, and look attributes up on, their objects as
# ``type`` does: ``abc.ABCMeta`` only adds the abstract-method check to
# ``object.__new__`` (which ``new_object`` and ``with_attribute`` run too) and
# ``register`` for ``isinstance``.
_PLAIN_METACLASSES = (type, abc.ABCMeta)


def plain_metaclass(cls):
    """Whether ``cls`` is made by ``type`` or ``abc.ABCMeta`` (``class
    Model(abc.ABC)``), not by a metaclass that may change how its objects are
    made or read.

    >>> class M(abc.ABC):
    ...     pass
    >>> class Meta(type):
    ...     pass
    >>> plain_metaclass(M), plain_metaclass(int), plain_metaclass(Meta("C", (), {}))
    (True, True, False)
    """
    return type(cls) in _PLAIN_METACLASSES


def with_attribute(obj, name, value, like=None):
    """A new object of ``obj``'s class holding ``obj``'s attributes, with
    ``name`` set to ``value``; ``obj`` is left as it is.  ``obj`` None is the
    zero tangent of the object ``like`` (forward mode): an object of its
    class whose attributes are zero tangents."""
    if obj is None:
        from .forward_support import zeros_tangent
        obj = object.__new__(type(like))
        for k, v in vars(like).items():
            object.__setattr__(obj, k, zeros_tangent(v))
    new = object.__new__(type(obj))
    new.__dict__.update(obj.__dict__)
    object.__setattr__(new, name, value)
    return new


def other_fields(g, name):
    """The cotangent ``g`` of an object without its attribute ``name``'s
    entry: what goes back to the object a store replaced ``name`` in."""
    if g is None:
        return None
    items = g.items() if isinstance(g, dict) else vars(g).items()
    return {k: v for k, v in items if k != name}


_IN_PLACE = (np.ndarray, list, dict, set, bytearray)


def rebinds(old, where, symbol):
    """Check, before ``self.attr op= value`` runs as ``self.attr = self.attr op
    value``, that this is what Python does: for a number, a tuple or a
    string it rebinds; an array or a container it changes in place, so any
    other name holding it would change too: refused."""
    if isinstance(old, _IN_PLACE) or any(
            hasattr(type(old), f"__i{m}__") for m in ("add", "sub", "mul", "truediv")):
        from ..errors import UnsupportedSyntaxError
        raise UnsupportedSyntaxError(
            f"pullback cannot differentiate `{where} {symbol}= ...`: `{where}` holds a "
            f"{type(old).__name__}, which `{symbol}=` changes in place (any other name "
            "holding it would change with it), and pullback follows the attributes of this "
            "object as values.",
            hint=f"Rebind the attribute to a new value: `{where} = {where} {symbol} ...`.")


def field_tangent(t, x, name):
    """The tangent of ``x.name`` in the tangent ``t`` of the object ``x``
    (forward mode): ``t.name``, except for an attribute of ``x``'s class read
    through it (``self.gravity``), a constant, whose tangent is zero (``t``'s
    own lookup would find the class's value)."""
    own = getattr(t, "__dict__", None)
    if isinstance(own, dict) and name not in own:
        # a property (`Q.make(x).mean`) is no constant: its tangent was a zero, with no
        # error; refused, as the reverse pass refuses it
        from .structures import refuse_computed_read
        refuse_computed_read(type(x), name)
    if t is None or (isinstance(own, dict) and name not in own):
        # (None: the zero tangent of an object, forward_support.zeros_tangent's)
        from .forward_support import zeros_tangent
        return zeros_tangent(getattr(x, name))
    return getattr(t, name)


def property_getter(obj, name):
    """The function whose call on ``obj`` reads ``obj.name``: the getter of
    a property ``name`` of ``obj``'s class (a ``def`` pullback follows), or
    else ``read_<name>``, a function returning the attribute (a stored one is
    differentiated as a field; any other descriptor is refused where it is
    read, as before)."""
    found = None
    for c in type(obj).__mro__:
        if name in vars(c):
            found = vars(c)[name]
            break
    if type(found) is property and isinstance(found.fget, types.FunctionType):
        return found.fget
    if isinstance(found, functools.cached_property) and name not in getattr(
            obj, "__dict__", {name: None}) and followed_cached(type(obj), name):
        return found.func       # (not cached yet: its function, runtime.cached_properties)
    return _reader(name)


_READERS = {}


def _reader(name):
    """``def read_<name>(obj): return obj.<name>``, made once per name, its
    source registered so that pullback can read and differentiate it."""
    fn = _READERS.get(name)
    if fn is None:
        text = f"def read_{name}(obj):\n    return obj.{name}\n"
        filename = f"<pullback attribute read .{name}>"
        linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
        namespace = {"__name__": __name__}
        exec(compile(text, filename, "exec"), namespace)
        fn = _READERS[name] = namespace[f"read_{name}"]
        fn.__pullback_rule_wrapper__ = True     # made by pullback, differentiated as a user's
        fn.__pullback_attribute_read__ = name   # (never rewritten again: frontend.properties)
    return fn


def check_out(value, buf, where, exact=False):
    """Raise NumPy's error where ``where(..., out=buf)`` would not take
    ``value`` (``frontend.out_arguments`` writes it as ``buf[...] = value``,
    which casts anything): a ufunc casts only within a kind (``same_kind``:
    no complex into a real array, no float into an integer one), ``np.dot``
    not at all.

    >>> check_out(np.ones(2), np.zeros(2, np.float32), "np.add")
    >>> check_out(np.ones(2) * 1j, np.zeros(2), "np.multiply")
    Traceback (most recent call last):
    ...
    TypeError: np.multiply(..., out=...) cannot cast its complex128 result into the float64 array given as out= (NumPy casts within a kind only)
    """
    have, want = np.result_type(value), np.result_type(buf)
    if have == want or (not exact and np.can_cast(have, want, "same_kind")):
        return
    raise TypeError(f"{where}(..., out=...) cannot cast its {have} result into the {want} "
                    "array given as out= (NumPy " + (
                        "takes an array of the result's dtype only)" if exact else
                        "casts within a kind only)"))


def where_mask(mask, buf, where):
    """``where=mask`` of ``where(..., out=buf)`` as a boolean array of
    ``buf``'s shape (``frontend.out_arguments`` selects by it), with NumPy's
    error for a mask that is not boolean.

    >>> where_mask(True, np.zeros(2), "np.add")
    array([ True,  True])
    >>> where_mask(np.array([1, 0]), np.zeros(2), "np.add")
    Traceback (most recent call last):
    ...
    TypeError: np.add(..., where=...) takes a boolean mask, not int64 (NumPy casts it safely only)
    """
    mask = np.asarray(mask)
    if mask.dtype != bool:
        raise TypeError(f"{where}(..., where=...) takes a boolean mask, not {mask.dtype} "
                        "(NumPy casts it safely only)")
    return np.broadcast_to(mask, np.shape(buf))


def check_array_method(obj, name):
    """Raise where ``obj.name(..., out=buf)`` is not a NumPy array's method
    (``frontend.out_arguments`` writes it as a write into ``buf``, which is
    right only for NumPy's methods).

    >>> check_array_method(np.ones(2), "sum")
    >>> check_array_method([1.0], "sum")
    Traceback (most recent call last):
    ...
    pullback.errors.UnsupportedSyntaxError: pullback follows `.sum(..., out=...)` on a NumPy array only, not on a `list` object, whose method may not write into `out=`.
    Call `np.sum(x, out=...)`, or assign the result to a name instead of passing `out=`.
    """
    if not isinstance(obj, (np.ndarray, np.generic)):
        from ..errors import UnsupportedSyntaxError
        raise UnsupportedSyntaxError(
            f"pullback follows `.{name}(..., out=...)` on a NumPy array only, not on a "
            f"`{type(obj).__name__}` object, whose method may not write into `out=`.", None,
            f"Call `np.{name}(x, out=...)`, or assign the result to a name instead of "
            "passing `out=`.")


def window_start(n, maxlen):
    """Where the last ``maxlen`` of ``n`` items start (``collections.deque``'s
    ``maxlen``: None keeps them all; ``frontend.list_methods``).

    >>> window_start(5, 3), window_start(2, 3), window_start(5, None), window_start(5, 0)
    (2, 0, 0, 5)
    """
    return 0 if maxlen is None else max(n - maxlen, 0)


def rotation_start(n, steps):
    """Where a list of ``n`` items rotated right by ``steps`` starts
    (``collections.deque.rotate``: ``xs[k:] + xs[:k]``; ``frontend.list_methods``).

    >>> [[1, 2, 3][k:] + [1, 2, 3][:k] for k in (rotation_start(3, 1), rotation_start(3, -4))]
    [[3, 1, 2], [2, 3, 1]]
    """
    return (-steps) % n if n else 0


def global_value(namespace, name):
    """The module's ``name`` (``frontend.global_state``; ``namespace``: the
    module or its dict), with Python's error where it has none.

    >>> global_value({"calls": 3}, "calls")
    3
    """
    try:
        return _namespace(namespace)[name]
    except KeyError:
        raise NameError(f"name '{name}' is not defined") from None


def set_global(namespace, name, value):
    """``global name; name = value`` of a function whose module is
    ``namespace`` (``frontend.global_state``).

    >>> ns = {}; set_global(ns, "calls", 1); ns
    {'calls': 1}
    """
    _namespace(namespace)[name] = value


def _namespace(space):
    """A module's dict (a module, or the dict itself)."""
    return vars(space) if isinstance(space, types.ModuleType) else space


def deleted_span(n, lower, upper):
    """The positions ``(start, stop)`` that ``del xs[lower:upper]`` removes
    from a list of ``n`` items, ``stop >= start`` (``frontend.list_methods``).

    >>> deleted_span(5, 1, 3), deleted_span(5, -2, None), deleted_span(5, 3, 1)
    ((1, 3), (3, 5), (3, 3))
    """
    start, stop, _ = slice(lower, upper).indices(n)
    return start, max(start, stop)
