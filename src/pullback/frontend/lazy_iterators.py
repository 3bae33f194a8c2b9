"""Lazy iterators kept in a name: what pullback cannot run where they are made.

pullback runs a generator expression, a ``map`` and a generator of the
user's as the list of what they give, where they are made; Python runs them
when they are consumed, and once.  The two agree when nothing the iterator
reads changes in between and one reader uses it up.  Otherwise the value and
the gradient would both differ from Python's, silently, so this check (run
before ``desugar``) refuses, naming the line:

- a name the iterator reads rebound, or an array it reads written into,
  between where it is made and where it is read;
- an iterator kept in a name read twice, or read in a loop it was not made
  in (Python's second reader finds it used up; ``next`` is followed apart,
  by ``next_calls``);
- a generator expression kept somewhere else than a name (a list of
  generators made in a comprehension, each reading the comprehension's
  variable when consumed)::

    s = x[0]
    gen = (s * v for v in x[1:])      refused: `s` is rebound at line 4, before
    s = x[1] * 3.0                    `gen` is read; Python's generator reads the
    return sum(gen)                   new `s`

>>> from pullback.testing import function_from_source
>>> from pullback.frontend.parse import parse
>>> f = function_from_source('''
... def f(x):
...     g = (v * v for v in x)
...     return sum(g) + sum(g)
... ''')
>>> try:
...     check_lazy_iterators(parse(f).tree, parse(f), set(), lambda n, b: n.id == b)
... except Exception as err:
...     print(str(err).splitlines()[0])
pullback cannot differentiate `g` read twice: it holds a generator or a `map`, which its first reader uses up (Python's second reader finds it empty), and pullback runs it as a list made where it is made.
"""
from __future__ import annotations

import gast

from ..errors import UnsupportedSyntaxError

__all__ = ["check_lazy_iterators"]

_HINT = ("Make it a list where it is made (`g = [...]`, `g = list(map(...))`) to read it "
         "more than once or after changing what it reads, or consume it where it is made "
         "(`total = sum(v * s for v in x)`).")


def check_lazy_iterators(fn, parsed, generators, is_builtin):
    """Raise for a lazy iterator of ``fn`` that pullback's eager reading would
    get wrong (``generators``: the names of ``fn``'s nested generator
    functions; ``is_builtin(node, name)``: whether ``node`` names the builtin)."""
    order = _positions(fn)
    nested = {n.name: n for n in gast.walk(fn) if isinstance(n, gast.FunctionDef)
              and n.name in generators}
    stepped = {n.args[0].id for n in gast.walk(fn) if isinstance(n, gast.Call)
               and is_builtin(n.func, "next") and n.args and isinstance(n.args[0], gast.Name)}
    _check_places(fn, parsed)
    for stmt in _statements(fn.body):
        if not (isinstance(stmt, gast.Assign) and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], gast.Name)):
            continue
        free = _free_names(stmt.value, nested, is_builtin)
        if free is None:
            continue
        name = stmt.targets[0].id
        reads = [n for n in gast.walk(fn) if isinstance(n, gast.Name) and n.id == name
                 and isinstance(n.ctx, gast.Load)]
        if not reads:
            continue
        first = min(reads, key=lambda n: order.get(id(n), (0, 0)))
        if name not in stepped:
            loops = _loops_around(fn, first)
            if len(reads) > 1 or any(not _contains(loop, stmt) for loop in loops):
                raise UnsupportedSyntaxError(
                    f"pullback cannot differentiate `{name}` read "
                    + ("twice" if len(reads) > 1 else "in a loop it was not made in")
                    + ": it holds a generator or a `map`, which its first reader uses up "
                    "(Python's second reader finds it empty), and pullback runs it as a "
                    "list made where it is made.", parsed.location(stmt), _HINT)
        start, end = order[id(stmt)], order.get(id(first), (0, 0))
        for other in _statements(fn.body):
            if other is stmt or not (start < order[id(other)] < end):
                continue
            changed = _changed(other) & free
            if changed:
                what = sorted(changed)[0]
                raise UnsupportedSyntaxError(
                    f"pullback cannot differentiate `{name}`: it holds a generator or a `map` "
                    f"that reads `{what}`, which line {other.lineno} changes before `{name}` "
                    "is read; Python's generator runs when it is read and sees the change, "
                    "pullback runs it where it is made.", parsed.location(stmt), _HINT)


