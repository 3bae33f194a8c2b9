"""The float leaves reachable from a value, each named by its path.

``runtime.opaque`` checks a library call by walking its arguments and its
result down to their leaves: a float, a complex, a float or complex array (or
an array of another backend).  A leaf's path is the keys from the value down
to it: indices of tuples and lists, keys of dicts and mappings, attribute
names of objects (``__dict__`` and ``__slots__``).  An object whose contents
Python does not expose (an iterator, a set, a deque) is a bag: its leaves are
found through the garbage collector's references and named by identity,
``("@", id(leaf))``.  Ints, bools, strings and ``None`` carry no gradient and
are no leaves; a generator or a frame cannot be walked (``Unwalkable``).

>>> import numpy as np
>>> x = np.array([1.0])
>>> [(path, leaf is x) for path, leaf in Walk().leaves({"a": [2, x], "b": "s"})]
[(('a', 1), True)]
"""
from __future__ import annotations

import gc
import types
import weakref

import numpy as np

from .backends import is_foreign

__all__ = ["is_leaf", "ATOMS", "Unwalkable", "Walk", "children", "at_path"]

_NODES = 200_000          # the most objects one call's inputs and result are walked through


def is_leaf(v):
    t = type(v)
    if t is float or t is complex or t is np.ndarray and v.dtype.kind in "fc":
        return True
    if isinstance(v, (bool, np.bool_)):
        return False
    if isinstance(v, (float, complex, np.floating, np.complexfloating)):
        return True
    if isinstance(v, np.ndarray):
        return v.dtype.kind in "fc"
    return is_foreign(v)


ATOMS = (type(None), bool, int, str, bytes, range, slice, type(Ellipsis), type,
          types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.CodeType,
          types.MethodDescriptorType, types.WrapperDescriptorType, np.integer, np.bool_,
          np.dtype, weakref.ref)
_UNWALKABLE = (types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType,
               types.FrameType)


class Unwalkable(Exception):
    """A generator or a frame among the values: what it holds is not data."""


class Walk:
    """The leaves reachable from one value: ``(path, leaf)`` pairs."""

    def __init__(self):
        self.nodes = 0

    def leaves(self, value, path=()):
        out = []
        self._walk(value, path, out, set(), None)
        return out

    def _walk(self, v, path, out, stack, bag):
        if is_leaf(v):
            out.append((path if bag is None else bag + (("@", id(v)),), v))
            return
        if isinstance(v, ATOMS) or (isinstance(v, np.ndarray) and v.dtype.kind not in "O"):
            return
        if isinstance(v, _UNWALKABLE):
            raise Unwalkable(type(v).__name__)
        i = id(v)
        if i in stack:
            return
        self.nodes += 1
        if self.nodes > _NODES:
            raise Unwalkable(f"more than {_NODES} objects")
        stack.add(i)
        try:
            for key, child, in_bag in children(v, bag is not None):
                if in_bag and bag is None:
                    self._walk(child, path, out, stack, path)
                else:
                    self._walk(child, path + (key,) if bag is None else path, out, stack, bag)
        finally:
            stack.discard(i)


def children(v, in_bag):
    """``(key, child, whether child is in a bag)`` of one container."""
    if isinstance(v, (tuple, list)):
        return [(k, c, False) for k, c in enumerate(v)]
    if isinstance(v, dict):
        out = [(k, c, False) for k, c in list(v.items())]
        return out + _fields(v) if type(v).__flags__ & (1 << 9) else out   # a heap subclass
    if isinstance(v, types.MappingProxyType):
        return [(k, v[k], False) for k in v]
    if isinstance(v, np.ndarray):          # an object array: its items by position
        return [(k, c, False) for k, c in enumerate(v.ravel().tolist())]
    fields = _fields(v)
    if not _has_hidden_state(v):
        return fields
    skip = (getattr(v, "__dict__", None), type(v))
    hidden = [(None, r, True) for r in gc.get_referents(v)
              if not any(r is s for s in skip)]
    return fields + hidden


def _fields(v):
    out = []
    d = getattr(v, "__dict__", None)
    if isinstance(d, dict):
        out.extend((k, c, False) for k, c in list(d.items()))
    for cls in type(v).__mro__:
        for name in cls.__dict__.get("__slots__", ()) if isinstance(
                cls.__dict__.get("__slots__", ()), (tuple, list)) else \
                (cls.__dict__.get("__slots__"),):
            if name in ("__dict__", "__weakref__"):
                continue
            try:
                out.append((name, object.__getattribute__(v, name), False))
            except AttributeError:
                pass
    return out


def _has_hidden_state(v):
    """Whether ``v`` keeps values Python does not show as attributes (an
    instance of a C type other than ``object``: an iterator, a deque, a set)."""
    for cls in type(v).__mro__:
        if cls is object:
            continue
        if not cls.__flags__ & (1 << 9):       # Py_TPFLAGS_HEAPTYPE: not a C type
            return True
    return False


def at_path(tree, path, entry):
    """What ``tree`` holds at ``path``, one key at a time by ``entry(node,
    key)``; None once a step finds nothing (a missing entry, or a zero
    standing for a whole structure)."""
    for key in path:
        tree = entry(tree, key)
        if tree is None:
            return None
    return tree
