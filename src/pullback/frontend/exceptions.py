"""Exceptions and context managers: ``try`` and ``with`` statements become
plain statements, before desugar.

A ``try`` runs its body as a nested function under
``runtime.control.attempt``, which returns ``(kind, (value, outputs))``:
kind 0 when the body ran to its end, 1 when it returned ``value``, 3 or 4
when it left the loop around the ``try`` (``break``, ``continue``), with
what it assigned; or ``(2, error)`` when an exception left it.  The path taken is then a branch,
as for an ``if``: the body's call is differentiated as a call (the
dispatcher sends nothing back through a body an exception left), and the
handlers (in order, by ``isinstance``; none matching raises the error
again), ``else`` and ``finally`` run as ordinary statements in Python's
order.  A ``finally`` with handlers is a ``try/finally`` around the
``try/except``::

>>> from pullback.testing import function_from_source, blocks_lowered
>>> print(blocks_lowered(function_from_source('''
... def f(x):
...     try:
...         y = 1.0 / x
...     except ZeroDivisionError:
...         y = 0.0
...     finally:
...         log.append(1)
...     return y
... ''')))
def f(x):
<BLANKLINE>
    def try_body_1(x):
        y = None
<BLANKLINE>
        def try_body(x):
            y = 1.0 / x
            return (0, (None, (y,)))
        tried = attempt(try_body, x)
        if tried[0] == 2:
            if isinstance(tried[1], ZeroDivisionError):
                y = 0.0
            else:
                raise tried[1]
        else:
            y, = tried[1][1]
            if tried[0] == 1:
                return (1, (tried[1][0], (y,)))
        return (0, (None, (y,)))
    tried_1 = attempt(try_body_1, x)
    if tried_1[0] != 2:
        y, = tried_1[1][1]
    log.append(1)
    if tried_1[0] == 2:
        raise tried_1[1]
    elif tried_1[0] == 1:
        return tried_1[1][0]
    return y

A handler that goes on is exact only where the body's partial work cannot be
seen: a variable the body assigns is read after the ``try`` only if every
handler assigns it first, and the body changes no value made before it
(``x[i] = v``, ``x += v`` on an array, ``.append``); otherwise the ``try`` is
refused (``try_names`` holds these checks and the facts they read).  On a
path an exception leaves the function by, the handlers and
``finally`` see the values from before the ``try`` for what the body
assigns (no gradient is taken on that path).  ``with cm as v:`` becomes ``v = context_enter(cm)``, the body,
``context_exit(cm)``; a context a ``return`` or an exception skips is left
when the function ends (``callees.Derivative.call_primal``).  ``np.errstate``
settings also hold while the block's adjoint runs; another context manager's
``__enter__`` gives a value with no gradient, so its expression may not read
the function's variables when it binds one, and one that swallows an
exception is refused when that happens.
"""
from __future__ import annotations

import types

import gast

from ..ir.build import name as _name
from ..rules.registry import nondifferentiable
from ..runtime import control
from ..runtime.checked_calls import entered_value
from ..ir.naming import Namer
from .parse import Parsed
from .try_names import (EVERY_NAME, bound_names, check_partial_work, in_loop, raising,
                        reads_before_bound, surely_bound, walk_here)

__all__ = ["lower_blocks"]


def lower_blocks(fn: gast.FunctionDef, namer: Namer, parsed: Parsed) -> gast.FunctionDef:
    """Rewrite the ``try`` and ``with`` statements of ``fn`` (a gast
    FunctionDef, changed in place) as plain statements; return it."""
    lowering = _Blocks(namer, parsed, fn)
    fn.body = lowering.block(fn.body)
    return fn


