"""Call adjoints: the adjoint of a call of a user function, a
``custom_vjp``, a function known only when the primal runs, and the
refusal of an operation with no rule.

A user function's adjoint is called with the residuals its primal left
(``f_grads = f_adjoint(t_res, t_bar)``) and its gradients go to the
arguments; at a compact call site the residuals hold the callee's adjoint
itself (``f_adjoint, f_saved = t_res[0], t_res[1]``).  A function value goes
through the dispatcher's ``dynamic_adjoint``::

>>> import numpy as np, pullback as pb
>>> from pullback.testing import function_from_source
>>> f = function_from_source('''
... def f(x):
...     return g(x) + 1.0
...
... def g(x):
...     return x * x
... ''')
>>> print(pb.source(f, 2.0).split("def f_adjoint")[1])
(residuals, out_bar):
    g_x_res, x = residuals
    # line 2: return g(x) + 1.0
    g_adjoint, g_saved = (g_x_res[0], g_x_res[1])
    g_grads = g_adjoint(g_saved, out_bar)
    x_bar = g_grads[0]
    return (x_bar if type(x_bar) is float else project(x_bar, x),)
<BLANKLINE>
"""
from __future__ import annotations

import operator
import types

import gast

from ..driver import dispatch
from .. import runtime
from ..analyses.callable_facts import dotted, is_library
from ..analyses.ops import OpKind
from ..ir.build import assign as _assign, call as _call, name as _name
from ..errors import NoRuleError, NonDifferentiableError, UnsupportedSyntaxError
from ..rules.numpy_ufunc_methods import refusal_hint


