"""Call kinds: the kind of what a call with a rule returns, from the kinds
of its arguments, for ``kinds.infer``.

A ufunc or an operator broadcasts its operands (and gives float64 where
every operand certainly is float64 or an int of 32 bits or more); a
reduction over every axis gives a scalar; an index drops an axis per
integer (``_indexed``); ``np.zeros(shape)`` and a reshape have as many axes
as the shape written in the call or held in a tuple (``_new_array``,
``_reshaped``)::

>>> from pullback.testing import function_from_source, analyses
>>> from pullback.analyses.kinds import ARRAY
>>> f = function_from_source('''
... def f(x):
...     z = np.zeros((3, 4))
...     r = x.reshape(2, 3)
...     row = r[0]
...     return np.sum(z) + np.sum(row)
... ''')
>>> _, _, _, k, _ = analyses(f, param_kinds={"x": ARRAY})
>>> [(n, k[n].shape, k[n].ndim) for n in ("z", "r", "row")]
[('z', 'array', 2), ('r', 'array', 2), ('row', 'array', 1)]
"""
from __future__ import annotations

import dataclasses
import operator

import gast
import numpy as np

from ..rules.registry import FLAT, REDUCTIONS, RESHAPES, SAME_KIND  # facts(...)
from .kind_values import UNKNOWN, Kind, Shape, _any_complex, _atom, _broadcast


def _rhs_number(node, op, kinds):
    prim = op.primitive
    args = [v for v in op.bound.values() if not isinstance(v, tuple)]
    ks = [_atom(a, kinds) for a in args if isinstance(a, (gast.Name, gast.Constant))]
    data = [_atom(op.bound[p], kinds) for p in op.rule.diff
            if p in op.bound and not isinstance(op.bound[p], tuple)]
    cplx = _any_complex(data or ks)
    if isinstance(prim, np.ufunc) or prim in _OPERATORS:
        return dataclasses.replace(_broadcast(data or ks), complex=cplx,
                                   dtype=_float64_result(prim, op, node, kinds))
    if getattr(prim, "__module__", None) == "math" or prim in (abs, float):
        return Kind(Shape.SCALAR, _any_complex(data), 0) if all(
            k.shape is Shape.SCALAR for k in data) else _broadcast(data)
    if prim in (max, min):
        # max(a, b, ...) of scalars is a scalar; max(iterable) is an element
        items = [_atom(a, kinds) for a in op.bound.get("args", ())]
        if len(items) >= 2 and all(k.shape is Shape.SCALAR for k in items):
            return Kind(Shape.SCALAR, _any_complex(items), 0)
    if prim in REDUCTIONS and _is_none(op.bound.get("axis")):
        return Kind(Shape.SCALAR, _any_complex(data), 0)
    if prim is operator.getitem:
        return _indexed(data[0] if data else UNKNOWN, op.bound.get("b"), kinds)
    if prim in (np.array, np.asarray) and isinstance(node, gast.Call) and node.args \
            and _atom(node.args[0], kinds).shape is Shape.CONTAINER:
        return Kind(Shape.ARRAY, cplx)         # of a list or tuple: at least one axis
    if prim in SAME_KIND and data:
        return data[0]                     # a copy or a clip keeps shape and dtype
    if (prim in FLAT or prim in RESHAPES) and data:
        reshaped = _reshaped(prim, op, data[0], kinds)
        if reshaped is not None:
            return reshaped
    if any(not k.is_number for k in data) and not _returns_array(prim):
        return Kind(Shape.UNKNOWN, cplx)
    return Kind(Shape.NUMBER, cplx)


# integer dtypes that NumPy meets with float64 to give float64
_WITH_FLOAT64 = ("float64", "int64", "int32", "uint64", "uint32")


def _float64_result(prim, op, node, kinds):
    """``"float64"`` when arithmetic or a ufunc of these operands certainly
    gives float64 values: real operands, one of them float64, the others
    float64, ints of 32 bits or more, or int and float literals; and, for a
    ufunc, float64 from float64.  A power of a scalar (maybe a Python float)
    to anything but an int literal may be complex: not followed."""
    if isinstance(node, gast.Call) and node.keywords:
        return None
    seen = False
    for v in op.bound.values():
        if isinstance(v, gast.Constant) and type(v.value) in (int, float):
            continue
        if not isinstance(v, gast.Name):
            return None
        k = _atom(v, kinds)
        if k.complex is not False or k.dtype not in _WITH_FLOAT64:
            return None
        seen |= k.dtype == "float64"
    if not seen:
        return None
    if prim is operator.pow:
        base, exponent = op.bound.get("x"), op.bound.get("y")
        if not (isinstance(exponent, gast.Constant) and type(exponent.value) is int) and not (
                isinstance(base, gast.Name) and _atom(base, kinds).shape is Shape.ARRAY):
            return None
    if isinstance(prim, np.ufunc):
        if prim.nout != 1 or len(op.bound) != prim.nin:
            return None
        try:
            out = prim.resolve_dtypes((np.dtype(np.float64),) * prim.nin + (None,))
        except (TypeError, ValueError):
            return None
        if out[-1] != np.float64:
            return None
    return "float64"


