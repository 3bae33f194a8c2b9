"""Purity: which operations are pure and elementwise, and which user
functions are built only from them.

A statement may join a fused kernel (``lower_broadcasts``) only if its
operation writes nothing, prints nothing, calls nothing impure, and maps
each element of its (broadcast) operands to the element of its result
in the same place: NumPy's ufuncs and Python's arithmetic on arrays,
comparisons, ``np.where`` and ``np.clip``, the ``math`` module's functions
(as their NumPy twins), ufuncs declared elementwise with their rule
(``registry.declare_elementwise``: SciPy's special functions), builtin
``abs``, ``pow``, ``max``/``min`` of two values, and user scalar functions
whose bodies are made of these.  Anything else is impure or not
elementwise: the answer is "no" unless proven yes.

``elementwise(op)`` gives the NumPy-side primitive an operation computes on
arrays (``math.sin`` -> ``np.sin``), or None.  ``scalar_function(fn)`` parses
and normalizes a user function and says whether its body qualifies.

>>> import math, operator
>>> from pullback.testing import function_from_source
>>> g = function_from_source('''
... def g(z):
...     return math.tanh(2.0 * z + 1.0) * z
... ''')
>>> scalar_function(g).pure
True
>>> noisy = function_from_source('''
... def noisy(z):
...     print(z)
...     return z * z
... ''')
>>> scalar_function(noisy).pure, scalar_function(noisy).reason
(False, 'line 2: `print(z)` is kept for its effect')
"""
from __future__ import annotations

import dataclasses
import math
import operator
import types
import weakref

import gast
import numpy as np

from ..rules.registry import KERNEL_UFUNCS, MATH_TWIN, declared_elementwise
from .ops import OpKind

__all__ = ["elementwise", "numpy_twin", "scalar_function", "inlinable", "ScalarFunction"]

_OPERATORS = {operator.add, operator.sub, operator.mul, operator.truediv,
              operator.floordiv, operator.mod, operator.pow, operator.neg, operator.pos}

# which functions are elementwise, their kernel names and ``math`` twins are
# declared beside each rule (rules/registry.py: facts)


def elementwise(op, node=None):
    """The NumPy-side primitive of a pure elementwise operation, or None.

    ``op`` is the statement's ``analyses.ops.Op``; ``node`` its right-hand
    side.  Operators are returned as themselves (``operator.mul``), a
    comparison as ``operator.lt`` and friends."""
    if isinstance(node, gast.Compare) and len(node.ops) == 1:
        return _COMPARE.get(type(node.ops[0]))
    if op.kind is OpKind.COPY:
        return _identity
    if op.kind not in (OpKind.RULE, OpKind.NONDIFF):
        return None
    prim = op.primitive
    try:
        hash(prim)
    except TypeError:
        return None
    if prim in _OPERATORS:
        return prim
    if isinstance(prim, np.ufunc):
        if prim.nout != 1 or (prim.__name__ not in KERNEL_UFUNCS
                              and declared_elementwise(prim) is None):
            return None
        if op.kind is OpKind.RULE:
            return prim if len(op.bound) == prim.nin else None
        return prim if isinstance(node, gast.Call) and not node.keywords \
            and len(node.args) == prim.nin else None
    if prim is np.where:
        return prim if {"condition", "x", "y"} <= set(op.bound) else None
    if prim is np.clip:
        return prim if set(op.bound) <= {"a", "a_min", "a_max"} else None
    if prim in (max, min):
        args = op.bound.get("args", ())
        if isinstance(args, tuple) and len(args) == 2 and set(op.bound) == {"args"}:
            return np.maximum if prim is max else np.minimum
        return None
    if prim is math.log:
        return np.log if set(op.bound) == {"x"} else None
    numpy_twin = MATH_TWIN.get(prim)
    if numpy_twin is not None and prim is not pow:
        return numpy_twin
    if prim is pow and set(op.bound) <= {"base", "exp"}:
        return np.power
    return None


def _identity(x):
    return x


def numpy_twin(fn):
    """The NumPy ufunc computing the callable ``fn`` elementwise on arrays
    (``math.sin`` -> ``np.sin``, ``np.tanh`` itself), or None."""
    try:
        twin = MATH_TWIN.get(fn)
    except TypeError:
        return None
    if twin is not None:
        return twin
    if isinstance(fn, np.ufunc) and fn.nout == 1 and (
            fn.__name__ in KERNEL_UFUNCS or declared_elementwise(fn) is not None):
        return fn
    return None


