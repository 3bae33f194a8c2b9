"""Which loops run over a dict: ``for k in d`` is ``for k in d.keys()``.

``desugar`` turns a loop into an index loop; over a dict it must read the
keys, over a sequence its items by position.  This module tells, from the
function's own source, whether the iterated value is

- certainly a dict (a display, a comprehension, ``dict(...)``, a call of a
  function of the user's that returns only those, or a name bound only to
  those): the loop runs over ``d.keys()``;
- taken not to be one (a list, tuple, string, slice, arithmetic, a call's
  result, or a name bound only to those): the loop reads by position
  (``indexable`` refuses a dict, a set or an iterator when it runs);
- either (an argument, an element of a container, an attribute): the
  loop is written twice, chosen when it runs by ``loops_over_keys`` (which
  checks a sequence as ``indexable`` does).  The branch is taken once per
  loop, so a loop over a list keeps its index loop and its in-place gradient
  accumulation as they were; the body is transformed twice (one copy never
  runs), the keys' copy with the loop's names renamed (a key's kind is not an
  item's: the item copy keeps its kinds), so a loop whose variable is read
  after it is not written twice.  An argument the specialisation gives a
  number or an array is no dict.

A body that defines a function, a lambda or a class, or yields, is not
written twice: a dict there is refused when the loop runs, with the fix
(``for k in d.keys()``).

>>> from pullback.testing import function_from_source, desugared
>>> print(desugared(function_from_source('''
... def f(p, w):
...     t = 0.0
...     for k in p:
...         t = t + w[k]
...     return t
... ''')))
def f(p, w):
    t = 0.0
    if loops_over_keys(p):
        keys = mapping_keys(p)
        for key_index in range(len(keys)):
            k_1 = keys[key_index]
            t = t + w[k_1]
    else:
        for k_index in range(len(p)):
            k = p[k_index]
            t = t + w[k]
    return t
"""
from __future__ import annotations

import collections
import types

import gast

from ..ir.build import assign_at as _assign, name as _name
from ..ir.walk import scope_nodes

__all__ = ["Keyed", "enumerate_start"]

_SEQUENCE_NODES = (gast.List, gast.Tuple, gast.ListComp, gast.GeneratorExp, gast.JoinedStr)
_UNDUPLICABLE = (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ClassDef,
                 gast.Yield, gast.YieldFrom)


