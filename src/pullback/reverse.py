"""Reverse: build the primal and the adjoint of a normal-form function.

The primal is the normal form itself, returning its value and the residuals
the adjoint reads.  The adjoint walks the statements backwards; for each
active one it inlines the rule of its operation, and it accumulates every
contribution into the gradient of the name it belongs to: the first binds
``x_bar``, later ones add.  Whether a gradient buffer is *owned* (allocated
here, shared with nothing) is tracked on the way, and decides whether the
returned gradient must be copied::

    def f(x, w):                     def f_adjoint(residuals, out_bar):
        xw = x @ w                       x, w, y = residuals
        y = np.tanh(xw)                  y_y_bar = unreduce(out_bar, y_y)
        y_y = y * y            ->        y_bar = y_y_bar * y
        out = np.sum(y_y)                y_bar = y_bar + y_y_bar * y
        return out                       xw_bar = y_bar * (1 - y * y)
                                         ...
"""
from __future__ import annotations

import dataclasses

import gast

from . import runtime
from .analyses.ops import Op  # noqa: F401  (documented type of `ops`)
from .errors import NoRuleError
from .inline import instantiate

__all__ = ["Derived", "differentiate"]


@dataclasses.dataclass
class Derived:
    primal: gast.FunctionDef
    adjoint: gast.FunctionDef
    helpers: dict            # name used in the generated code -> value
    wrt: tuple               # parameters whose gradients the adjoint returns


def differentiate(normal, parsed, ops, kinds, active, wrt, output):
    """Build the primal and adjoint of ``normal``.

    ``output`` is the atom whose cotangent the adjoint receives (the returned
    value, or its first element under ``has_aux``).
    """
    return _Reverse(normal, parsed, ops, kinds, active, wrt, output).run()


def _name(id_, store=False):
    return gast.Name(id=id_, ctx=gast.Store() if store else gast.Load(), annotation=None,
                     type_comment=None)


def _call(func, *args):
    return gast.Call(func=_name(func), args=list(args), keywords=[])


def _assign(target, value, lineno):
    stmt = gast.Assign(targets=[target if not isinstance(target, str) else _name(target, True)],
                       value=value, type_comment=None)
    stmt.lineno = lineno
    return stmt


