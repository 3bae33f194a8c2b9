"""List methods that change a list in place, written as new lists.

A list the function makes itself (every binding of its name is a display,
a comprehension, ``list(...)`` or ``sorted(...)``) that no other name,
container, attribute or call holds, changed by ``.extend``, ``.pop``,
``.insert``, ``.reverse``, ``.sort``, ``.remove``, ``.clear`` or ``del
xs[i]``, is rebound to the list the method leaves: no one else can see the
difference, and the passes after this one differentiate lists that are read
and rebuilt (``append`` stays as it is: ``analyses``' APPEND)::

    xs.extend(e)            ->  tail = list(e); for item in tail: xs.append(item)
    v = xs.pop()            ->  v = xs[-1]; xs = xs[:-1]
    v = a * xs.pop(i) + 1   ->  k = range(len(xs))[i]; popped = xs[k]
                                xs = xs[:k] + xs[k + 1:]; v = a * popped + 1
    xs.insert(i, v)         ->  xs = xs[:i] + [v] + xs[i:]
    xs.reverse()            ->  xs = xs[::-1]
    xs.sort(key=k)          ->  xs = sorted(xs, key=k)
    del xs[i]               ->  (as xs.pop(i), the value unused)
    del xs[a:b]             ->  start, stop = deleted_span(len(xs), a, b)
                                xs = xs[:start] + xs[stop:]

(``range(len(xs))[i]`` is the position ``i`` names, with ``pop``'s
``IndexError`` where there is none; ``a + b`` of lists is written as
``new = list(a)`` and ``new.append(item)`` for each item of ``b``, which
forward mode follows too.)  ``collections.deque(it, maxlen=k)``
bound once is such a list too, kept to its last ``k`` items: ``append``,
``appendleft``, ``pop``, ``popleft``, ``extend``, ``clear``, ``rotate``,
``reverse`` and ``remove`` (a sliding window; iterating it, ``len``,
indexing and ``sum`` read the list).

Cost: each change makes a new list, whose adjoint is as long as the list,
so a loop popping a stack of n items costs O(n**2) in the adjoint (n = 1,000:
4.5 s); ``append`` alone stays O(1) (the analyses' APPEND, undone by a pop).

Refused, naming the line: such a list handed on (``ys = xs``, put in a
container or an attribute, passed to a function other than ``len``,
``sum``, ``sorted``, ``list``, ``min``, ``max``, ... and NumPy's, captured by
a nested function), changed while a loop runs over it, or a ``pop`` inside
a condition or next to another read of the list in one statement (its
place in Python's order would move), ``del`` of a slice with a step.  A deque used otherwise (returned,
``extendleft``) and a list the function does not make (an argument) are
left as they are (``analyses.op_resolver`` refuses a list's method).

>>> from pullback.testing import function_from_source
>>> from pullback.backend.codegen import unparse
>>> from pullback.frontend.parse import parse
>>> from pullback.ir.naming import Namer
>>> f = function_from_source('''
... def f(x):
...     xs = [x, 2.0 * x]
...     xs.extend([x * x, 3.0])
...     v = xs.pop(0)
...     xs.insert(1, v)
...     return v * xs[-1]
... ''')
>>> parsed = parse(f)
>>> rewrite_list_methods(parsed.tree, Namer.for_tree(parsed.tree, ()), parsed)
>>> print(unparse(parsed.tree).strip())
def f(x):
    xs = [x, 2.0 * x]
    xs.append(x * x)
    xs.append(3.0)
    popped = xs[0]
    xs = list_1(xs[1:])
    v = popped
    xs_new = list_1(xs[:1])
    xs_new.append(v)
    for item in xs[1:]:
        xs_new.append(item)
    xs = xs_new
    return v * xs[-1]
"""
from __future__ import annotations

import copy

import gast

from ..ir.build import closure_name, located, name as _name
from ..ir.walk import replace_node, scope_nodes
from ..rules.registry import nondifferentiable
from ..runtime.objects import deleted_span, rotation_start, window_start
from .list_owners import DEQUE_METHODS, LIST_METHODS, ancestors, owned_lists

__all__ = ["rewrite_list_methods"]