class CallAdjoints:
    """The part of ``adjoints.Adjoints`` for calls: reads the reverse pass's
    context ``self.ctx``."""

    def adjoint_user(self, out, stmt, op, t, g, fresh=True):
        """``t = f(x, y)``: ``f_grads = f_adjoint(t_res, t_bar)``, one gradient
        per parameter of ``f``; at a compact call site (``ctx.compact_callee``)
        ``f_adjoint, f_saved = t_res[0], t_res[1]`` and ``f_grads = f_adjoint(f_saved,
        t_bar)``,
        one per active argument."""
        from ..callees import derivative_of
        params = list(derivative_of(op.primitive).params)
        grads = self.ctx.namer.fresh(f"{getattr(op.primitive, '__name__', 'callee')}_grads")
        res = self.ctx.residual_of[id(stmt)]
        if self.ctx.compact_callee(op):
            place = self.ctx.callee_mask(op).index     # parameter -> its gradient's place
            # (named where it is read: `f_adjoint, f_saved = t_res`, then a plain call)
            name = getattr(op.primitive, '__name__', 'callee')
            adjoint, saved = (self.ctx.namer.fresh(f"{name}_{k}") for k in ("adjoint", "saved"))
            out.append(gast.Assign(targets=[gast.Tuple(
                elts=[_name(adjoint, True), _name(saved, True)], ctx=gast.Store())],
                value=gast.Tuple(elts=[_at(res, 0), _at(res, 1)], ctx=gast.Load()),
                type_comment=None))
            call = _call(adjoint, _name(saved), g)
        else:
            place = int
            call = _call(self.ctx.callee(op, "adjoint"), _name(res), g)
        out.append(_assign(grads, call))
        for p, name in op.operands:
            if name in self.ctx.active:
                self.ctx.grads.add(out, name, _at(grads, place(params.index(p))), fresh=fresh)

    def adjoint_custom(self, out, stmt, op, t, g):
        # a user's bwd may hand back what it was given; fused kernels say they don't
        self.adjoint_user(out, stmt, op, t, g,
                          fresh=getattr(op.primitive, "fresh_cotangents", False))

    def adjoint_dynamic(self, out, stmt, op, t, g):
        """``t = fn(x)`` with ``fn`` known only at run time: the dispatcher's
        adjoint returns one cotangent per active argument."""
        where = self.ctx.parsed.location(op.node if op.node is not None else stmt)
        why = dispatch.refusal(op.primitive) if op.primitive is not None else None
        if why is not None:
            raise NonDifferentiableError(why[0], where, why[1])
        receiver = op.bound["receiver"]
        if receiver is not None and receiver.id in self.ctx.active \
                and self.ctx.kind(receiver.id).is_number:
            self.adjoint_opaque(out, stmt, op, t, g)      # an array method with no rule
        callee = op.bound["callee"]
        if isinstance(callee, gast.Name) and callee.id in self.ctx.active:
            self.check_function_value(callee.id, where)
        grads = self.ctx.namer.fresh(f"{dotted(callee, '_', 'callee')}_grads")
        out.append(_assign(grads, _call(self.ctx.helper("dynamic_adjoint",
                                                      runtime.dynamic_adjoint),
                                          _name(self.ctx.residual_of[id(stmt)]), g)))
        names = dict(op.operands)
        for i, k in enumerate(self.ctx.dynamic_mask(op)):
            item = gast.Subscript(value=_name(grads), slice=gast.Constant(i, None),
                                  ctx=gast.Load())
            self.ctx.grads.add(out, names[k], item, fresh=False)

    def check_function_value(self, name, where):
        """A function value built here from the inputs by an operation with
        no rule would carry a gradient pullback cannot follow: refused now.
        ``partial(f, x)`` and a nested function or lambda capturing them
        (``nested_value``) carry the gradients of what they hold, and what a
        call returned (``model = build(params)``, ``Dense(W, b)``), or a value
        taken out of a structure, is left to the dispatcher when it runs: an
        object of the user's class carries its attributes' gradient, a partial
        its held values', a plain function none."""
        seen, work = set(), [name]
        while work:
            n = work.pop()
            if n in seen or n in self.ctx.normal.params:
                continue
            seen.add(n)
            for s in self.ctx.definitions(n):
                op = self.ctx.ops.get(id(s))
                if op is None:
                    continue
                if op.kind is OpKind.OPAQUE:
                    raise NonDifferentiableError(
                        f"The function called here, `{name}`, is built from values being "
                        "differentiated, and pullback cannot send a gradient through a "
                        "function value.", where,
                        "Pass those values to the function as arguments instead (for "
                        "`partial(f, x)(y)`, call `f(x, y)`).")
                if op.kind in (OpKind.COPY, OpKind.FIELD, OpKind.UNPACK, OpKind.PACK) or (
                        op.kind is OpKind.RULE and op.primitive is operator.getitem):
                    work.extend(n2 for _, n2 in op.operands)

    def adjoint_opaque(self, out, stmt, op, t, g):
        what = op.label or "this operation"
        node = op.node if op.node is not None else stmt
        if isinstance(op.primitive, types.FunctionType) and not is_library(op.primitive):
            # a user function whose *args / **kwargs gathered a value being differentiated
            raise UnsupportedSyntaxError(
                f"pullback cannot yet differentiate {what} through its *args or **kwargs "
                "parameter.", self.ctx.parsed.location(node),
                "Give the function named parameters (def f(x, y, ...)) for the values "
                "being differentiated.")
        if isinstance(op.primitive, type) and not is_library(op.primitive):
            name = op.primitive.__name__
            from ..frontend.instances import why_not_followed
            why = why_not_followed(op.primitive)
            raise NonDifferentiableError(
                f"pullback cannot yet send gradients through an instance of your class "
                f"{name} created inside the function from values being differentiated"
                + (f": {why}" if why else "") + ".",
                self.ctx.parsed.location(node),
                f"Store each value with `self.attr = value` at the top level of __init__, "
                f"or create the {name} outside and pass it in as an argument (a dataclass or "
                f"a namedtuple: the gradient has its fields), or pass those values to its "
                f"methods as arguments.")
        if what.endswith("[...]"):
            hint = ("Build the array with np.concatenate, np.stack or np.column_stack, "
                    "which have rules.")
        elif refusal_hint(op.primitive):       # np.subtract.reduce, np.add.reduceat...
            hint = refusal_hint(op.primitive)
        elif op.primitive is vars:
            hint = ("pullback reads an object that carries a gradient by attribute: write "
                    "`obj.w` (or `vars(obj)[\"w\"]`, `getattr(obj, \"w\")` with a constant "
                    "name), not the dictionary of all its attributes.")
        elif op.primitive is None:
            hint = ("Call a NumPy function, a function defined with def, or a "
                    "pb.custom_vjp function here.")
        else:
            hint = (f"Give {what} a rule with pb.custom_vjp (define fwd and bwd), or "
                    "compute this value with NumPy functions that have rules.")
        raise NoRuleError(f"pullback has no differentiation rule for {what}.",
                          self.ctx.parsed.location(node), hint)


def _at(seq, k):
    """``seq[k]`` of a name and a constant."""
    return gast.Subscript(value=_name(seq), slice=gast.Constant(k, None), ctx=gast.Load())
