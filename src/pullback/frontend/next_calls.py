"""``next(it)`` on an iterator the function makes: a generator of the user's
(which pullback runs as the list of what it yields), a generator expression,
``iter(xs)``, ``zip``, ``enumerate``, ``reversed`` or ``map`` (and such an
iterator kept in a name and unpacked, ``t = zip(a, b)`` then ``u, v = t``).
The iterator is read into a list where it is made, and a position counts
what ``next`` has taken; what reads the rest (``list(it)``, ``tuple(it)``,
``sum(it)``, an unpacking, a ``for`` loop or a comprehension over it) reads
the list from there on, and uses it up.  Every item is then read by index, so its gradient flows back
through indexing, in both modes::

    rows = rows_doubled(data)        rows = list(rows_doubled(data))
                                     rows_at = 0
    first = next(rows)               at = next_at(rows, rows_at)
                                     rows_at = at + 1
                                     first = rows[at]
    rest = list(rows)                at_1 = rows_at
                                     rows_at = len(rows)
                                     rest = rows[at_1:]

Any other use of such an iterator (passed to a function, read in a nested
function, a loop over it that may ``break`` or that calls ``next`` on it
too) is refused naming the line.

>>> from pullback.testing import function_from_source, desugared
>>> print(desugared(function_from_source('''
... def f(data, w):
...     it = iter(data)
...     first = next(it)
...     return first * w + sum(it)
... ''')))
def f(data, w):
    it = list(data)
    it_at = 0
    at = next_at(it, it_at, False)
    it_at = at + 1
    first = it[at]
    at_1 = it_at
    it_at = len(it)
    return first * w + sum(it[at_1:])
"""
from __future__ import annotations

import gast

from ..errors import PullbackError
from ..ir.build import assign_at as _assign, length as _len, name as _name
from ..rules.registry import nondifferentiable
from ..runtime import control
from ..ir.walk import unnested_nodes as walk

__all__ = ["Stepped"]

_MAKERS = ("iter", "zip", "enumerate", "reversed", "map")
_READERS = ("list", "tuple", "sum")
_HINT = ("Read it into a list first (`items = list(...)`) and index the list, or read it "
         "only with next(), list(), tuple(), sum() or a for loop without `break`.")


