"""Ops: what each normal-form statement computes, resolved once.

Each right-hand side is matched to what will differentiate it: a registered
rule (with the call's arguments bound to the rule's parameters), a
non-differentiable primitive, a user function (its own primal/adjoint pair),
a ``custom_vjp`` function, or one of the structural operations (copy, pack a
tuple, unpack one).  Callees are looked up in the function's closure, its
globals and the builtins, as Python would at the time of the transform.

>>> from pullback.testing import function_from_source, analyses
>>> f = function_from_source('''
... def f(x, y):
...     e = np.exp(x)
...     s = x.shape
...     t = (e, y)
...     return t
... ''')
>>> normal, ops, *_ = analyses(f)
>>> [(ops[id(s)].kind, ops[id(s)].label) for s in normal.tree.body[:3]]
[('rule', 'np.exp'), ('nondiff', '.shape'), ('pack', '')]

``analyses.op_resolver.resolve`` matches each statement to its op; what a
callee is (library code, a structure's constructor, a class of the user's)
is ``analyses.callable_facts``; ``s.T`` of a receiver not proven an array is
settled by ``analyses.settle_attributes``.
"""
from __future__ import annotations

import dataclasses
import enum

import gast

from ..ir.walk import all_statements
from ..rules.registry import Rule

__all__ = ["Op", "OpKind", "all_statements"]


class OpKind(str, enum.Enum):
    """What differentiates a statement.  A ``str`` whose value is the kind's
    name, so that ``op.kind == "rule"`` still holds."""
    RULE = "rule"            # a registered rule
    NONDIFF = "nondiff"      # a primitive without a derivative (``x.shape``)
    USER = "user"            # a user function: its own primal/adjoint pair
    CUSTOM = "custom"        # a ``custom_vjp`` function or a lowered kernel
    DYNAMIC = "dynamic"      # a callee known only at run time
    COPY = "copy"            # ``y = x``
    PACK = "pack"            # ``t = (a, b)``, ``d = {"k": a}``
    CONSTRUCT = "construct"  # ``P(w, b=b)`` of a namedtuple or a plain dataclass
    UNPACK = "unpack"        # ``a, b = t``
    FIELD = "field"          # ``p.w`` of a structure
    OPAQUE = "opaque"        # nothing known: refused if a gradient reaches it
    SETITEM = "setitem"      # ``y[i] = v``, ``y[i] += v``, ``np.add.at``
    APPEND = "append"        # ``xs.append(v)``
    MAPPED = "mapped"        # an ``np.vectorize`` call fused into a kernel

    __str__, __repr__ = str.__str__, str.__repr__     # prints as its string, as before


@dataclasses.dataclass
class Op:
    kind: OpKind
    label: str = ""
    rule: Rule | None = None
    primitive: object = None
    bound: dict[str, object] = dataclasses.field(default_factory=dict)   # param -> atom
    operands: tuple[tuple[object, str], ...] = ()   # (param, name) pairs that carry a gradient
    node: gast.AST | None = None    # the right-hand side, for error messages
    mutates: str | None = None      # the local list an `append` adds to
    effect: bool = False            # a store that carries no gradient (analyses/item_stores)

    def __post_init__(self):
        self.kind = OpKind(self.kind)    # (a string names the same kind)

    def names(self):
        """Names a gradient could flow to, including those a rule takes as
        static (so that a varied ``axis`` or ``base`` is caught, not dropped)."""
        names = {n for _, n in self.operands}
        callee = self.bound.get("callee") if self.kind is OpKind.DYNAMIC else None
        if isinstance(callee, gast.Name):
            names.add(callee.id)      # a function value derived from the inputs
        if self.rule is not None:
            for p in self.bound:
                names.update(self.static_names(p))
        return names

    def static_names(self, param):
        """The names bound to ``param`` (one, or a rule's ``*args`` or
        ``**kwargs``).  Names inside an index (``x[i, j]``) are not among them:
        an array's index carries no gradient (a float index is an error)."""
        v = self.bound[param]
        v = tuple(v.values()) if isinstance(v, dict) else v
        return [a.id for a in (v if isinstance(v, tuple) else (v,))
                if isinstance(a, gast.Name)]
