"""``functools.cached_property`` of the user's classes, read inside a
differentiated function: followed as a call of its function where that is
exactly what Python computes.

Python runs ``norm`` on the first read and keeps the value in the object's
``__dict__``; a later read returns it even if the attributes it was computed
from have changed since.  Where they cannot change (no method of the class
but ``__init__`` stores into ``self``, and ``__init__`` does not read the
cached property), each read computes the same value, so a read is followed as
a call of the function, and the gradient flows through it
(``frontend.properties`` writes ``property_getter(m, 'norm')(m)``).  When it
runs, the object's class is checked so, and a value already in the object's ``__dict__`` (cached before the object
was handed in) is read as Python reads it (``runtime.objects.property_getter``);
objects the function builds start with no cache, so no value leaks from one
call into another.  A class whose methods store into ``self`` is left as
before: its cached property is refused where a gradient would go through it.

>>> import functools
>>> class Model:
...     def __init__(self, w):
...         self.w = w
...     @functools.cached_property
...     def norm(self):
...         return abs(self.w)
>>> class Changing(Model):
...     def scale(self, k):
...         self.w = self.w * k
>>> followed_cached(Model, "norm"), followed_cached(Changing, "norm")
(True, False)
"""
from __future__ import annotations

import ast
import functools
import inspect
import textwrap
import types

__all__ = ["followed_cached", "cached_names"]

_KNOWN = {}


def followed_cached(cls, attr):
    """Whether ``cls.attr`` is a ``functools.cached_property`` (of a ``def``)
    whose reads are followed as calls (module docstring)."""
    found = next((vars(c)[attr] for c in cls.__mro__ if attr in vars(c)), None)
    return isinstance(found, functools.cached_property) \
        and isinstance(found.func, types.FunctionType) and _unchanging(cls)


def cached_names(cls):
    """The names of ``cls``'s followed cached properties."""
    return {k for c in cls.__mro__ for k in vars(c) if followed_cached(cls, k)}


def _unchanging(cls):
    """No method but ``__init__`` stores into ``self`` and ``__init__`` reads
    none of the cached properties (so each read computes the cached value)."""
    if cls not in _KNOWN:
        _KNOWN[cls] = False     # (while it is worked out)
        _KNOWN[cls] = _scan(cls)
    return _KNOWN[cls]


def _scan(cls):
    cached = {k for c in cls.__mro__ for k, v in vars(c).items()
              if isinstance(v, functools.cached_property)}
    for c in cls.__mro__:
        if c is object:
            continue
        for name, value in vars(c).items():
            fn = value.func if isinstance(value, functools.cached_property) else \
                getattr(value, "__func__", value)
            if isinstance(value, property):
                fn = value.fget
            if not isinstance(fn, types.FunctionType):
                continue
            try:
                tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
            except (OSError, TypeError, SyntaxError):
                return False
            for node in ast.walk(tree):
                if isinstance(node, ast.Call) and getattr(node.func, "id", None) in (
                        "setattr", "vars") or isinstance(node, ast.Attribute) and (
                        node.attr == "__dict__"):
                    return False
                if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                        and node.value.id == "self"):
                    continue
                if isinstance(node.ctx, ast.Store) and name != "__init__" \
                        or name == "__init__" and node.attr in cached:
                    return False
    return True