class Stepped:
    """The iterators ``next`` is called on in ``fn`` (``self.at``: name -> the
    name of its position), their making rewritten; ``call`` and ``rest``
    rewrite their uses (``desugar_calls.Hoist``, ``desugar.loop``)."""

    def __init__(self, fn, d):
        self.d, self.at = d, {}
        nexts = {n.args[0].id for n in gast.walk(fn) if self.is_next(n)}
        unpacked = {s.value.id for s in _statements(fn.body) if _unpacks(s)}
        for name in sorted((nexts | unpacked) - {a.id for a in fn.args.args}):
            if self.made_here(fn, name) and (name in nexts or self.check_uses(fn, name, False)):
                self.at[name] = d.namer.fresh(f"{name}_at")
                self.check_uses(fn, name)
        if self.at:
            fn.body = self.rewrite(fn.body)

    def is_next(self, node):
        return isinstance(node, gast.Call) and self.d.is_builtin(node.func, "next") \
            and 1 <= len(node.args) <= 2 and not node.keywords \
            and isinstance(node.args[0], gast.Name)

    def made_here(self, fn, name):
        """Every assignment of ``name`` (none in a nested function) binds it
        alone to an iterator it makes."""
        stores = [n for n in gast.walk(fn) if isinstance(n, gast.Name) and n.id == name
                  and isinstance(n.ctx, (gast.Store, gast.Del))]
        made = [s for s in _statements(fn.body) if isinstance(s, gast.Assign)
                and len(s.targets) == 1 and isinstance(s.targets[0], gast.Name)
                and s.targets[0].id == name and self.makes_iterator(s.value)]
        return bool(made) and len(made) == len(stores)

    def makes_iterator(self, value):
        d = self.d
        if isinstance(value, gast.GeneratorExp):
            return True
        if not isinstance(value, gast.Call) or value.keywords:
            return False
        if any(d.is_builtin(value.func, m) for m in _MAKERS):
            return len(value.args) == 1 or not d.is_builtin(value.func, "iter")  # (no sentinel)
        try:
            return d.is_generator_call(value)
        except PullbackError:       # one that may not end (`while True`): left as it is
            return False

    def check_uses(self, fn, name, refuse=True):
        """Refuse a use of the iterator ``name`` that is not a ``next``, a
        reader of the rest, an unpacking or a loop over it that reads it once
        (without ``refuse``: whether there is none)."""
        allowed = set()
        for n in walk(fn.body):
            if (self.is_next(n) and n.args[0].id == name) or (_unpacks(n)
                                                              and n.value.id == name):
                allowed.add(id(n.args[0] if isinstance(n, gast.Call) else n.value))
            elif self.reader(n) == name:
                allowed.add(id(n.args[0]))
            elif isinstance(n, (gast.For, gast.comprehension)) \
                    and isinstance(n.iter, gast.Name) and n.iter.id == name:
                inner = n.body + n.orelse if isinstance(n, gast.For) else n.ifs
                if not any(isinstance(m, gast.Name) and m.id == name
                           for s in inner for m in gast.walk(s)) \
                        and not (isinstance(n, gast.For) and _breaks(n.body)):
                    allowed.add(id(n.iter))
        for n in gast.walk(fn):
            if isinstance(n, gast.Name) and n.id == name and isinstance(n.ctx, gast.Load) \
                    and id(n) not in allowed:
                if not refuse:
                    return False
                raise self.d.parsed.unsupported(
                    n, f"this use of `{name}`, an iterator that next() is called on", _HINT)
        return True

    def reader(self, node):
        """``name`` for ``list(name)``, ``tuple(name)`` or ``sum(name)``."""
        if isinstance(node, gast.Call) and len(node.args) == 1 and not node.keywords \
                and isinstance(node.args[0], gast.Name) \
                and any(self.d.is_builtin(node.func, r) for r in _READERS):
            return node.args[0].id
        return None

    def rewrite(self, stmts):
        """``it = <iterator>`` -> ``it = list(<iterator>)`` and ``it_at = 0``."""
        out = []
        for s in stmts:
            for field in ("body", "orelse", "finalbody"):
                if getattr(s, field, None) and not isinstance(s, gast.FunctionDef):
                    setattr(s, field, self.rewrite(getattr(s, field)))
            for h in getattr(s, "handlers", ()):
                h.body = self.rewrite(h.body)
            out.append(s)
            if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name) \
                    and s.targets[0].id in self.at:
                value = s.value
                if isinstance(value, gast.Call) and self.d.is_builtin(value.func, "iter") \
                        and len(value.args) == 1:
                    value = value.args[0]
                s.value = gast.copy_location(gast.Call(func=_name("list"), args=[value],
                                                       keywords=[]), s)
                out.append(_assign(_name(self.at[s.targets[0].id], gast.Store()),
                                   gast.Constant(0, None), s))
        return out

    def call(self, node, pre, visit):
        """The expression that replaces ``next(it)``, ``next(it, default)``,
        ``list(it)``, ``tuple(it)`` or ``sum(it)`` (statements put in ``pre``);
        None for another call."""
        if self.is_next(node) and node.args[0].id in self.at:
            name = node.args[0].id
            default = None
            if len(node.args) == 2:          # evaluated whether it is needed or not
                default = self.d.namer.fresh("default")
                pre.append(_assign(_name(default, gast.Store()), visit(node.args[1]), node))
            at = self.d.namer.fresh("at")
            pre.append(_assign(_name(at, gast.Store()), gast.Call(
                func=_name(self.d.helper("next_at", control.next_at)),
                args=[_name(name), _name(self.at[name]), gast.Constant(default is not None,
                                                                       None)],
                keywords=[]), node))
            pre.append(_assign(_name(self.at[name], gast.Store()), gast.BinOp(
                left=_name(at), op=gast.Add(), right=gast.Constant(1, None)), node))
            item = gast.Subscript(value=_name(name), slice=_name(at), ctx=gast.Load())
            if default is None:
                return gast.copy_location(item, node)
            return gast.copy_location(gast.IfExp(
                test=gast.Compare(left=_name(at), ops=[gast.Lt()], comparators=[_len(name)]),
                body=item, orelse=_name(default)), node)
        name = self.reader(node)
        if name in self.at:
            node.args[0] = self.rest(node.args[0], pre)
            return node.args[0] if self.d.is_builtin(node.func, "list") else node
        return None

    def rest(self, it, pre):
        """``it[at:]`` for the iterator ``it`` (a name), which it uses up."""
        at = self.d.namer.fresh("at")
        pre.append(_assign(_name(at, gast.Store()), _name(self.at[it.id]), it))
        pre.append(_assign(_name(self.at[it.id], gast.Store()), _len(it.id), it))
        return gast.copy_location(gast.Subscript(
            value=_name(it.id), slice=gast.Slice(_name(at), None, None), ctx=gast.Load()), it)


nondifferentiable(control.next_at)


def _statements(stmts):
    for s in stmts:
        yield s
        if not isinstance(s, (gast.FunctionDef, gast.ClassDef)):
            for field in ("body", "orelse", "finalbody"):
                yield from _statements(getattr(s, field, None) or [])
            for h in getattr(s, "handlers", ()):
                yield from _statements(h.body)


def _unpacks(stmt):
    """``a, b = it``: a statement that unpacks the name ``it``."""
    return isinstance(stmt, gast.Assign) and isinstance(stmt.value, gast.Name) \
        and any(isinstance(t, (gast.Tuple, gast.List)) for t in stmt.targets)


def _breaks(body):
    """A ``break`` of this loop in ``body`` (not of a loop nested in it)."""
    work = list(body)
    while work:
        s = work.pop()
        if isinstance(s, gast.Break):
            return True
        if isinstance(s, (gast.For, gast.While)):
            work.extend(s.orelse)
        elif not isinstance(s, (gast.FunctionDef, gast.ClassDef)):
            for field in ("body", "orelse", "finalbody"):
                work.extend(getattr(s, field, None) or [])
            for h in getattr(s, "handlers", ()):
                work.extend(h.body)
    return False
