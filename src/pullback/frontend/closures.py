"""Closures: nested functions and lambdas become top-level functions that
take what they capture as arguments (lambda lifting), passed by keyword.

A nested ``def g`` (or ``g = lambda ...``) that reads locals of the enclosing
function is lifted to a function of its own whose extra parameters are those
locals; each call passes their values at the time of the call, which is
Python's late binding.  A ``nonlocal`` variable the nested function assigns
is passed in and returned, and the call site assigns it back, so state
threads through the calls in order (``sum(map(step, xs))`` with a running
total works).  The lifted function is differentiated like any other callee,
so captured values get their gradients.  A nested function used as a value
(passed on, stored, returned) becomes ``nested_value(lifted, y=y)``, a
partial holding what it captures at that point, whose cotangent is a dict of
their cotangents (``runtime.function_values``, ``driver.dispatch``).  That
agrees with Python's late binding unless a captured variable can be
assigned again while the value lives on (a later statement, or a loop
around it, assigns it): refused, as is a nested function whose name is also
bound in another branch or to another value::

>>> from pullback.testing import function_from_source, lifted
>>> print(lifted(function_from_source('''
... def f(x, y):
...     g = lambda z: z ** 2 + y[0]
...     return g(x)
... ''')))
def f(x, y):
    return g_lifted(x, y=y)
<BLANKLINE>
def g_lifted(z, y):
    return z ** 2 + y[0]
"""
from __future__ import annotations

import types

import gast

from ..backend import codegen
from ..ir.build import name as _name
from ..ir.naming import Namer
from ..rules.registry import nondifferentiable
from ..runtime import control
from .nested_attributes import nested_attribute, original_code
from ..analyses.callable_facts import static_value
from .constant_reads import constant_read
from .parse import Parsed
from .statement_order import statement_order as _statement_order

__all__ = ["lift_closures"]


def lift_closures(fn: gast.FunctionDef, namer: Namer,
                  parsed: Parsed) -> list[tuple[str, gast.FunctionDef]]:
    """Lift the nested functions of ``fn`` (a gast FunctionDef, changed in
    place); each lifted function is bound in ``parsed.closure``.  Returns the
    list of lifted (name, gast FunctionDef)."""
    lifter = _Lifter(fn, namer, parsed)
    fn.body = lifter.block(fn.body)
    return lifter.lifted


