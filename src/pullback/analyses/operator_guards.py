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
    plain_operands('+', b)
    h_1 = h_W + b

(``h_W``, made of values that passed, is not checked again.)

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
plain_operands('*', s)
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
    with an operand of unknown kind (see the module's docstring).  An
    operator's result on values that passed the check is a number, an array,
    a list or a tuple too: later in the same statement list, until the name
    is bound again, it is not checked again."""
    from .. import runtime
    from ..ir.grammar import assigned_names
    name = None
    for block in statement_lists(normal.tree.body):
        plain = set()         # names checked (or made of checked values) in this list
        for stmt in list(block):
            op = ops.get(id(stmt))
            target = stmt.targets[0].id if isinstance(stmt, gast.Assign) \
                and isinstance(stmt.targets[0], gast.Name) else None
            plain -= set(assigned_names([stmt]))
            if op is None or op.kind not in (OpKind.RULE, OpKind.NONDIFF) \
                    or not isinstance(op.node, (gast.BinOp, gast.UnaryOp)) \
                    or op.primitive not in _SYMBOLS:
                continue
            sides = [op.node.left, op.node.right] if isinstance(op.node, gast.BinOp) \
                else [op.node.operand]
            names = [s.id for s in sides if isinstance(s, gast.Name)]
            unchecked = [n for n in dict.fromkeys(names)
                         if n not in plain and not _settled(kinds.get(n))]
            if target is not None and (not unchecked or any(n in varied for n in names)):
                plain.add(target)
            if not unchecked or not any(n in varied for n in names):
                continue
            plain.update(unchecked)
            if name is None:
                name = normal.namer.fresh("plain_operands")
                parsed.closure[name] = types.CellType(runtime.plain_operands)
            call = gast.Call(func=gast.Name(id=name, ctx=gast.Load(), annotation=None,
                                            type_comment=None),
                             args=[gast.Constant(_SYMBOLS[op.primitive], None)]
                             + [gast.Name(id=n, ctx=gast.Load(), annotation=None,
                                          type_comment=None) for n in unchecked],
                             keywords=[])
            check = gast.Expr(value=call)
            for node in gast.walk(check):
                gast.copy_location(node, stmt)
            block.insert(next(i for i, t in enumerate(block) if t is stmt), check)
            ops[id(check)] = Op(OpKind.NONDIFF, label="plain_operands",
                                primitive=runtime.plain_operands, node=call)
