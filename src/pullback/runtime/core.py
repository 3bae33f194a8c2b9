"""Projection onto the primal, zeros, reductions and structures."""
from __future__ import annotations

import collections.abc
import copy as copy_module
import dataclasses
import functools
import numbers
import struct
import operator
import sys
import inspect
import types

import numpy as np

from .backends import is_foreign, to_namespace

__all__ = ["unbroadcast", "project", "zeros_like", "unreduce", "realify", "pack_like",
           "add_cotangents", "meta", "Meta", "is_structure", "is_instance", "fields_of",
           "attributes_of", "set_attribute", "slot_names",
           "rebuild_like", "FieldGrads", "indexable", "mapping_keys", "number_to_update",
           "same_method", "join_grads",
           "repeat_grads", "field_cotangent", "per_output", "store_attribute",
           "update_attribute"]


def indexable(seq):
    """``seq`` itself, checked to be what a loop over it reads by position: a
    dict, a set or an iterator would be read wrongly (``for k in d`` yields
    keys, not ``d[0], d[1]``), so it is refused with the fix."""
    if isinstance(seq, (dict, set, frozenset)) or (
            not hasattr(seq, "__getitem__") and hasattr(seq, "__next__")):
        what = type(seq).__name__
        raise TypeError(
            f"pullback differentiates loops over sequences (lists, tuples, arrays, ranges); "
            f"this loop runs over a {what}. "
            + ("Loop over d.items(), d.keys() or d.values() instead."
               if isinstance(seq, dict) else "Make a list of it first: list(...) or sorted(...)."))
    return seq


def same_method(obj, attr, fn):
    """Refuse, where ``obj.attr(...)`` was turned into ``fn(obj, ...)`` (a
    method that writes into its arguments, followed as a direct call by
    ``frontend.writes``), an ``obj`` whose ``attr`` is not ``fn`` bound to
    it (something set on the instance under that name)."""
    import types
    bound = getattr(obj, attr, None)
    if isinstance(bound, types.MethodType) and bound.__func__ is fn and bound.__self__ is obj:
        return
    from ..errors import UnsupportedSyntaxError
    raise UnsupportedSyntaxError(
        f"`{attr}` of this `{type(obj).__name__}` is not the method "
        f"`{fn.__qualname__}` that pullback followed (it writes into its arguments): "
        "the instance holds something else under that name.",
        hint=f"Call `{fn.__qualname__}` directly, or do not set `{attr}` on the instance.")


def number_to_update(y, name):
    """Check, where ``y op= v`` runs, that ``y`` is a number (a Python or
    NumPy scalar): numbers are never changed in place, so the update only
    rebinds ``y``, as its desugared ``y = y op v`` does.  The transform puts
    this check before an update of a value it cannot tell from an array that
    other names share (the result of a call known only at run time, an
    element of an array of unknown rank); an array is refused here (the
    loader adds the user's line)."""
    if isinstance(y, (numbers.Number, np.generic)):
        return
    from ..errors import UnsupportedSyntaxError
    raise UnsupportedSyntaxError(
        f"pullback cannot follow an in-place update of an array that other names may "
        f"share: here `{name}` holds a value of type {type(y).__name__}, not a number.",
        hint=f"Write `{name} = {name} + ...` (or -, *) to make a new array, if that is what "
             "you mean.")


def join_grads(g, x, y):
    """Cotangents of ``x`` and ``y`` for ``x + y``: two lists or tuples joined
    (``shape + (k,)``) take their slices of ``g``; numbers, ``g`` unbroadcast."""
    if type(g) is float and type(x) is float and type(y) is float:   # scalar code
        return g, g
    if isinstance(x, (tuple, list)) and isinstance(y, (tuple, list)):
        parts = list(g) if g is not None else [None] * (len(x) + len(y))
        return pack_like(x, parts[:len(x)]), pack_like(y, parts[len(x):])
    return unbroadcast(g, x), unbroadcast(g, y)