class _Lifter:
    def __init__(self, fn, namer, parsed):
        self.fn, self.namer, self.parsed = fn, namer, parsed
        self.outer_locals = {a.id for a in fn.args.args} | {
            n.id for n in gast.walk(fn) if isinstance(n, gast.Name)
            and isinstance(n.ctx, gast.Store)}
        self.nested = {}     # local name -> (lifted name, captured, nonlocals)
        self.lifted = []
        self.value_helper = self.expire_helper = None
        self.pre_target, self.post_target = [], []
        self.order, self.stores, self.binds = _statement_order(fn)
        self.statement = None    # the outer statement being rewritten

    # -- finding nested functions ---------------------------------------------

    def block(self, stmts):
        out = []
        for stmt in stmts:
            if isinstance(stmt, gast.FunctionDef):
                self.check_one_binding(stmt.name, stmt)
                for s in self.lift(stmt.name, stmt):
                    out.extend(_rewrite_calls(self, s, self.block))
                continue
            if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 \
                    and isinstance(stmt.targets[0], gast.Name) \
                    and isinstance(stmt.value, gast.Lambda):
                self.check_one_binding(stmt.targets[0].id, stmt)
                for s in self.lift(stmt.targets[0].id,
                                   _as_def(stmt.targets[0].id, stmt.value)):
                    out.extend(_rewrite_calls(self, s, self.block))
                continue
            out.extend(_rewrite_calls(self, stmt, self.block))
        return out

    def lift(self, name, node):
        """Lift the nested ``node`` bound to ``name``; returns the statements
        that take its place: the defaults, evaluated where the ``def`` runs (as
        Python does), into names each call that omits them passes on."""
        if node.decorator_list:
            raise self.parsed.unsupported(node, "a decorated nested function",
                                          "Define it at module level.")
        params = [a.id for a in node.args.args]
        nonlocals = [n for s in gast.walk(node) if isinstance(s, gast.Nonlocal)
                     for n in s.names]
        body = [s for s in node.body if not isinstance(s, gast.Nonlocal)]
        called = {n.id for s in body for n in gast.walk(s)
                  if isinstance(n, gast.Name) and n.id in self.nested}
        for inner in sorted(called):      # state threaded through a nested call
            nonlocals += [v for v in self.nested[inner].nonlocals if v not in nonlocals]
        previous = self.nested.pop(name, None)    # a call inside is to this new def
        statement = self.statement, self.pre_target, self.post_target
        outer = self.outer_locals
        # a function nested in this one captures this one's parameters and locals
        # too (`mk = lambda a: (lambda v: a * v)`)
        self.outer_locals = outer | set(params) | {
            n.id for s in body for n in gast.walk(s)
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
        try:
            body = _InnerCalls(self).block(body)
        finally:
            self.outer_locals = outer
            self.statement, self.pre_target, self.post_target = statement
            if previous is not None:
                self.nested[name] = previous
        local = params + [k.id for k in node.args.kwonlyargs] + [
            v.id for v in (node.args.vararg, node.args.kwarg) if v is not None] + [
            n.id for s in body for n in gast.walk(s)
                          if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)]
        captured = sorted({n.id for s in body for n in gast.walk(s)
                           if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)
                           and n.id in self.outer_locals and n.id not in local}
                          - set(nonlocals))
        captured = captured + nonlocals
        lifted_name = self.namer.fresh(f"{name}_lifted" if name != "<lambda>" else "lifted")
        if nonlocals:
            body = _ReturnState(nonlocals).block(body)
            body.append(gast.Return(value=_state(gast.Constant(None, None), nonlocals)))
        a = node.args
        # constant defaults stay the lifted function's own (a call through `*args`
        # or a function value then fills them as Python does); one computed where
        # the `def` runs goes in by keyword at each call
        own = list(a.defaults) if a.defaults and all(
            isinstance(d, gast.Constant) for d in a.defaults) else []
        if a.vararg or a.kwarg or a.kwonlyargs or own:
            # *args / **kwargs: what it captures follows as keyword-only parameters
            local = self.outer_locals | {n.id for n in gast.walk(self.fn.args)
                                         if isinstance(n, gast.Name)}
            for d in a.kw_defaults:
                if d is not None and not isinstance(d, gast.Constant) \
                        and constant_read(d, self.parsed, local) is None:
                    raise self.parsed.unsupported(
                        d, "a keyword-only default computed in a nested function",
                        "Use a constant default (a number, or a module's function such as "
                        "np.tanh), or compute the value inside the function.")
            args = gast.arguments(
                args=[_name(p, gast.Param()) for p in params], posonlyargs=[],
                vararg=a.vararg, kwarg=a.kwarg,
                kwonlyargs=list(a.kwonlyargs) + [_name(c, gast.Param()) for c in captured],
                kw_defaults=list(a.kw_defaults) + [None] * len(captured), defaults=own)
        else:
            args = gast.arguments(
                args=[_name(p, gast.Param()) for p in params + captured],
                posonlyargs=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                defaults=[])
        at_def, defaults = [], []
        for p, d in zip(params[len(params) - len(node.args.defaults):],
                        [] if own else node.args.defaults):
            if isinstance(d, gast.Constant):
                defaults.append((p, d))
                continue
            value = self.namer.fresh(f"{name}_{p}_default")
            at_def.append(gast.copy_location(gast.Assign(
                targets=[_name(value, gast.Store())], value=d, type_comment=None), d))
            defaults.append((p, value))
        self.nested[name] = _Nested(lifted_name, captured, nonlocals, params, defaults, node)
        cell = self.parsed.closure[lifted_name] = types.CellType()
        if any(isinstance(n, gast.Name) and n.id == name for s in body for n in gast.walk(s)):
            # a recursive nested function: its calls of itself pass on what it captures
            if at_def:
                raise self.parsed.unsupported(
                    node, f"a recursive nested function (`{name}`) with a default computed "
                          "where it is defined", "Use a constant default, or pass the value "
                          "explicitly.")
            body = _InnerCalls(self).block(body)
            self.statement, self.pre_target, self.post_target = statement
        new = gast.FunctionDef(name=lifted_name, args=args, body=body, decorator_list=[],
                               returns=None, type_comment=None, type_params=[])
        gast.copy_location(new, node)
        self.lifted.append((lifted_name, new))
        cell.cell_contents = self.compile(new)
        # (for messages: which of its parameters hold what it captures)
        cell.cell_contents.__pullback_captured__ = (name, tuple(captured))
        # (the user's code for it: its own nested functions' code objects are in it)
        cell.cell_contents.__pullback_code__ = original_code(self.parsed, node)
        return at_def

    def as_value(self, name, node):
        """The nested function ``name`` used as a value (passed on, stored):
        its lifted function, or ``nested_value(lifted, y=y)`` holding what it
        captures (``runtime.control.nested_value``, a partial whose held
        values get the gradient of the function value)."""
        nested = self.nested[name]
        if nested.nonlocals:
            raise self.parsed.unsupported(
                node, f"the nested function `{name}`, which changes `nonlocal` state, used "
                      "as a value", f"Call `{name}` directly, or return the new state from it.")
        value = _name(nested.lifted)
        if not nested.captured and not nested.defaults:
            return gast.copy_location(value, node)
        rebound = self.late_binding(name, nested, node)
        if self.value_helper is None:
            self.value_helper = self.namer.fresh("nested_value")
            self.parsed.closure[self.value_helper] = types.CellType(control.nested_value)
        # defaults go in by keyword too (the lifted function has none of its own)
        defaults = [gast.keyword(arg=p, value=gast.Constant(v.value, None)
                                 if isinstance(v, gast.Constant) else _name(v))
                    for p, v in nested.defaults]
        call = gast.copy_location(gast.Call(
            func=_name(self.value_helper), args=[value],
            keywords=defaults + [gast.keyword(arg=c, value=_name(c)) for c in nested.captured]),
            node)
        if rebound is None:
            return call
        # made before the statement, and refused once it has run (runtime.control)
        var, line = rebound
        held = self.namer.fresh(f"{name}_value")
        self.pre_target.append(gast.copy_location(gast.Assign(
            targets=[_name(held, gast.Store())], value=call, type_comment=None), node))
        if self.expire_helper is None:
            self.expire_helper = self.namer.fresh("expire_value")
            self.parsed.closure[self.expire_helper] = types.CellType(control.expire_value)
        what = "a lambda" if name.startswith("lambda") else f"the nested function `{name}`"
        self.post_target.append(gast.copy_location(gast.Expr(value=gast.Call(
            func=_name(self.expire_helper), args=[_name(held)] + [
                gast.Constant(v, None) for v in (what, var, line)], keywords=[])), node))
        return gast.copy_location(_name(held), node)

    def check_one_binding(self, name, node):
        """A nested function's name is bound in one block only: calls after
        it go to the one lifted function pullback knows, which is the one
        Python calls unless another branch (or another block) binds the name
        to something else."""
        binds = self.binds.get(name, ())
        if len({b for b, _, _ in binds}) > 1 or not all(f for _, _, f in binds):
            other = next((line for _, line, f in binds if line != node.lineno or not f), "?")
            raise self.parsed.unsupported(
                node, f"the nested function `{name}` whose name is also bound to another "
                      f"value or in another branch or block (line {other}): pullback cannot "
                      "tell which one a later use reads",
                "Give each definition a name of its own, or call it in the branch that "
                "defines it.")

    def late_binding(self, name, nested, node):
        """The value made here holds what ``name`` captures as it is now; Python's
        closure reads each variable when it is called.  The two agree unless
        a captured variable can be assigned again while the value lives on: a
        statement after this one, or one in a loop around it, assigns it
        (a value returned outlives nothing).  Then, in a simple statement,
        the value lives for that statement only: ``(variable, line)`` of the
        assignment, and a call of it after the statement is refused when it
        runs (``control.expire_value``); elsewhere refused now.  None: the
        value is exact however long it lives."""
        stmt = self.statement
        if stmt is None or isinstance(stmt, gast.Return) or id(stmt) not in self.order:
            return None
        at, loops = self.order[id(stmt)]
        what = "a lambda" if name.startswith("lambda") else f"the nested function `{name}`"
        for c in nested.captured:
            for where, store_loops, line in self.stores.get(c, ()):
                if where > at or set(loops) & set(store_loops):
                    if isinstance(stmt, (gast.Assign, gast.AugAssign, gast.AnnAssign,
                                         gast.Expr)):
                        return c, line
                    raise self.parsed.unsupported(
                        node, f"{what} used as a value while `{c}`, "
                              f"which it reads, is assigned again later (line {line}): "
                              "Python's closure would read the "
                              "new value when it is called",
                        f"Pass `{c}` to it as an argument, or bind the value it should "
                        f"read as a default where it is defined (`lambda z, {c}={c}: ...`).")

    def compile(self, tree):
        """A Python function for the lifted tree, its source in linecache
        (blank lines keep the user's line numbers)."""
        text = codegen.unparse(tree)
        first = tree.lineno
        # one file per outer function and line: two functions of a module may each
        # lift a `try_body` (a shared name gave one the other's source)
        outer = getattr(self.parsed.fn, "__qualname__", "?")
        filename = f"<pullback: {tree.name} lifted from {self.parsed.filename} ({outer}, " \
                   f"line {first})>"
        source = "\n" * (first - 1) + text + "\n"
        codegen.register_source(filename, source)
        free = sorted(set(self.parsed.closure) & {
            n.id for n in gast.walk(tree) if isinstance(n, gast.Name)})
        factory = f"def __pullback_lift__({', '.join(free)}):\n" + "".join(
            "    " + line + "\n" for line in text.splitlines()) + f"    return {tree.name}\n"
        code = compile("\n" * (first - 2) + factory if first > 1 else factory, filename, "exec")
        make = next(c for c in code.co_consts if isinstance(c, types.CodeType))
        inner = next(c for c in make.co_consts if isinstance(c, types.CodeType))
        cells = tuple(self.parsed.closure[v] for v in inner.co_freevars)
        defaults = tuple(d.value for d in tree.args.defaults) or None     # (constants)
        fn = types.FunctionType(inner, self.parsed.globals, tree.name, defaults, cells)
        kwdefaults = {a.id: d.value if isinstance(d, gast.Constant) else static_value(
            d, self.parsed) for a, d in zip(tree.args.kwonlyargs, tree.args.kw_defaults)
            if d is not None}         # a constant, or a module constant (act=np.tanh)
        fn.__kwdefaults__ = kwdefaults or None
        fn.__pullback_lifted_source__ = source
        return fn


