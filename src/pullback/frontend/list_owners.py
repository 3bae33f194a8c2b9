"""Which lists a function changes by their methods and only one name holds.

``frontend.list_methods`` rebinds such a list to the list a method leaves
(``xs.pop()`` as ``xs = xs[:-1]``), which is Python's semantics exactly where
no other name, container, attribute, call or nested function holds the list
and no loop runs over it while it changes.  ``owned_lists`` finds the names
bound only to new lists (a display, a comprehension, ``list(...)``,
``sorted(...)``) or once to a ``collections.deque(...)``, and refuses, naming
the line, a use that would let another name see the change (a deque used so
is left as it is: run by Python, which is right where it holds no gradient,
and a deque holding one is refused where it is called).

>>> from pullback.testing import function_from_source
>>> from pullback.frontend.parse import parse
>>> f = function_from_source('''
... def f(x, ys):
...     xs = [x, 2.0 * x]
...     ys.pop()
...     return xs.pop() * len(xs)
... ''')
>>> owned_lists(parse(f).tree, parse(f))
{'xs': 'list'}
"""
from __future__ import annotations

import builtins
import collections

import gast

from ..ir.walk import scope_nodes
from .properties import static_value

__all__ = ["owned_lists", "ancestors", "LIST_METHODS", "DEQUE_METHODS"]

LIST_METHODS = {"extend", "pop", "insert", "reverse", "sort", "remove", "clear"}
DEQUE_METHODS = {"append", "appendleft", "pop", "popleft", "extend", "clear", "rotate",
                 "reverse", "remove"}
# methods that read the list (or copy it) and keep nothing of it
_READS = {"append", "count", "index", "copy"}
# functions that read a list given them and keep nothing of it
_READERS = (len, sum, sorted, list, tuple, min, max, any, all, set, print)
# ... and those that keep it in the iterator they make: only as a loop's iterable
_ITERATORS = (enumerate, zip, reversed, map, iter)


def owned_lists(fn: gast.FunctionDef, parsed) -> dict:
    """``{name: "list" or "deque"}``: the lists ``fn`` changes by their methods
    that only that name holds (``frontend.list_methods``); a use that could
    let another name see a change is refused."""
    changed = {n.func.value.id for n in scope_nodes(fn) if isinstance(n, gast.Call)
               and isinstance(n.func, gast.Attribute) and isinstance(n.func.value, gast.Name)
               and n.func.attr in LIST_METHODS | DEQUE_METHODS}
    changed |= {t.value.id for n in scope_nodes(fn) if isinstance(n, gast.Delete)
                for t in n.targets if isinstance(t, gast.Subscript)
                and isinstance(t.value, gast.Name)}
    changed |= {n.targets[0].id for n in scope_nodes(fn) if isinstance(n, gast.Assign)
                and isinstance(n.targets[0], gast.Name)
                and _is_call_of(n.value, collections.deque, parsed)}
    kinds = {n: k for n in changed for k in [_kind(fn, n, parsed)] if k is not None}
    kinds = {n: k for n, k in kinds.items() if k == "deque" or _uses_list_methods(fn, n)}
    if kinds:
        parents = {id(c): p for p in gast.walk(fn) for c in gast.iter_child_nodes(p)}
        for n, kind in list(kinds.items()):
            refusal = _check_uses(fn, n, kind, parents, parsed)
            if refusal is not None and kind == "list":
                raise refusal
            if refusal is not None:         # (a deque used otherwise: left as it is, run by
                del kinds[n]                #  Python where it holds no gradient)
    return kinds


def _uses_list_methods(fn, n):
    return any(isinstance(c, gast.Call) and isinstance(c.func, gast.Attribute)
               and isinstance(c.func.value, gast.Name) and c.func.value.id == n
               and c.func.attr in LIST_METHODS for c in scope_nodes(fn)) or any(
        isinstance(d, gast.Delete) and any(isinstance(t, gast.Subscript)
                                           and getattr(t.value, "id", None) == n
                                           for t in d.targets) for d in scope_nodes(fn))


def _kind(fn, n, parsed):
    """``"list"`` where every binding of ``n`` makes a new list, ``"deque"``
    where its one binding makes a deque; else None."""
    bindings, other, counted = [], False, set()
    for node in scope_nodes(fn):
        if isinstance(node, gast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], gast.Name) and node.targets[0].id == n:
            bindings.append(node.value)
            counted.add(id(node.targets[0]))
        elif isinstance(node, gast.AugAssign) and isinstance(node.target, gast.Name):
            counted.add(id(node.target))        # `xs += [v]`: the same list, extended
        elif isinstance(node, gast.Name) and node.id == n and id(node) not in counted \
                and isinstance(node.ctx, gast.Store):
            other = True        # a loop variable, a tuple target, `with ... as n`
        elif isinstance(node, (gast.Global, gast.Nonlocal)) and n in node.names:
            other = True
    args = fn.args
    params = args.args + args.kwonlyargs + args.posonlyargs + [
        v for v in (args.vararg, args.kwarg) if v is not None]
    if other or not bindings or any(p.id == n for p in params):
        return None
    if any(_is_call_of(v, collections.deque, parsed) for v in bindings):
        return "deque" if len(bindings) == 1 else None
    if all(isinstance(v, (gast.List, gast.ListComp)) or _is_call_of(v, list, parsed)
           or _is_call_of(v, sorted, parsed) for v in bindings):
        return "list"
    return None


def _is_call_of(value, fn, parsed):
    return isinstance(value, gast.Call) and _static(value.func, parsed) is fn


