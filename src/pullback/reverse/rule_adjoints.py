"""Rule adjoints: the adjoint of a statement whose operation has a rule,
the rule's adjoint inlined.

The rule's statements are instantiated with the call's arguments
(``rules.inline``), each operand's contribution unbroadcast where the
output may be larger than the operand (``may_broadcast``), and added to
its gradient (``t = x[i]`` adds ``g`` into ``x_bar`` at ``i``,
``indexed_in_place``, rather than building a dense array): below, ``b`` is
a scalar multiplying an array, so its contribution is unbroadcast, and
``np.tanh``'s rule is inlined::

>>> import numpy as np, pullback as pb
>>> from pullback.testing import function_from_source
>>> f = function_from_source('''
... def f(x, b):
...     return np.sum(np.tanh(x) * b)
... ''')
>>> print(pb.source(f, np.ones(3), 2.0).split("def f_adjoint")[1])
(residuals, out_bar):
    tanh_x_b, b, tanh_x, x = residuals
    # line 2: return np.sum(np.tanh(x) * b)
    tanh_x_b_bar = unreduce(out_bar, tanh_x_b)
    tanh_x_bar = tanh_x_b_bar * b
    b_bar = unbroadcast(tanh_x_b_bar * tanh_x, b)
    x_bar = tanh_x_bar * (1.0 - tanh_x * tanh_x)
    return (project(x_bar, x), b_bar if type(b_bar) is float else project(b_bar, b))
<BLANKLINE>
"""
from __future__ import annotations

import operator

import gast
import numpy as np

from ..again import transforming_again
from .. import runtime
from ..analyses.kinds import Shape
from ..analyses.ops import OpKind
from ..ir.build import assign as _assign, call as _call, name as _name
from ..errors import NonDifferentiableError
from ..frontend.spelling import spelled
from ..rules.inline import clone, instantiate, parameter_value
from .call_adjoints import _at
from .concatenate_parts import one_part


class RuleAdjoints:
    """The part of ``adjoints.Adjoints`` for operations with a rule: reads
    the reverse pass's context ``self.ctx``."""

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
                  and self.ctx.kind(t).complex is False and self.basic_index(op.bound["b"])
                  and self.ctx.nothing_complex() and (
                      (kind.shape is Shape.ARRAY and kind.dtype == "float64" and self.ctx.float64)
                      or (kind.shape in (Shape.ARRAY, Shape.NUMBER) and kind.dtype is None
                          and self.ctx.typed and self.ctx.all_float64()
                          and not self.may_hold_parts(x.id))))
        self.ctx.grads.add_indexed(out, x.id, index, g, self.ctx.zero_buffer, simple,
                                   clone(op.bound["b"]))
        self.ctx.indexed.add(x.id)
        return True

    def may_hold_parts(self, name):
        """``name`` may be a tuple of parts (``np.frexp(x)``, ``np.unique(x,
        return_counts=True)``, a namedtuple of ``np.unique_counts``), some of
        them integers, which ``name_bar[i] += g`` cannot take: the value of a
        ufunc of several outputs, of a call with a ``return_...`` flag (or
        ``full``...), of a NumPy function that returns a tuple, or of a call
        without a rule."""
        for s in self.ctx.definitions(name):
            op = self.ctx.ops.get(id(s))
            if op is None or op.kind in (OpKind.COPY, OpKind.FIELD, OpKind.SETITEM):
                continue
            prim, node = op.primitive, op.node
            if op.kind is not OpKind.RULE or getattr(prim, "nout", 1) > 1 \
                    or getattr(prim, "__name__", None) in _TUPLE_RESULTS or (
                    isinstance(node, gast.Call) and any(
                        (k.arg or "").startswith("return_") or k.arg in _TUPLE_FLAGS
                        for k in node.keywords)):
                return True
        return False

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


# NumPy functions whose result is a tuple (or a namedtuple) of arrays
_TUPLE_RESULTS = frozenset({
    "unique_all", "unique_counts", "unique_inverse", "histogram", "histogram2d",
    "histogramdd", "meshgrid", "broadcast_arrays", "nonzero", "divmod", "eig", "eigh",
    "svd", "qr", "slogdet", "lstsq", "split", "array_split", "hsplit", "vsplit", "dsplit",
    "gradient", "ix_", "unravel_index", "tril_indices", "triu_indices"})
_TUPLE_FLAGS = ("full", "cov", "retstep", "sparse")     # (polyfit, linspace, indices)


def _is_none(node):
    return isinstance(node, gast.Constant) and node.value is None
