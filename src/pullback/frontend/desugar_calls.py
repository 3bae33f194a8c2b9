"""Calls over sequences, rewritten before loops are desugared: each
statement's comprehensions, ``sum`` and ``map`` over them, ``sorted``,
``functools.reduce``, ``dict(...)`` and ``d.get`` become names, the loops
that compute them put before the statement (``desugar`` then turns those
loops into index loops).

``sorted(xs, key=k)`` reads its items by the permutation ``sort_order`` makes
(no gradient), so that each item's gradient flows back through indexing;
``reduce(f, xs, init)`` is the loop it runs; ``dict(a=x)`` is the literal
``{'a': x}``; ``d.get(k, v)`` is ``d[k] if k in d else v``::

>>> import functools
>>> from pullback.testing import function_from_source, desugared
>>> print(desugared(function_from_source('''
... def f(xs, c):
...     return functools.reduce(lambda a, b: a * b + c, xs, 1.0)
... ''', {"functools": functools})))
def f(xs, c):
    reduced = 1.0
    indexable(xs)
    for reduce_item_index in range(len(xs)):
        reduce_item = xs[reduce_item_index]
        reduced = (lambda a, b: a * b + c)(reduced, reduce_item)
    return reduced
"""
from __future__ import annotations

import copy
import functools

import gast

from ..ir.build import (assign_at as _assign, length as _len, name as _name,
                        range_of as _range)
from ..rules.registry import nondifferentiable
from ..runtime import control

__all__ = ["Hoist"]