class _Nested:
    """A lifted nested function: its new name, the outer names it captures
    (passed by keyword), its ``nonlocal`` state, its own parameters, for
    each defaulted one the constant or the name holding its default, and
    the user's ``def`` (``origin``)."""

    def __init__(self, lifted, captured, nonlocals, params, defaults, origin=None):
        self.lifted, self.captured, self.nonlocals = lifted, captured, nonlocals
        self.params, self.defaults, self.origin = params, defaults, origin


class _Calls(gast.NodeTransformer):
    """Rewrite calls of nested functions in one statement of the outer body."""

    def __init__(self, lifter, pre):
        self.lifter, self.pre = lifter, pre

    def visit_Lambda(self, node):
        name = self.lifter.namer.fresh("lambda")
        self.pre.extend(self.lifter.lift(name, _as_def(name, node)))
        return self.lifter.as_value(name, node)

    def visit_Call(self, node):
        if isinstance(node.func, gast.Lambda):
            name = self.lifter.namer.fresh("lambda")
            self.pre.extend(self.lifter.lift(name, _as_def(name, node.func)))
            node.func = gast.Name(id=name, ctx=gast.Load(), annotation=None, type_comment=None)
        func = node.func
        if not (isinstance(func, gast.Name) and func.id in self.lifter.nested):
            return self.generic_visit(node)
        node.args = [self.visit(a) for a in node.args]
        for k in node.keywords:
            k.value = self.visit(k.value)
        nested = self.lifter.nested[func.id]
        lifted, captured, nonlocals = nested.lifted, nested.captured, nested.nonlocals
        if nested.defaults and (any(isinstance(a, gast.Starred) for a in node.args)
                                or any(k.arg is None for k in node.keywords)):
            # which parameters `*args` / `**kwargs` give is known only when the call
            # runs, and the lifted function takes its defaults by keyword
            raise self.lifter.parsed.unsupported(
                node, f"a call of the nested function `{func.id}`, which has defaults, with "
                      "`*args` or `**kwargs`", f"Define `{func.id}` at module level, or pass "
                      "its defaulted parameters explicitly.")
        given = set(nested.params[:len(node.args)]) | {k.arg for k in node.keywords}
        omitted = [gast.keyword(arg=p, value=gast.Constant(v.value, None)
                                if isinstance(v, gast.Constant) else _name(v))
                   for p, v in nested.defaults if p not in given]
        call = gast.Call(func=_name(lifted), args=node.args, keywords=node.keywords + omitted
                         + [gast.keyword(arg=c, value=_name(c)) for c in captured])
        call = gast.copy_location(call, node)
        if not nonlocals:
            return call
        result = self.lifter.namer.fresh(f"{func.id}_result")
        self.pre.append(gast.copy_location(gast.Assign(
            targets=[gast.Tuple(elts=[_name(result, gast.Store())] +
                                [_name(n, gast.Store()) for n in nonlocals],
                                ctx=gast.Store())], value=call, type_comment=None), node))
        return _name(result)

    def visit_Attribute(self, node):
        """``inner.__code__``: Python's (``frontend.nested_attributes``)."""
        if isinstance(node.value, gast.Name) and node.value.id in self.lifter.nested:
            return nested_attribute(self.lifter, node, self.lifter.nested[node.value.id])
        return self.generic_visit(node)

    def visit_Name(self, node):
        if isinstance(node.ctx, gast.Load) and node.id in self.lifter.nested:
            return self.lifter.as_value(node.id, node)
        return node


