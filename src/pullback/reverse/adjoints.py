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

import operator
import types

import gast
import numpy as np

from ..again import transforming_again
from ..driver import dispatch
from .. import runtime
from ..analyses.kinds import Shape
from ..analyses.callable_facts import dotted, is_library
from ..analyses.ops import OpKind
from ..ir.build import assign as _assign, call as _call, name as _name
from ..errors import NoRuleError, NonDifferentiableError, UnsupportedSyntaxError
from ..frontend.spelling import spelled
from ..rules.inline import clone, instantiate, parameter_value
from ..rules.numpy_ufunc_methods import refusal_hint
from .accumulate import ZERO
from .concatenate_parts import one_part
from .context import ReverseContext

__all__ = ["Adjoints", "ADJOINT_OF", "EFFECT_ADJOINT_OF"]


class Adjoints:
    """Per-statement adjoints.  Everything they read and write besides their
    own methods is in ``self.ctx`` (``context.ReverseContext``); each appends
    its statements to ``out``."""

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

    def adjoint_rule(self, out, stmt, op, t, g):
        rule = op.rule
        self.check_static_arguments(op)
        wanted = [p for p, name in op.operands if name in self.ctx.active]
        if not wanted:
            return
        if op.primitive is operator.getitem and self.indexed_in_place(out, op, t, g):
            return
        kinds = [self.ctx.kind(n) for _, n in op.operands]
        if isinstance(op.node, gast.BinOp) and not any(k.is_number for k in kinds) and (
                (op.primitive is operator.add and not any(
                    isinstance(c, gast.Constant) and isinstance(c.value, (float, complex))
                    for c in (op.node.left, op.node.right)))
                or (op.primitive is operator.mul
                    and any(k.shape is Shape.CONTAINER for k in kinds))):
            # lists or tuples joined (`shape + (k,)`) or repeated (`[v] * n`), or numbers
            # of unknown kind: told apart when the adjoint runs
            self.adjoint_join(out, op, g)
            return
        subst = {"g": g, "ans": _name(t)}
        for p in rule.params:
            subst[p] = parameter_value(rule, p, op.bound, self.index_value)
        stmts, exprs = instantiate(rule, subst, sorted(set(wanted)), self.ctx.namer, self.ctx.helper)
        out.extend(stmts)
        seen = {}
        for p, name in op.operands:
            j = seen[p] = seen.get(p, -1) + 1
            if name not in self.ctx.active:
                continue
            expr = one_part(self.ctx, op, exprs[p]) or clone(exprs[p])
            if isinstance(op.bound.get(p), tuple):     # one of the rule's *args
                k = [i for i, a in enumerate(op.bound[p]) if isinstance(a, gast.Name)][j]
                expr = gast.Subscript(value=expr, slice=gast.Constant(k, None), ctx=gast.Load())
            shaped = False
            if rule.broadcasts and self.may_broadcast(op, p, t):
                expr = _call(self.ctx.runtime("unbroadcast"), expr, _name(name))
            else:
                # an array operand of an array result where nothing broadcasts:
                # its contribution has the result's shape, which is its own
                shaped = rule.broadcasts and self.ctx.kind(t).shape is Shape.ARRAY \
                    and self.ctx.kind(name).shape is Shape.ARRAY
            self.ctx.grads.add(out, name, expr, fresh=self.is_fresh(expr), shaped=shaped)

    def indexed_in_place(self, out, op, t, g):
        """``t = x[index]``: add ``g`` into ``x_bar`` at ``index``."""
        x = op.bound.get("a")
        if not isinstance(x, gast.Name) or x.id not in self.ctx.active:
            return False
        kind = self.ctx.kind(x.id)
        if kind.shape is Shape.CONTAINER and transforming_again():
            return False        # (forward mode follows no list changed in place)
        index = self.index_value(op.bound["b"])
        # (an array read with a slice: a number the kinds cannot tell from a
        # scalar is an array; its dtype float64 when every array is)
        # a list's item, `hs[t]`: its one entry of `hs_bar` replaced in place
        # (`index_add`), O(1), not a list as long as `hs` (`unindex`) per read
        simple = (kind.shape is not Shape.CONTAINER and kind.complex is False
                  and self.ctx.kind(t).complex is False and self.basic_index(op.bound["b"]) and (
                      (kind.shape is Shape.ARRAY and kind.dtype == "float64" and self.ctx.float64)
                      or (kind.shape in (Shape.ARRAY, Shape.NUMBER) and kind.dtype is None
                          and self.ctx.typed and self.ctx.all_float64())))
        self.ctx.grads.add_indexed(out, x.id, index, g, self.ctx.zero_buffer, simple,
                                   clone(op.bound["b"]))
        self.ctx.indexed.add(x.id)
        return True

    def basic_index(self, node):
        """An index NumPy treats as basic (no repeats): ints, slices, None."""
        if isinstance(node, gast.Slice):
            return all(p is None or self.is_int(p) for p in (node.lower, node.upper, node.step))
        if isinstance(node, gast.Tuple):
            return all(self.basic_index(e) for e in node.elts)
        return self.is_int(node) or (isinstance(node, gast.Constant) and node.value is None)

    def is_int(self, node):
        if isinstance(node, gast.Constant):
            return isinstance(node.value, int) and not isinstance(node.value, bool)
        return isinstance(node, gast.Name) and node.id in self.ctx.int_names

    def index_value(self, node):
        """An index as a value: ``x[:, :1]``'s index is ``(slice(None), slice(None, 1))``."""
        if isinstance(node, gast.Slice):
            parts = [p if p is not None else gast.Constant(None, None)
                     for p in (node.lower, node.upper, node.step)]
            # drop trailing Nones, but `slice(a)` is `:a`, so `a:` keeps its upper None
            while len(parts) > 1 and isinstance(parts[-1], gast.Constant) \
                    and parts[-1].value is None \
                    and (len(parts) == 3 or _is_none(parts[0])):
                parts.pop()
            return _call(self.ctx.helper("slice", slice), *parts)
        if isinstance(node, gast.Tuple):
            return gast.Tuple(elts=[self.index_value(e) for e in node.elts], ctx=gast.Load())
        return node

    def may_broadcast(self, op, param, t):
        """Whether the output of a broadcasting rule may be larger than the
        argument bound to ``param`` (no, when every other argument, the
        condition of np.where included, is a scalar or has its shape
        (``ctx.same_shape``), or the output is a scalar)."""
        if self.ctx.kind(t).shape is Shape.SCALAR:
            return False
        mine = op.bound.get(param)
        same = getattr(self.ctx, "same_shape", None)    # (the forward pass has no facts)
        for p, v in op.bound.items():
            if p == param or (isinstance(v, gast.Name) and isinstance(mine, gast.Name)
                              and v.id == mine.id):
                continue
            if isinstance(v, gast.Name):
                shape = self.ctx.kind(v.id).shape
            elif isinstance(v, gast.Constant) and isinstance(v.value, (int, float, complex)):
                shape = Shape.SCALAR
            else:
                shape = Shape.UNKNOWN
            if shape is not Shape.SCALAR and not (
                    same is not None and isinstance(v, gast.Name)
                    and isinstance(mine, gast.Name) and same(v.id, mine.id)):
                return True
        return False

    def check_static_arguments(self, op):
        """A value that depends on the inputs, passed where the rule takes no
        gradient (``axis``, ``math.log``'s ``base``), would lose its gradient."""
        for p in op.rule.params:
            if p in op.rule.diff or p in op.rule.discrete or p not in op.bound:
                continue
            for v in op.static_names(p):
                if v in self.ctx.varied:
                    v = spelled(self.ctx.parsed, op.node, v, p, op.rule.bind)
                    raise NonDifferentiableError(
                        f"The `{p}` argument of {op.label} carries no gradient, but {v} "
                        "depends on the inputs being differentiated.",
                        self.ctx.parsed.location(op.node),
                        f"Pass a constant as `{p}`, or rewrite the expression so that "
                        f"{v} enters through a differentiable argument"
                        + (" (a loop `for k in d` over a dict reads it by position: loop "
                           "over d.items() or d.keys())." if op.primitive is operator.getitem
                           else "."))

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

    def adjoint_join(self, out, op, g):
        """``x + y`` or ``x * y`` where ``x`` or ``y`` may be a list or a tuple."""
        node = op.node
        helper = "join_grads" if op.primitive is operator.add else "repeat_grads"
        grads = self.ctx.namer.fresh(helper.replace("_grads", "") + "_parts")
        out.append(_assign(grads, _call(self.ctx.runtime(helper), g, clone(node.left),
                                          clone(node.right))))
        for i, side in enumerate((node.left, node.right)):
            if isinstance(side, gast.Name) and side.id in self.ctx.active:
                self.ctx.grads.add(out, side.id, _at(grads, i), fresh=False)

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

    def is_fresh(self, expr):
        """Whether ``expr`` certainly evaluates to a new object that nothing else
        refers to.  When unsure the answer is no: an out-of-place path is always
        correct."""
        if isinstance(expr, (gast.BinOp, gast.UnaryOp)):
            return True
        if not isinstance(expr, gast.Call):
            return False
        fn = self.ctx.resolve(expr.func)
        if fn in _PASS_FIRST:
            return bool(expr.args) and self.is_fresh(expr.args[0])
        return isinstance(fn, np.ufunc) or fn in runtime.FRESH or fn in _FRESH_NUMPY


from ..rules.registry import OWNED as _FRESH_NUMPY  # noqa: E402  (declared beside each rule: facts)
_PASS_FIRST = {runtime.unbroadcast, runtime.realify}


def _is_none(node):
    return isinstance(node, gast.Constant) and node.value is None



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


def _at(seq, k):
    """``seq[k]`` of a name and a constant."""
    return gast.Subscript(value=_name(seq), slice=gast.Constant(k, None), ctx=gast.Load())