def repeat_grads(g, x, y):
    """Cotangents of ``x`` and ``y`` for ``x * y``: a list or tuple repeated
    ``n`` times (``[v] * n``) gets the sum of its copies' cotangents."""
    for seq, n, first in ((x, y, True), (y, x, False)):
        if isinstance(seq, (tuple, list)) and isinstance(n, numbers.Integral):
            parts = list(g) if g is not None else []
            m = len(seq)
            total = [None] * m
            for k, p in enumerate(parts):
                total[k % m] = add_cotangents(total[k % m], p)
            ct = pack_like(seq, total) if m else seq
            return (ct, 0.0) if first else (0.0, ct)
    return unbroadcast(g * y, x), unbroadcast(g * x, y)


def store_attribute(obj, name, value):
    """``obj.name = value`` as the user wrote it (a store that carries no
    gradient: the transform refuses the others)."""
    _check_store(obj, name)
    setattr(obj, name, value)


def _check_store(obj, name):
    """Refuse a store the transform cannot see the consequences of: into a
    module (its attributes are read as constants), and into a dataclass or an
    array, which pullback differentiates as values (a caller may be
    differentiating with respect to this very object)."""
    from ..errors import UnsupportedSyntaxError
    if isinstance(obj, types.ModuleType):
        raise UnsupportedSyntaxError(
            f"pullback cannot differentiate a store into the module attribute "
            f"`{obj.__name__}.{name}`: a module's attributes are read as constants.",
            None, "Pass the value as an argument, or keep it on an object of your own.")
    if is_structure(obj) or isinstance(obj, np.ndarray):
        kind = "an array" if isinstance(obj, np.ndarray) else \
            f"a dataclass (`{type(obj).__name__}`)"
        raise UnsupportedSyntaxError(
            f"pullback cannot differentiate a store into the attribute `{name}` of "
            f"{kind}: pullback differentiates it as a value, and a gradient taken "
            f"with respect to it would not see the change.",
            None, "Build a new value instead: `dataclasses.replace(obj, "
                  f"{name}=...)`, `y = y.reshape(...)`.")


_IN_PLACE = {"Add": operator.iadd, "Sub": operator.isub, "Mult": operator.imul,
             "Div": operator.itruediv, "FloorDiv": operator.ifloordiv,
             "Mod": operator.imod, "Pow": operator.ipow, "MatMult": operator.imatmul,
             "LShift": operator.ilshift, "RShift": operator.irshift,
             "BitOr": operator.ior, "BitXor": operator.ixor, "BitAnd": operator.iand}


_SYMBOLS = {"Add": "+", "Sub": "-", "Mult": "*", "Div": "/", "FloorDiv": "//", "Mod": "%",
            "Pow": "**", "MatMult": "@", "LShift": "<<", "RShift": ">>", "BitOr": "|",
            "BitXor": "^", "BitAnd": "&"}


def update_attribute(obj, name, old, op, value):
    """``obj.name op= value``, ``old`` being ``obj.name`` read before ``value``
    was computed: the in-place operator, then the result stored back.  A
    value that the operator would change in place (an array, a list) is
    refused: a value read from it before may be needed by the adjoint."""
    _check_store(obj, name)
    method = _IN_PLACE[op].__name__.replace("i", "__i", 1) + "__"
    if hasattr(type(old), method):
        from ..errors import UnsupportedSyntaxError
        raise UnsupportedSyntaxError(
            f"pullback cannot differentiate `{name} {_SYMBOLS[op]}= ...` on an attribute "
            f"that holds a mutable `{type(old).__name__}`: it would change that value "
            f"in place, and every earlier read of it with it.",
            None, f"Store a new value: `obj.{name} = obj.{name} {_SYMBOLS[op]} ...`.")
    setattr(obj, name, _IN_PLACE[op](old, value))


def mapping_keys(d):
    """The keys of the dict ``d``, in its order (``for k, v in d.items()``)."""
    if not isinstance(d, dict):
        if isinstance(d, collections.abc.Mapping):
            return list(d)     # a read-only mapping (inspect's parameters): read by key
        raise TypeError(f"`.items()`, `.keys()` and `.values()` are differentiated on dicts; "
                        f"this is a {type(d).__name__}.")
    return list(d)


