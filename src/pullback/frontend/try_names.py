r"""What a ``try`` body binds and reads, and the refusal of a body whose
partial work a handler that goes on would let the function see
(``exceptions`` lowers the ``try`` with these facts).

``bound_names`` lists the names statements bind, ``surely_bound`` those bound
whenever they run to their end (a branch that raises binds them all),
``reads_before_bound`` those read before being bound, and ``first_use``
whether a handler reads a name before assigning it::

>>> import gast
>>> body = gast.parse("y = 1.0 / x\nif y > 1.0:\n    z = y\nelse:\n    raise ValueError").body
>>> bound_names(body), sorted(surely_bound(body))
(['y', 'z'], ['y', 'z'])
>>> reads = set(); reads_before_bound(body, set(), reads, set()); sorted(reads)
['ValueError', 'x']
>>> first_use(gast.parse("z = z + 1.0").body, "z")
'read'
"""
from __future__ import annotations

import gast

__all__ = ["MUTATING_METHODS", "raising", "check_partial_work", "walk_here", "in_loop",
           "bound_names", "EVERY_NAME", "surely_bound", "reads_before_bound", "first_use",
           "base_name"]

MUTATING_METHODS = {"append", "extend", "insert", "pop", "remove", "clear", "update",
                    "setdefault", "popitem", "sort", "reverse", "add", "discard", "fill",
                    "resize", "put", "itemset", "setfield", "partition", "__setitem__"}


def raising(h):
    """Whether handler ``h`` ends by raising (the function then stops, and
    the body's partial work is never differentiated)."""
    return bool(h.body) and isinstance(h.body[-1], gast.Raise)


def check_partial_work(parsed, stmt, body, assigned, outer_reads):
    """Refuse a ``try`` whose body's partial work a handler that goes on
    would let the function see (``outer_reads``: the function's loads)."""
    inside = {id(n) for s in body for n in gast.walk(s)}
    handled = [h for h in stmt.handlers]
    for s in body:
        for n in gast.walk(s):
            target = None
            if isinstance(n, (gast.Subscript, gast.Attribute)) \
                    and isinstance(n.ctx, (gast.Store, gast.Del)):
                target = base_name(n)
            elif isinstance(n, gast.AugAssign) and isinstance(n.target, gast.Name):
                target = n.target.id
            elif isinstance(n, gast.Call) and isinstance(n.func, gast.Attribute) \
                    and n.func.attr in MUTATING_METHODS:
                target = base_name(n.func.value)
            elif isinstance(n, (gast.Global, gast.Nonlocal)):
                target = n.names[0]
            if target is not None and (target not in assigned or isinstance(
                    n, (gast.AugAssign, gast.Global, gast.Nonlocal))):
                raise parsed.unsupported(
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
        atomic = set(bound_names([last])) - set(bound_names(body[:-1]))
    for name in assigned:
        if name in atomic:
            continue
        for h in handled:
            if raising(h):
                continue
            first = first_use(h.body, name)
            if first == "read":
                raise parsed.unsupported(
                    h, f"an `except` handler that reads `{name}`, which the `try` body "
                       "assigns", "Python would see the value the body had reached: "
                       "assign it before the `try`.")
            if first is None and any(n.id == name and id(n) not in inside
                                     for n in outer_reads):
                raise parsed.unsupported(
                    h, f"an `except` handler after which `{name}` may hold what the "
                       "`try` body had reached", f"Assign `{name}` in the handler too.")


def walk_here(node):
    """The nodes of ``node`` outside the functions and classes it defines."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        for child in gast.iter_child_nodes(n):
            if not isinstance(child, (gast.FunctionDef, gast.Lambda, gast.ClassDef)):
                stack.append(child)


def in_loop(top, target):
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


def bound_names(stmts):
    """The names ``stmts`` bind, in order of first binding."""
    seen = []
    for s in stmts:
        for n in walk_here(s):
            if isinstance(n, gast.Name) and isinstance(n.ctx, (gast.Store, gast.Del)) \
                    and n.id not in seen and not getattr(n, "handler_name", False):
                seen.append(n.id)
            if isinstance(n, gast.FunctionDef) and n.name not in seen:
                seen.append(n.name)
    for s in stmts:
        if isinstance(s, gast.FunctionDef) and s.name not in seen:
            seen.append(s.name)
    return seen


EVERY_NAME = None     # every name: what a block that ends by raising or returning leaves bound


def surely_bound(stmts):
    """The names bound whenever ``stmts`` run to their end (a branch that
    raises or returns binds them all)."""
    sure = set()
    for s in stmts:
        if isinstance(s, (gast.Raise, gast.Return, gast.Break, gast.Continue)):
            return EVERY_NAME
        if isinstance(s, gast.Assign):
            sure |= {n.id for t in s.targets for n in gast.walk(t)
                     if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
        elif isinstance(s, (gast.AugAssign, gast.AnnAssign)) and isinstance(s.target, gast.Name):
            sure.add(s.target.id)
        elif isinstance(s, (gast.FunctionDef, gast.ClassDef)):
            sure.add(s.name)
        elif isinstance(s, gast.If):
            a, b = surely_bound(s.body), surely_bound(s.orelse)
            if a is EVERY_NAME and b is EVERY_NAME:
                return EVERY_NAME
            sure |= b if a is EVERY_NAME else a if b is EVERY_NAME else a & b
    return sure


def reads_before_bound(stmts, bound, reads, skip):
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
            reads_before_bound(s.body, bound, reads, skip)
            reads_before_bound(s.orelse, bound, reads, skip)
        elif isinstance(s, (gast.For, gast.While)):
            reads |= loads(getattr(s, "iter", None)) - bound
            reads |= loads(getattr(s, "test", None)) - bound
            inner = bound | {n.id for n in gast.walk(s.target) if isinstance(n, gast.Name)} \
                if isinstance(s, gast.For) else bound
            reads_before_bound(s.body, inner, reads, skip)
            reads_before_bound(s.orelse, bound, reads, skip)
        elif isinstance(s, gast.Assign):
            reads |= loads(s.value) - bound
            reads |= set().union(*(loads(t) for t in s.targets)) - bound
        else:
            reads |= loads(s) - bound
        now = surely_bound([s])
        if now is not EVERY_NAME:
            bound |= now


def first_use(stmts, name):
    """``"read"`` if ``stmts`` (in order, top level first) may read ``name``
    before assigning it, ``"write"`` if a top-level statement assigns it
    first (or the statements end by raising or returning), else None."""
    for s in stmts:
        if isinstance(s, (gast.Raise, gast.Return)):
            # the function stops here: only what the statement itself reads counts
            if any(isinstance(n, gast.Name) and n.id == name and isinstance(n.ctx, gast.Load)
                   for n in gast.walk(s)):
                return "read"
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


def base_name(node):
    while isinstance(node, (gast.Subscript, gast.Attribute)):
        node = node.value
    return node.id if isinstance(node, gast.Name) else "an object"
