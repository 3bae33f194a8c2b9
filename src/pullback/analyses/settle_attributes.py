"""Settle ``s.T``, ``s.sum()`` of a receiver the kinds do not prove an array.

``analyses.op_resolver`` matches ``s.T`` to the array's rule whatever ``s``
is; where the kinds (``analyses.kinds``) do not prove ``s`` a number (an
array or a scalar), the read is decided when it runs: a FIELD op marked
``bound["array"]``, and a method call a DYNAMIC op.

>>> from pullback.testing import function_from_source, analyses
>>> def make(x):
...     return x
>>> f = function_from_source('''
... def f(x):
...     s = make(x)
...     t = s.T
...     return t
... ''', {"make": make})
>>> normal, ops, _, kinds, _ = analyses(f)
>>> t = normal.tree.body[1]
>>> ops[id(t)].kind, ops[id(t)].label
('rule', '.T')
>>> settle_attributes(normal.tree, ops, kinds), ops[id(t)].kind, ops[id(t)].bound
(True, 'field', {'array': 'ndarray.T'})
"""
from __future__ import annotations

import gast

from ..ir.walk import all_statements
from .ops import Op, OpKind

__all__ = ["settle_attributes"]


class _UNKNOWN_KIND:
    is_number = False


def settle_attributes(tree, ops, kinds):
    """``s.T``, ``s.size``, ``s.real`` whose receiver the kinds do not prove
    a number (an array or a scalar): a FIELD op marked ``bound["array"]``,
    decided when it runs (``runtime.attribute_cotangent``,
    ``attribute_tangent``): an array's rule, or the field of a namedtuple,
    dataclass or object that happens to bear an ndarray attribute's name.
    A method call ``m.sum()`` on such a receiver becomes a DYNAMIC op: the
    runtime dispatcher calls the object's own method, or the array's rule.
    Returns whether an op changed (the kinds are then inferred again).

    Before: ``t = s.T`` -> rule ``ndarray.T`` whatever ``s`` is; after, where
    ``s = make(x)`` is of unknown kind: ``Op(FIELD, operands=(("T", "s"),),
    bound={"array": "ndarray.T"})``."""
    changed = False
    for stmt in all_statements(tree.body):
        op = ops.get(id(stmt))
        node = op.node if op is not None else None
        if op is not None and op.kind in (OpKind.RULE, OpKind.NONDIFF) \
                and isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) \
                and isinstance(node.func.value, gast.Name) \
                and op.primitive == f"ndarray.{node.func.attr}" \
                and not (kinds.get(node.func.value.id) or _UNKNOWN_KIND).is_number:
            # `m.sum()` of an object not proven an array: its own method, or the
            # array's, as the runtime dispatcher finds when the call runs
            receiver = node.func.value
            operands = [(i, a.id) for i, a in enumerate(node.args) if isinstance(a, gast.Name)]
            operands += [(k.arg, k.value.id) for k in node.keywords
                         if isinstance(k.value, gast.Name)]
            ops[id(stmt)] = Op(OpKind.DYNAMIC, label=op.label, node=node,
                               bound={"callee": node.func, "receiver": receiver},
                               operands=tuple(operands + [(-1, receiver.id)]))
            changed = True
            continue
        if op is None or op.kind not in (OpKind.RULE, OpKind.NONDIFF) \
                or not isinstance(node, gast.Attribute) or not isinstance(node.value, gast.Name) \
                or op.primitive != f"ndarray.{node.attr}":
            continue
        kind = kinds.get(node.value.id)
        if kind is not None and kind.is_number:
            continue
        ops[id(stmt)] = Op(OpKind.FIELD, label=op.label, node=node,
                           operands=((node.attr, node.value.id),),
                           bound={"array": op.primitive})
        changed = True
    return changed