def unbroadcast(g, x):
    """Sum ``g`` over the axes NumPy broadcasting added to reach ``x``'s shape.

    >>> unbroadcast(np.ones((2, 3)), np.ones(3))
    array([2., 2., 2.])
    """
    tg, tx = type(g), type(x)
    if tx is float and tg is float:      # scalar code: the common case
        return g
    if tg is np.ndarray and (tx is np.ndarray or tx is Meta) and g.shape == x.shape:
        return g                         # array code: the common case
    shape = np.shape(x)
    gshape = np.shape(g)
    if gshape == shape:
        return g
    lead = len(gshape) - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and gshape[lead + i] != 1)
    if axes and type(g) is np.ndarray and g.size and not any(g.strides) \
            and g.dtype.kind in "fc":
        # one value everywhere (a sum's cotangent, broadcast): the sum over
        # the axes is that value times their count, with no pass over them
        count = 1
        for a in axes:
            count *= gshape[a]
        one = g[(0,) * g.ndim]
        kept = tuple(n for i, n in enumerate(gshape) if i not in axes)
        g = np.full(kept, one * count, dtype=g.dtype) if kept else g.dtype.type(one * count)
    elif axes:
        g = np.sum(g, axis=axes, keepdims=False)
    if np.shape(g) != shape:
        g = np.reshape(g, shape)
    return g


class Meta:
    """What the adjoint needs of an array it reads only for its shape and
    dtype: saving this instead of the array lets the array be freed."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape = shape
        self.dtype = dtype

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return int(np.prod(self.shape))

    def __repr__(self):
        return f"meta(shape={self.shape}, dtype={self.dtype})"


def meta(x):
    """``x``'s shape and dtype if it is an array, else ``x`` itself."""
    t = type(x)
    if t is float:              # scalar code: the common case
        return x
    if t is np.ndarray or isinstance(x, np.ndarray):
        return Meta(x.shape, x.dtype)
    return x


def realify(g, x):
    """The real part of ``g`` where the primal ``x`` is real (JAX's convention)."""
    if np.iscomplexobj(g) and not np.iscomplexobj(x):
        return np.real(g)
    return g


def project(g, x, copy=False):
    tx, tg = type(x), type(g)
    if tx is float and tg is float:      # scalar code: the common case
        return g
    if tx is np.ndarray and tg is np.ndarray and g.shape == x.shape and g.dtype == x.dtype:
        return g.copy() if copy else g   # array code: the common case
    if is_structure(x):
        return _project_structure(g, x, copy)
    if is_instance(x):
        return _project_instance(g, x, copy)
    if isinstance(x, functools.partial):      # its held values' (runtime.function_values)
        return {k: zeros_like(v) if _entry(g, k) is None or not isinstance(g, dict)
                else project(_entry(g, k), v, copy) for k, v in _held(x)}
    return _project_leaf(g, x, copy)


def _project_instance(g, x, copy):
    """The cotangent of an object of the user's own class: a dict of its
    attributes' cotangents (zero for those nothing reached, and for functions,
    strings and the like, which carry none)."""
    out = {}
    attrs = attributes_of(x)
    for k, v in attrs.items():
        e = _entry(g, k)
        if e is None or isinstance(v, _NO_GRADIENT) or v is None \
                or isinstance(v, (str, bytes, bool)):
            out[k] = zeros_like(v)
        else:
            out[k] = project(e, v, copy)
    if isinstance(g, dict) and len(g) > len(out):
        _check_computed_attributes(g, x, attrs)
    return out


def _check_computed_attributes(g, x, fields):
    """Refuse a gradient that reached an attribute ``x`` does not store (a
    property, or another descriptor of its class, read as ``p.area``): the
    value came from code pullback did not differentiate, so the gradient
    cannot be sent on to the attributes it was computed from."""
    for k, e in g.items():
        if k in fields or not isinstance(k, str) or _is_zero(e):
            continue
        found = getattr(type(x), k, None)
        if found is None or not hasattr(type(found), "__get__") \
                or isinstance(found, (types.FunctionType, staticmethod, classmethod)):
            continue            # a class attribute: a constant shared by the class
        _computed_attribute(type(x), k)    # raises, naming the property


