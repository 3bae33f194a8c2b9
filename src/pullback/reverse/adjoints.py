"""Adjoints: the reverse-mode code of each kind of normal-form statement.

``reverse`` walks statements backwards and calls the adjoint that
``ADJOINT_OF`` (``EFFECT_ADJOINT_OF`` for an in-place change) gives for the
``Op`` of each active one (see ``analyses/ops``), with the statement list
``out`` it appends to; what it reads and writes besides is the reverse
pass's context, ``self.ctx`` (``context.ReverseContext``).  Rules are inlined, calls to
user functions become calls of their adjoint, tuples and copies pass their
gradient through, and every contribution goes to ``Gradients.add`` (or
``add_indexed`` for an element read), which decides between in place and out
of place.

>>> import numpy as np, pullback as pb
>>> from pullback.testing import function_from_source
>>> f = function_from_source('''
... def f(x, y):
...     z = x * y
...     return z[0] + y[1]
... ''')
>>> print(pb.source(f, np.ones(2), np.ones(2)).split("def f_adjoint")[1])
(residuals, out_bar):
    y, z, x = residuals
    # line 3: return z[0] + y[1]
    y_bar = owned_zeros(y)
    y_bar[1] += out_bar
    z_bar = owned_zeros(z)
    z_bar[0] += out_bar
    # line 2: z = x * y
    x_bar = unbroadcast(z_bar * y, x)
    y_bar += unbroadcast(z_bar * x, y)
    return (project(x_bar, x), project(y_bar, y))
"""
from __future__ import annotations

import gast
import numpy as np

from ..again import transforming_again
from .. import runtime
from ..analyses.ops import OpKind
from ..ir.build import assign as _assign, call as _call, name as _name
from ..rules.inline import clone
from .accumulate import ZERO
from .call_adjoints import CallAdjoints
from .context import ReverseContext
from .rule_adjoints import RuleAdjoints

__all__ = ["Adjoints", "ADJOINT_OF", "EFFECT_ADJOINT_OF"]