class _InnerCalls:
    """Inside a lifted function: calls of earlier nested functions."""

    def __init__(self, lifter):
        self.lifter = lifter

    def block(self, stmts):
        out = []
        for stmt in stmts:
            out.extend(_rewrite_calls(self.lifter, stmt, self.block))
        return out


def _rewrite_calls(lifter, stmt, block):
    """One statement with its calls of nested functions rewritten, preceded by
    the assignments they need; nested blocks go through ``block``."""
    pre, post = [], []
    calls = _Calls(lifter, pre)
    lifter.statement = stmt if block == lifter.block else None
    lifter.pre_target, lifter.post_target = pre, post
    if isinstance(stmt, (gast.If, gast.While)):
        stmt.test = calls.visit(stmt.test)
    elif isinstance(stmt, gast.For):
        stmt.iter = calls.visit(stmt.iter)
    else:
        stmt = calls.visit(stmt)
    for field in ("body", "orelse"):
        if getattr(stmt, field, None):
            setattr(stmt, field, block(getattr(stmt, field)))
    return pre + [stmt] + post


class _ReturnState:
    """``return v`` -> ``return (v, n1, n2)`` for the nonlocal names."""

    def __init__(self, names):
        self.names = names

    def block(self, stmts):
        for stmt in stmts:
            for node in gast.walk(stmt):
                if isinstance(node, gast.Return):
                    value = node.value or gast.Constant(None, None)
                    node.value = _state(value, self.names)
        return stmts


def _state(value, names):
    return gast.Tuple(elts=[value] + [_name(n) for n in names], ctx=gast.Load())


def _as_def(name, lam):
    ret = gast.copy_location(gast.Return(value=lam.body), lam.body)
    fn = gast.FunctionDef(name=name, args=lam.args, body=[ret], decorator_list=[],
                          returns=None, type_comment=None, type_params=[])
    fn.pullback_lambda = True           # (its code object is named `<lambda>`)
    return gast.copy_location(fn, lam)


nondifferentiable(control.expire_value)
