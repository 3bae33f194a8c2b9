"""The kinds themselves: ``Shape``, ``Kind``, the kind of a concrete value
(``of_value``), and how kinds combine: where a name is assigned twice
(``_join``), an elementwise operation's broadcast (``_broadcast``), a
comparison (``_compared``).  ``kinds`` infers them for a function, and
re-exports what is public here::

>>> import numpy as np
>>> of_value(np.ones((2, 3)))
Kind(shape='array', complex=False, ndim=2, dtype='float64', length=None, python=False)
>>> _broadcast([of_value(1.5), of_value(np.ones(3))]).shape
'array'
"""
from __future__ import annotations

import dataclasses
import enum

import gast
import numpy as np

from ..runtime.backends import is_foreign


class Shape(str, enum.Enum):
    """The sort of value a name holds.  A ``str`` whose value is the shape's
    name, so that ``kind.shape == "scalar"`` still holds."""
    SCALAR = "scalar"          # a Python or NumPy scalar, or a 0-d array
    ARRAY = "array"            # an array of rank 1 or more
    NUMBER = "number"          # a scalar or an array, not known which
    CONTAINER = "container"    # a tuple, list or dict
    UNKNOWN = "unknown"
    RANGE = "range"            # a ``range`` object

    __str__, __repr__ = str.__str__, str.__repr__     # prints as its string, as before


@dataclasses.dataclass(frozen=True)
class Kind:
    shape: Shape
    complex: object        # True, False, or None for "may be"
    ndim: object = None    # the rank when known (0 for a scalar)
    dtype: object = None   # e.g. "float64", when known
    length: object = None  # a tuple or list literal's length (a shape: np.zeros((3, 4)))
    # a parameter given a Python float (not a NumPy scalar): no part of the
    # kind's identity (equal kinds stay equal), read by reverse/scalar_guards
    python: bool = dataclasses.field(default=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "shape", Shape(self.shape))   # (a string names the same)

    @property
    def is_number(self):
        return self.shape in (Shape.SCALAR, Shape.ARRAY, Shape.NUMBER)


SCALAR = Kind(Shape.SCALAR, False, 0)


ARRAY = Kind(Shape.ARRAY, False)


NUMBER = Kind(Shape.NUMBER, False)      # scalar or array: the generic transform's inputs


UNKNOWN = Kind(Shape.UNKNOWN, None)


RANGE = Kind(Shape.RANGE, False)


def of_value(x):
    """The kind of a concrete argument (part of the specialisation key)."""
    if type(x) is float:
        return Kind(Shape.SCALAR, False, 0, "float64", python=True)
    if isinstance(x, (bool, int, float, complex, np.generic)):
        return Kind(Shape.SCALAR, bool(np.iscomplexobj(x)), 0, np.result_type(x).name)
    if isinstance(x, np.ndarray):
        return Kind(Shape.SCALAR if x.ndim == 0 else Shape.ARRAY, bool(np.iscomplexobj(x)), x.ndim,
                    x.dtype.name)
    if isinstance(x, (tuple, list)):
        return Kind(Shape.CONTAINER, None)
    if is_foreign(x):           # Dask, CuPy: the transform a NumPy array gets
        return Kind(Shape.SCALAR if x.ndim == 0 else Shape.ARRAY, x.dtype.kind == "c", x.ndim,
                    x.dtype.name)
    if hasattr(x, "__array_namespace__") or hasattr(x, "__array_function__"):
        return Kind(Shape.NUMBER, None)
    return UNKNOWN


def _join(a, b):
    """The kind of a name assigned in more than one place (loops, branches)."""
    cplx = a.complex if a.complex == b.complex else None
    if a.shape == b.shape:
        return Kind(a.shape, cplx, a.ndim if a.ndim == b.ndim else None,
                    a.dtype if a.dtype == b.dtype else None)
    if a.is_number and b.is_number:
        return Kind(Shape.NUMBER, cplx)
    return Kind(Shape.UNKNOWN, cplx)


def _atom(node, kinds):
    if isinstance(node, gast.Name):
        return kinds.get(node.id, UNKNOWN)
    if isinstance(node, gast.Constant):
        v = node.value
        if isinstance(v, (int, float, complex)):
            return Kind(Shape.SCALAR, isinstance(v, complex), 0)
        return UNKNOWN
    return UNKNOWN


def _broadcast(ks):
    if any(not k.is_number for k in ks):
        return UNKNOWN
    cplx = _any_complex(ks)
    ndims = [k.ndim for k in ks]
    ndim = max(ndims) if ks and None not in ndims else None
    if all(k.shape is Shape.SCALAR for k in ks):
        return Kind(Shape.SCALAR, cplx, 0)
    if any(k.shape is Shape.ARRAY for k in ks):
        return Kind(Shape.ARRAY, cplx, ndim)
    return Kind(Shape.NUMBER, cplx)


def _compared(ks):
    """The kind of a comparison of values of kinds ``ks``: a bool, or an
    array of them where one side is an array; unknown where a side is."""
    if all(k.shape is Shape.SCALAR for k in ks):
        return Kind(Shape.SCALAR, False, 0)
    if any(k.shape is Shape.ARRAY for k in ks) and all(k.is_number for k in ks):
        ndims = [k.ndim for k in ks]
        return Kind(Shape.ARRAY, False, max(ndims) if None not in ndims else None, "bool")
    return Kind(Shape.NUMBER, False) if all(k.is_number for k in ks) else UNKNOWN


def _any_complex(ks):
    flags = [k.complex for k in ks]
    if any(f is True for f in flags):
        return True
    return None if any(f is None for f in flags) else False