class _Blocks:
    def __init__(self, namer, parsed, fn):
        self.namer, self.parsed = namer, parsed
        self.helpers = {}
        self.generated = set()      # the names this pass makes (body functions, outcomes)
        self.locals = {a.id for a in fn.args.args} | {
            n.id for n in gast.walk(fn) if isinstance(n, gast.Name)
            and isinstance(n.ctx, (gast.Store, gast.Del))}
        self.outer_reads = [n for n in gast.walk(fn) if isinstance(n, gast.Name)
                            and isinstance(n.ctx, gast.Load)]

    def block(self, stmts):
        out = []
        for stmt in stmts:
            if isinstance(stmt, gast.Try):
                out.extend(self.block(self.attempt_block(stmt)))
            elif isinstance(stmt, gast.With):
                out.extend(self.block(self.with_block(stmt)))
            elif isinstance(stmt, (gast.FunctionDef, gast.ClassDef)):
                out.append(stmt)
            else:
                for field in ("body", "orelse"):
                    if getattr(stmt, field, None):
                        setattr(stmt, field, self.block(getattr(stmt, field)))
                out.append(stmt)
        return out

    def helper(self, name, fn):
        """A name the function's code can call ``fn`` by."""
        if name not in self.helpers:
            self.helpers[name] = self.namer.fresh(name)
            self.parsed.closure[self.helpers[name]] = types.CellType(fn)
        return self.helpers[name]

    # -- try: the body as a function, the path taken as a branch ------------------------

    def attempt_block(self, stmt):
        """Any other ``try``: the body as a nested function run by ``attempt``,
        then a branch on what happened (the module docstring)."""
        if stmt.finalbody and (stmt.handlers or stmt.orelse):
            inner = gast.copy_location(gast.Try(body=stmt.body, handlers=stmt.handlers,
                                                orelse=stmt.orelse, finalbody=[]), stmt)
            stmt = gast.copy_location(gast.Try(body=[inner], handlers=[], orelse=[],
                                               finalbody=stmt.finalbody), stmt)
        body = self.block(stmt.body)      # an inner try first: its own function
        final = self.block(stmt.finalbody)
        for s in final:
            for n in walk_here(s):
                if isinstance(n, gast.Return) or (isinstance(n, (gast.Break, gast.Continue))
                                                   and not in_loop(s, n)):
                    raise self.parsed.unsupported(
                        n, f"`{_keyword(n)}` in a `finally` clause",
                        "Leave the `finally` clause by its end; return after the `try`.")
        assigned = bound_names(body)
        if any(not raising(h) for h in stmt.handlers):
            check_partial_work(self.parsed, stmt, body, assigned, self.outer_reads)
        # inputs: what the body reads, and what it may leave unassigned
        reads = set()
        reads_before_bound(body, set(), reads, self.generated)
        sure = surely_bound(body)
        sure = set(assigned) if sure is EVERY_NAME else sure
        # outputs: what the body binds that is read outside it (or by itself, again)
        inside = {id(n) for s in body for n in gast.walk(s)}
        read_outside = {n.id for n in self.outer_reads if id(n) not in inside} | reads
        outputs = [n for n in assigned if n not in self.generated and n in read_outside]
        params = sorted((reads | (set(outputs) - sure)) & self.locals)
        fname = self.namer.fresh("try_body")
        self.generated.add(fname)
        exits = _Exits(outputs)
        returns = exits.stmts(body)
        done = exits.payload(0, gast.Constant(None, None))
        # a name bound only further on is None where the body leaves early
        unset = [_assign(_name(n, gast.Store()), gast.Constant(None, None))
                 for n in outputs if n not in params] if exits.kinds else []
        fdef = gast.FunctionDef(name=fname, args=_arguments(params),
                                body=unset + returns + [gast.copy_location(done, stmt)],
                                decorator_list=[], returns=None, type_comment=None,
                                type_params=[])
        tried = self.namer.fresh("tried")
        self.generated.add(tried)
        run = gast.Call(func=_name(self.helper("attempt", control.attempt)),
                        args=[_name(fname)] + [_name(p) for p in params], keywords=[])
        out = [fdef, _assign(_name(tried, gast.Store()), run)]

        def kind_is(k):
            return gast.Compare(left=_sub(tried, 0), ops=[gast.Eq()],
                                comparators=[gast.Constant(k, None)])
        reraise = [gast.Raise(exc=_sub(tried, 1), cause=None)]
        caught = reraise
        for h in reversed(stmt.handlers):
            hbody = list(h.body)
            if h.name is not None:
                ename = h.name.id if isinstance(h.name, gast.Name) else h.name
                bound = _name(ename, gast.Store())
                bound.handler_name = True     # Python deletes it when the handler ends
                # the error carries no gradient (control.caught_exception)
                hbody = [_assign(bound, gast.Call(
                    func=_name(self.helper("caught_exception", control.caught_exception)),
                    args=[_name(tried)],
                    keywords=[]))] + hbody
                for s in hbody:
                    for n in gast.walk(s):
                        if isinstance(n, gast.Raise) and n.exc is None:
                            n.exc = _name(ename)
            else:
                for s in hbody:
                    for n in gast.walk(s):
                        if isinstance(n, gast.Raise) and n.exc is None:
                            n.exc = _sub(tried, 1)
            if h.type is None:
                caught = hbody
                continue
            test = gast.Call(func=_name("isinstance"), args=[_sub(tried, 1), h.type],
                             keywords=[])
            caught = [gast.If(test=test, body=hbody, orelse=caught)]
        # (kind, (value, outputs)): what the body returned, and what it assigned
        value = gast.Subscript(value=_sub(tried, 1), slice=gast.Constant(0, None),
                               ctx=gast.Load())
        bind = [_assign(_tuple(outputs, gast.Store()), gast.Subscript(
            value=_sub(tried, 1), slice=gast.Constant(1, None), ctx=gast.Load()))] \
            if outputs else []

        def leave(ran):
            # returned, left a loop (break, continue), ran to its end
            paths = [(1, [gast.Return(value=value)])]
            paths += [(k, [jump()]) for k, jump in ((3, gast.Break), (4, gast.Continue))
                      if k in exits.kinds]
            tail = ran
            for k, then in reversed(paths):
                tail = [gast.If(test=kind_is(k), body=then, orelse=tail)]
            return tail
        if not final:
            out.append(gast.If(test=kind_is(2), body=caught,
                               orelse=bind + leave(stmt.orelse)))
        else:
            # (no handlers here: see above) `finally` sees what the body assigned,
            # then the function raises, returns, leaves the loop or goes on
            if bind:
                out.append(gast.If(test=gast.Compare(left=_sub(tried, 0), ops=[gast.NotEq()],
                                                     comparators=[gast.Constant(2, None)]),
                                   body=bind, orelse=[]))
            out.extend(final)
            out.append(gast.If(test=kind_is(2), body=reraise, orelse=leave([])))
        for s in out:
            for n in gast.walk(s):
                if hasattr(n, "lineno") or isinstance(n, (gast.stmt, gast.expr)):
                    if getattr(n, "lineno", None) is None:
                        gast.copy_location(n, stmt)
        return out

    # -- with ---------------------------------------------------------------------------

    def with_block(self, stmt):
        """``with cm as v: body`` -> ``context = cm``, ``v =
        context_enter(context)``, ``body``, ``context_exit(context)``; a
        context a ``return`` or an exception skips is left when the function
        ends (``runtime.control.close_contexts``)."""
        control.blocks_used = True      # callees' call_primal keeps track from now on
        head, tail = [], []
        for item in stmt.items:
            # built from the function's own values, what `__enter__` returns is
            # checked to hold no number when it runs (it carries no gradient)
            local = [] if item.optional_vars is None or self.errstate(item) else [
                n.id for n in gast.walk(item.context_expr)
                if isinstance(n, gast.Name) and n.id in self.locals]
            cm = self.namer.fresh("context")
            head.append(_assign(_name(cm, gast.Store()), item.context_expr, stmt))
            enter = gast.Call(func=_name(self.helper("entered_value", entered_value) if local
                                         else self.helper("context_enter",
                                                          control.context_enter)),
                              args=[_name(cm)] + ([gast.Constant(", ".join(
                                  f"`{n}`" for n in dict.fromkeys(local)), None)] if local
                                  else []), keywords=[])
            head.append(_assign(item.optional_vars, enter, stmt) if item.optional_vars
                        is not None else gast.copy_location(gast.Expr(value=enter), stmt))
            tail.insert(0, gast.copy_location(gast.Expr(value=gast.Call(
                func=_name(self.helper("context_exit", control.context_exit)),
                args=[_name(cm)], keywords=[])), stmt))
        return head + stmt.body + tail

    def errstate(self, item):
        """Whether the context of ``item`` is ``np.errstate(...)``."""
        from ..analyses.callable_facts import static_value
        import numpy as np
        return isinstance(item.context_expr, gast.Call) \
            and static_value(item.context_expr.func, self.parsed) is np.errstate


