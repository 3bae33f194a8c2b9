"""Guard ``a + b``, ``-a`` of operands the kinds do not prove numbers.

``analyses.op_resolver`` matches ``a + b`` to the rule of ``operator.add``,
whose derivative is arithmetic's (or joining's, for lists and tuples).
Where the kinds (``analyses.kinds``) prove an operand neither a number (an
array or a scalar) nor a list, tuple or range, it may be an object of the
user's class, whose ``__add__`` may compute anything: a dataclass of
parameters whose ``+`` is defined as a product would have its gradient
taken as a sum's.  Before each such operator that a differentiated value
reaches, this pass puts ``plain_operands(symbol, a, b)``
(``runtime.statement_checks``), which refuses an object of a class of the
user's when it runs.  The check binds no name, so the analyses stand.

Before (``W`` and ``b`` read out of a list of layers, of unknown kind)::

    h_W = h @ W
    h_1 = h_W + b

After::

    plain_operands('@', h, W)
    h_W = h @ W
    plain_operands('+', h_W, b)
    h_1 = h_W + b

>>> from pullback.frontend.parse import parse
>>> from pullback.testing import function_from_source, analyses
>>> from pullback.backend.codegen import unparse
>>> def make(x):
...     return x
>>> f = function_from_source('''
... def f(x):
...     s = make(x)
...     t = s * x
...     return t
... ''', {"make": make})
>>> normal, ops, _, kinds, act = analyses(f)
>>> guard_operators(normal, ops, kinds, act.varied, parse(f))
>>> print(unparse(normal.tree.body[1]).strip())
plain_operands('*', s, x)
"""
from __future__ import annotations

import operator
import types

import gast

from ..ir.walk import statement_lists
from .ops import Op, OpKind

__all__ = ["guard_operators"]

_SYMBOLS = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
            operator.floordiv: "//", operator.mod: "%", operator.pow: "**",
            operator.matmul: "@", operator.neg: "unary -", operator.pos: "unary +"}


def _settled(kind):
    """A value whose operators pullback's rules follow: a number, a list,
    tuple or dict, or a range."""
    return kind is not None and (kind.is_number or kind.shape in ("container", "range"))


def guard_operators(normal, ops, kinds, varied, parsed) -> None:
    """Put ``plain_operands`` before each operator of a differentiated value
    with an operand of unknown kind (see the module's docstring)."""
    from .. import runtime
    name = None
    for block in statement_lists(normal.tree.body):
        for stmt in list(block):
            op = ops.get(id(stmt))
            if op is None or op.kind not in (OpKind.RULE, OpKind.NONDIFF) \
                    or not isinstance(op.node, (gast.BinOp, gast.UnaryOp)) \
                    or op.primitive not in _SYMBOLS:
                continue
            sides = [op.node.left, op.node.right] if isinstance(op.node, gast.BinOp) \
                else [op.node.operand]
            names = [s.id for s in sides if isinstance(s, gast.Name)]
            if not any(n in varied for n in names) \
                    or all(_settled(kinds.get(n)) for n in names):
                continue
            if name is None:
                name = normal.namer.fresh("plain_operands")
                parsed.closure[name] = types.CellType(runtime.plain_operands)
            call = gast.Call(func=gast.Name(id=name, ctx=gast.Load(), annotation=None,
                                            type_comment=None),
                             args=[gast.Constant(_SYMBOLS[op.primitive], None)]
                             + [gast.Name(id=s.id, ctx=gast.Load(), annotation=None,
                                          type_comment=None)
                                if isinstance(s, gast.Name) else gast.Constant(s.value, None)
                                for s in sides], keywords=[])
            check = gast.Expr(value=call)
            for node in gast.walk(check):
                gast.copy_location(node, stmt)
            block.insert(next(i for i, t in enumerate(block) if t is stmt), check)
            ops[id(check)] = Op(OpKind.NONDIFF, label="plain_operands",
                                primitive=runtime.plain_operands, node=call)