def _is_zero(e):
    if e is None:
        return True
    if isinstance(e, (numbers.Number, np.ndarray, np.generic)):
        return not np.any(e)
    if isinstance(e, dict):
        return all(_is_zero(v) for v in e.values())
    if isinstance(e, (list, tuple)):
        return all(_is_zero(v) for v in e)
    return False


def _project_leaf(g, x, copy=False):
    """Project a cotangent onto the space of its primal ``x``.

    Shape (unbroadcast), realness (real part for a real primal) and type (the
    primal's dtype; a Python float for a Python float, a NumPy scalar for a
    NumPy scalar).  A fresh array is returned whenever ``g`` might be shared
    with something the caller holds, so gradients never alias.
    """
    if isinstance(x, bool) or isinstance(x, np.bool_):
        raise TypeError("booleans carry no gradient")
    if x is None or isinstance(x, _NO_GRADIENT):
        return zeros_like(x)    # a string or a function read from an object: no gradient
    if isinstance(x, (numbers.Number, np.generic)) and is_foreign(g):
        return _project_foreign_scalar(g, x)    # a number's gradient from a Dask batch
    if isinstance(x, (float, int)) and not isinstance(x, np.generic):
        g = np.sum(g) if np.ndim(g) else g
        if isinstance(x, complex):
            return complex(g)
        return float(np.real(g))
    if isinstance(x, complex):
        return complex(np.sum(g) if np.ndim(g) else g)
    g = unbroadcast(g, x)
    g = realify(g, x)
    dtype = x.dtype if isinstance(x, Meta) else np.result_type(x)
    if isinstance(x, np.generic):
        return dtype.type(g)
    if (type(x) is not np.ndarray and is_foreign(x)) or is_foreign(g):
        return _project_foreign(g, x, dtype, copy)      # stays lazy (Dask), on the device
    if copy or np.shape(g) != np.shape(x):
        return np.array(np.broadcast_to(g, np.shape(x)), dtype=dtype)
    return np.asarray(g, dtype=dtype)


def _project_foreign_scalar(g, x):
    """The gradient of a number ``x`` (a Python or NumPy scalar) from a Dask or
    CuPy cotangent ``g``: a 0-d array of ``g``'s type, so that a Dask gradient
    stays lazy and a CuPy one on the device (``float(g)`` computes it)."""
    g = np.sum(g) if np.ndim(g) else g
    dtype = np.result_type(x) if isinstance(x, np.generic) else \
        np.dtype(complex) if isinstance(x, complex) else np.dtype(float)
    if not np.iscomplexobj(x):
        g = np.real(g)
    return g.astype(dtype)


def _project_foreign(g, x, dtype, copy):
    """The projection's last step for a Dask or CuPy primal or cotangent:
    ``g`` of ``x``'s shape and dtype and of the foreign array type, never
    converted to NumPy (that would compute a lazy Dask graph or copy a CuPy
    array to the host): the gradient of a NumPy weight in a loss over a Dask
    batch is a lazy Dask array too."""
    if not is_foreign(g):
        g = to_namespace(np.asarray(g, dtype=dtype), x)
    if np.shape(g) != np.shape(x):
        g = np.broadcast_to(g, np.shape(x))
        copy = True
    if g.dtype != dtype or copy:
        g = g.astype(dtype, copy=True)
    return g


