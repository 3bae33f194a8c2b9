"""Function values that carry gradients: a ``functools.partial`` (and a
nested function used as a value, which ``frontend.closures`` makes one
with ``control.nested_value``) is a structure whose leaves are the values
it holds: its positional arguments, keyed by position, and its keywords,
keyed by name.  Its cotangent (and its tangent in forward mode) is a dict
with those keys, as ``core.project`` and ``core.zeros_like`` make it.

Before and after, the gradient of ``partial(np.multiply, w)`` called on
``x`` (``driver.dispatch`` builds the dict)::

    g = partial(np.multiply, w)        g_bar = {0: x * y_bar}
    y = g(x)                           w_bar = g_bar[0]

>>> import functools, numpy as np
>>> from pullback.runtime import core
>>> p = functools.partial(np.multiply, 2.0, out=None)
>>> held(p)
[(0, 2.0), ('out', None)]
>>> core.zeros_like(p)
{0: 0.0, 'out': 0.0}
>>> core.project({0: np.float64(3.0)}, p)
{0: 3.0, 'out': 0.0}

This module imports nothing of the compiler.
"""
from __future__ import annotations

import functools

import numpy as np

from . import structures

__all__ = ["is_function_value", "held", "carries", "entry"]


def is_function_value(x):
    """A function value whose held values are its leaves (a partial)."""
    return isinstance(x, functools.partial)


def held(p, given=()):
    """``(key, value)`` for what the partial ``p`` holds: its positional
    arguments by position, then its keywords by name (less those a call
    gives again, ``given``, which replace them)."""
    return list(enumerate(p.args)) + [(k, v) for k, v in p.keywords.items()
                                      if k not in given]


def carries(v):
    """Whether ``v`` may carry a gradient: a float or complex number or
    array, a structure or an object holding one, a partial holding one, or
    anything unknown (never taken for a constant)."""
    if isinstance(v, (bool, str, bytes)) or v is None:
        return False
    if isinstance(v, (float, complex)):
        return True
    if isinstance(v, (np.ndarray, np.generic)):
        return np.issubdtype(v.dtype, np.inexact)
    if isinstance(v, int):
        return False
    if is_function_value(v):
        return any(carries(e) for _, e in held(v))
    if structures.is_structure(v):
        return any(carries(e) for _, e in structures.fields_of(v))
    if structures.is_instance(v):
        return any(carries(e) for e in structures.attributes_of(v).values())
    if isinstance(v, structures._NO_GRADIENT):
        return False
    dtype = getattr(v, "dtype", None)    # another library's array: by its dtype
    if dtype is not None:
        try:
            return bool(np.issubdtype(np.dtype(dtype), np.inexact))
        except TypeError:
            return True
    return True          # unknown: differentiated (and refused there if it cannot be)


def entry(g, key):
    """The entry ``key`` of a function value's cotangent ``g`` (None: nothing reached it)."""
    if isinstance(g, dict):
        return g.get(key)
    return None