def rewrite_list_methods(fn: gast.FunctionDef, namer, parsed) -> None:
    """Rewrite, in the FunctionDef ``fn`` (in place), the list methods of the
    module docstring."""
    kinds = owned_lists(fn, parsed)
    if kinds:
        parents = {id(c): p for p in gast.walk(fn) for c in gast.iter_child_nodes(p)}
        _Rewrite(kinds, namer, parsed, parents).block_of(fn)



def _expr(template, **subs):
    """The expression ``template`` with each name ``subs`` gives replaced by
    (a copy of) its node; a string value is a name."""
    tree = gast.parse(template, mode="eval")
    for parent in list(gast.walk(tree)):
        for field, value in gast.iter_fields(parent):
            items = value if isinstance(value, list) else [value]
            for k, child in enumerate(items):
                if isinstance(child, gast.Name) and child.id in subs:
                    new = subs[child.id]
                    new = _name(new) if isinstance(new, str) else copy.deepcopy(new)
                    if isinstance(value, list):
                        value[k] = new
                    else:
                        setattr(parent, field, new)
    return tree.body


class _Rewrite:
    def __init__(self, kinds, namer, parsed, parents):
        self.kinds, self.namer, self.parsed, self.parents = kinds, namer, parsed, parents
        self.maxlen = {}

    def helper(self, obj, base):
        return closure_name(self.namer, self.parsed, base, obj)

    def block_of(self, node):
        for field in ("body", "orelse", "finalbody"):
            stmts = getattr(node, field, None)
            if isinstance(stmts, list) and stmts and isinstance(stmts[0], gast.stmt):
                setattr(node, field, self.block(stmts))
        for h in getattr(node, "handlers", None) or []:
            h.body = self.block(h.body)

    def block(self, stmts):
        out = []
        for stmt in stmts:
            if not isinstance(stmt, (gast.FunctionDef, gast.ClassDef)):
                self.block_of(stmt)
            out.extend(located(s, stmt) for s in self.statement(stmt))
        return out

    def statement(self, stmt):
        if isinstance(stmt, gast.Delete):
            return self.delete(stmt)
        if isinstance(stmt, gast.Assign) and isinstance(stmt.targets[0], gast.Name) \
                and self.kinds.get(stmt.targets[0].id) == "deque":
            return self.made_deque(stmt.targets[0].id, stmt.value)
        if isinstance(stmt, (gast.If, gast.While, gast.For, gast.With, gast.Try)):
            own = [stmt.test] if isinstance(stmt, (gast.If, gast.While)) else \
                [stmt.iter] if isinstance(stmt, gast.For) else []
        elif isinstance(stmt, (gast.FunctionDef, gast.ClassDef)):
            own = []
        else:
            own = [stmt]
        calls = [c for e in own for c in scope_nodes(e) if isinstance(c, gast.Call)
                 and isinstance(c.func, gast.Attribute) and isinstance(c.func.value, gast.Name)
                 and c.func.value.id in self.kinds and c.func.attr in (
                     DEQUE_METHODS if self.kinds[c.func.value.id] == "deque"
                     else LIST_METHODS)]
        if not calls:
            return [stmt]
        call = calls[0]
        n, method = call.func.value.id, call.func.attr
        if isinstance(stmt, gast.Expr) and stmt.value is call:
            return self.method(n, method, call, None)
        value = self.namer.fresh("popped")
        if method not in ("pop", "popleft") or len(calls) > 1 or not isinstance(
                stmt, (gast.Assign, gast.AugAssign, gast.Expr, gast.Return)) or any(
                isinstance(up, (gast.IfExp, gast.BoolOp, gast.comprehension, gast.Lambda))
                for up in self._ancestors_within(call, stmt)) or sum(
                isinstance(m, gast.Name) and m.id == n for m in gast.walk(stmt)) > 1:
            raise self.parsed.unsupported(
                call, f"`{n}.{method}()` inside a larger expression or condition, or next to "
                      f"another use of `{n}` in the statement",
                f"Make it a statement of its own: `v = {n}.{method}(...)`, then use `v`.")
        before = self.method(n, method, call, value)
        replace_node(stmt, call, _name(value))
        return before + [stmt]

    def _ancestors_within(self, node, stmt):
        for up in ancestors(node, self.parents):
            if up is stmt:
                return
            yield up

    def assign(self, target, template, xs=None, **subs):
        """``target = template`` (the name ``xs`` in it: ``xs``, or ``target``)."""
        return gast.Assign(targets=[_name(target, True)],
                           value=_expr(template, xs=xs or target, **subs), type_comment=None)

    def sliced(self, n, template, **subs):
        """``n = list(template)``: a slice of ``n``, a list of its own (which
        ``analyses.item_stores`` lets the function append to)."""
        return self.assign(n, f"lst({template})", lst=self.helper(list, "list"), **subs)

    def joined(self, n, first, rest, middle=()):
        """``n = first + [*middle] + rest`` for the list expressions ``first``
        and ``rest`` (a template and its names each), written by ``append``
        (in a loop), which both modes follow: ``new = list(first);
        new.append(m); for item in rest: new.append(item); n = new``."""
        new, item = self.namer.fresh(f"{n}_new"), self.namer.fresh("item")
        loop = gast.For(target=_name(item, True), iter=_expr(rest[0], xs=n, **rest[1]),
                        body=[self.appended(new, _name(item))], orelse=[],
                        type_comment=None)
        return [self.assign(new, f"lst({first[0]})", xs=n, lst=self.helper(list, "list"),
                            **first[1])] + [
            self.appended(new, m) for m in middle] + [loop, self.assign(n, "new", new=new)]

    def appended(self, n, value):
        return gast.Expr(value=gast.Call(func=gast.Attribute(
            value=_name(n), attr="append", ctx=gast.Load()), args=[value], keywords=[]))

    def method(self, n, method, call, value):
        """The statements doing ``n.method(*call.args)``; ``value`` names
        what it returns (``pop``)."""
        args, kw = call.args, call.keywords
        if self.kinds[n] == "deque" and method not in ("remove", "reverse"):
            return self.deque_method(n, method, args, value)
        if method == "pop":
            return self.pop(n, args[0] if args else gast.Constant(-1, None), value)
        if method == "extend" and isinstance(args[0], gast.List) and not any(
                isinstance(m, (gast.Starred, gast.Name)) and getattr(m, "id", n) == n
                for m in gast.walk(args[0])):
            return [self.appended(n, e) for e in args[0].elts]    # (each item: an append)
        if method == "extend":
            # (a copy first: `xs.extend(xs)` doubles the list)
            new, item = self.namer.fresh(f"{n}_tail"), self.namer.fresh("item")
            return [self.assign(new, "lst(e)", e=args[0], lst=self.helper(list, "list")),
                    gast.For(target=_name(item, True), iter=_name(new),
                             body=[self.appended(n, _name(item))], orelse=[],
                             type_comment=None)]
        if method == "insert":
            before, i = self.once(args[0], "position")
            return before + self.joined(n, ("xs[:i]", {"i": i}), ("xs[i:]", {"i": i}),
                                        [args[1]])
        if method == "reverse":
            return [self.sliced(n, "lst(xs)[::-1]")]     # (a copy: pinned reads, grown_lists)
        if method == "clear":
            return [self.assign(n, "[]")]
        if method == "sort":
            new = gast.Call(func=_name(self.helper(sorted, "sorted")), args=[_name(n)],
                            keywords=kw)
            return [gast.Assign(targets=[_name(n, True)], value=new, type_comment=None)]
        # remove(v): the first item equal to v
        k = self.namer.fresh("position")
        return [self.assign(k, "xs.index(v)", xs=n, v=args[0])] + self.pop(
            n, _name(k), None, normalized=True)

    def once(self, node, base):
        """``node`` as an expression safe to repeat: itself for a name or a
        constant, else a new name bound first."""
        if isinstance(node, (gast.Name, gast.Constant)):
            return [], node
        k = self.namer.fresh(base)
        return [gast.Assign(targets=[_name(k, True)], value=node, type_comment=None)], _name(k)

    def pop(self, n, index, value, normalized=False):
        """``value = n.pop(index)`` (``value`` None: ``del n[index]``; with
        ``normalized``, ``index`` is a name of a position in the list)."""
        out = []
        if not (isinstance(index, gast.Constant) and isinstance(index.value, int)
                or normalized):
            k = self.namer.fresh("position")
            out.append(self.assign(k, "rng(ln(xs))[i]", xs=n, i=index,
                                   rng=self.helper(range, "range"), ln=self.helper(len, "len")))
            index = _name(k)
        if value is not None:
            out.append(self.assign(value, "xs[i]", xs=n, i=index))
        else:
            out.append(gast.Expr(value=_expr("xs[i]", xs=n, i=index)))   # (IndexError)
        if isinstance(index, gast.Constant) and index.value in (0, -1):
            return out + [self.sliced(n, "xs[1:]" if index.value == 0 else "xs[:-1]")]
        return out + self.joined(n, ("xs[:i]", {"i": index}), ("xs[i + 1:]", {"i": index}))

    def delete(self, stmt):
        out = []
        for t in stmt.targets:
            if isinstance(t, gast.Subscript) and isinstance(t.value, gast.Name) \
                    and t.value.id in self.kinds:
                if isinstance(t.slice, gast.Slice) and t.slice.step is None:
                    out.extend(self.delete_span(t.value.id, t.slice))
                    continue
                if isinstance(t.slice, gast.Slice):
                    raise self.parsed.unsupported(
                        stmt, f"`del` of a slice with a step of `{t.value.id}`",
                        f"Build the list of the items you keep: `kept = {t.value.id}[:i]`, then "
                        f"`kept.append(v)` for each `v` you keep.")
                out.extend(self.pop(t.value.id, t.slice, None))
            else:
                out.append(gast.Delete(targets=[t]))
        return out

    def delete_span(self, n, span):
        """``del n[a:b]``: the items before and after the span joined."""
        start, stop = self.namer.fresh("start"), self.namer.fresh("stop")
        bounds = gast.Call(func=_name(self.helper(deleted_span, "deleted_span")), args=[
            _expr("ln(xs)", xs=n, ln=self.helper(len, "len"))] + [
            p if p is not None else gast.Constant(None, None) for p in (span.lower, span.upper)],
            keywords=[])
        return [gast.Assign(targets=[gast.Tuple(elts=[_name(start, True), _name(stop, True)],
                                                ctx=gast.Store())], value=bounds,
                            type_comment=None)] \
            + self.joined(n, ("xs[:k]", {"k": start}), ("xs[k:]", {"k": stop}))

    # -- deques -----------------------------------------------------------------

    def made_deque(self, n, call):
        items = call.args[0] if call.args else gast.List(elts=[], ctx=gast.Load())
        maxlen = call.args[1] if len(call.args) > 1 else next(
            (k.value for k in call.keywords if k.arg == "maxlen"), gast.Constant(None, None))
        before, maxlen = self.once(maxlen, f"{n}_maxlen")
        self.maxlen[n] = maxlen
        return before + [self.assign(n, "lst(e)", e=items, lst=self.helper(list, "list"))] \
            + self.trimmed(n)

    def trimmed(self, n):
        """``n`` kept to its last ``maxlen`` items."""
        if isinstance(self.maxlen[n], gast.Constant) and self.maxlen[n].value is None:
            return []
        return [self.sliced(n, "xs[start(ln(xs), k):]", k=self.maxlen[n],
                            start=self.helper(window_start, "window_start"),
                            ln=self.helper(len, "len"))]

    def deque_method(self, n, method, args, value):
        if method in ("pop", "popleft"):
            return self.pop(n, gast.Constant(-1 if method == "pop" else 0, None), value)
        if method == "clear":
            return [self.assign(n, "[]")]
        if method == "appendleft":
            return self.joined(n, ("[]", {}), ("xs", {}), [args[0]]) + [
                self.sliced(n, "xs[:k]", k=self.maxlen[n])]
        if method == "append":
            return [self.appended(n, args[0])] + self.trimmed(n)
        if method == "rotate":
            k = self.namer.fresh("start")
            return [self.assign(k, "start(ln(xs), r)", xs=n, r=args[0] if args else
                                gast.Constant(1, None), ln=self.helper(len, "len"),
                                start=self.helper(rotation_start, "rotation_start"))] \
                + self.joined(n, ("xs[k:]", {"k": k}), ("xs[:k]", {"k": k}))
        new, item = self.namer.fresh(f"{n}_tail"), self.namer.fresh("item")
        return [self.assign(new, "lst(e)", e=args[0], lst=self.helper(list, "list")),
                gast.For(target=_name(item, True), iter=_name(new),
                         body=[self.appended(n, _name(item))] + self.trimmed(n), orelse=[],
                         type_comment=None)]


nondifferentiable(window_start)
nondifferentiable(rotation_start)
nondifferentiable(deleted_span)
