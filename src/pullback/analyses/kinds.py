"""Kinds: what sort of value each name holds, for one signature.

A transform is specialised to the abstract signature of its arguments
(Python scalar, NumPy scalar, or array of a given dtype and rank).  From it
this pass infers, for every name, whether it is a scalar, an array, a number
of either sort, a container or unknown, and whether it may be complex.  The
reverse pass uses the answers to leave out work that cannot matter: no
``unbroadcast`` between two scalars, no real-part projection when nothing in
the function can be complex, and ``+`` only where values are numbers.  The
kinds themselves and how they combine are ``kind_values``'; the kind of what
a call with a rule returns, ``call_kinds``'.

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
from collections.abc import Callable
from typing import TYPE_CHECKING

import gast
import numpy as np

from ..rules.registry import COMPLEX_OUTPUT, NEW_ARRAYS, REAL_OUTPUT  # facts(...)
from .call_kinds import _new_array, _rhs_number
from .kind_values import (ARRAY, NUMBER, RANGE, SCALAR, UNKNOWN, Kind, Shape,  # noqa: F401
                          _any_complex, _atom, _compared, _join, of_value)
from .ops import Op, OpKind, all_statements

if TYPE_CHECKING:     # (not loaded by `import pullback`)
    from ..frontend.parse import Parsed
    from ..normalize.normalize import Normal

__all__ = ["Kind", "of_value", "int_names", "of_globals", "of_atom", "infer", "Shape", "SCALAR",
           "ARRAY", "NUMBER", "UNKNOWN"]


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