class Hoist(gast.NodeTransformer):
    """Replace the comprehensions (and sum/map over them) of one statement by
    names, putting the loops that compute them in ``pre``."""

    def __init__(self, desugar, pre):
        self.d, self.pre = desugar, pre

    def visit_statement(self, stmt):
        if isinstance(stmt, (gast.If, gast.While)):
            stmt.test = self.visit(stmt.test)
            return stmt
        if isinstance(stmt, gast.For):
            stmt.iter = self.visit(stmt.iter)
            return stmt
        if isinstance(stmt, (gast.FunctionDef, gast.ClassDef)):
            return stmt
        if isinstance(stmt, gast.Assign) and any(
                isinstance(t, (gast.Tuple, gast.List)) for t in stmt.targets):
            # `ws, bs = zip(*pairs)`, `first, *rest = zip(xs, ys)`: the items, read
            # into a list by the loop a comprehension runs (the adjoint reads them)
            stmt.value = self.iterator_items(stmt.value) or stmt.value
            if isinstance(stmt.value, gast.Name) and stmt.value.id in self.d.stepped.at:
                stmt.value = self.d.stepped.rest(stmt.value, self.pre)     # `t = zip(..)`
        return self.visit(stmt)

    def iterator_items(self, node):
        """``[(a, b) for a, b in zip(xs, ys)]`` for the iterator ``zip(xs, ys)``
        (``zip(*rows)``, ``enumerate(xs)``, ``reversed(xs)``, ``iter(xs)``): the list of its
        items, which ``desugar`` reads by index; None for another expression."""
        d = self.d
        if not isinstance(node, gast.Call) or node.keywords:
            return None
        if d.is_builtin(node.func, "zip") and len(node.args) == 1 \
                and isinstance(node.args[0], gast.Starred):
            names = [d.namer.fresh("column")]
        elif d.is_zip(node) and not any(isinstance(a, gast.Starred) for a in node.args):
            names = [d.namer.fresh("item") for _ in node.args]
        elif d.is_builtin(node.func, "enumerate") and len(node.args) in (1, 2) \
                and not any(isinstance(a, gast.Starred) for a in node.args):
            names = [d.namer.fresh("count"), d.namer.fresh("item")]
        elif (d.is_builtin(node.func, "reversed") or d.is_builtin(node.func, "iter")) \
                and len(node.args) == 1 and not isinstance(node.args[0], gast.Starred):
            names = [d.namer.fresh("item")]
            if d.is_builtin(node.func, "iter"):
                node = node.args[0]             # iter(xs) gives what a loop over xs reads
        else:
            return None
        target = _name(names[0], gast.Store()) if len(names) == 1 else gast.Tuple(
            elts=[_name(n, gast.Store()) for n in names], ctx=gast.Store())
        elt = _name(names[0]) if len(names) == 1 else gast.Tuple(
            elts=[_name(n) for n in names], ctx=gast.Load())
        return gast.copy_location(gast.ListComp(elt=elt, generators=[gast.comprehension(
            target=target, iter=node, ifs=[], is_async=0)]), node)

    def visit_Lambda(self, node):
        return node

    def visit_IfExp(self, node):
        """``b if c else d`` whose ``b`` or ``d`` needs statements of its own
        (a comprehension's loop) becomes an ``if`` statement, so that only the
        branch Python evaluates runs::

            v = [t * t for t in xs] if c else ys   ->   if c:
                                                             v_1 = <the loop's list>
                                                         else:
                                                             v_1 = ys
        """
        node.test = self.visit(node.test)
        body, orelse = self.lazy(node.body), self.lazy(node.orelse)
        if body is not None and orelse is not None:
            node.body, node.orelse = body, orelse
            return node
        value = self.d.namer.fresh("chosen")
        branch = gast.If(test=node.test, body=[_assign(_name(value, gast.Store()), node.body,
                                                       node)],
                         orelse=[_assign(_name(value, gast.Store()), node.orelse, node)])
        self.pre.extend(self.d.block([gast.copy_location(branch, node)]))
        return _name(value)

    def visit_BoolOp(self, node):
        """``a and b`` (``or``) whose ``b`` needs statements of its own runs
        them only where Python evaluates ``b``::

            v = a and any([t > 0 for t in xs])   ->   v_1 = a
                                                      if v_1:
                                                          v_1 = <the loop's any>
        """
        node.values[0] = self.visit(node.values[0])
        rest = [self.lazy(v) for v in node.values[1:]]
        if all(v is not None for v in rest):
            node.values[1:] = rest
            return node
        value = self.d.namer.fresh("either" if isinstance(node.op, gast.Or) else "both")
        inner = []
        for v in reversed(node.values[1:]):
            test = _name(value) if isinstance(node.op, gast.And) else gast.UnaryOp(
                op=gast.Not(), operand=_name(value))
            inner = [gast.copy_location(gast.If(
                test=test, body=[_assign(_name(value, gast.Store()), v, node)] + inner,
                orelse=[]), node)]
        self.pre.append(_assign(_name(value, gast.Store()), node.values[0], node))
        self.pre.extend(self.d.block(inner))
        return _name(value)

    def lazy(self, node):
        """``node``, an operand Python may not evaluate, rewritten in place if
        that needs no statements before it; None if it does (the original is
        kept, unvisited, for the caller to put in a branch)."""
        trial, scratch = copy.deepcopy(node), []
        done = Hoist(self.d, scratch).visit(trial)
        return done if not scratch else None

    def visit_Call(self, node):
        d = self.d
        if (stepped := d.stepped.call(node, self.pre, self.visit)) is not None:
            return stepped                  # next(it), list(it) of an iterator made here
        if (d.is_builtin(node.func, "list") or d.is_builtin(node.func, "tuple")) \
                and len(node.args) == 1 and not node.keywords \
                and (items := self.iterator_items(node.args[0])) is not None:
            # list(zip(xs, ys)): the comprehension's list (tuple(...) of it)
            if d.is_builtin(node.func, "list"):
                return self.visit(items)
            node.args[0] = items
        if d.is_builtin(node.func, "sum") and node.args and not node.keywords \
                and isinstance(node.args[0], gast.Call) \
                and d.is_builtin(node.args[0].func, "map") and len(node.args[0].args) >= 2:
            node.args[0] = _map_as_comprehension(node.args[0], d.namer)
        if d.is_builtin(node.func, "sum") and node.args and isinstance(
                node.args[0], (gast.GeneratorExp, gast.ListComp)) and not node.keywords:
            comp = node.args[0]
            start = self.visit(node.args[1]) if len(node.args) > 1 else None
            return _name(d.comprehension(comp, self.pre, reduce_with="+", start=start))
        if d.is_builtin(node.func, "map") and len(node.args) >= 2 and not node.keywords:
            node = _map_as_comprehension(node, d.namer)
            return self.visit(node)
        if d.is_builtin(node.func, "sorted") and len(node.args) == 1 \
                and all(k.arg in ("key", "reverse") for k in node.keywords):
            return self.visit(self.sorted_items(node))
        picked = self.max_by(node)
        if picked is not None:
            return picked
        if self.is_reduce(node.func):
            return self.reduce(node)
        literal = _dict_literal(d, node)
        if literal is not None:            # dict(a=x), dict([("a", x)])
            return self.visit(literal)
        if isinstance(node.func, gast.Attribute) and node.func.attr == "get" \
                and isinstance(node.func.value, gast.Name) \
                and node.func.value.id not in d.parsed.globals \
                and node.func.value.id not in d.parsed.closure \
                and len(node.args) in (1, 2) and not node.keywords:
            # d.get(k, v) on a dict: `d[k] if k in d else v` (the keys checked to be a dict's)
            mapping = node.func.value
            default = node.args[1] if len(node.args) == 2 else gast.Constant(None, None)
            keys = gast.Call(func=_name(d.runtime_name("mapping_keys")),
                             args=[_name(mapping.id)], keywords=[])
            test = gast.Compare(left=node.args[0], ops=[gast.In()], comparators=[keys])
            found = gast.Subscript(value=_name(mapping.id), slice=node.args[0],
                                   ctx=gast.Load())
            return self.visit(gast.copy_location(
                gast.IfExp(test=test, body=found, orelse=default), node))
        return self.generic_visit(node)

    def is_reduce(self, func):
        from ..analyses.callable_facts import static_value
        if not (isinstance(func, gast.Name) or (isinstance(func, gast.Attribute)
                                                and isinstance(func.value, gast.Name))):
            return False
        root = func if isinstance(func, gast.Name) else func.value
        if root.id in self.d.locals:
            return False
        return static_value(func, self.d.parsed) is functools.reduce

    def reduce(self, node):
        """``functools.reduce(f, xs, init)`` as the loop it runs::

            acc = init                      acc = xs[0]   (without init)
            for item in xs:                 for i in range(1, len(xs)):
                acc = f(acc, item)              acc = f(acc, xs[i])

        so that it is differentiated as a ``for`` loop (``f`` a lambda is
        called in place, as a nested function)."""
        d = self.d
        if node.keywords or not 2 <= len(node.args) <= 3 \
                or any(isinstance(a, gast.Starred) for a in node.args):
            raise d.parsed.unsupported(
                node, "this call of functools.reduce (pullback follows `reduce(f, xs)` and "
                      "`reduce(f, xs, init)` with positional arguments)",
                "Write a for loop: `acc = init` then `for x in xs: acc = f(acc, x)`.")
        fn = node.args[0]
        if not isinstance(fn, (gast.Name, gast.Lambda)):
            held = d.namer.fresh("reducer")
            self.pre.append(_assign(_name(held, gast.Store()), self.visit(fn), node))
            fn = _name(held)
        acc = d.namer.fresh("reduced")
        item = d.namer.fresh("reduce_item")
        step = _assign(_name(acc, gast.Store()), gast.copy_location(gast.Call(
            func=fn, args=[_name(acc), _name(item)], keywords=[]), node), node)
        if len(node.args) == 3:
            self.pre.append(_assign(_name(acc, gast.Store()), self.visit(node.args[2]), node))
            loop = gast.For(target=_name(item, gast.Store()), iter=self.visit(node.args[1]),
                            body=[step], orelse=[], type_comment=None)
        else:
            seq = d.namer.fresh("reduce_seq")
            self.pre.append(_assign(_name(seq, gast.Store()), gast.Call(
                func=_name("list"), args=[self.visit(node.args[1])], keywords=[]), node))
            self.pre.append(gast.copy_location(gast.Expr(value=gast.Call(
                func=_name(d.helper("reduce_start", control.reduce_start)),
                args=[_name(seq)], keywords=[])), node))
            self.pre.append(_assign(_name(acc, gast.Store()), gast.Subscript(
                value=_name(seq), slice=gast.Constant(0, None), ctx=gast.Load()), node))
            index = d.namer.fresh("reduce_index")
            step.value.args[1] = gast.Subscript(value=_name(seq), slice=_name(index),
                                                ctx=gast.Load())
            loop = gast.For(target=_name(index, gast.Store()),
                            iter=_range(gast.Constant(1, None), _len(seq)),
                            body=[step], orelse=[], type_comment=None)
        gast.copy_location(loop, node)
        self.pre.extend(d.block([loop]))
        return _name(acc)

    def sorted_items(self, node):
        """``sorted(xs, key=k, reverse=r)`` -> ``[seq[i] for i in order]``, with
        ``seq`` the items read once and ``order`` the permutation ``sorted``
        makes (``sort_order``, no gradient): each item's gradient flows back
        through indexing.  ``d.items()``, ``d.keys()`` and ``d.values()`` of a
        dict are read by key."""
        d = self.d
        seq = self.read_items(node.args[0], node, "sorted_items")
        opts = {k.arg: k.value for k in node.keywords}
        order = gast.Call(func=_name(d.helper("sort_order", control.sort_order)),
                          args=[_name(seq), opts.get("key", gast.Constant(None, None)),
                                opts.get("reverse", gast.Constant(False, None))],
                          keywords=[])
        index = d.namer.fresh("sorted_index")
        comp = gast.ListComp(elt=gast.Subscript(value=_name(seq), slice=_name(index),
                                                ctx=gast.Load()),
                             generators=[gast.comprehension(
                                 target=_name(index, gast.Store()), iter=order, ifs=[],
                                 is_async=0)])
        return gast.copy_location(comp, node)

    def max_by(self, node):
        """``max(xs, key=f)`` (``min``, ``default=v``): the item at the position
        ``pick_index`` finds (no gradient: the key's derivative plays no part),
        read by indexing, so that its gradient goes to the item picked::

            best = max(xs, key=f)     ->     seq = list(xs)
                                             at = pick_index(seq, f, "max", False)
                                             best = seq[at]
        """
        d = self.d
        which = next((w for w in ("max", "min") if d.is_builtin(node.func, w)), None)
        opts = {k.arg: k.value for k in node.keywords}
        if which is None or not opts or any(k not in ("key", "default") for k in opts) \
                or not node.args or any(isinstance(a, gast.Starred) for a in node.args) \
                or (len(node.args) > 1 and "default" in opts):
            return None
        if len(node.args) == 1:
            seq = self.read_items(node.args[0], node, "candidates")
        else:
            seq = d.namer.fresh("candidates")
            self.pre.append(_assign(_name(seq, gast.Store()), self.visit(gast.List(
                elts=list(node.args), ctx=gast.Load())), node))
        key = opts.get("key", gast.Constant(None, None))
        if not isinstance(key, (gast.Name, gast.Constant, gast.Lambda)):
            held = d.namer.fresh("key_function")
            self.pre.append(_assign(_name(held, gast.Store()), self.visit(key), node))
            key = _name(held)
        default = None
        if "default" in opts:
            default = d.namer.fresh("default")
            self.pre.append(_assign(_name(default, gast.Store()), self.visit(opts["default"]),
                                    node))
        at = d.namer.fresh("picked")
        self.pre.append(_assign(_name(at, gast.Store()), gast.Call(
            func=_name(d.helper("pick_index", control.pick_index)),
            args=[_name(seq), key, gast.Constant(which, None),
                  gast.Constant(default is not None, None)], keywords=[]), node))
        item = gast.copy_location(gast.Subscript(value=_name(seq), slice=_name(at),
                                                 ctx=gast.Load()), node)
        if default is None:
            return item
        return self.visit(gast.copy_location(gast.IfExp(
            test=gast.Compare(left=_name(at), ops=[gast.GtE()],
                              comparators=[gast.Constant(0, None)]),
            body=item, orelse=_name(default)), node))

    def read_items(self, it, node, base):
        """A name bound (by statements put before the call) to the list of
        what ``sorted``, ``max`` or ``min`` reads from ``it``."""
        d = self.d
        view = d.mapping_view(it)
        seq = d.namer.fresh(base)
        if view is not None:
            mapping, method = view
            keys = gast.Call(func=_name(d.runtime_name("mapping_keys")), args=[mapping],
                             keywords=[])
            key = d.namer.fresh("key")
            value = gast.Subscript(value=clone_name(mapping), slice=_name(key),
                                   ctx=gast.Load())
            elt = {"keys": _name(key), "values": value,
                   "items": gast.Tuple(elts=[_name(key), value], ctx=gast.Load())}[method]
            if not isinstance(mapping, gast.Name):
                held = d.namer.fresh("mapping")
                self.pre.append(_assign(_name(held, gast.Store()), self.visit(mapping), node))
                mapping = _name(held)
                keys.args = [mapping]
                value.value = _name(held)
            it = gast.ListComp(elt=elt, generators=[gast.comprehension(
                target=_name(key, gast.Store()), iter=keys, ifs=[], is_async=0)])
            gast.copy_location(it, node)
        elif not isinstance(it, (gast.ListComp, gast.GeneratorExp, gast.List)):
            # what sorted reads: a list of the items (a dict's keys, an array's rows)
            it = gast.copy_location(gast.Call(func=_name("list"), args=[it], keywords=[]),
                                    node)
        self.pre.append(_assign(_name(seq, gast.Store()), self.visit(it), node))
        return seq

    def visit_ListComp(self, node):
        # the element is rewritten inside the loop that computes it (it may
        # read the loop's variables: a nested comprehension)
        return _name(self.d.comprehension(node, self.pre))

    def visit_GeneratorExp(self, node):
        return _name(self.d.comprehension(node, self.pre))

    def visit_DictComp(self, node):
        return _name(self.d.comprehension(node, self.pre))


