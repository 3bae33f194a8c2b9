"""Normalize's control flow: ``if``, ``for`` over a range and ``while``
keep their blocks, and every name stays assigned once.

A variable a branch changes gets a merged name, copied at the end of each
branch; one a loop changes gets a loop-carried name, copied in before the
loop and back at the end of its body (before a final ``if flag: break``); a
``while`` condition is computed before the loop and again at the end of the
body.  A mixin of ``normalize._Normalizer``::

>>> from pullback.normalize.normalize import show
>>> print(show('''
... def f(x, n):
...     y = x
...     if n > 0:
...         y = y * 2.0
...     for i in range(n):
...         y = y + x
...     return y
... '''))
def f(x, n):
    y = x
    cond = n > 0
    if cond:
        y_1 = y * 2.0
        y_2 = y_1
    else:
        y_2 = y
    range_n = range(n)
    y_3 = y_2
    for i in range_n:
        y_4 = y_3 + x
        y_3 = y_4
    return y_3
"""
from __future__ import annotations

import gast

from ..ir.build import name as _name
from ..ir.grammar import assigned_names

__all__ = ["ControlFlow"]


class ControlFlow:
    """The control-flow statements of ``normalize._Normalizer``."""

    def stmt_If(self, node):
        test = self.atom(node.test)
        if len(node.body) == 1 and isinstance(node.body[0], gast.Break) and not node.orelse:
            self.emit(gast.If(test=test, body=[gast.Break()], orelse=[]), node)
            return
        before = dict(self.env)
        body = self.block(node.body)
        after_body, self.env = self.env, dict(before)
        orelse = self.block(node.orelse)
        after_else = self.env
        merged = dict(before)
        for v in sorted(set(after_body) | set(after_else)):
            a, b = after_body.get(v), after_else.get(v)
            if a == b:
                merged[v] = a
                continue
            new = self.local(self.version(v))
            for branch, src in ((body, a), (orelse, b)):
                if src is not None:
                    if src in self.maybe_unbound:
                        self.preinit.add(src)
                    branch.append(self.copy(new, src))
            if a is None or b is None or a in self.maybe_unbound or b in self.maybe_unbound:
                self.maybe_unbound.add(new)
            merged[v] = new
        self.env = merged
        self.emit(gast.If(test=test, body=body or [gast.Pass()], orelse=orelse), node)

    def stmt_For(self, node):
        if not isinstance(node.target, gast.Name):
            raise self.parsed.unsupported(node.target, "a `for` loop with this target",
                                          "Loop over one name and unpack inside the body.")
        iterable = self.atom(node.iter)
        target = node.target.id
        prev = self.env.get(target)
        carried = self.enter_loop(node.body, exclude={target})
        if prev is not None:
            # after the loop the name holds its last value in the loop, or,
            # if the loop ran no times, the one it had before: a carried name
            if prev in self.maybe_unbound:
                self.preinit.add(prev)
            carried[target] = self.local(self.version(target))
            self.emit(self.copy(carried[target], prev))
        before = set(self.env)
        head = self.env[target] = self.local(self.new_version(target))
        body = self.block(node.body)
        self.leave_loop(body, carried, before)
        loop = gast.For(target=_name(head, gast.Store()), iter=iterable,
                        body=body, orelse=[], type_comment=None)
        if prev is None:
            # the last iteration's value, unbound if the loop ran no times
            self.maybe_unbound.add(self.env[target])
        self.emit(loop, node)
        self.carried[id(loop)] = set(carried.values())
        self.statements(node.orelse)

    def stmt_While(self, node):
        cond = self.local(self.fresh("loop_cond"))
        self.emit(self.copy_value(cond, self.atom(node.test)), node)
        self.env[cond] = cond
        carried = self.enter_loop(node.body, extra=[cond])
        before = set(self.env)
        body = self.block(node.body)
        saved, self.out = self.out, []
        test = self.atom(node.test)             # the condition, recomputed
        if not isinstance(test, gast.Name):
            tmp = self.local(self.fresh("loop_cond"))
            self.out.append(self.copy_value(tmp, test))
            test = _name(tmp)
        recompute, self.out = self.out, saved
        self.env[cond] = test.id
        _insert_before_break(body, recompute)
        self.leave_loop(body, carried, before)
        del self.env[cond]
        loop = self.emit(gast.While(test=_name(cond), body=body, orelse=[]), node)
        self.carried[id(loop)] = set(carried.values())
        self.statements(node.orelse)

    def enter_loop(self, body, exclude=(), extra=()):
        """Give every variable the loop body assigns, and that exists already,
        a fresh name copied in just before the loop (its loop-carried name)."""
        carried = {}
        for v in sorted(assigned_names(body) - set(exclude)):
            if v in self.env:
                if self.env[v] in self.maybe_unbound:
                    self.preinit.add(self.env[v])
                carried[v] = self.local(self.version(v))
                self.emit(self.copy(carried[v], self.env[v]))
                self.env[v] = carried[v]
        for v in extra:
            carried[v] = self.env[v]
        return carried

    def leave_loop(self, body, carried, before=None):
        """Copy each carried variable's last value back to its carried name at
        the end of the body (before a final `if flag: break`).  A variable the
        body defines first is unbound after a loop that ran no iteration."""
        for v, current in self.env.items():
            if before is not None and v not in before:
                self.maybe_unbound.add(current)
        copies = [self.copy(name, self.env[v]) for v, name in carried.items()
                  if self.env.get(v) not in (None, name)]
        _insert_before_break(body, copies)
        for v, name in carried.items():
            self.env[v] = name

    def copy(self, target, source):
        return self.copy_value(target, _name(source))

    def copy_value(self, target, value):
        stmt = gast.Assign(targets=[_name(target, gast.Store())], value=value, type_comment=None)
        stmt.lineno = self.lineno
        if isinstance(value, gast.Name):
            self.renames.add(id(stmt))
        return stmt

    def stmt_Break(self, node):
        raise self.parsed.unsupported(node, "a `break` here", "Use a flag.")


def _insert_before_break(body, stmts):
    """Append ``stmts`` to a loop body, before its final ``if flag: break``."""
    last = body[-1] if body else None
    if isinstance(last, gast.If) and last.body and isinstance(last.body[0], gast.Break):
        body[-1:-1] = stmts
    else:
        body.extend(stmts)