nondifferentiable(control.context_enter, control.context_exit, entered_value)


class _Exits(gast.NodeTransformer):
    """In a body run by ``attempt`` (not in the functions it defines):
    ``return v`` -> ``return (1, (v, outputs))``, and a ``break`` or
    ``continue`` of a loop around the ``try`` -> ``return (3, (None,
    outputs))`` or ``(4, ...)``: what the body assigned goes on with it."""

    def __init__(self, outputs):
        self.outputs = outputs
        self.loops = 0
        self.kinds = set()

    def payload(self, kind, value):
        """``return (kind, (value, outputs))``."""
        return gast.Return(value=gast.Tuple(elts=[gast.Constant(kind, None), gast.Tuple(
            elts=[value, _tuple(self.outputs)], ctx=gast.Load())], ctx=gast.Load()))

    def stmts(self, stmts):
        out = []
        for s in stmts:
            s = self.visit(s)
            out.extend(s if isinstance(s, list) else [s])
        return out

    def visit_FunctionDef(self, node):
        return node

    visit_ClassDef = visit_Lambda = visit_FunctionDef

    def visit_For(self, node):
        self.loops += 1
        node.body = self.stmts(node.body)
        self.loops -= 1
        node.orelse = self.stmts(node.orelse)
        return node

    visit_While = visit_For

    def visit_Return(self, node):
        self.kinds.add(1)
        value = node.value if node.value is not None else gast.Constant(None, None)
        return gast.copy_location(self.payload(1, value), node)

    def exit(self, node, kind):
        if self.loops:
            return node
        self.kinds.add(kind)
        return gast.copy_location(self.payload(kind, gast.Constant(None, None)), node)

    def visit_Break(self, node):
        return self.exit(node, 3)

    def visit_Continue(self, node):
        return self.exit(node, 4)


def _keyword(n):
    return {gast.Return: "return", gast.Break: "break", gast.Continue: "continue"}[type(n)]


def _arguments(names):
    return gast.arguments(args=[_name(n, gast.Param()) for n in names], posonlyargs=[],
                          vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])


def _tuple(names, ctx=None):
    return gast.Tuple(elts=[_name(n, ctx or gast.Load()) for n in names],
                      ctx=ctx or gast.Load())


def _sub(name, k):
    return gast.Subscript(value=_name(name), slice=gast.Constant(k, None), ctx=gast.Load())


def _assign(target, value, origin=None):
    stmt = gast.Assign(targets=[target], value=value, type_comment=None)
    return gast.copy_location(stmt, origin) if origin is not None else stmt
