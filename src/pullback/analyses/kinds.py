"""Kinds: what sort of value each name holds, for one signature.

A transform is specialised to the abstract signature of its arguments
(Python scalar, NumPy scalar, or array of a given dtype and rank).  From it
this pass infers, for every name, whether it is a scalar, an array, a number
of either sort, a container or unknown, and whether it may be complex.  The
reverse pass uses the answers to leave out work that cannot matter: no
``unbroadcast`` between two scalars, no real-part projection when nothing in
the function can be complex, and ``+`` only where values are numbers.

>>> from pullback.testing import function_from_source, analyses
>>> f = function_from_source('''
... def f(x, y):
...     z = x * 2.0
...     w = z * y
...     return np.sum(w)
... ''')
>>> _, _, _, k, _ = analyses(f, param_kinds={"x": SCALAR, "y": ARRAY})
>>> [(n, k[n].shape) for n in ("z", "w", "out")]
[('z', 'scalar'), ('w', 'array'), ('out', 'scalar')]
"""
from __future__ import annotations

import dataclasses
import enum
import operator
from collections.abc import Callable
from typing import TYPE_CHECKING

import gast
import numpy as np

from ..rules.registry import (COMPLEX_OUTPUT, FLAT, NEW_ARRAYS, REAL_OUTPUT,  # facts(...)
                              REDUCTIONS, RESHAPES, SAME_KIND)
from .ops import Op, OpKind, all_statements
from ..runtime.backends import is_foreign

if TYPE_CHECKING:     # (not loaded by `import pullback`)
    from ..frontend.parse import Parsed
    from ..normalize.normalize import Normal

__all__ = ["Kind", "of_value", "int_names", "of_globals", "of_atom", "infer", "Shape", "SCALAR",
           "ARRAY", "NUMBER", "UNKNOWN"]


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


def of_globals(normal: Normal, parsed: Parsed) -> dict[str, Kind]:
    """Kinds of the module constants and closure values the function reads
    (``DT = 0.01``): numbers and arrays only, as they are now."""
    from ..ir.grammar import assigned_names
    local = set(normal.params) | assigned_names(normal.tree.body)
    out = {}
    for node in gast.walk(normal.tree):
        if isinstance(node, gast.Name) and node.id not in local and node.id not in out:
            if node.id in parsed.closure:
                try:
                    value = parsed.closure[node.id].cell_contents
                except ValueError:
                    continue
            elif node.id in parsed.globals:
                value = parsed.globals[node.id]
            else:
                continue
            if isinstance(value, (int, float, complex, np.generic, np.ndarray)) \
                    and not isinstance(value, bool):
                out[node.id] = of_value(value)
    return out



def infer(fn: gast.FunctionDef, params: dict[str, Kind], ops: dict[int, Op],
          returns: Callable[[object, dict[str, Kind]], Kind] | None = None) -> dict[str, Kind]:
    """Map every name of the normal-form ``fn`` to its ``Kind``; ``params``
    gives the parameters' kinds.  ``returns(callee, arg_kinds)``, if given,
    is the kind of what a call of the user function ``callee`` returns for
    arguments of ``arg_kinds`` (parameter name -> Kind); without it the
    result of a user function is of unknown kind."""
    kinds = dict(params)
    _block(fn.body, ops, kinds, returns)
    return kinds


def of_atom(node, kinds):
    """The kind of an atom (a name or a constant) given the kinds of names."""
    return _atom(node, kinds)