def zeros_like(x):
    """A zero cotangent for ``x``: 0.0 for a Python number, else zeros."""
    t = type(x)
    if t is float:              # scalar code: the common case
        return 0.0
    if t is np.ndarray:         # array code: before the structure checks
        return np.zeros_like(x)
    if t is Meta:
        return np.zeros(x.shape, dtype=x.dtype)
    if x is None:
        return 0.0       # a value that was never assigned on this path
    if isinstance(x, complex):
        return 0j
    if isinstance(x, (float, int)) and not isinstance(x, np.generic):
        return 0.0
    if is_structure(x):
        return rebuild_like(x, {k: zeros_like(v) for k, v in fields_of(x)})
    if is_instance(x):
        return {k: zeros_like(v) for k, v in attributes_of(x).items()}
    if isinstance(x, functools.partial):
        return {k: zeros_like(v) for k, v in _held(x)}
    if isinstance(x, _NO_GRADIENT):
        return 0.0       # a function or a class held by an object: no gradient
    if isinstance(x, np.generic):
        return np.zeros((), dtype=x.dtype)[()]
    if isinstance(x, Meta):
        return np.zeros(x.shape, dtype=x.dtype)
    return np.zeros_like(x)


_FLOAT64 = np.dtype(np.float64)
_pack_double = struct.Struct("=d").pack


def unreduce(g, x, axis=None, keepdims=False):
    """Broadcast the cotangent of a reduction back to the reduced array."""
    tx = type(x)
    shape = x.shape if tx is np.ndarray or tx is Meta else np.shape(x)
    if axis is None and (type(g) is float or type(g) is np.float64):
        # the cotangent of a whole sum: a read-only view of one value, as
        # np.broadcast_to makes, built directly (broadcast_to's Python layers
        # cost twice as much, on every gradient of a sum) on the value's eight
        # bytes, which are immutable: the view is read-only as it is made
        return np.ndarray(shape, _FLOAT64, _pack_double(g), 0, (0,) * len(shape))
    if axis is not None and not keepdims:
        g = np.expand_dims(g, _normalize_axes(axis, len(shape)))
    return np.broadcast_to(g, shape)


def per_output(a, ans):
    """How many elements of ``a`` a reduction gathered into each element of its
    result ``ans`` (``np.size(a) // np.size(ans)``), read from the shapes: a
    Dask array is not computed for it.

    >>> per_output(np.ones((2, 3)), np.ones(3))
    2
    """
    n = a.size if type(a) is np.ndarray else _count(np.shape(a))
    return n // (ans.size if isinstance(ans, (np.ndarray, np.generic)) else _count(np.shape(ans)))


def _count(shape):
    n = 1
    for k in shape:
        n *= int(k)
    return n


def _normalize_axes(axis, ndim):
    axes = axis if isinstance(axis, tuple) else (axis,)
    return tuple(sorted(a % ndim for a in axes))


def pack_like(t, parts):
    """Build the cotangent of the unpacked value ``t`` from its parts."""
    parts = [zeros_like(v) if p is None else p for p, v in zip(parts, t)]
    if isinstance(t, np.ndarray):
        return np.stack(parts)
    if isinstance(t, list):
        return parts
    if isinstance(t, tuple) and type(t) is not tuple:  # a namedtuple
        return type(t)(*parts)
    return tuple(parts)


def add_cotangents(a, b):
    """``a + b`` for cotangents that may be containers (added by element)."""
    if a is None:
        return b
    if b is None:
        return a
    if isinstance(b, dict) and not isinstance(a, dict):
        a, b = b, a         # a namedtuple or dataclass plus the same by field name
    if isinstance(a, dict) and type(b) is float and b == 0.0:
        return a            # a function value's (its held values') plus a plain function's
    if isinstance(a, dict):
        out = copy_module.copy(a)
        for k, v in (b.items() if isinstance(b, dict) else fields_of(b)):
            out[k] = add_cotangents(out.get(k), v)
        return out
    if isinstance(a, (tuple, list)):
        return type(a)(add_cotangents(u, v) for u, v in zip(a, b)) \
            if type(a) in (tuple, list) else type(a)(*(add_cotangents(u, v)
                                                       for u, v in zip(a, b)))
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        return rebuild_like(a, {k: add_cotangents(v, getattr(b, k, None) if not isinstance(
            b, dict) else b.get(k)) for k, v in fields_of(a)})
    return a + b