class Adjoints(RuleAdjoints, CallAdjoints):
    """Per-statement adjoints.  Everything they read and write besides their
    own methods is in ``self.ctx`` (``context.ReverseContext``); each appends
    its statements to ``out``.  Those of rule calls are ``RuleAdjoints``'
    (``rule_adjoints``), those of calls of functions ``CallAdjoints``'
    (``call_adjoints``)."""

    def __init__(self, ctx: ReverseContext):
        self.ctx = ctx

    def adjoint_copy(self, out, stmt, op, t, g):
        for _, name in op.operands:
            if name in self.ctx.active:
                self.ctx.grads.add(out, name, g, fresh=False, alias_of=t)

    def adjoint_pack(self, out, stmt, op, t, g):
        for i, name in op.operands:
            if name in self.ctx.active:
                key = clone(i) if isinstance(i, gast.AST) else gast.Constant(i, None)
                item = gast.Subscript(value=g, slice=key, ctx=gast.Load())
                self.ctx.grads.add(out, name, item, fresh=False)

    def adjoint_construct(self, out, stmt, op, t, g):
        """``p = P(w, b)`` for a namedtuple or dataclass: each field's value
        gets the cotangent of that field."""
        for field, name in op.operands:
            if name in self.ctx.active:
                item = _call(self.ctx.runtime("field_cotangent"), g, gast.Constant(field, None))
                self.ctx.grads.add(out, name, item, fresh=False)

    def adjoint_unpack(self, out, stmt, names, src):
        """``a, b = t``: the gradient of ``t`` is built from its parts'."""
        parts = gast.Tuple(elts=[_name(self.ctx.grads.var(n)) if self.ctx.grads.bound(n)
                                 else gast.Constant(None, None) for n in names],
                           ctx=gast.Load())
        packed = _call(self.ctx.runtime("pack_like"), _name(src), parts)
        self.ctx.grads.add(out, src, packed, fresh=True)

    def adjoint_append(self, out, stmt, op):
        """``items.append(v)``: the last element of ``items_bar`` is ``v``'s.
        The appends are undone in reverse order, popping an owned copy; a
        gradient not bound yet is bound to zeros, so that a read of the list
        before this append (``z = hs[1]``, next in the adjoint) adds into a
        buffer as long as the list was then (it got the last item's before)."""
        items = op.mutates
        if items not in self.ctx.active:
            return
        out.extend(self.ctx.grads.make_owned(items, self.ctx.zero_buffer))
        self.ctx.indexed.add(items)
        value = op.operands[0][1] if op.operands else None
        if transforming_again():
            # to be differentiated again: read the last element, then rebind the
            # list without it (forward mode follows no list changed in place)
            var = self.ctx.grads.var(items)
            if value is not None and value in self.ctx.active:
                last = gast.Subscript(value=_name(var), slice=gast.Constant(-1, None),
                                      ctx=gast.Load())
                self.ctx.grads.add(out, value, last, fresh=False)
            out.append(_assign(var, gast.Subscript(
                value=_name(var), slice=gast.Slice(lower=None, upper=gast.Constant(-1, None),
                                                   step=None), ctx=gast.Load()), None))
            return
        pop = gast.Call(func=gast.Attribute(value=_name(self.ctx.grads.var(items)), attr="pop",
                                            ctx=gast.Load()), args=[], keywords=[])
        if value is not None and value in self.ctx.active:
            self.ctx.grads.add(out, value, pop, fresh=False)
        else:
            out.append(gast.Expr(value=pop))

    def adjoint_setitem(self, out, stmt, op):
        """``y[index] = v`` (or ``+=``, ``-=``, ``np.add.at``): ``v`` gets the
        written part of ``y_bar``; a plain write then zeroes that part, since
        the old values it replaced no longer reach the output."""
        y, value, mode = op.mutates, op.bound["value"], op.bound["mode"]
        if y not in self.ctx.active or not self.ctx.grads.bound(y):
            return
        index = self.index_value(op.bound["index"])
        own_value = None
        dtype = getattr(self.ctx.kind(y), "dtype", None)
        if isinstance(value, gast.Name) and value.id in self.ctx.active \
                and not (dtype is not None and np.dtype(dtype).kind in "biu"):
            part = _call(self.ctx.runtime("written_grad"), _name(self.ctx.grads.var(y)), index,
                         _name(value.id))
            if dtype is None:
                # (dtype unknown when transformed: `np.zeros(n, dtype=int)`) a value
                # written into an integer array is cast, and gets no gradient
                part.args.append(_name(y))
            if mode == "add_at":
                part.keywords = [gast.keyword(arg="every", value=gast.Constant(True, None))]
            if mode == "sub":
                part = gast.UnaryOp(op=gast.USub(), operand=part)
            if value.id == y and mode == "set":
                # `y[index] = y`: the old y gets its part after the written part of
                # y_bar is zeroed, not before (where the zeroing would erase it)
                own_value = self.ctx.namer.fresh(f"{y}_written_bar")
                out.append(_assign(own_value, part))
            else:
                self.ctx.grads.add(out, value.id, part, fresh=True)
        if own_value is not None:
            self.zero_written(out, y, index)
            self.ctx.grads.add(out, y, _name(own_value), fresh=True)
        elif mode == "set":
            self.zero_written(out, y, index)

    def zero_written(self, out, y, index):
        """Zero ``y_bar[index]``: the values a write replaced reach nothing."""
        if not self.ctx.grads.inplace:
            zeroed = _call(self.ctx.runtime("zeroed"), _name(self.ctx.grads.var(y)), clone(index))
            self.ctx.grads.state[y] = ZERO      # rebinds: the next line binds it owned
            self.ctx.grads.add(out, y, zeroed, fresh=True)
        else:
            out.extend(self.ctx.grads.make_owned(y, self.ctx.zero_buffer))
            self.ctx.indexed.add(y)
            target = gast.Subscript(value=_name(self.ctx.grads.var(y)), slice=clone(index),
                                    ctx=gast.Store())
            out.append(gast.Assign(targets=[target], value=gast.Constant(0, None),
                                     type_comment=None))

    def adjoint_field(self, out, stmt, op, t, g):
        """``t = p.w`` for a namedtuple or dataclass ``p``: ``g`` goes to the
        ``w`` entry of ``p``'s gradient (a dict until it is projected)."""
        attr, name = op.operands[0]
        if name not in self.ctx.active:
            return
        if "array" in op.bound:
            # `s.T` where `s` may be an array or an object with a field `T`: decided
            # when it runs, by what `s` is
            self.ctx.grads.add(out, name, _call(self.ctx.helper(
                "attribute_cotangent", runtime.attribute_cotangent), g, _name(name),
                gast.Constant(attr, None)), fresh=True)
            return
        if self.ctx.kind(name).is_number:
            self.adjoint_opaque(out, stmt, op, t, g)
        self.ctx.grads.add_indexed(out, name, gast.Constant(attr, None), g, self.ctx.zero_buffer,
                               simple=False)
        self.ctx.indexed.add(name)

    def adjoint_nondiff(self, out, stmt, op, t, g):
        pass  # no gradient flows through comparisons, shapes, argmax...


# the adjoint of a statement that binds a name, by the kind of its op:
# (Adjoints, out, stmt, op, target, its gradient)
ADJOINT_OF = {
    OpKind.RULE: Adjoints.adjoint_rule, OpKind.NONDIFF: Adjoints.adjoint_nondiff,
    OpKind.USER: Adjoints.adjoint_user, OpKind.CUSTOM: Adjoints.adjoint_custom,
    OpKind.DYNAMIC: Adjoints.adjoint_dynamic, OpKind.COPY: Adjoints.adjoint_copy,
    OpKind.PACK: Adjoints.adjoint_pack, OpKind.CONSTRUCT: Adjoints.adjoint_construct,
    OpKind.FIELD: Adjoints.adjoint_field,
    OpKind.OPAQUE: Adjoints.adjoint_opaque,
}
# the adjoint of a statement that changes a local in place: (Adjoints, out, stmt, op)
EFFECT_ADJOINT_OF = {OpKind.APPEND: Adjoints.adjoint_append,
                     OpKind.SETITEM: Adjoints.adjoint_setitem}