nondifferentiable(control.sort_order, control.reduce_start)


def _dict_literal(d, node):
    """``{"a": x, "b": y}`` for ``dict(a=x, b=y)``, ``dict([("a", x), ("b", y)])``
    or ``dict({"a": x}, b=y)`` (the builtin ``dict``), else None."""
    if not d.is_builtin(node.func, "dict") or any(k.arg is None for k in node.keywords):
        return None
    keys, values = [], []
    if len(node.args) == 1 and isinstance(node.args[0], gast.Dict) \
            and None not in node.args[0].keys:              # dict({"a": x}, b=y)
        keys, values = list(node.args[0].keys), list(node.args[0].values)
    elif node.args:
        pairs = node.args[0]
        if len(node.args) != 1 or not isinstance(pairs, (gast.List, gast.Tuple)) or not all(
                isinstance(p, (gast.Tuple, gast.List)) and len(p.elts) == 2
                for p in pairs.elts):
            return None
        for p in pairs.elts:
            keys.append(p.elts[0])
            values.append(p.elts[1])
    for k in node.keywords:
        keys.append(gast.Constant(k.arg, None))
        values.append(k.value)
    return gast.copy_location(gast.Dict(keys=keys, values=values), node)


def _map_as_comprehension(node, namer):
    names = [namer.fresh("item") for _ in node.args[1:]]
    call = gast.Call(func=node.args[0], args=[_name(n) for n in names], keywords=[])
    gast.copy_location(call, node)
    target = _name(names[0], gast.Store()) if len(names) == 1 else gast.Tuple(
        elts=[_name(n, gast.Store()) for n in names], ctx=gast.Store())
    it = node.args[1] if len(names) == 1 else gast.Call(
        func=_name("zip"), args=node.args[1:], keywords=[])
    comp = gast.ListComp(elt=call, generators=[gast.comprehension(
        target=target, iter=it, ifs=[], is_async=0)])
    return gast.copy_location(comp, node)


def clone_name(node):
    return _name(node.id) if isinstance(node, gast.Name) else node
