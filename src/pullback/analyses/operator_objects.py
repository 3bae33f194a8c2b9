"""Operators applied to objects of the user's classes.

pullback differentiates ``a * b``, ``a + b`` and ``-a`` as arithmetic on
numbers and arrays (``rules.operators``).  An object of a class of the
user's that defines the operator (``__mul__``, ``__radd__``, ``__neg__``)
computes something else: a product of Gaussian densities, a ``__add__``
that multiplies; differentiated as arithmetic its gradient is wrong (and,
where the adjoint does arithmetic on the object's gradient, a TypeError).
Where an operand is a local bound only to a new object of such a class
(``a = Gaussian(m, v)``, ``analyses.op_resolver._user_objects``), the
operator is refused naming the line, with the method call to write instead,
which pullback follows as it follows any method.

>>> import numpy as np, pullback as pb
>>> from pullback.testing import function_from_source
>>> Box = function_from_source('''
... def make():
...     class Box:
...         def __init__(self, v):
...             self.v = v
...         def __add__(self, other):
...             return Box(self.v * other.v)
...     return Box
... ''', {"__name__": "example"})()
>>> f = function_from_source('''
... def f(x):
...     a = Box(x)
...     return (a + Box(3.0)).v
... ''', {"Box": Box})
>>> try:
...     pb.grad(f)(2.0)
... except pb.PullbackError as e:
...     print(str(e).splitlines()[0][:72])
pullback differentiates `+` as arithmetic on numbers and arrays, but `a`
"""
from __future__ import annotations

import inspect
import types

import gast

from ..errors import UnsupportedSyntaxError

__all__ = ["refuse_overloaded", "method_self"]

_BINARY = {gast.Add: ("+", "__add__", "__radd__"), gast.Sub: ("-", "__sub__", "__rsub__"),
           gast.Mult: ("*", "__mul__", "__rmul__"), gast.Div: ("/", "__truediv__", "__rtruediv__"),
           gast.FloorDiv: ("//", "__floordiv__", "__rfloordiv__"),
           gast.Mod: ("%", "__mod__", "__rmod__"), gast.Pow: ("**", "__pow__", "__rpow__"),
           gast.MatMult: ("@", "__matmul__", "__rmatmul__")}
_UNARY = {gast.USub: ("-", "__neg__"), gast.UAdd: ("+", "__pos__")}


def refuse_overloaded(node, objects, parsed):
    """Raise where ``node`` (a BinOp or UnaryOp of the normal form) applies an
    operator that an operand's class (``objects``: local name -> the user's
    class) defines; else nothing."""
    if isinstance(node, gast.BinOp) and type(node.op) in _BINARY:
        symbol, left, right = _BINARY[type(node.op)]
        sides = ((node.left, left, node.right), (node.right, right, node.left))
    elif isinstance(node, gast.UnaryOp) and type(node.op) in _UNARY:
        symbol, method = _UNARY[type(node.op)]
        sides = ((node.operand, method, None),)
    else:
        return
    for operand, method, other in sides:
        cls = objects.get(operand.id) if isinstance(operand, gast.Name) else None
        if cls is None or not isinstance(inspect.getattr_static(cls, method, None),
                                         (types.FunctionType, staticmethod, classmethod)):
            continue
        written = _written(parsed)
        what = f"`{operand.id}`" if operand.id in written else "an operand"
        name = _text(operand, written, "a")
        args = _text(other, written, "b") if other is not None else ""
        raise UnsupportedSyntaxError(
            f"pullback differentiates `{symbol}` as arithmetic on numbers and arrays, but "
            f"{what} is a {cls.__name__}, whose `{method}` computes what its class says.",
            parsed.location(node),
            f"Call the method, which pullback follows: `{name}.{method}({args})`, or give "
            f"it a name (`{name}.combine({args})`).")


def _written(parsed):
    """The names the user's own code reads or binds (not the normal form's)."""
    return {n.id for n in gast.walk(parsed.tree) if isinstance(n, gast.Name)}


def _text(node, written, stand_in):
    """``node``'s name where the user wrote it, else ``stand_in``."""
    return node.id if isinstance(node, gast.Name) and node.id in written else stand_in


def method_self(fn, tree):
    """``{self: cls}`` where ``fn`` is a method defined in the body of ``cls``,
    a module-level class (``self.update(p, g)`` is then ``cls``'s method, and
    ``self * c`` its operator), else ``{}``."""
    parts = getattr(fn, "__qualname__", "").split(".")
    args = tree.args.args
    if len(parts) != 2 or not args or not isinstance(args[0], gast.Name):
        return {}
    cls = getattr(fn, "__globals__", {}).get(parts[0])
    member = vars(cls).get(parts[1]) if isinstance(cls, type) else None
    if getattr(member, "__func__", member) is not fn:
        return {}
    return {args[0].id: cls}
