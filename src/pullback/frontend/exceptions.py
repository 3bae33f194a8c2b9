"""Exceptions and context managers: ``try`` and ``with`` statements become
plain statements, before desugar.

A ``try`` whose ``except`` handlers all end by raising and read only the
exception is kept on the cheap path: ``try_enter(h)``, the body,
``try_exit(h)``, the ``else`` clause; if an exception leaves the body the
function stops there and its handlers (compiled apart, in the user's module)
run as the primal returns (``runtime.control.handle_exception``).

Any other ``try`` (a ``finally``, a handler that lets the function go on or
reads its variables) runs its body as a nested function under
``runtime.control.attempt``, which returns ``(0, outputs)`` when the body
ran to its end, ``(1, value)`` when it returned, ``(2, error)`` when an
exception left it.  The path taken is then a branch, as for an ``if``: the
body's call is differentiated as a call (the dispatcher sends nothing back
through a body an exception left), the handlers, ``else`` and ``finally``
run as ordinary statements in Python's order.  A ``finally`` with handlers is
a ``try/finally`` around the ``try/except``::

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
<BLANKLINE>
        def try_body(x):
            y = 1.0 / x
            return (0, (y,))
        tried = attempt(try_body, x)
        if tried[0] == 2:
            if isinstance(tried[1], ZeroDivisionError):
                y = 0.0
            else:
                raise tried[1]
        elif tried[0] == 1:
            return (1, tried[1])
        else:
            y, = tried[1]
        return (0, (y,))
    tried_1 = attempt(try_body_1, x)
    log.append(1)
    if tried_1[0] == 2:
        raise tried_1[1]
    elif tried_1[0] == 1:
        return tried_1[1]
    else:
        y, = tried_1[1]
    return y

A handler that goes on is exact only where the body's partial work cannot be
seen: a variable the body assigns is read after the ``try`` only if every
handler assigns it first, and the body changes no value made before it
(``x[i] = v``, ``x += v`` on an array, ``.append``); otherwise the ``try`` is
refused.  ``with cm as v:`` becomes ``v = context_enter(cm)``, the body,
``context_exit(cm)``; a context a ``return`` or an exception skips is left
when the function ends (``callees.Derivative.call_primal``).  ``np.errstate``
settings also hold while the block's adjoint runs; another context manager's
``__enter__`` gives a value with no gradient, so its expression may not read
the function's variables when it binds one, and one that swallows an
exception is refused when that happens.
"""
from __future__ import annotations

import ast
import types

import gast

from ..ir.build import name as _name
from ..rules.registry import nondifferentiable
from ..runtime import control
from ..ir.naming import Namer
from .parse import Parsed

__all__ = ["lower_blocks"]

