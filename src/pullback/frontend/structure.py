"""Structure: early exits become flags, so every block runs to its end.

``break``, ``continue`` and a ``return`` before the end of the function are
rewritten into assignments of flags, and the statements they would skip are
guarded by ``if not flag``.  Afterwards a loop body may leave only through a
final ``if flag: break``, and the function returns once, at its end.  The
reverse pass then only has to replay branches and count iterations.  Where a
branch that always returns can take the rest of the block as its ``else``,
that is done instead of a flag::

>>> from pullback.testing import function_from_source, structured
>>> print(structured(function_from_source('''
... def f(x, n):
...     if x < 0.0:
...         return -x
...     for i in range(n):
...         if x > 10.0:
...             break
...         x = x * 2.0
...     return x
... ''')))
def f(x, n):
    if x < 0.0:
        retval = -x
    else:
        loop_break = False
        for i in range(n):
            if x > 10.0:
                loop_break = True
            if not loop_break:
                x = x * 2.0
            if loop_break:
                break
        retval = x
    return retval
"""
from __future__ import annotations

import gast

from ..ir.build import name as _name
from ..ir.naming import Namer
from .parse import Parsed

__all__ = ["structure"]


def structure(fn: gast.FunctionDef, namer: Namer, parsed: Parsed) -> gast.FunctionDef:
    """Rewrite ``fn`` (a gast FunctionDef, changed in place and returned)."""
    s = _Structurer(namer, parsed)
    body = fn.body
    if not s.needs_work(body):
        return fn
    s.retval = namer.fresh("retval")
    new, exits = s.block(body, loop=None, tail=True)
    if "return" in exits:
        s.returned = s.returned or namer.fresh("returned")
    prologue = []
    if s.returned:
        prologue = [_assign(s.returned, False, fn), _assign(s.retval, None, fn)]
    elif not _always_returns(new, s.retval):
        prologue = [_assign(s.retval, None, fn)]
    ret = gast.Return(value=_name(s.retval))
    gast.copy_location(ret, body[-1])
    fn.body = prologue + new + [ret]
    return fn


class _Loop:
    def __init__(self, brk, cont):
        self.brk, self.cont = brk, cont
        self.used = set()


