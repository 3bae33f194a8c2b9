"""Tangents of rule calls: forward mode's statement ``y = prim(x, ...)`` ->
``y_dot = ...``, by the rule's declared forward rule (``forward.rules.how``):

- ``linear``: the call itself on the tangents (``np.sum(x_dot, axis=0)``);
- ``multilinear``: one call per active argument, its tangent in its place
  (``x_dot @ w + x @ w_dot``);
- ``inline``/``elementwise``: the forward rule's body (or the reverse rule
  read forwards), inlined with the call's own names, one term per active
  argument.

The pass (``forward.tangents``) owns one ``RuleTangents`` and hands it the
statements whose operation is a rule; it reads the pass through
``self.fwd`` (names, kinds, activity, helpers, the shared refusals).

Before, a statement; after, with its tangent (``np.tanh``'s reverse rule
``g * (1 - ans * ans)`` read forwards, ``@`` multilinear)::

    y = np.tanh(x @ w)          xw = x @ w
                                xw_dot = x_dot @ w + x @ w_dot
                                y = np.tanh(xw)
                                y_dot = xw_dot * (1.0 - y * y)
"""
from __future__ import annotations

import operator

import gast
import numpy as np

from ..errors import NonDifferentiableError, UnsupportedSyntaxError
from ..ir.build import call as _call, name as _name, sum_of as _sum
from ..rules.inline import instantiate, parameter_value
from .rules import ELEMENTWISE, complex_exception, how

__all__ = ["RuleTangents"]


def _dtype_kind(dtype):
    """NumPy's kind letter of a kind's dtype (``"f"``), or None when not known."""
    try:
        return np.dtype(dtype).kind if dtype is not None else None
    except TypeError:
        return None


class _RuleView:
    """What ``inline.instantiate`` reads of a rule: its function, name and
    differentiable parameters (a forward rule has its reverse rule's)."""

    def __init__(self, fn, rule):
        self.fn, self.name, self.diff = fn, fn.__name__, rule.diff