# --- structures: tuples, lists, dicts, namedtuples, dataclasses ---

class FieldGrads(dict):
    """The gradient of a namedtuple or a dataclass while the adjoint builds
    it: field name -> cotangent (``project`` gives it the primal's type).  A
    namedtuple's fields are also read by position (``p[0]`` is ``p.w``), so
    an integer or a slice selects the fields in their order."""

    def keys_at(self, index):
        names = list(self)
        if isinstance(index, slice):
            return names[index]
        if isinstance(index, (int, np.integer)) and not isinstance(index, bool):
            return [names[index]]
        if index not in self and isinstance(index, str):
            _computed_attribute(getattr(self, "of", None), index)
        return [index]

    @classmethod
    def zeros(cls, x):
        out = cls((k, zeros_like(v)) for k, v in fields_of(x))
        out.of = type(x)
        return out


def _computed_attribute(cls, name):
    """Refuse a gradient for ``obj.name`` where ``name`` is a property (or
    another descriptor) of ``obj``'s class ``cls``: its value comes from the
    stored attributes through code the adjoint does not see, so the gradient
    would be dropped, silently."""
    for c in getattr(cls, "__mro__", ()):
        d = vars(c).get(name)
        if d is not None and hasattr(type(d), "__get__") and not isinstance(
                d, (types.FunctionType, staticmethod, classmethod)):
            from ..errors import NonDifferentiableError
            raise NonDifferentiableError(
                f"pullback does not send a gradient through `.{name}`, a property of "
                f"{cls.__name__} read where the object carries a gradient: its value comes "
                "from the object's attributes through the property's code.",
                hint=f"Read the attributes it is computed from (for `@property def {name}"
                     f"(self): return self._w * self.scale`, write `obj._w * obj.scale`), or "
                     f"make it a method and call it: `obj.{name}()`.")


def refuse_computed_read(cls, name):
    """``_computed_attribute`` for a name that is no ``__slots__`` member (a slot
    holds a stored value): the forward pass's check of a field read through an
    object's tangent (a getter run on the tangent is its tangent only if linear)."""
    if not isinstance(inspect.getattr_static(cls, name, None), types.MemberDescriptorType):
        _computed_attribute(cls, name)


_NO_GRADIENT = (type, types.FunctionType, types.BuiltinFunctionType, types.MethodType,
                types.ModuleType, np.ufunc, str, bytes)
_LIBRARIES = ("numpy", "scipy", "jax", "jaxlib", "builtins", "math", "pullback", "functools")


REGISTERED = {}      # class -> (flatten, unflatten): pytrees.register_pytree_node


def slot_names(cls):
    """The ``__slots__`` names of ``cls`` and its bases (base first), without
    ``__dict__`` and ``__weakref__``."""
    names = _SLOTS.get(cls)
    if names is None:
        names = []
        for c in reversed(cls.__mro__):
            slots = vars(c).get("__slots__", ())
            for n in ((slots,) if isinstance(slots, str) else slots):
                if n not in ("__dict__", "__weakref__") and n not in names:
                    # a private name is stored mangled: `__w` of class C is `_C__w`
                    names.append(f"_{c.__name__.lstrip('_')}{n}" if n.startswith("__")
                                 and not n.endswith("__") else n)
        names = _SLOTS[cls] = tuple(names)
    return names


_SLOTS = {}


def attributes_of(x):
    """The attributes of an object of the user's class: its ``__dict__``, and
    the ``__slots__`` of its class and bases that hold a value (a dict; the
    object's own ``__dict__`` where it has no slots)."""
    d = getattr(x, "__dict__", None)
    names = slot_names(type(x))
    if not names:
        return d if isinstance(d, dict) else {}
    out = {}
    for n in names:
        try:
            out[n] = object.__getattribute__(x, n)
        except AttributeError:
            pass            # a slot never set: no attribute, as Python sees it
    if isinstance(d, dict):
        out.update(d)
    return out