class Keyed:
    """What the loops of one function iterate: ``is_dict``, ``may_be_dict``."""

    def __init__(self, fn, parsed, is_builtin, param_kinds=None):
        self.parsed, self.is_builtin = parsed, is_builtin
        # arguments given numbers or arrays (the specialisation's kinds) are no dicts
        self.numbers = {p for p, k in (param_kinds or {}).items()
                        if str(getattr(k, "shape", "")) in ("scalar", "array", "number", "range")}
        self.uses = collections.Counter(n.id for n in scope_nodes(fn) if isinstance(n, gast.Name))
        # name -> the values assigned to it (None: bound some other way)
        self.bindings = {a.id: [None] for a in fn.args.args + fn.args.kwonlyargs}
        for n in scope_nodes(fn):
            if isinstance(n, gast.Assign) and len(n.targets) == 1 \
                    and isinstance(n.targets[0], gast.Name):
                self.bindings.setdefault(n.targets[0].id, []).append(n.value)
            elif isinstance(n, gast.Name) and isinstance(n.ctx, (gast.Store, gast.Del)):
                self.bindings.setdefault(n.id, []).append(None)
        for n in scope_nodes(fn):       # an Assign's own target counted once, as its value
            if isinstance(n, gast.Assign) and len(n.targets) == 1 \
                    and isinstance(n.targets[0], gast.Name):
                self.bindings[n.targets[0].id].remove(None)
        self.seen = set()

    def is_dict(self, expr):
        """``expr`` is certainly a dict."""
        return self._all(expr, self._is_dict)

    def may_be_dict(self, expr, body):
        """``expr`` may be a dict or a sequence, and a loop with ``body``
        over it can be written twice."""
        if self._all(expr, self._is_sequence):
            return False
        return not any(isinstance(n, _UNDUPLICABLE) for s in body for n in gast.walk(s))

    def loop_names(self, loop):
        """The names of ``loop``'s target, where nothing outside the loop reads
        them (the copy over a dict's keys may rename them: a key's kind is
        not an item's), else None; called before the loop is desugared."""
        names = {n.id for n in gast.walk(loop.target) if isinstance(n, gast.Name)}
        inside = collections.Counter(n.id for s in [loop.target] + loop.body + loop.orelse
                                     for n in gast.walk(s) if isinstance(n, gast.Name))
        if all(isinstance(n, (gast.Name, gast.Tuple, gast.List, gast.Store, gast.Load))
               for n in gast.walk(loop.target)) and all(
                inside[n] >= self.uses[n] for n in names):
            return names
        return None

    def counted(self, node, namer):
        """``for i, k in enumerate(d, start)`` over a dict as ``count = start``
        and ``for k in d`` with ``i`` counted beside it (the two, for
        ``desugar`` to turn the loop into an index loop); None for another
        loop."""
        it = node.iter
        if not (isinstance(it, gast.Call) and self.is_builtin(it.func, "enumerate")
                and isinstance(node.target, gast.Tuple) and len(node.target.elts) == 2
                and (start := enumerate_start(it)) is not False and self.is_dict(it.args[0])):
            return None
        count = namer.fresh("count")
        (i, k), body = node.target.elts, node.body
        node.target, node.iter = k, it.args[0]
        node.body = [_assign(i, _name(count), node), _assign(_name(count, gast.Store()), gast.BinOp(
            left=_name(count), op=gast.Add(), right=gast.Constant(1, None)), node)] + body
        first = gast.Constant(0, None) if start is None else start
        return [_assign(_name(count, gast.Store()), first, node), node]

    def _all(self, expr, test):
        if not isinstance(expr, gast.Name):
            return test(expr)
        if expr.id in self.numbers and test == self._is_sequence:
            return True
        values = self.bindings.get(expr.id)
        if not values or None in values or expr.id in self.seen:
            return False
        self.seen.add(expr.id)
        try:
            return all(self._all(v, test) for v in values)
        finally:
            self.seen.discard(expr.id)

    def _is_dict(self, expr):
        return isinstance(expr, (gast.Dict, gast.DictComp)) or (
            isinstance(expr, gast.Call) and (self.is_builtin(expr.func, "dict")
                                             or self._returns_dict(expr)))

    _asked = set()          # the functions being read (a recursive one returns no dict)

    def _returns_dict(self, call):
        """``call`` calls a function of the user's (a global or a closure
        value) each of whose ``return`` statements returns a dict."""
        from ..analyses.callable_facts import static_value
        from ..errors import PullbackError
        from .parse import parse
        fn = static_value(call.func, self.parsed)
        if not isinstance(fn, types.FunctionType) or fn in Keyed._asked \
                or getattr(fn, "__module__", "").startswith("pullback"):
            return False
        try:
            parsed = parse(fn)
        except PullbackError:
            return False
        returns = [n.value for n in scope_nodes(parsed.tree) if isinstance(n, gast.Return)]
        if not returns or any(v is None for v in returns):
            return False
        Keyed._asked.add(fn)
        try:
            inner = Keyed(parsed.tree, parsed, lambda node, name: isinstance(node, gast.Name)
                          and node.id == name and name not in parsed.globals
                          and name not in parsed.closure)
            return all(inner.is_dict(v) for v in returns)
        finally:
            Keyed._asked.discard(fn)

    def _is_sequence(self, expr):
        if isinstance(expr, _SEQUENCE_NODES):
            return True
        if isinstance(expr, gast.Constant):
            return isinstance(expr.value, (str, bytes))
        if isinstance(expr, gast.Subscript):
            return isinstance(expr.slice, gast.Slice)        # xs[1:]
        if isinstance(expr, gast.BinOp):
            return not isinstance(expr.op, gast.BitOr)       # d | e is a dict
        # a call's result (but dict(...)): read by position, as before (a function
        # building a list of layers is followed by frontend.state_calls in that form)
        return isinstance(expr, gast.Call) and not self._is_dict(expr)


def enumerate_start(call):
    """The ``start`` of ``enumerate(seq)``, ``enumerate(seq, k)`` or
    ``enumerate(seq, start=k)``: None for the first, the expression ``k``;
    False for another call."""
    if any(isinstance(a, gast.Starred) for a in call.args):
        return False
    if len(call.args) == 1 and not call.keywords:
        return None
    if len(call.args) == 2 and not call.keywords:
        return call.args[1]
    if len(call.args) == 1 and len(call.keywords) == 1 and call.keywords[0].arg == "start":
        return call.keywords[0].value
    return False