class _Reverse:
    def __init__(self, normal, parsed, ops, kinds, active, wrt, output):
        self.normal, self.parsed, self.ops = normal, parsed, ops
        self.kinds, self.active, self.wrt, self.output = kinds, active, tuple(wrt), output
        self.namer = normal.namer
        self.helpers = {}
        self.bar = {}           # primal name -> name of its gradient variable
        self.owned = {}         # gradient variable -> allocated here and unshared
        self.adjoint = []       # statements, last primal statement's first
        self.residual_of = {}   # call target -> name of its callee residuals
        self.may_be_complex = any(k.complex is not False for k in kinds.values())

    # -- helpers bound in the generated code ---------------------------------

    def helper(self, name, value):
        """The name under which generated code refers to ``value``."""
        if self.helpers.get(name) is value:
            return name
        if self.parsed.globals.get(name) is value and name not in self.helpers:
            return name        # the user's module already binds it, e.g. np
        for used, v in self.helpers.items():
            if v is value and used.startswith(name):
                return used
        fresh = self.namer.fresh(name)
        self.helpers[fresh] = value
        return fresh

    def runtime(self, fn_name):
        return self.helper(fn_name, getattr(runtime, fn_name))

    # -- the two functions --------------------------------------------------

    def run(self):
        body = self.normal.tree.body
        self.out_bar = self.namer.fresh("out_bar")
        self.residuals = self.namer.fresh("residuals")
        if isinstance(self.output, gast.Name) and self.output.id in self.active:
            self.bar[self.output.id] = self.out_bar
            self.owned[self.out_bar] = False
        primal = [self.primal_stmt(s) for s in body]
        for stmt in reversed(body):
            self.adjoint_stmt(stmt)
        adjoint = list(self.adjoint)
        adjoint.append(self.final_return())
        residuals = self.residual_names(adjoint)
        ret = primal[-1]
        ret.value = gast.Tuple(elts=[ret.value, gast.Tuple(
            elts=[_name(r) for r in residuals], ctx=gast.Load())], ctx=gast.Load())
        if residuals:
            unpack = _assign(gast.Tuple(elts=[_name(r, True) for r in residuals],
                                        ctx=gast.Store()), _name(self.residuals), None)
            adjoint.insert(0, unpack)
        fn = self.normal.tree
        primal_fn = gast.FunctionDef(name=self.namer.fresh(f"{fn.name}_primal"), args=fn.args,
                                     body=primal, decorator_list=[], returns=None,
                                     type_comment=None, type_params=[])
        args = gast.arguments(args=[_name(self.residuals, False), _name(self.out_bar, False)],
                              posonlyargs=[], vararg=None, kwonlyargs=[], kw_defaults=[],
                              kwarg=None, defaults=[])
        for a in args.args:
            a.ctx = gast.Param()
        adjoint_fn = gast.FunctionDef(name=self.namer.fresh(f"{fn.name}_adjoint"), args=args,
                                      body=adjoint, decorator_list=[], returns=None,
                                      type_comment=None, type_params=[])
        return Derived(primal_fn, adjoint_fn, self.helpers, self.wrt)

    def residual_names(self, adjoint):
        primal_names = set(self.normal.params) | set(self.kinds) | set(
            self.residual_of.values())
        seen = []
        for stmt in adjoint:
            for n in gast.walk(stmt):
                if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load) \
                        and n.id in primal_names and n.id not in seen:
                    seen.append(n.id)
        return seen

    def final_return(self):
        elts = []
        for p in self.wrt:
            if p in self.bar:
                g = self.bar[p]
                call = _call(self.runtime("project"), _name(g), _name(p))
                if not self.owned.get(g, False):
                    call.keywords = [gast.keyword(arg="copy", value=gast.Constant(True, None))]
                elts.append(call)
            else:
                elts.append(_call(self.runtime("zeros_like"), _name(p)))
        ret = gast.Return(value=gast.Tuple(elts=elts, ctx=gast.Load()))
        ret.lineno = None
        return ret

    # -- primal ---------------------------------------------------------------

    def primal_stmt(self, stmt):
        op = self.ops[id(stmt)]
        if op.kind in ("user", "custom") and isinstance(stmt, gast.Assign) \
                and stmt.targets[0].id in self.active:
            target = stmt.targets[0].id
            res = self.namer.fresh(f"{target}_res")
            self.residual_of[target] = res
            call = stmt.value
            call.func = _name(self.callee(op, "primal"))
            new = _assign(gast.Tuple(elts=[_name(target, True), _name(res, True)],
                                     ctx=gast.Store()), call, stmt.lineno)
            return new
        return stmt

    def callee(self, op, which):
        """The name of the callee's primal or adjoint, for this call site's
        active arguments."""
        from .api import derivative_of  # late: api imports the pipeline
        handle = derivative_of(op.primitive)
        params = list(handle.params)
        mask = tuple(sorted(params.index(p) for p, n in op.operands if n in self.active))
        primal, adjoint = handle.for_callers(mask)
        name = getattr(op.primitive, "__name__", "callee")
        return self.helper(f"{name}_{which}", primal if which == "primal" else adjoint)

    # -- adjoint --------------------------------------------------------------

    def emit(self, stmt, lineno):
        stmt.lineno = lineno
        self.adjoint.append(stmt)

    def adjoint_stmt(self, stmt):
        if not isinstance(stmt, gast.Assign):
            return
        target = stmt.targets[0]
        op = self.ops[id(stmt)]
        block = []
        if isinstance(target, gast.Tuple):
            names = [e.id for e in target.elts]
            if not any(n in self.bar for n in names) or op.names() - self.active:
                return
            parts = gast.Tuple(elts=[_name(self.bar[n]) if n in self.bar
                                     else gast.Constant(None, None) for n in names],
                               ctx=gast.Load())
            src = stmt.value.id
            self.accumulate(block, src, _call(self.runtime("pack_like"), _name(src), parts),
                            fresh=True)
        else:
            t = target.id
            if t not in self.bar or t not in self.active:
                return
            g = self.bar[t]
            if self.may_be_complex and self.kinds.get(t) is not None \
                    and self.kinds[t].complex is False:
                block.append(_assign(g, _call(self.runtime("realify"), _name(g), _name(t)), None))
            getattr(self, f"adjoint_{op.kind}")(block, stmt, op, t, _name(g))
        for s in block:
            self.emit(s, stmt.lineno)

    def adjoint_copy(self, block, stmt, op, t, g):
        for _, name in op.operands:
            if name in self.active:
                self.accumulate(block, name, g, fresh=False)

    def adjoint_pack(self, block, stmt, op, t, g):
        for i, name in op.operands:
            if name in self.active:
                key = _copy(i) if isinstance(i, gast.AST) else gast.Constant(i, None)
                item = gast.Subscript(value=g, slice=key, ctx=gast.Load())
                self.accumulate(block, name, item, fresh=False)

    def adjoint_rule(self, block, stmt, op, t, g):
        rule = op.rule
        wanted = [p for p, name in op.operands if name in self.active]
        if not wanted:
            return
        subst = {"g": g, "ans": _name(t)}
        for p in rule.params:
            if p in op.bound:
                v = op.bound[p]
                subst[p] = gast.Tuple(elts=list(v), ctx=gast.Load()) if isinstance(v, tuple) \
                    else v
            else:
                default = rule.signature.parameters[p].default
                subst[p] = gast.Constant(value=default, kind=None) \
                    if _is_literal(default) else gast.Constant(value=None, kind=None)
        stmts, exprs = instantiate(rule, subst, sorted(set(wanted)), self.namer, self.helper)
        block.extend(stmts)
        for p, name in op.operands:
            if name not in self.active:
                continue
            expr = _copy(exprs[p])
            if rule.broadcasts and not (self.kinds.get(name, _NONE).shape == "scalar"
                                        and self.kinds.get(t, _NONE).shape == "scalar"):
                expr = _call(self.runtime("unbroadcast"), expr, _name(name))
            self.accumulate(block, name, expr, fresh=_is_fresh(expr))

    def adjoint_user(self, block, stmt, op, t, g, fresh=True):
        from .api import derivative_of
        params = list(derivative_of(op.primitive).params)
        grads = self.namer.fresh(f"{getattr(op.primitive, '__name__', 'callee')}_grads")
        call = _call(self.callee(op, "adjoint"), _name(self.residual_of[t]), g)
        block.append(_assign(grads, call, None))
        for p, name in op.operands:
            if name in self.active:
                item = gast.Subscript(value=_name(grads), slice=gast.Constant(params.index(p),
                                                                              None),
                                      ctx=gast.Load())
                self.accumulate(block, name, item, fresh=fresh)

    def adjoint_custom(self, block, stmt, op, t, g):
        self.adjoint_user(block, stmt, op, t, g, fresh=False)

    def adjoint_unpack(self, block, stmt, op, t, g):
        raise AssertionError("unpacking is handled by adjoint_stmt")

    def adjoint_nondiff(self, block, stmt, op, t, g):
        pass  # no gradient flows through comparisons, shapes, argmax...

    def adjoint_opaque(self, block, stmt, op, t, g):
        what = op.label or "this operation"
        node = op.node if op.node is not None else stmt
        if op.primitive is None:
            hint = ("Call a NumPy function, a function defined with def, or a "
                    "pb.custom_vjp function here.")
        else:
            hint = (f"Give {what} a rule with pb.custom_vjp (define fwd and bwd), or "
                    "compute this value with NumPy functions that have rules.")
        raise NoRuleError(f"pullback has no differentiation rule for {what}.",
                          self.parsed.location(node), hint)

    # -- accumulation ---------------------------------------------------------

    def accumulate(self, block, name, expr, fresh):
        """Add ``expr`` to the gradient of ``name`` (binding it if first)."""
        lineno = None
        if isinstance(expr, gast.Name) and expr.id in self.owned:
            self.owned[expr.id] = False      # two gradient names now share it
        if name not in self.bar:
            bar = self.namer.fresh(f"{name}_bar")
            self.bar[name] = bar
            self.owned[bar] = fresh
            block.append(_assign(bar, expr, lineno))
            return
        bar = self.bar[name]
        kind = self.kinds.get(name, _NONE)
        if kind.is_number:
            total = gast.BinOp(left=_name(bar), op=gast.Add(), right=expr)
        else:
            total = _call(self.runtime("add_cotangents"), _name(bar), expr)
        self.owned[bar] = True
        block.append(_assign(bar, total, lineno))


class _NoneKind:
    shape = "unknown"
    complex = None
    is_number = False


_NONE = _NoneKind()


def _is_literal(v):
    if isinstance(v, (tuple, list)):
        return all(_is_literal(e) for e in v)
    return v is None or isinstance(v, (bool, int, float, complex, str))


def _is_fresh(expr):
    """Whether ``expr`` certainly evaluates to a new object (not an alias)."""
    if isinstance(expr, (gast.BinOp, gast.UnaryOp)):
        return True
    if isinstance(expr, gast.Call) and isinstance(expr.func, gast.Name) \
            and expr.func.id.startswith(("unbroadcast", "realify")) and expr.args:
        return _is_fresh(expr.args[0])
    return False


def _copy(node):
    import copy
    return copy.deepcopy(node)