def _returns_array(prim):
    """NumPy functions and array methods return arrays or NumPy scalars."""
    if isinstance(prim, str):
        return prim.startswith("ndarray.") and prim not in ("ndarray.tolist",)
    return (getattr(prim, "__module__", "") or "").startswith("numpy") \
        and prim not in (np.split, np.array_split)


def _reshaped(prim, op, base, kinds):
    """The kind of a ravel (one axis) or of a reshape to a shape written in
    the call or held in a tuple (as many axes as it has); None if not known."""
    if not base.is_number:
        return None
    if prim in FLAT:
        ndim = 1
    else:
        shape = op.bound.get("shape")
        if isinstance(shape, tuple) and len(shape) == 1:
            shape = shape[0]                    # a.reshape((2, 3)) or a.reshape(6)
        if isinstance(shape, tuple):
            ndim = len(shape)                   # a.reshape(2, 3)
        elif isinstance(shape, gast.Tuple):
            ndim = len(shape.elts)
        elif isinstance(shape, (gast.Name, gast.Constant)) \
                and _atom(shape, kinds).length is not None:
            ndim = _atom(shape, kinds).length
        elif isinstance(shape, (gast.Name, gast.Constant)) \
                and _atom(shape, kinds).shape is Shape.SCALAR \
                and _atom(shape, kinds).complex is False:
            ndim = 1                            # an int (a float would fail in NumPy)
        else:
            return None
    return Kind(Shape.SCALAR if ndim == 0 else Shape.ARRAY, base.complex, ndim, base.dtype)


def _new_array(prim, node, kinds):
    """``np.zeros(shape, ...)`` and friends: an array of known rank."""
    complex_ = None if any(k.arg == "dtype" for k in node.keywords) or (
        prim in (np.zeros, np.ones, np.empty) and len(node.args) > 1) else False
    first = node.args[0]
    if prim in (np.zeros_like, np.ones_like, np.empty_like, np.full_like):
        like = _atom(first, kinds)
        return Kind(like.shape, like.complex if complex_ is False else None, like.ndim)
    if isinstance(first, gast.Tuple):
        ndim = len(first.elts)
    elif _atom(first, kinds).length is not None:
        ndim = _atom(first, kinds).length        # np.zeros(shape), shape = (3, 4)
    elif _atom(first, kinds).shape is Shape.SCALAR:
        ndim = 1
    else:
        return Kind(Shape.NUMBER, complex_)
    return Kind(Shape.SCALAR if ndim == 0 else Shape.ARRAY, complex_, ndim,
                "float64" if complex_ is False and prim is not np.full else None)


def _indexed(kind, index, kinds):
    """The kind of ``x[index]``: each integer drops an axis, a slice keeps
    one, None adds one; anything else (arrays, masks, ...) is not followed."""
    if kind.shape is not Shape.ARRAY or kind.ndim is None or index is None:
        return Kind(Shape.NUMBER, kind.complex) if kind.is_number else Kind(Shape.UNKNOWN,
                                                                          kind.complex)
    items = index.elts if isinstance(index, gast.Tuple) else [index]
    ndim = kind.ndim
    for item in items:
        if isinstance(item, gast.Slice):
            continue
        if isinstance(item, gast.Constant) and item.value is None:
            ndim += 1
        elif _atom(item, kinds).shape is Shape.SCALAR and _atom(item, kinds).complex is False:
            ndim -= 1          # an integer (a float index would fail in NumPy itself)
        else:
            return Kind(Shape.NUMBER, kind.complex)
    if ndim < 0:
        return Kind(Shape.NUMBER, kind.complex)
    return Kind(Shape.SCALAR if ndim == 0 else Shape.ARRAY, kind.complex, ndim, kind.dtype)


def _is_none(node):
    return node is None or (isinstance(node, gast.Constant) and node.value is None)


_OPERATORS = {operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
              operator.mod, operator.pow, operator.neg, operator.pos}
