"""Structures and objects: which values hold others, and their fields.

A structure (a tuple, a list, a dict, a namedtuple, a dataclass) is
differentiated as a value: its cotangent has its type, field by field
(``fields_of``, ``rebuild_like``).  An object of the user's own class
(``is_instance``) has a dict of its attributes' cotangents (``__dict__`` and
``__slots__``: ``attributes_of``).  A gradient for a property, read where the
object carries one, is refused (``_computed_attribute``): its value comes
from code the adjoint does not see.

>>> import collections
>>> P = collections.namedtuple("P", "w b")
>>> fields_of(P(1.0, 2.0)), rebuild_like(P(1.0, 2.0), {"w": 3.0, "b": 4.0})
([('w', 1.0), ('b', 2.0)], P(w=3.0, b=4.0))
"""
from __future__ import annotations

import copy as copy_module
import dataclasses
import inspect
import numbers
import sys
import types

import numpy as np

from .backends import is_foreign
from .origin import module_name

__all__ = ["is_structure", "is_instance", "fields_of", "attributes_of", "set_attribute",
           "slot_names", "rebuild_like", "field_cotangent"]


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


    if isinstance(cls, type) and inspect.getattr_static(cls, name, _computed_attribute) \
            is _computed_attribute and any("__getattr__" in vars(c) for c in cls.__mro__[:-1]):
        from ..errors import NonDifferentiableError
        raise NonDifferentiableError(
            f"pullback does not send a gradient through `.{name}`, which "
            f"{cls.__name__}.__getattr__ computes where the object carries a gradient (no "
            "attribute of that name is stored).",
            hint=f"Read what `__getattr__` reads (`obj._values['{name}']`), or store the "
                 f"attribute in `__init__`: `self.{name} = ...`.")


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
    if is_foreign(x) or any(hasattr(type(x), a) for a in (
            "__array__", "__array_namespace__", "__array_function__", "__array_interface__")):
        return False         # a Dask or CuPy array, an array-like (its class: an instance's
        #                      __getattr__ may answer anything, or raise KeyError)
    if type(x) in REGISTERED:
        return True          # registered as a pytree node (pullback.pytrees): the user's
    module = module_name(type(x))        # "" for a class exec made without __name__
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