def _static(node, parsed):
    """What ``node`` names where the function is transformed: a global, a
    captured value, or a builtin (no global or local shadows it)."""
    found = static_value(node, parsed)
    if found is None and isinstance(node, gast.Name) and node.id not in parsed.globals \
            and node.id not in parsed.closure and node.id not in _locals(parsed.tree):
        found = getattr(builtins, node.id, None)
    return found


def _locals(fn):
    return {n.id for n in gast.walk(fn) if isinstance(n, gast.Name)
            and isinstance(n.ctx, (gast.Store, gast.Param))} | {
        a.id for a in fn.args.args + fn.args.kwonlyargs + fn.args.posonlyargs}


def _check_uses(fn, n, kind, parents, parsed):
    """The refusal of a use of the list ``n`` through which another name could
    see it change (module docstring), or None."""
    loops = [node for node in scope_nodes(fn) if isinstance(node, (gast.For, gast.comprehension))
             and any(isinstance(m, gast.Name) and m.id == n for m in gast.walk(node.iter))]
    for node in gast.walk(fn):
        if not (isinstance(node, gast.Name) and node.id == n) \
                or isinstance(node.ctx, gast.Store):
            continue
        why = _handed_on(node, n, kind, parents, parsed, fn)
        if why:
            return parsed.unsupported(
                node, f"a change of the {kind} `{n}` by its methods, where {why}",
                f"Keep `{n}` to this one name, read by item, `len`, `sum` and loops, and "
                f"copy it where another needs it (`ys = list({n})`); or build new lists "
                "instead of changing it.")
    for loop in loops:
        body = loop.body if isinstance(loop, gast.For) else [loop]
        for node in (m for s in body for m in gast.walk(s)):
            if _changes(node, n, kind):
                return parsed.unsupported(
                    node, f"a change of `{n}` while a loop runs over it",
                    f"Loop over a copy: `for v in list({n}):`.")


def _changes(node, n, kind):
    methods = DEQUE_METHODS if kind == "deque" else LIST_METHODS
    return (isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute)
            and isinstance(node.func.value, gast.Name) and node.func.value.id == n
            and node.func.attr in methods | {"append"}) or (
        isinstance(node, gast.Delete) and any(
            isinstance(t, gast.Subscript) and getattr(t.value, "id", None) == n
            for t in node.targets))


def _handed_on(node, n, kind, parents, parsed, fn):
    """Why the load ``node`` of ``n`` lets another name hold the list, or None."""
    parent = parents.get(id(node))
    for up in ancestors(node, parents):
        if isinstance(up, (gast.FunctionDef, gast.Lambda, gast.ClassDef)) and up is not fn:
            return "a nested function or lambda reads it"
    if isinstance(parent, gast.Subscript) and parent.value is node:
        return None                                  # xs[i], xs[i] = v, del xs[i]
    if isinstance(parent, gast.Attribute) and parent.value is node:
        call = parents.get(id(parent))
        ok = DEQUE_METHODS if kind == "deque" else LIST_METHODS | _READS
        if isinstance(call, gast.Call) and call.func is parent and parent.attr in ok:
            return None
        return f"`{n}.{parent.attr}` is used (only {', '.join(sorted(ok))} are followed)"
    if isinstance(parent, gast.Starred):
        node, parent = parent, parents.get(id(parent))
        if isinstance(parent, (gast.List, gast.Tuple, gast.Set)) and isinstance(
                parents.get(id(parent)), (gast.Return, gast.Assign, gast.Expr)):
            return None                              # [*xs, v]: a new list
    if isinstance(parent, gast.Call) and node in parent.args:
        callee = _static(parent.func, parsed)
        if any(callee is f for f in _READERS) or _numpys(callee):
            return None
        if any(callee is f for f in _ITERATORS) and isinstance(
                parents.get(id(parent)), (gast.For, gast.comprehension)):
            return None
        return f"it is passed to `{_dotted(parent.func)}`, which may keep it"
    if isinstance(parent, gast.For) and parent.iter is node:
        return None
    if isinstance(parent, gast.comprehension) and parent.iter is node:
        made = parents.get(id(parent))
        user = parents.get(id(made))
        if not isinstance(made, gast.GeneratorExp) or isinstance(user, gast.Call) and (
                any(_static(user.func, parsed) is f for f in _READERS)
                or _numpys(_static(user.func, parsed))):
            return None
        return "a generator expression that may run later reads it"
    if isinstance(parent, gast.Return) or isinstance(parent, gast.Tuple) and isinstance(
            parents.get(id(parent)), gast.Return):
        return "it is returned (return `list(...)` of it)" if kind == "deque" else None
    if isinstance(parent, (gast.BinOp, gast.Compare, gast.UnaryOp, gast.BoolOp, gast.If,
                           gast.While, gast.IfExp, gast.Assert)) \
            and not isinstance(parent, gast.BoolOp) \
            or isinstance(parent, gast.BoolOp) and isinstance(parents.get(id(parent)), (
                gast.If, gast.While, gast.IfExp, gast.UnaryOp, gast.Assert)):
        return None
    if isinstance(parent, gast.AugAssign) and parent.target is node:
        return None
    return "another name, a container or an attribute could hold it"


def ancestors(node, parents):
    while id(node) in parents:
        node = parents[id(node)]
        yield node


def _numpys(obj):
    module = getattr(obj, "__module__", None) or ""
    return module.split(".")[0] == "numpy" or type(obj).__name__ == "ufunc"


def _dotted(node):
    if isinstance(node, gast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return getattr(node, "id", "...")
