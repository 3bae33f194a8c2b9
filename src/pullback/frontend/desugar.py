"""Desugar: loops over sequences, comprehensions, ``sum`` and ``map`` become
index loops over ``range``.

Every ``for`` loop afterwards runs over a ``range``, and an element is read
by indexing, so its gradient flows back into the sequence through the
indexing rule (in place, O(1) per element).  ``enumerate``, ``zip`` and
``reversed`` are unfolded, and so are ``d.items()``, ``d.keys()`` and
``d.values()`` of a dict, and ``for k in d`` over a dict (``frontend.dict_loops``
tells a dict from a sequence, or writes the loop both ways where only the
run can); ``indexable`` checks at run time that a sequence read by position
is not a dict, a set or an iterator; a comprehension builds its list with ``append``;
``sum`` over a generator accumulates in a loop (linear time, however the
terms capture the inputs); ``map(f, xs)`` is the comprehension
``[f(v) for v in xs]``, evaluated in order (``desugar_calls`` rewrites
those calls, ``sorted``, ``max``/``min`` with ``key=``, ``functools.reduce``,
``dict(...)`` and ``d.get`` into loops first; this module turns every loop
into an index loop; ``frontend.dict_stores`` runs before both, making stores
into the function's own dicts new dicts; a dict comprehension builds its dict
with ``dict_set``)::

>>> from pullback.testing import function_from_source, desugared
>>> print(desugared(function_from_source('''
... def f(xs, ys):
...     t = 0.0
...     for i, x in enumerate(xs):
...         t = t + i * x
...     return t + sum(x * y for x, y in zip(xs, ys))
... ''')))
def f(xs, ys):
    t = 0.0
    indexable(xs)
    for i in range(len(xs)):
        x = xs[i]
        t = t + i * x
    total = 0
    indexable(xs)
    indexable(ys)
    for zip_index in range(min(len(xs), len(ys))):
        x_1 = xs[zip_index]
        y_1 = ys[zip_index]
        total = total + x_1 * y_1
    return t + total
"""
from __future__ import annotations

import builtins
import copy
import inspect
import types

import gast

from ..ir.build import (assign_at as _assign, item as _item, length as _len,
                        name as _name, range_of as _range)
from ..ir.grammar import assigned_names
from ..rules.registry import nondifferentiable
from ..runtime import control
from ..runtime.loop_items import index_items
from ..runtime.statement_checks import loops_over_keys
from ..ir.naming import Namer
from .desugar_calls import Hoist
from .dict_loops import Keyed, enumerate_start
from .dict_stores import follow_dict_stores
from .iterator_names import follow_iterator_names
from .itertools_rows import list_value_iterators, rows_loop
from .next_calls import Stepped
from .lazy_iterators import check_lazy_iterators
from .parse import Parsed

__all__ = ["desugar"]


def desugar(fn: gast.FunctionDef, namer: Namer, parsed: Parsed,
            param_kinds=None) -> gast.FunctionDef:
    """Rewrite ``fn`` (a gast FunctionDef) in place and return it (``param_kinds``:
    the specialisation's, which tell an array argument from a dict)."""
    follow_dict_stores(fn, namer, parsed)
    d = _Desugar(namer, parsed)
    list_value_iterators(fn, d)
    d.keyed = Keyed(fn, parsed, d.is_builtin, param_kinds)
    follow_iterator_names(fn, d.is_itertools_call, lambda call: gast.Call(
        func=_name(d.helper("index_items", index_items)), args=[call], keywords=[]))
    d.locals = {a.id for a in fn.args.args} | {
        n.id for n in gast.walk(fn) if isinstance(n, gast.Name)
        and isinstance(n.ctx, (gast.Store, gast.Del))}
    d.generators = {n.name for n in gast.walk(fn) if isinstance(n, gast.FunctionDef)
                    and n is not fn and any(isinstance(y, (gast.Yield, gast.YieldFrom))
                                            for y in gast.walk(n))}
    for n in gast.walk(fn):
        if isinstance(n, gast.FunctionDef) and n.name in d.generators:
            for loop in gast.walk(n):
                if isinstance(loop, gast.While) and isinstance(loop.test, gast.Constant) \
                        and loop.test.value:
                    raise parsed.unsupported(
                        loop, "a generator that may run forever (`while True`)",
                        "Give the loop a condition, or yield from a finite loop.")
    check_lazy_iterators(fn, parsed, d.generators, d.is_builtin)
    d.stepped = Stepped(fn, d)          # next(it) on an iterator made here
    fn.body = d.block(fn.body)
    return fn


