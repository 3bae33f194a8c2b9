"""What a callee is, asked of the object a name of the user's function refers
to when it is transformed: library code, a NumPy function that writes into
its argument, a namedtuple or dataclass constructor that only stores its
fields, a function with ``*args``, a callable the runtime dispatcher unwraps,
a class of the user's whose objects pullback follows.

>>> import functools, numpy as np
>>> is_library(np.exp), is_variadic(lambda *xs: 0), dispatches(functools.partial(np.add, 1))
(True, True, True)
>>> import collections
>>> structure_fields(collections.namedtuple("P", "w b"))
('w', 'b')
"""
from __future__ import annotations

import builtins
import functools
import inspect
import types

import gast
import numpy as np

from .. import rules as _rules  # noqa: F401  (registers every rule)
from .. import runtime
from ..errors import NonDifferentiableError
from ..rules.registry import WRITES_INTO, is_nondifferentiable, lookup
from ..runtime.opaque import is_library_code
from ..runtime.origin import module_name

__all__ = ["static_value", "structure_fields", "is_variadic", "is_star_call",
           "is_mutating_function", "is_wrapper", "dispatches", "is_library", "dotted",
           "called_class"]


def static_value(node, parsed, undefined=None):
    """The object a (dotted) name of the user's function refers to now: a
    closure cell, a global or a builtin, then its attributes; for a name that
    is none of these, ``undefined(name, node)`` (default: None)."""
    path = []
    while isinstance(node, gast.Attribute):
        path.append(node.attr)
        node = node.value
    if not isinstance(node, gast.Name):
        return None
    name = node.id
    if name in parsed.closure:
        try:
            obj = parsed.closure[name].cell_contents
        except ValueError:
            return None
    elif name in parsed.globals:
        obj = parsed.globals[name]
    elif hasattr(builtins, name):
        obj = getattr(builtins, name)
    else:
        return undefined(name, node) if undefined else None
    for attr in reversed(path):
        obj = getattr(obj, attr, None)
    return obj

# Methods that change their array (or list) in place, and NumPy functions that


def structure_fields(obj):
    """The field names of a namedtuple class, or of a dataclass whose
    ``__init__`` dataclasses wrote (no ``__post_init__``, no ``InitVar``),
    else None: constructing one only stores its arguments."""
    import dataclasses
    if isinstance(obj, type) and issubclass(obj, tuple) and hasattr(obj, "_fields"):
        new = obj.__new__
        if not (isinstance(new, types.FunctionType) and new.__code__.co_filename == "<string>"
                and str(new.__globals__.get("__name__", "")).startswith("namedtuple_")):
            return None      # a __new__ of the user's own
        return tuple(obj._fields)
    if isinstance(obj, type) and dataclasses.is_dataclass(obj):
        params = getattr(obj, "__dataclass_params__", None)
        if params is None or not params.init or hasattr(obj, "__post_init__"):
            return None
        code = getattr(obj.__init__, "__code__", None)
        if code is None or code.co_filename != "<string>":
            return None      # an __init__ of the user's own
        fields = dataclasses.fields(obj)
        if any(f.init is False for f in fields):
            return None
        return tuple(f.name for f in fields)
    return None


def is_variadic(fn):
    """A function with ``*args``, ``**kwargs`` or keyword-only parameters
    (differentiated once per layout of its calls, through the dispatcher)."""
    try:
        sig = inspect.signature(fn, follow_wrapped=False)
    except (TypeError, ValueError):
        return False
    return any(p.kind not in (p.POSITIONAL_OR_KEYWORD, p.POSITIONAL_ONLY)
               for p in sig.parameters.values())


def is_star_call(obj):
    return obj is runtime.control.star_call


def is_mutating_function(obj):
    try:
        return obj in WRITES_INTO            # declared beside the rules: facts(...)
    except TypeError:
        return False


def is_wrapper(fn):
    """pullback's own functions (``pb.grad(f)`` and the like): not user code."""
    return (getattr(fn, "__module__", "") or "").split(".")[0] == "pullback"


def dispatches(obj):
    """Callables the runtime dispatcher unwraps: bound methods, partials,
    instances with ``__call__``, and pullback's own transforms (which it
    refuses with a clear error until higher order is supported)."""
    if isinstance(obj, (types.MethodType, functools.partial)):
        return True
    if isinstance(obj, types.FunctionType):
        return is_wrapper(obj)
    if isinstance(obj, (type, types.BuiltinFunctionType, np.ufunc, types.ModuleType)):
        return False
    return callable(obj) and isinstance(getattr(type(obj), "__call__", None),
                                        types.FunctionType)


def is_library(fn):
    module = module_name(fn)
    return module.split(".")[0] in ("numpy", "math", "builtins", "scipy", "jax") \
        or is_library_code(fn)


def dotted(node, sep=".", default="a call"):
    """``np.linalg.norm`` for that attribute chain (joined by ``sep``)."""
    parts = []
    while isinstance(node, gast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, gast.Name):
        parts.append(node.id)
    return sep.join(reversed(parts)) or default


def called_class(cls):
    """The fields function standing for a call of the user's class ``cls``
    known only when the call runs (``cls(...)`` in a classmethod,
    ``Model(**params)``, spread by ``star_call``); None for anything that is
    not a class of the user's; refused, naming the class and why, where its
    objects cannot be followed."""
    if not isinstance(cls, type) or issubclass(cls, BaseException):
        return None
    if is_library(cls) or lookup(cls) is not None or is_nondifferentiable(cls) \
            or structure_fields(cls) is not None:
        return None
    from ..frontend.instances import followed, why_not_followed
    fn = followed(cls)
    if fn is None:
        raise NonDifferentiableError(
            f"pullback cannot yet send gradients through an object of your class "
            f"{cls.__name__} built here from values being differentiated: "
            f"{why_not_followed(cls)}.",
            hint=f"Store each value with `self.attr = value` at the top level of "
                 f"{cls.__name__}.__init__, or create the object outside and pass it in as "
                 f"an argument, or pass those values to its methods as arguments.")
    return fn


def _install():
    from .. import callees
    callees.class_calls = called_class     # (callees cannot import this module: a cycle)


_install()