class _Structurer:
    def __init__(self, namer, parsed):
        self.namer, self.parsed = namer, parsed
        self.retval = None
        self.returned = None

    def needs_work(self, body):
        """Whether anything but a final top-level return exits early."""
        for node in gast.walk(gast.Module(body=body[:-1], type_ignores=[])):
            if isinstance(node, (gast.Return, gast.Break, gast.Continue)):
                return True
        last = body[-1] if body else None
        for node in gast.walk(last) if last is not None else ():
            if isinstance(node, (gast.Break, gast.Continue)) or (
                    isinstance(node, gast.Return) and node is not last):
                return True
        return False

    def block(self, stmts, loop, tail):
        """Rewrite a statement list; return it and the exits it may take."""
        out, exits = [], set()
        for i, stmt in enumerate(stmts):
            rest = stmts[i + 1:]
            if isinstance(stmt, gast.If) and loop is None and rest \
                    and self._lift_else(stmt, rest):
                new, e = self.stmt(stmt, loop, tail)
                out.extend(new)
                return out, exits | e
            new, e = self.stmt(stmt, loop, tail and not rest)
            out.extend(new)
            if e and rest:
                guarded, e2 = self.block(rest, loop, tail)
                test = gast.UnaryOp(op=gast.Not(), operand=self.flags_test(e, loop))
                guard = gast.If(test=test, body=guarded, orelse=[])
                gast.copy_location(guard, rest[0])
                out.append(guard)
                return out, exits | e | e2
            exits |= e
        return out, exits

    def _lift_else(self, stmt, rest):
        """``if c: ...return`` followed by more: move the rest into the branch
        that does not return (no flag needed outside loops)."""
        a, b = _always_returns(stmt.body), _always_returns(stmt.orelse)
        if a and not _may_exit(stmt.orelse):
            stmt.orelse = stmt.orelse + rest
            return True
        if b and not _may_exit(stmt.body):
            stmt.body = stmt.body + rest
            return True
        return False

    def flags_test(self, exits, loop):
        names = []
        if "break" in exits:
            names.append(loop.brk)
        if "continue" in exits:
            names.append(loop.cont)
        if "return" in exits:
            names.append(self.return_flag())
        if len(names) == 1:
            return _name(names[0])
        return gast.BoolOp(op=gast.Or(), values=[_name(n) for n in names])

    def return_flag(self):
        if self.returned is None:
            self.returned = self.namer.fresh("returned")
        return self.returned

    def stmt(self, stmt, loop, tail):
        if isinstance(stmt, gast.Return):
            value = stmt.value if stmt.value is not None else gast.Constant(None, None)
            out = [gast.copy_location(gast.Assign(targets=[_name(self.retval, gast.Store())],
                                                  value=value, type_comment=None), stmt)]
            if loop is None and tail:
                return out, set()
            out.append(_assign(self.return_flag(), True, stmt))
            return out, {"return"}
        if isinstance(stmt, gast.Break):
            loop.used.add("break")
            return [_assign(loop.brk, True, stmt)], {"break"}
        if isinstance(stmt, gast.Continue):
            loop.used.add("continue")
            return [_assign(loop.cont, True, stmt)], {"continue"}
        if isinstance(stmt, gast.If):
            stmt.body, e1 = self.block(stmt.body, loop, tail)
            stmt.orelse, e2 = self.block(stmt.orelse, loop, tail) if stmt.orelse else ([], set())
            if not stmt.body:
                stmt.body = [gast.Pass()]
            return [stmt], e1 | e2
        if isinstance(stmt, (gast.For, gast.While)):
            return self.loop(stmt, loop, tail)
        return [stmt], set()

    def loop(self, stmt, outer, tail):
        inner = _Loop(self.namer.fresh("loop_break"), self.namer.fresh("loop_continue"))
        body, exits = self.block(stmt.body, inner, tail=False)
        returns = "return" in exits
        if "continue" in inner.used:
            body.insert(0, _assign(inner.cont, False, stmt))
        stop = []
        if "break" in inner.used:
            stop.append(inner.brk)
        if returns:
            stop.append(self.return_flag())
        if stop:
            test = _name(stop[0]) if len(stop) == 1 else gast.BoolOp(
                op=gast.Or(), values=[_name(n) for n in stop])
            brk = gast.If(test=test, body=[gast.Break()], orelse=[])
            body.append(gast.copy_location(brk, stmt))
        stmt.body = body
        orelse, stmt.orelse = stmt.orelse, []
        out = ([_assign(inner.brk, False, stmt)] if "break" in inner.used else []) + [stmt]
        exits_out = {"return"} if returns else set()
        if orelse:
            # a loop's `else` runs in the enclosing loop: its break is that loop's
            where = outer if outer is not None else None if tail else _Loop(None, None)
            new_else, e = self.block(orelse, where, tail)
            if stop:
                guard = gast.If(test=gast.UnaryOp(op=gast.Not(), operand=gast.BoolOp(
                    op=gast.Or(), values=[_name(n) for n in stop]) if len(stop) > 1
                    else _name(stop[0])), body=new_else, orelse=[])
                out.append(gast.copy_location(guard, orelse[0]))
            else:
                out.extend(new_else)
            exits_out |= e
        return out, exits_out


def _always_returns(stmts, retval=None):
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, gast.Return):
        return True
    if retval is not None and isinstance(last, gast.Assign) and isinstance(
            last.targets[0], gast.Name) and last.targets[0].id == retval:
        return True
    if isinstance(last, gast.If):
        return _always_returns(last.body, retval) and _always_returns(last.orelse, retval)
    return False


def _may_exit(stmts):
    return any(isinstance(n, (gast.Return, gast.Break, gast.Continue))
               for s in stmts for n in gast.walk(s))


def _assign(name, value, origin):
    stmt = gast.Assign(targets=[_name(name, gast.Store())],
                       value=gast.Constant(value=value, kind=None), type_comment=None)
    return gast.copy_location(stmt, origin)