def _block(stmts, ops, kinds, returns):
    for stmt in stmts:
        if isinstance(stmt, gast.If):
            _block(stmt.body, ops, kinds, returns)
            _block(stmt.orelse, ops, kinds, returns)
        elif isinstance(stmt, (gast.For, gast.While)):
            if isinstance(stmt, gast.For):
                over_range = _atom(stmt.iter, kinds) == RANGE
                kinds[stmt.target.id] = Kind(Shape.SCALAR, False, 0) if over_range else UNKNOWN
            for _ in range(3):      # loop-carried names: until their kinds settle
                before = dict(kinds)
                _block(stmt.body, ops, kinds, returns)
                if kinds == before:
                    break
        elif isinstance(stmt, gast.Assign):
            target = stmt.targets[0]
            if isinstance(target, gast.Subscript):
                continue           # a write into an array keeps its kind
            if not isinstance(target, gast.Name):
                for e in target.elts:
                    kinds[e.id] = UNKNOWN
                continue
            if isinstance(stmt.value, gast.Constant) and stmt.value.value is None:
                continue    # a placeholder for a name defined later (in a loop): no kind
            new = _rhs(stmt.value, ops[id(stmt)], kinds, returns)
            old = kinds.get(target.id)
            kinds[target.id] = new if old is None or old == new else _join(old, new)


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



def _rhs(node, op, kinds, returns=None):
    if op.kind is OpKind.COPY or isinstance(node, gast.Constant):
        return _atom(node, kinds)
    if op.kind is OpKind.PACK:
        elts = node.values if isinstance(node, gast.Dict) else node.elts
        return Kind(Shape.CONTAINER, _any_complex([_atom(e, kinds) for e in elts]),
                    length=None if isinstance(node, gast.Dict) else len(elts))
    if op.kind is OpKind.NONDIFF:
        if op.primitive is range:
            return RANGE
        if op.primitive in NEW_ARRAYS and isinstance(node, gast.Call) and node.args:
            return _new_array(op.primitive, node, kinds)
        if isinstance(node, gast.Compare):
            # elementwise: `x > 0.5` of an array is an array of booleans
            return _compared([_atom(a, kinds) for a in [node.left] + node.comparators])
        if op.primitive in (len, int) or isinstance(node, gast.BoolOp):
            return Kind(Shape.SCALAR, False, 0)
        if op.primitive is np.arange:
            return Kind(Shape.ARRAY, False, 1)
        return UNKNOWN
    if op.kind is OpKind.USER and returns is not None:
        return returns(op.primitive, {p: _atom(a, kinds) for p, a in op.bound.items()
                                       if isinstance(a, (gast.Name, gast.Constant))})
    if op.kind is not OpKind.RULE:
        return UNKNOWN     # fields of structures, opaque calls, ...
    prim = op.primitive
    if prim in (tuple, list) or getattr(prim, "makes_dict", False):
        return Kind(Shape.CONTAINER, None)
    if prim in REAL_OUTPUT:
        return dataclasses.replace(_rhs_number(node, op, kinds), complex=False)
    if prim in COMPLEX_OUTPUT:        # np.fft.fft of a real array: complex
        kind = _rhs_number(node, op, kinds)
        return dataclasses.replace(kind, dtype=None, complex=True if COMPLEX_OUTPUT[prim]
                                   or kind.complex else None)
    return _rhs_number(node, op, kinds)


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


def int_names(stmts, ops):
    """Names certainly holding Python ints: range loop targets, len(...),
    integer constants and integer arithmetic on those."""
    ints = set()
    ranges = set()

    def is_int(node):
        return (isinstance(node, gast.Constant) and type(node.value) is int) or (
            isinstance(node, gast.Name) and node.id in ints)

    for _ in range(2):      # twice: loop-carried counters
        for s in all_statements(stmts):
            if isinstance(s, gast.For) and isinstance(s.iter, gast.Name) \
                    and s.iter.id in ranges:
                ints.add(s.target.id)
            if not (isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)):
                continue
            v, t = s.value, s.targets[0].id
            if isinstance(v, gast.Call) and isinstance(v.func, gast.Name) \
                    and v.func.id in ("len", "int", "range"):
                (ranges if v.func.id == "range" else ints).add(t)
            elif is_int(v) or (isinstance(v, gast.BinOp) and is_int(v.left)
                               and is_int(v.right) and isinstance(
                                   v.op, (gast.Add, gast.Sub, gast.Mult, gast.FloorDiv,
                                          gast.Mod))):
                ints.add(t)
    return ints