def _check_places(fn, parsed):
    """A generator expression kept anywhere but a name, a call's argument, a
    loop's sequence or a ``return`` (``[(v * i for v in x) for i in r]``)."""
    allowed = set()
    for node in gast.walk(fn):
        if isinstance(node, gast.Call):
            allowed.update(id(a.value if isinstance(a, gast.Starred) else a) for a in node.args)
            allowed.update(id(k.value) for k in node.keywords)
        elif isinstance(node, (gast.For, gast.comprehension)):
            allowed.add(id(node.iter))
        elif isinstance(node, (gast.Assign, gast.Return, gast.Expr)) and node.value is not None:
            allowed.add(id(node.value))
    for node in gast.walk(fn):
        if isinstance(node, gast.GeneratorExp) and id(node) not in allowed:
            raise UnsupportedSyntaxError(
                "pullback cannot differentiate a generator expression kept in a container: "
                "Python runs it when it is consumed, reading the names it uses then (a "
                "comprehension's variable has moved on), and pullback runs it where it is "
                "made.", parsed.location(node),
                "Make a list instead (`[v * i for v in x]`), or consume it where it is made.")


def _free_names(value, nested, is_builtin):
    """The names a lazy iterator ``value`` reads when it runs, or None when
    ``value`` is not one (a generator expression, ``map(...)``, a call of a
    generator function of ``fn``'s)."""
    if isinstance(value, gast.GeneratorExp):
        bound = {n.id for g in value.generators for n in gast.walk(g.target)
                 if isinstance(n, gast.Name)}
        return {n.id for n in gast.walk(value) if isinstance(n, gast.Name)
                and isinstance(n.ctx, gast.Load)} - bound
    if not isinstance(value, gast.Call):
        return None
    names = {n.id for n in gast.walk(value) if isinstance(n, gast.Name)
             and isinstance(n.ctx, gast.Load)}
    if is_builtin(value.func, "map"):
        return names
    if isinstance(value.func, gast.Name) and value.func.id in nested:
        gen = nested[value.func.id]
        local = {a.id for a in gen.args.args} | {
            n.id for n in gast.walk(gen) if isinstance(n, gast.Name)
            and isinstance(n.ctx, gast.Store)}
        return names | ({n.id for n in gast.walk(gen) if isinstance(n, gast.Name)
                         and isinstance(n.ctx, gast.Load)} - local)
    return None


def _changed(stmt):
    """Names ``stmt`` (not what it nests) binds or writes into."""
    out = set()
    targets = stmt.targets if isinstance(stmt, gast.Assign) else \
        [stmt.target] if isinstance(stmt, (gast.AugAssign, gast.AnnAssign, gast.For)) else []
    for t in targets:
        root = t
        while isinstance(root, (gast.Subscript, gast.Attribute, gast.Starred)):
            root = root.value
        out.update(n.id for n in gast.walk(root) if isinstance(n, gast.Name))
    return out


def _statements(stmts):
    for s in stmts:
        yield s
        if isinstance(s, gast.FunctionDef) or isinstance(s, gast.ClassDef):
            continue
        for field in ("body", "orelse", "finalbody"):
            yield from _statements(getattr(s, field, None) or [])
        for handler in getattr(s, "handlers", None) or []:
            yield from _statements(handler.body)


def _positions(fn):
    return {id(n): (getattr(n, "lineno", 0), getattr(n, "col_offset", 0))
            for n in gast.walk(fn) if hasattr(n, "lineno")}


def _loops_around(fn, node):
    """The loops (statements and comprehensions) of ``fn`` that hold ``node``."""
    out = []
    for loop in gast.walk(fn):
        if isinstance(loop, (gast.For, gast.While, gast.ListComp, gast.SetComp,
                             gast.DictComp, gast.GeneratorExp)) and loop is not node:
            body = loop.body if isinstance(loop, (gast.For, gast.While)) else \
                [loop.elt] if hasattr(loop, "elt") else [loop.key, loop.value]
            if any(n is node for part in body for n in gast.walk(part)):
                out.append(loop)
    return out


def _contains(loop, stmt):
    return any(n is stmt for n in gast.walk(loop))