class RuleTangents:
    """The tangent expressions of rule calls, for the pass ``fwd``."""

    def __init__(self, fwd):
        self.fwd = fwd


    def tangent_rule(self, stmt, op, t):
        checks = self.static_checks(op)
        got = self.tangent_of_rule(stmt, op, t)
        if not checks:
            return got
        pre, expr = got if isinstance(got, tuple) else ([], got)
        return checks + pre, expr

    def static_checks(self, op):
        """Reverse mode's refusal of a varied name passed where the rule takes
        no gradient (``axis``), but for a name read from a structure passed in
        (a residual: forward over reverse gives a helper's adjoint's residuals,
        its ``axis`` among them, a tangent), whose kind is not known to be
        inexact: its value is checked when it runs (``check_static``), an
        integer carrying no tangent."""
        rule, later = op.rule, []
        for p in rule.params:
            if p in rule.diff or p in rule.discrete or p not in op.bound:
                continue
            for v in op.static_names(p):
                if v not in self.fwd.varied:
                    continue
                sort = _dtype_kind(self.fwd.kind(v).dtype)
                if sort in ("f", "c") or not self.read_from_a_structure(v):
                    self.fwd.adjoints.check_static_arguments(op)    # raises, saying where
                if sort not in ("b", "i", "u"):
                    later.append(gast.Expr(value=_call(
                        self.fwd.support("check_static"), _name(v), gast.Constant(p, None),
                        gast.Constant(op.label or rule.name, None))))
        return later

    def read_from_a_structure(self, name, seen=()):
        """``name`` is only ever unpacked from a name (``k, axis = residuals``),
        an item of one (``residuals[2]``) or a tuple of such names
        (``(r, c)``)."""
        defs = self.fwd.definitions(name)

        def read(s):
            if not isinstance(s, gast.Assign):
                return False
            v = s.value
            if isinstance(s.targets[0], gast.Tuple) and isinstance(v, gast.Name):
                return True
            if isinstance(v, gast.Subscript) and isinstance(v.value, gast.Name):
                return True
            return isinstance(v, (gast.Tuple, gast.List)) and all(
                isinstance(e, gast.Constant) or isinstance(e, gast.Name) and (
                    e.id not in self.fwd.varied
                    or e.id not in seen and self.read_from_a_structure(e.id, seen + (name,)))
                for e in v.elts)
        return bool(defs) and all(read(s) for s in defs)

    def tangent_of_rule(self, stmt, op, t):
        active = [(p, n) for p, n in op.operands if n in self.fwd.active]
        if not active:
            return None
        if op.primitive in (operator.add, operator.mul) and any(
                self.fwd.kind(n).shape == "container" for _, n in op.operands):
            raise UnsupportedSyntaxError(
                "pullback cannot differentiate joining or repeating lists and tuples with "
                "`+` or `*`.", self.fwd.parsed.location(op.node),
                "Join arrays with np.concatenate or np.stack instead.")
        kind, fn = how(op.rule, op.primitive, op)
        if kind is None:
            raise NonDifferentiableError(
                f"forward mode has no rule for {op.label or op.rule.name} yet.",
                self.fwd.parsed.location(op.node if op.node is not None else stmt),
                "Use pb.vjp (or pb.grad) for this function, or give this step a forward "
                "rule with pb.custom_jvp.")
        if kind == "linear":
            return self.linear(stmt, op)
        if kind == "multilinear":
            return self.multilinear(stmt, op, t)
        return self.inlined(stmt, op, t, fn, elementwise=kind == ELEMENTWISE)

    def replaced(self, stmt, mapping):
        """The statement's right-hand side with the atoms in ``mapping`` (by
        identity) replaced."""
        def rec(node):
            if id(node) in mapping:
                return mapping[id(node)]
            if isinstance(node, list):
                return [rec(n) for n in node]
            if not isinstance(node, gast.AST):
                return node
            return type(node)(**{f: rec(getattr(node, f, None)) for f in node._fields})
        return rec(stmt.value)

    def diff_atoms(self, op):
        """(param, atom) for every atom bound to a differentiable parameter."""
        out = []
        for p in op.rule.diff:
            v = op.bound.get(p)
            for a in (v if isinstance(v, tuple) else (v,)):
                if a is not None:
                    out.append((p, a))
        return out

    def linear(self, stmt, op):
        mapping = {}
        for _, a in self.diff_atoms(op):
            mapping[id(a)] = self.fwd.tangent_or_zero(a)
        return self.replaced(stmt, mapping)

    def multilinear(self, stmt, op, t):
        terms = []
        for _, a in self.diff_atoms(op):
            d = self.fwd.tangent_of(a)
            if d is not None:
                terms.append(self.replaced(stmt, {id(a): d}))
        return _sum(terms)

    def inlined(self, stmt, op, t, fn, elementwise):
        rule = op.rule
        pre = []
        if elementwise and complex_exception(op.primitive):
            for _, n in op.operands:
                if n not in self.fwd.active:
                    continue
                c = self.fwd.kind(n).complex
                if c is True:
                    raise NonDifferentiableError(
                        f"forward mode has no rule for {op.label} of a complex value yet "
                        "(its derivative is not complex-linear).",
                        self.fwd.parsed.location(op.node),
                        "Use pb.vjp for this function, or write it with the real and "
                        "imaginary parts (np.real, np.imag).")
                if c is None:
                    pre.append(gast.Expr(value=_call(self.fwd.support("check_real"), _name(n),
                                                     gast.Constant(op.label, None))))
        view = _RuleView(fn, rule)
        seen, terms = {}, []
        for p, name in op.operands:
            j = seen[p] = seen.get(p, -1) + 1
            if name not in self.fwd.active:
                continue
            d = _name(self.fwd.dot(name))
            if elementwise and rule.broadcasts and self.may_broadcast(op, p, t):
                d = _call(self.fwd.support("broadcast_tangent"), d, _name(t))
            subst = {"g": d, "t": d, "ans": _name(t)}
            for q in rule.params:
                subst[q] = parameter_value(rule, q, op.bound, self.fwd.index_value)
            stmts, exprs = instantiate(view, subst, [p], self.fwd.namer, self.fwd.helper)
            pre.extend(stmts)
            expr = exprs[p]
            if isinstance(op.bound.get(p), tuple):     # one of the rule's *args
                k = [i for i, a in enumerate(op.bound[p]) if isinstance(a, gast.Name)][j]
                expr = gast.Subscript(value=expr, slice=gast.Constant(k, None), ctx=gast.Load())
            terms.append(expr)
        # a term has the output's shape: a tangent that may be smaller than the
        # output was broadcast to it before entering the rule
        if len(terms) > 1 and not elementwise:
            # the result may be a structure (lstsq(a, b)'s four results, which
            # the kinds analysis does not tell apart): summed entry by entry
            return pre, _call(self.fwd.support("add_tangents"), *terms)
        return pre, _sum(terms)

    def may_broadcast(self, op, param, t):
        return self.fwd.adjoints.may_broadcast(op, param, t)