_MUTATING_METHODS = {"append", "extend", "insert", "pop", "remove", "clear", "update",
                     "setdefault", "popitem", "sort", "reverse", "add", "discard", "fill",
                     "resize", "put", "itemset", "setfield", "partition", "__setitem__"}


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
                out.extend(self.block(self.try_stmt(stmt)))
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

    # -- try: the cheap path ---------------------------------------------------------

    def try_stmt(self, stmt):
        if not stmt.finalbody and stmt.handlers and all(self.raising(h) for h in stmt.handlers):
            return self.try_block(stmt)
        return self.attempt_block(stmt)

    def raising(self, h):
        """Whether handler ``h`` ends by raising and reads only the exception
        (it can then run after the function has stopped)."""
        if not h.body or not isinstance(h.body[-1], gast.Raise):
            return False
        ename = (h.name.id if isinstance(h.name, gast.Name) else h.name) or "exc"
        for s in h.body + ([h.type] if h.type is not None else []):
            for n in gast.walk(s):
                if isinstance(n, (gast.FunctionDef, gast.Lambda, gast.ClassDef)):
                    return False
                if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load) \
                        and n.id != ename \
                        and (n.id in self.locals or n.id in self.parsed.closure):
                    return False
        return True

    def try_block(self, stmt):
        """``try: body except E as e: handler else: rest`` whose handlers end by
        raising: ``try_enter(h)``, ``body``, ``try_exit(h)``, ``rest``.  If an
        exception leaves the body, the function stops there, and its
        handlers run (``runtime.control.handle_exception``, as the primal
        returns), raising what they raise."""
        control.blocks_used = True      # callees' call_primal keeps track from now on
        clauses = [self.handler(h) for h in stmt.handlers]
        name = self.namer.fresh("handlers")
        self.parsed.closure[name] = types.CellType(control.Handlers(tuple(clauses)))
        enter = self.helper("try_enter", control.try_enter)
        leave = self.helper("try_exit", control.try_exit)

        def call(fn):
            return gast.copy_location(gast.Expr(value=gast.Call(
                func=_name(fn), args=[_name(name)], keywords=[])), stmt)
        return [call(enter)] + stmt.body + [call(leave)] + stmt.orelse

    def handler(self, h):
        """``(types, run)`` for one ``except`` clause: Python functions, in the
        user's module, giving the exception types and running the body."""
        ename = (h.name.id if isinstance(h.name, gast.Name) else h.name) or "exc"
        body = h.body
        for s in body:
            for n in gast.walk(s):
                if isinstance(n, gast.Raise) and n.exc is None:
                    n.exc = _name(ename)            # a bare `raise`: the exception caught
        types_expr = h.type if h.type is not None else _name("BaseException")
        types_fn = gast.FunctionDef(
            name="_pullback_except_types", args=_arguments([]),
            body=[gast.copy_location(gast.Return(value=types_expr), h)], decorator_list=[],
            returns=None, type_comment=None, type_params=[])
        run_fn = gast.FunctionDef(
            name="_pullback_except", args=_arguments([ename]),
            body=body, decorator_list=[], returns=None, type_comment=None, type_params=[])
        fns = []
        for fn in (types_fn, run_fn):
            gast.copy_location(fn, h)
            module = ast.fix_missing_locations(gast.gast_to_ast(
                gast.Module(body=[fn], type_ignores=[])))
            code = compile(module, self.parsed.filename, "exec")
            inner = next(c for c in code.co_consts if isinstance(c, types.CodeType))
            fns.append(types.FunctionType(inner, self.parsed.globals, fn.name))
        return tuple(fns)

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
        self.check_jumps(body, stmt, "body")
        for clause in [h.body for h in stmt.handlers] + [stmt.orelse]:
            self.check_jumps(clause, stmt, None)
        final = self.block(stmt.finalbody)
        for s in final:
            for n in _walk_here(s):
                if isinstance(n, gast.Return) or (isinstance(n, (gast.Break, gast.Continue))
                                                   and not _in_loop(s, n)):
                    raise self.parsed.unsupported(
                        n, f"`{_keyword(n)}` in a `finally` clause",
                        "Leave the `finally` clause by its end; return after the `try`.")
        assigned = _assigned(body)
        if any(not self.raising(h) for h in stmt.handlers):
            self.check_partial_work(stmt, body, assigned)
        # inputs: what the body reads, and what it may leave unassigned
        reads = set()
        _reads_before_bound(body, set(), reads, self.generated)
        sure = _surely_assigned(body)
        sure = set(assigned) if sure is _ALL else sure
        # outputs: what the body binds that is read outside it (or by itself, again)
        inside = {id(n) for s in body for n in gast.walk(s)}
        read_outside = {n.id for n in self.outer_reads if id(n) not in inside} | reads
        outputs = [n for n in assigned if n not in self.generated and n in read_outside]
        params = sorted((reads | (set(outputs) - sure)) & self.locals)
        fname = self.namer.fresh("try_body")
        self.generated.add(fname)
        returns = _Returns().block(body)
        done = gast.Return(value=gast.Tuple(elts=[gast.Constant(0, None), _tuple(outputs)],
                                            ctx=gast.Load()))
        fdef = gast.FunctionDef(name=fname, args=_arguments(params),
                                body=returns + [gast.copy_location(done, stmt)],
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
                hbody = [_assign(_name(ename, gast.Store()), _sub(tried, 1))] + hbody
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
        ran = [_assign(_tuple(outputs, gast.Store()), _sub(tried, 1))] if outputs else []
        ran += stmt.orelse
        if not ran:
            ran = [gast.Pass()]
        branch = gast.If(test=kind_is(2), body=caught, orelse=[gast.If(
            test=kind_is(1), body=[gast.Return(value=_sub(tried, 1))], orelse=ran)])
        if not final:
            out.append(branch)
        else:
            # the handled paths run, then `finally`, then the function returns or raises
            out.extend(final)
            out.append(gast.If(test=kind_is(2), body=reraise, orelse=[gast.If(
                test=kind_is(1), body=[gast.Return(value=_sub(tried, 1))], orelse=ran)]))
        for s in out:
            for n in gast.walk(s):
                if hasattr(n, "lineno") or isinstance(n, (gast.stmt, gast.expr)):
                    if getattr(n, "lineno", None) is None:
                        gast.copy_location(n, stmt)
        return out

    def check_jumps(self, stmts, stmt, where):
        """``break``/``continue`` out of a body run as a function are refused."""
        for s in stmts:
            for n in _walk_here(s):
                if isinstance(n, (gast.Break, gast.Continue)) and not _in_loop(s, n) \
                        and where == "body":
                    raise self.parsed.unsupported(
                        n, f"`{_keyword(n)}` out of a `try` body with a `finally` or a "
                           "handler that goes on",
                        "Set a flag in the `try` body and test it after the `try`.")

    def check_partial_work(self, stmt, body, assigned):
        """Refuse a ``try`` whose body's partial work a handler that goes on
        would let the function see."""
        inside = {id(n) for s in body for n in gast.walk(s)}
        handled = [h for h in stmt.handlers]
        for s in body:
            for n in gast.walk(s):
                target = None
                if isinstance(n, (gast.Subscript, gast.Attribute)) \
                        and isinstance(n.ctx, (gast.Store, gast.Del)):
                    target = _base(n)
                elif isinstance(n, gast.AugAssign) and isinstance(n.target, gast.Name):
                    target = n.target.id
                elif isinstance(n, gast.Call) and isinstance(n.func, gast.Attribute) \
                        and n.func.attr in _MUTATING_METHODS:
                    target = _base(n.func.value)
                elif isinstance(n, (gast.Global, gast.Nonlocal)):
                    target = n.names[0]
                if target is not None and (target not in assigned or isinstance(
                        n, (gast.AugAssign, gast.Global, gast.Nonlocal))):
                    raise self.parsed.unsupported(
                        n, f"a `try` body that changes `{target}` when one of its handlers "
                           "lets the function go on",
                        "Python would keep the change made before the exception: build a "
                        "new value in the `try` body, and assign it after the `try`.")
        last = body[-1] if body else None
        atomic = set()
        if isinstance(last, (gast.Assign, gast.AugAssign)) and all(
                isinstance(t, gast.Name) or (isinstance(t, gast.Tuple) and all(
                    isinstance(e, gast.Name) for e in t.elts))
                for t in getattr(last, "targets", None) or [last.target]):
            # bound by the body's last statement only: an exception leaves it unbound
            atomic = set(_assigned([last])) - set(_assigned(body[:-1]))
        for name in assigned:
            if name in atomic:
                continue
            for h in handled:
                if self.raising(h):
                    continue
                first = _first_use(h.body, name)
                if first == "read":
                    raise self.parsed.unsupported(
                        h, f"an `except` handler that reads `{name}`, which the `try` body "
                           "assigns", "Python would see the value the body had reached: "
                           "assign it before the `try`.")
                if first is None and any(n.id == name and id(n) not in inside
                                         for n in self.outer_reads):
                    raise self.parsed.unsupported(
                        h, f"an `except` handler after which `{name}` may hold what the "
                           "`try` body had reached", f"Assign `{name}` in the handler too.")

    # -- with ---------------------------------------------------------------------------

    def with_block(self, stmt):
        """``with cm as v: body`` -> ``context = cm``, ``v =
        context_enter(context)``, ``body``, ``context_exit(context)``; a
        context a ``return`` or an exception skips is left when the function
        ends (``runtime.control.close_contexts``)."""
        control.blocks_used = True      # callees' call_primal keeps track from now on
        head, tail = [], []
        for item in stmt.items:
            if item.optional_vars is not None and not self.errstate(item):
                for n in gast.walk(item.context_expr):
                    if isinstance(n, gast.Name) and n.id in self.locals:
                        raise self.parsed.unsupported(
                            item.context_expr, f"a context manager built from `{n.id}` "
                                               "whose `as` value is used",
                            "What `__enter__` returns carries no gradient: build the "
                            "context manager from module-level values, or compute the value "
                            "in the block.")
            cm = self.namer.fresh("context")
            head.append(_assign(_name(cm, gast.Store()), item.context_expr, stmt))
            enter = gast.Call(func=_name(self.helper("context_enter", control.context_enter)),
                              args=[_name(cm)], keywords=[])
            head.append(_assign(item.optional_vars, enter, stmt) if item.optional_vars
                        is not None else gast.copy_location(gast.Expr(value=enter), stmt))
            tail.insert(0, gast.copy_location(gast.Expr(value=gast.Call(
                func=_name(self.helper("context_exit", control.context_exit)),
                args=[_name(cm)], keywords=[])), stmt))
        return head + stmt.body + tail

    def errstate(self, item):
        """Whether the context of ``item`` is ``np.errstate(...)``."""
        from ..analyses.ops import static_value
        import numpy as np
        return isinstance(item.context_expr, gast.Call) \
            and static_value(item.context_expr.func, self.parsed) is np.errstate


nondifferentiable(control.context_enter, control.context_exit, control.try_enter,
                  control.try_exit)


class _Returns:
    """``return v`` -> ``return (1, v)`` in a body run by ``attempt`` (not in
    the functions it defines)."""

    def block(self, stmts):
        for s in stmts:
            if isinstance(s, (gast.FunctionDef, gast.ClassDef)):
                continue
            for n in _walk_here(s):
                if isinstance(n, gast.Return):
                    value = n.value if n.value is not None else gast.Constant(None, None)
                    n.value = gast.Tuple(elts=[gast.Constant(1, None), value],
                                         ctx=gast.Load())
        return stmts


def _walk_here(node):
    """The nodes of ``node`` outside the functions and classes it defines."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        for child in gast.iter_child_nodes(n):
            if not isinstance(child, (gast.FunctionDef, gast.Lambda, gast.ClassDef)):
                stack.append(child)


def _in_loop(top, target):
    """Whether ``target`` sits inside a loop within ``top``."""
    def find(n, looped):
        if n is target:
            return looped
        for child in gast.iter_child_nodes(n):
            if isinstance(child, (gast.FunctionDef, gast.Lambda, gast.ClassDef)):
                continue
            r = find(child, looped or isinstance(n, (gast.For, gast.While)))
            if r is not None:
                return r
        return None
    return bool(find(top, False))


def _assigned(stmts):
    """The names ``stmts`` bind, in order of first binding."""
    seen = []
    for s in stmts:
        for n in _walk_here(s):
            if isinstance(n, gast.Name) and isinstance(n.ctx, (gast.Store, gast.Del)) \
                    and n.id not in seen:
                seen.append(n.id)
            if isinstance(n, gast.FunctionDef) and n.name not in seen:
                seen.append(n.name)
    for s in stmts:
        if isinstance(s, gast.FunctionDef) and s.name not in seen:
            seen.append(s.name)
    return seen


_ALL = None     # every name: what a block that ends by raising or returning leaves bound


def _surely_assigned(stmts):
    """The names bound whenever ``stmts`` run to their end (a branch that
    raises or returns binds them all)."""
    sure = set()
    for s in stmts:
        if isinstance(s, (gast.Raise, gast.Return, gast.Break, gast.Continue)):
            return _ALL
        if isinstance(s, gast.Assign):
            sure |= {n.id for t in s.targets for n in gast.walk(t)
                     if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
        elif isinstance(s, (gast.AugAssign, gast.AnnAssign)) and isinstance(s.target, gast.Name):
            sure.add(s.target.id)
        elif isinstance(s, (gast.FunctionDef, gast.ClassDef)):
            sure.add(s.name)
        elif isinstance(s, gast.If):
            a, b = _surely_assigned(s.body), _surely_assigned(s.orelse)
            if a is _ALL and b is _ALL:
                return _ALL
            sure |= b if a is _ALL else a if b is _ALL else a & b
    return sure


def _reads_before_bound(stmts, bound, reads, skip):
    """Add to ``reads`` the names ``stmts`` may read before binding them
    (given ``bound``); the functions named in ``skip`` are not looked into."""
    def loads(node):
        return {n.id for n in gast.walk(node) if isinstance(n, gast.Name)
                and isinstance(n.ctx, gast.Load)} if node is not None else set()
    bound = set(bound)
    for s in stmts:
        if isinstance(s, gast.FunctionDef) and s.name in skip:
            bound.add(s.name)
            continue
        if isinstance(s, gast.If):
            reads |= loads(s.test) - bound
            _reads_before_bound(s.body, bound, reads, skip)
            _reads_before_bound(s.orelse, bound, reads, skip)
        elif isinstance(s, (gast.For, gast.While)):
            reads |= loads(getattr(s, "iter", None)) - bound
            reads |= loads(getattr(s, "test", None)) - bound
            inner = bound | {n.id for n in gast.walk(s.target) if isinstance(n, gast.Name)} \
                if isinstance(s, gast.For) else bound
            _reads_before_bound(s.body, inner, reads, skip)
            _reads_before_bound(s.orelse, bound, reads, skip)
        elif isinstance(s, gast.Assign):
            reads |= loads(s.value) - bound
            reads |= set().union(*(loads(t) for t in s.targets)) - bound
        else:
            reads |= loads(s) - bound
        now = _surely_assigned([s])
        if now is not _ALL:
            bound |= now


def _first_use(stmts, name):
    """``"read"`` if ``stmts`` (in order, top level first) may read ``name``
    before assigning it, ``"write"`` if a top-level statement assigns it
    first (or the statements end by raising), else None."""
    for s in stmts:
        if isinstance(s, gast.Raise):
            return "write"
        if isinstance(s, gast.Assign):
            if any(isinstance(n, gast.Name) and n.id == name and isinstance(n.ctx, gast.Load)
                   for n in gast.walk(s.value)):
                return "read"
            if any(isinstance(t, gast.Name) and t.id == name for t in s.targets):
                return "write"
            continue
        if any(isinstance(n, gast.Name) and n.id == name and isinstance(n.ctx, gast.Load)
               for n in gast.walk(s)):
            return "read"
    return None


def _base(node):
    while isinstance(node, (gast.Subscript, gast.Attribute)):
        node = node.value
    return node.id if isinstance(node, gast.Name) else "an object"


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