class _Desugar:
    def __init__(self, namer, parsed):
        self.namer, self.parsed = namer, parsed
        self.runtime_names = {}

    def is_builtin(self, node, name):
        """``node`` names the builtin ``name``: by its own name, not shadowed by
        the module, or by a module-level alias of the very object
        (``from autograd import dict as ag_dict`` where that is ``dict``; the
        transform's bindings are checked on every call, so a rebinding
        transforms again)."""
        if not isinstance(node, gast.Name):
            return False
        target = getattr(builtins, name, None)
        if target is None or node.id in self.parsed.closure:
            return False
        if node.id in self.parsed.globals:
            return self.parsed.globals[node.id] is target
        return node.id == name

    def block(self, stmts):
        out = []
        for stmt in stmts:
            pre = []
            stmt = Hoist(self, pre).visit_statement(stmt)
            if isinstance(stmt, gast.While) and pre:
                out.extend(self.rotated_while(stmt, pre))
                continue
            out.extend(pre)
            if isinstance(stmt, gast.For):
                out.extend(self.loop(stmt))
            else:
                for field in ("body", "orelse"):
                    if getattr(stmt, field, None) and not isinstance(stmt, gast.FunctionDef):
                        setattr(stmt, field, self.block(getattr(stmt, field)))
                out.append(stmt)
        return out

    # -- loops -----------------------------------------------------------------

    def rotated_while(self, stmt, pre):
        """A ``while`` whose test needs statements of its own (a comprehension's
        loop) runs them before every test, as Python evaluates it::

            while sum(t for t in xs) < c:      while True:
                body                               <the loop's sum into total>
                                                   if not total < c:
                                                       break
                                                   body
        """
        if stmt.orelse:
            raise self.parsed.unsupported(
                stmt, "a `while ... else` whose condition contains a comprehension",
                "Compute the condition into a name before the loop and at the end of its "
                "body, and test that name.")
        stop = gast.copy_location(gast.If(test=gast.UnaryOp(op=gast.Not(), operand=stmt.test),
                                          body=[gast.copy_location(gast.Break(), stmt)],
                                          orelse=[]), stmt)
        stmt.test = gast.Constant(True, None)
        stmt.body = pre + [stop] + self.block(stmt.body)
        return [stmt]

    def loop(self, node):
        """``for target in iterable`` as a loop over ``range``."""
        if (counted := self.keyed.counted(node, self.namer)) is not None:
            return counted[:1] + self.loop(counted[1])      # enumerate(d)
        own = self.keyed.loop_names(node)
        body = self.block(node.body)
        orelse = self.block(node.orelse)
        it, target = node.iter, node.target
        if isinstance(it, gast.Call) and self.is_builtin(it.func, "range"):
            if isinstance(target, gast.Name):
                node.body, node.orelse = body, orelse
                return [node]
            index = self.namer.fresh("index")
            head = [_assign(target, _name(index), node)]
            return [self.for_range(index, it, head + body, orelse, node)]
        pre = []
        if isinstance(it, gast.Name) and it.id in self.stepped.at:
            it = self.stepped.rest(it, pre)            # what next() left of it
        # Python reads the sequence once: a name the loop rebinds is read before it
        self.rebound = assigned_names(body + [_assign(target, gast.Constant(None, None), node)])
        if (rows := rows_loop(self, node, body, orelse)) is not None:   # itertools of values
            return rows
        view = self.mapping_view(it)
        if view is None and self.keyed.is_dict(it):
            view = it, "keys"              # `for k in d` over a dict: its keys
        if view is not None:               # d.items(), d.keys(), d.values()
            mapping, method = view
            mapping = self.sequence(mapping, pre, node, check=False)
            return pre + self.keys_loop(mapping, method, target, body, orelse, node)
        start = enumerate_start(it) if isinstance(it, gast.Call) \
            and self.is_builtin(it.func, "enumerate") else False
        if start is not False and isinstance(target, gast.Tuple) and len(target.elts) == 2:
            if start is not None and not isinstance(start, gast.Constant):
                first = self.namer.fresh("start")          # read once, as enumerate does
                pre.append(_assign(_name(first, gast.Store()), start, node))
                start = _name(first)
            counter = isinstance(target.elts[0], gast.Name) and start is None
            index = target.elts[0].id if counter else self.namer.fresh("index")
            value = _name(index) if start is None else \
                gast.BinOp(left=_name(index), op=gast.Add(), right=start)
            head = [] if counter else [_assign(target.elts[0], value, node)]
            inner = it.args[0]
            if self.is_zip(inner):          # enumerate(zip(xs, ys))
                return pre + [self.zip_loop(inner, index, target.elts[1], head, body, orelse,
                                            pre, node)]
            seq = self.sequence(inner, pre, node)
            head.append(_assign(target.elts[1], _item(seq, index), node))
            return pre + [self.for_range(index, _range(_len(seq)), head + body, orelse, node)]
        if isinstance(it, gast.Call) and self.is_builtin(it.func, "zip") \
                and len(it.args) == 1 and isinstance(it.args[0], gast.Starred) \
                and not it.keywords:
            # zip(*rows): the k-th item is the tuple of every row's k-th element
            rows = self.sequence(it.args[0].value, pre, node)
            index = self.namer.fresh("zip_index")
            row = self.namer.fresh("row_index")
            column = gast.ListComp(elt=gast.Subscript(value=_item(rows, row),
                                                      slice=_name(index), ctx=gast.Load()),
                                   generators=[gast.comprehension(
                                       target=_name(row, gast.Store()),
                                       iter=_range(_len(rows)), ifs=[], is_async=0)])
            gast.copy_location(column, node)
            head = self.block([_assign(target, gast.Call(func=_name("tuple"), args=[column],
                                                         keywords=[]), node)])
            n = gast.Call(func=_name(self.helper("zip_length", control.zip_length)),
                          args=[_name(rows)], keywords=[])
            return pre + [self.for_range(index, _range(n), head + body, orelse, node)]
        if self.is_zip(it):
            index = self.namer.fresh("zip_index")
            return pre + [self.zip_loop(it, index, target, [], body, orelse, pre, node)]
        if isinstance(it, gast.Call) and self.is_builtin(it.func, "reversed") \
                and len(it.args) == 1:
            seq = self.sequence(it.args[0], pre, node)
            index = self.namer.fresh("index")
            last = gast.BinOp(left=_len(seq), op=gast.Sub(), right=gast.Constant(1, None))
            rng = _range(last, gast.Constant(-1, None), gast.Constant(-1, None))
            head = [_assign(target, _item(seq, index), node)]
            return pre + [self.for_range(index, rng, head + body, orelse, node)]
        if own is not None and self.keyed.may_be_dict(it, body + orelse):
            # a dict or a sequence, known when it runs: a loop over its keys, or by position
            seq = self.sequence(it, pre, node, check=False)
            key = _Rename({n: self.namer.fresh(n) for n in own})
            keyed = self.keys_loop(seq, "keys", key.visit(copy.deepcopy(target)),
                                   *([key.visit(s) for s in copy.deepcopy(part)]
                                     for part in (body, orelse)), node)
            test = gast.Call(func=_name(self.runtime_name("loops_over_keys")),
                             args=[_name(seq)], keywords=[])     # (checks a sequence too)
            return pre + [gast.copy_location(gast.If(
                test=test, body=keyed, orelse=[self.item_loop(seq, target, body, orelse, node)]),
                node)]
        seq = self.sequence(it, pre, node)
        return pre + [self.item_loop(seq, target, body, orelse, node)]

    def item_loop(self, seq, target, body, orelse, node):
        """``for target in seq`` by position."""
        base = target.id if isinstance(target, gast.Name) else "item"
        index = self.namer.fresh(f"{base}_index")
        head = [_assign(target, _item(seq, index), node)]
        return self.for_range(index, _range(_len(seq)), head + body, orelse, node)

    def keys_loop(self, mapping, method, target, body, orelse, node):
        """``for target in mapping.<method>()`` (keys, values or items) over
        the list of its keys."""
        keys = self.namer.fresh("keys")
        pre = [_assign(_name(keys, gast.Store()), gast.Call(
            func=_name(self.runtime_name("mapping_keys")), args=[_name(mapping)],
            keywords=[]), node)]
        index = self.namer.fresh("key_index")
        key = _item(keys, index)
        value = gast.Subscript(value=_name(mapping), slice=_item(keys, index),
                               ctx=gast.Load())
        item = {"keys": key, "values": value,
                "items": gast.Tuple(elts=[key, value], ctx=gast.Load())}[method]
        if method == "items" and isinstance(target, gast.Tuple) and len(target.elts) == 2:
            head = [_assign(target.elts[0], key, node),
                    _assign(target.elts[1], gast.Subscript(
                        value=_name(mapping), slice=_item(keys, index), ctx=gast.Load()),
                        node)]
        else:
            head = [_assign(target, item, node)]
        return pre + [self.for_range(index, _range(_len(keys)), head + body, orelse, node)]

    def is_zip(self, it):
        return isinstance(it, gast.Call) and self.is_builtin(it.func, "zip") and it.args \
            and not it.keywords

    def zip_loop(self, it, index, target, head, body, orelse, pre, node):
        """``for target in zip(xs, ys)`` as a loop over ``index``."""
        seqs = [self.sequence(a, pre, node) for a in it.args]
        items = [_item(s, index) for s in seqs]
        if isinstance(target, gast.Tuple) and len(target.elts) == len(items):
            head = head + [_assign(t, v, node) for t, v in zip(target.elts, items)]
        else:
            head = head + [_assign(target, gast.Tuple(elts=items, ctx=gast.Load()), node)]
        n = _len(seqs[0]) if len(seqs) == 1 else gast.Call(
            func=_name("min"), args=[_len(s) for s in seqs], keywords=[])
        return self.for_range(index, _range(n), head + body, orelse, node)

    def sequence(self, expr, pre, origin, check=True):
        """A name bound to ``expr``, evaluated once before the loop, and
        checked to be read by position (``indexable``: not a dict, a set or
        an iterator, which a loop by index would read wrongly)."""
        if isinstance(expr, gast.Name) and expr.id not in self.rebound:
            name = expr.id
        else:
            if isinstance(expr, gast.Call) and self.is_builtin(expr.func, "reversed") \
                    and len(expr.args) == 1 and not expr.keywords:
                expr = gast.Subscript(value=expr.args[0], slice=gast.Slice(
                    None, None, gast.Constant(-1, None)), ctx=gast.Load())
            if self.is_generator_call(expr):
                # a generator's items, read once into a list (a loop reads them by index)
                expr = gast.copy_location(gast.Call(func=_name("list"), args=[expr],
                                                    keywords=[]), expr)
            elif self.is_itertools_call(expr):
                # indices an itertools iterator makes, read into a list (floats refused)
                expr = gast.copy_location(gast.Call(
                    func=_name(self.helper("index_items", index_items)), args=[expr],
                    keywords=[]), expr)
            name = self.namer.fresh("seq")
            pre.append(_assign(_name(name, gast.Store()), expr, origin))
        if check:
            pre.append(gast.copy_location(gast.Expr(value=gast.Call(
                func=_name(self.runtime_name("indexable")), args=[_name(name)],
                keywords=[])), origin))
        return name

    def is_generator_call(self, expr):
        """``expr`` calls a generator function: one of the module or the
        closure, or a nested ``def`` of this function that yields."""
        if not (isinstance(expr, gast.Call) and isinstance(expr.func, gast.Name)):
            return False
        from ..analyses.callable_facts import static_value
        name = expr.func.id
        if name in self.generators:
            return True
        fn = static_value(expr.func, self.parsed)
        if not inspect.isgeneratorfunction(fn):
            return False
        from .parse import parse
        parse(fn)           # refuses a generator read to its end that may not have one
        return True

    def is_itertools_call(self, expr):
        """``expr`` calls a function of ``itertools`` (an iterator: pairwise,
        combinations, product, repeat...)."""
        if not isinstance(expr, gast.Call):
            return False
        from ..analyses.callable_facts import static_value
        fn = static_value(expr.func, self.parsed)
        return getattr(fn, "__module__", None) == "itertools"

    def mapping_view(self, it):
        """``(d, "items")`` for ``d.items()`` (or keys, values), else None."""
        if isinstance(it, gast.Call) and isinstance(it.func, gast.Attribute) \
                and it.func.attr in ("items", "keys", "values") and not it.args \
                and not it.keywords:
            return it.func.value, it.func.attr
        return None

    def runtime_name(self, fn_name):
        """A name the function's code can call ``pullback.runtime.<fn_name>`` by."""
        from .. import runtime
        name = self.runtime_names.get(fn_name)
        if name is None:
            name = self.runtime_names[fn_name] = self.namer.fresh(fn_name)
            self.parsed.closure[name] = types.CellType(getattr(runtime, fn_name))
        return name

    def helper(self, name, fn):
        """A name the function's code can call ``fn`` by."""
        if name not in self.runtime_names:
            self.runtime_names[name] = self.namer.fresh(name)
            self.parsed.closure[self.runtime_names[name]] = types.CellType(fn)
        return self.runtime_names[name]

    def for_range(self, index, rng, body, orelse, origin):
        loop = gast.For(target=_name(index, gast.Store()), iter=rng, body=body,
                        orelse=orelse, type_comment=None)
        return gast.copy_location(loop, origin)

    # -- comprehensions ----------------------------------------------------------

    def comprehension(self, node, pre, reduce_with=None, start=None):
        """Statements that build the value of a comprehension into a fresh
        name (a list, or a running sum); returns the name."""
        as_dict = isinstance(node, gast.DictComp)
        acc = self.namer.fresh("total" if reduce_with else "entries" if as_dict else "items")
        init = start if start is not None else gast.Constant(0, None)
        pre.append(_assign(_name(acc, gast.Store()),
                           init if reduce_with else gast.Dict(keys=[], values=[]) if as_dict
                           else gast.List(elts=[], ctx=gast.Load()), node))
        renames = {}
        for gen in node.generators:
            for n in gast.walk(gen.target):
                if isinstance(n, gast.Name):
                    renames[n.id] = self.namer.fresh(n.id)
        node = _Rename(renames).visit(node)
        if reduce_with:
            inner = [_assign(_name(acc, gast.Store()), gast.BinOp(
                left=_name(acc), op=gast.Add(), right=node.elt), node)]
        elif as_dict:       # a new dict per entry (frontend.dict_stores), the last key wins
            inner = [_assign(_name(acc, gast.Store()), gast.Call(
                func=_name(self.helper("dict_set", control.dict_set)),
                args=[_name(acc), node.key, node.value], keywords=[]), node)]
        else:
            inner = [gast.copy_location(gast.Expr(value=gast.Call(
                func=gast.Attribute(value=_name(acc), attr="append", ctx=gast.Load()),
                args=[node.elt], keywords=[])), node)]
        for gen in reversed(node.generators):
            if gen.is_async:
                raise self.parsed.unsupported(node, "an async comprehension",
                                              "Use an ordinary loop.")
            for cond in reversed(gen.ifs):
                inner = [gast.copy_location(gast.If(test=cond, body=inner, orelse=[]), node)]
            it = gen.iter
            if isinstance(it, gast.Name) and isinstance(gen.target, gast.Name) and any(
                    isinstance(m, gast.Subscript) and isinstance(m.value, gast.Name)
                    and m.value.id == it.id and isinstance(m.slice, gast.Name)
                    and m.slice.id == gen.target.id for m in gast.walk(node)):
                # `{k: p[k] - lr * g[k] for k in p}`: over a dict's keys, as a `for`
                # statement reading `p[k]` runs (frontend.dict_stores.rewrite_loops)
                it = gast.copy_location(gast.Call(func=_name(self.helper(
                    "loop_keys", control.loop_keys)), args=[it], keywords=[]), it)
            loop = gast.For(target=gen.target, iter=it, body=inner, orelse=[],
                            type_comment=None)
            inner = [gast.copy_location(loop, node)]
        pre.extend(self.block(inner))
        return acc


nondifferentiable(control.zip_length, index_items, loops_over_keys)


class _Rename(gast.NodeTransformer):
    def __init__(self, renames):
        self.renames = renames

    def visit_Name(self, node):
        if node.id in self.renames:
            node.id = self.renames[node.id]
        return node