def set_attribute(obj, name, value):
    """Set ``name`` on ``obj`` (a copy pullback made) without its class's
    ``__setattr__``: into its ``__dict__``, or its slot."""
    d = getattr(obj, "__dict__", None)
    if isinstance(d, dict) and name not in slot_names(type(obj)):
        d[name] = value
    else:
        object.__setattr__(obj, name, value)


def is_instance(x):
    """``x`` is an object of the user's own class (not a tuple, list, dict,
    namedtuple or dataclass): its cotangent is a dict of its attributes'
    (``__dict__`` or ``__slots__``)."""
    if isinstance(x, (np.ndarray, np.generic, numbers.Number) + _NO_GRADIENT) \
            or is_structure(x) or not (isinstance(getattr(x, "__dict__", None), dict)
                                       or slot_names(type(x))):
        return False
    if is_foreign(x) or any(hasattr(x, a) for a in (
            "__array__", "__array_namespace__", "__array_function__", "__array_interface__")):
        return False         # a Dask or CuPy array, an array-like
    if type(x) in REGISTERED:
        return True          # registered as a pytree node (pullback.pytrees): the user's
    module = getattr(type(x), "__module__", "") or ""
    if module.split(".")[0] in _LIBRARIES:
        return False
    path = getattr(sys.modules.get(module), "__file__", None) or ""
    return "site-packages" not in path and "dist-packages" not in path   # not a library's


def is_structure(x):
    return isinstance(x, (tuple, list, dict)) or (
        dataclasses.is_dataclass(x) and not isinstance(x, type))


def fields_of(x):
    """(key, value) pairs of a structure: indices, dict keys or field names."""
    if isinstance(x, dict):
        return list(x.items())
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return list(zip(x._fields, x))
    if isinstance(x, (tuple, list)):
        return list(enumerate(x))
    return [(f.name, getattr(x, f.name)) for f in dataclasses.fields(x)]


def rebuild_like(x, values):
    """A structure of ``x``'s type holding ``values`` (key -> value)."""
    if isinstance(x, dict):
        return type(x)((k, values.get(k)) for k in x)
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*(values.get(k) for k in x._fields))
    if isinstance(x, (tuple, list)):
        return type(x)(values.get(i) for i in range(len(x)))
    new = copy_module.copy(x)
    for k, v in values.items():
        object.__setattr__(new, k, v)
    return new


def field_cotangent(g, name):
    """The cotangent of field ``name`` in ``g``, the cotangent of a namedtuple
    or a dataclass (a dict of fields while the adjoint builds it, or the
    structure itself); zero where nothing reached it."""
    v = _entry(g, name)
    return 0.0 if v is None else v


def _held(p):
    """What the partial ``p`` holds, keyed by position and keyword: its cotangent is
    a dict with those keys (``runtime.function_values``)."""
    return list(enumerate(p.args)) + list(p.keywords.items())


def _entry(g, key):
    if g is None:
        return None
    if isinstance(g, dict):
        return g.get(key)
    if isinstance(g, (list, tuple)) and isinstance(key, int):
        return g[key] if key < len(g) else None
    if isinstance(g, (np.ndarray, np.generic, numbers.Number)) or is_foreign(g):
        # a number is no structure: its `.T`, `.size`, `.real` are not fields
        if not np.any(g):
            return None       # a zero standing for the whole structure's
        from ..errors import PullbackError
        raise PullbackError(
            f"pullback computed a gradient of {type(g).__name__} for a structure whose "
            f"field `{key}` it cannot take from it; this is a bug in pullback: please "
            f"report it with the function.")
    return getattr(g, key, None)


def _project_structure(g, x, copy):
    if isinstance(g, dict) and not isinstance(x, dict) and dataclasses.is_dataclass(x):
        names = {f.name for f in dataclasses.fields(x)}
        if any(k not in names for k in g):
            _check_computed_attributes(g, x, names)
    return rebuild_like(x, {k: (zeros_like(v) if _entry(g, k) is None
                                or isinstance(v, (bool, np.bool_))     # (carries none)
                                else project(_entry(g, k), v, copy)) for k, v in fields_of(x)})