_COMPARE = {gast.Lt: operator.lt, gast.LtE: operator.le, gast.Gt: operator.gt,
            gast.GtE: operator.ge, gast.Eq: operator.eq, gast.NotEq: operator.ne}


# -- user scalar functions -------------------------------------------------------

@dataclasses.dataclass
class ScalarFunction:
    """A user function seen as an elementwise map, if its body qualifies."""

    fn: object
    pure: bool
    reason: str = ""
    normal: object = None         # its normalize.Normal
    parsed: object = None         # its frontend.Parsed
    ops: dict = None              # id(stmt) -> Op


_cache = weakref.WeakKeyDictionary()
_active = set()


def scalar_function(fn):
    """Whether ``fn`` is a pure elementwise scalar function (cached per
    function object).  Its statements must be assignments of elementwise
    operations on values derived from its parameters; values that are not
    (read from globals or closure cells) may also be indexed.  Calls to
    other user functions qualify if those do; recursion does not."""
    try:
        hit = _cache.get(fn)
    except TypeError:
        return ScalarFunction(fn, False, "not a Python function")
    if hit is not None:
        return hit
    if id(fn) in _active:
        return ScalarFunction(fn, False, "recursive")
    _active.add(id(fn))
    try:
        result = _analyze(fn)
    finally:
        _active.discard(id(fn))
    try:
        _cache[fn] = result
    except TypeError:
        pass
    return result


def _analyze(fn):
    from ..front import front
    from ..errors import PullbackError
    if not isinstance(fn, types.FunctionType):
        return ScalarFunction(fn, False, "not a Python function")
    try:
        parsed, normal, ops = front(fn)
    except PullbackError as err:
        return ScalarFunction(fn, False, str(err).splitlines()[0])
    mapped = set(normal.params)          # values that vary per element
    body = normal.tree.body
    for stmt in body:
        reason = _statement(stmt, ops, mapped, parsed)
        if reason:
            where = getattr(stmt, "lineno", None)
            line = f"line {where}: " if where else ""
            return ScalarFunction(fn, False, line + reason)
    return ScalarFunction(fn, True, "", normal, parsed, ops)


def _statement(stmt, ops, mapped, parsed):
    from ..backend.codegen import unparse
    if isinstance(stmt, gast.Return):
        return ""
    if not isinstance(stmt, gast.Assign) or not isinstance(stmt.targets[0], gast.Name):
        what = "is kept for its effect" if isinstance(stmt, gast.Expr) else "is not an assignment"
        return f"`{unparse(stmt)}` {what}"
    op = ops[id(stmt)]
    target = stmt.targets[0].id
    names = {n.id for n in gast.walk(stmt.value) if isinstance(n, gast.Name)}
    varies = bool(names & mapped)
    rhs = stmt.value
    if isinstance(rhs, gast.Constant):
        return ""
    if elementwise(op, rhs) is not None:
        if varies:
            mapped.add(target)
        return ""
    if op.kind is OpKind.USER and scalar_function(op.primitive).pure:
        if varies:
            mapped.add(target)
        return ""
    if not varies and isinstance(rhs, (gast.Subscript, gast.Attribute)) \
            and op.kind in (OpKind.RULE, OpKind.NONDIFF):
        return ""            # indexing a captured array: the same for every element
    return f"`{unparse(rhs)}` is not a pure elementwise operation"


def inlinable(fn):
    """``fn``'s normal form if it is straight-line assignments ending in one
    return, with no statement kept only for its effect, and at least one
    elementwise operation (so inlining it can feed a fused region); else
    None.  Used for closures lifted out of the function being differentiated,
    which share its namespace."""
    try:
        hit = _inlinable.get(fn)
    except TypeError:
        return None
    if hit is not None:
        return hit or None
    from ..front import front
    from ..errors import PullbackError
    result = False
    try:
        parsed, normal, ops = front(fn)
    except PullbackError:
        normal = None
    if normal is not None:
        *body, last = normal.tree.body
        straight = isinstance(last, gast.Return) and all(
            isinstance(st, gast.Assign) and isinstance(st.targets[0], gast.Name)
            for st in body)
        if straight and any(elementwise(ops[id(st)], st.value) is not None for st in body):
            result = ScalarFunction(fn, True, "", normal, parsed, ops)
    _inlinable[fn] = result
    return result or None


_inlinable = weakref.WeakKeyDictionary()
