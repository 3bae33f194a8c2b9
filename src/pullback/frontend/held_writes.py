"""Writes into arrays that objects and containers hold, checked before they run.

``p.w[0] = 5.0`` (or ``l[0][0] = v``, ``np.add.at(p.w, i, v)``, ``w = p.w;
w += v``) writes into an array reached from a name through an attribute or
an item.  pullback follows writes into names (an array argument is copied
on entry, a call of a function writing into its argument goes to its
variant), not into what an attribute or an item holds, so where the array
belongs to the caller (an argument holds it, inside an object or a
container) the write would change the caller's array, which a transform
never does (README "Mutation": a transform may run the function more than
once), and the gradient would not see it.  Such a write is refused when it
runs, before it changes anything; one into an array the function made,
held by an object it built (``s = S(np.zeros(3)); s.w[0] = 1.0``), runs as
Python runs it.  A call of a user function that makes such a write into an
object it is given (``hh(p)`` with ``hh`` doing ``p.w[0] = 5.0``, also
through the functions it calls) is checked the same way before the call;
an argument that holds differentiated values is refused when the function
is transformed (``analyses.attributes`` asks ``varied_refusal``)::

    def f(x, p):                     def f(x, p):
        p.w[0] = 5.0         ->          held_array_write(p.w, p, 'p.w', x, p)
        hh(p)                            p.w[0] = 5.0
        ...                              held_arrays_apart((('hh', 'p', p, "(('attr', 'w'),)",
                                             'p.w[0] = 5.0'),), x, p)
                                         hh(p)

>>> from pullback.testing import function_from_source
>>> hh = function_from_source('''
... def hh(p, l):
...     w = p.layers[0].w
...     w[0] = 5.0
...     l[1][0] += 1.0
... ''')
>>> sorted((q, [path for path, _ in found]) for q, found in held_writes(hh).items())
[('l', [(('item', 1),)]), ('p', [(('attr', 'layers'), ('item', 0), ('attr', 'w'))])]
"""
from __future__ import annotations

import copy
import threading
import weakref

import gast

from ..errors import PullbackError, UnsupportedSyntaxError
from ..ir.build import closure_name as _helper
from ..rules.registry import nondifferentiable
from ..runtime.arguments import held_array_write, held_arrays_apart, held_writes_of_value

__all__ = ["held_writes", "guard_held_writes", "varied_refusal"]

nondifferentiable(held_array_write, held_arrays_apart)

_CHANGING = frozenset({"fill", "put", "itemset", "resize", "sort", "partition", "setfield",
                       "byteswap"})
_NESTED = (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ClassDef)


def _walk(stmts):
    work = list(stmts)
    while work:
        node = work.pop()
        yield node
        work.extend(c for c in gast.iter_child_nodes(node) if not isinstance(c, _NESTED))


def _steps(node):
    """``(root name, path)`` of an expression made of attribute reads and
    indexing from a name (``p.layers[0].w``: ``p``, attr layers, item 0,
    attr w), else ``(None, ())``."""
    path = []
    while isinstance(node, (gast.Attribute, gast.Subscript)):
        if isinstance(node, gast.Attribute):
            path.append(("attr", node.attr))
        else:
            index = node.slice
            key = index.value if isinstance(index, gast.Constant) and isinstance(
                index.value, (int, str)) and not isinstance(index.value, bool) else None
            path.append(("item", key))
        node = node.value
    if isinstance(node, gast.Name):
        return node.id, tuple(reversed(path))
    return None, ()


def _aliases(stmts):
    """``{name: (root, path)}`` for the names bound once, by ``w = p.w`` (a
    path of at least one step) or ``for l in p.layers`` (every item)."""
    count, bound = {}, {}
    for node in _walk(stmts):
        if isinstance(node, gast.Name) and isinstance(node.ctx, (gast.Store, gast.Del)):
            count[node.id] = count.get(node.id, 0) + 1
        if isinstance(node, gast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], gast.Name):
            root, path = _steps(node.value)
            if root is not None and path:
                bound[node.targets[0].id] = (root, path)
        elif isinstance(node, (gast.For, gast.comprehension)) \
                and isinstance(node.target, gast.Name):
            root, path = _steps(node.iter)
            if root is not None:
                bound[node.target.id] = (root, path + (("item", None),))
    return {n: v for n, v in bound.items() if count.get(n) == 1}


def _resolve(root, path, aliases, seen=()):
    """``(name, path)`` with the aliases followed back to a name that is not one."""
    if root in aliases and root not in seen:
        base, first = aliases[root]
        return _resolve(base, first + path, aliases, (*seen, root))
    return root, path


def _written_exprs(node):
    """The expressions a statement or a call writes into in place:
    ``t`` of ``t[i] = v``, ``t[i] op= v``, ``t op= v`` (an attribute or a
    name: in place on an array), ``np.add.at(t, ...)``, ``out=t``,
    ``t.fill(v)``."""
    if isinstance(node, (gast.Assign, gast.AugAssign, gast.AnnAssign)):
        targets = node.targets if isinstance(node, gast.Assign) else [node.target]
        for t in targets:
            for n in gast.walk(t):
                if isinstance(n, gast.Subscript) and isinstance(n.ctx, gast.Store):
                    yield n.value
            if isinstance(node, gast.AugAssign) and isinstance(t, (gast.Attribute, gast.Name)):
                yield t
    elif isinstance(node, gast.Call):
        f = node.func
        for k in node.keywords:
            if k.arg == "out":
                yield from (k.value.elts if isinstance(k.value, gast.Tuple) else [k.value])
        if isinstance(f, gast.Attribute) and f.attr == "at" and node.args:
            yield node.args[0]
        if isinstance(f, gast.Attribute) and f.attr in _CHANGING:
            yield f.value


# -- what a function writes through its parameters --------------------------------------

_found = weakref.WeakKeyDictionary()
_local = threading.local()      # the functions this thread is scanning (recursion)
_ROUNDS = 8


def held_writes(fn):
    """``{param: ((path, source line), ...)}``: the writes ``fn`` makes into
    something reached from its parameter by at least one attribute or item
    (``p.w[0] = v``: ``(("attr", "w"),)``), directly or through the user
    functions it calls by name, which run as plain Python where ``fn`` does."""
    fn = getattr(fn, "__pullback_variant__", (fn,))[0]
    try:
        hit = _found.get(fn)
    except TypeError:
        return {}
    if hit is not None:
        return hit
    progress = getattr(_local, "scanning", None)
    if progress is None:
        progress = _local.scanning = []
        _local.so_far, _local.asked = {}, set()
    if fn in progress:
        # recursion: what the outer scan has found so far; it scans again until
        # nothing new is found, so that a write made only through a recursive
        # call's argument (`g(b, a, k - 1)` writing `b.w[0]`) is found for `a`
        _local.asked.add(fn)
        return _local.so_far.get(fn, {})
    from .function_scans import _front
    try:
        parsed, _ = _front(fn)
    except (PullbackError, TypeError, ValueError, SyntaxError, OSError):
        return {}
    progress.append(fn)
    try:
        found = {}
        for _ in range(_ROUNDS):    # (paths that grow each round, `walk(p.kids[0])`, stop)
            _local.so_far[fn] = found
            _local.asked.discard(fn)
            again = _scan(parsed.tree, parsed)
            done = fn not in _local.asked or again == found
            found = again
            if done:
                break
    finally:
        progress.remove(fn)
        _local.so_far.pop(fn, None)
    if not progress:            # (one scanned inside a recursion is scanned again)
        _found[fn] = found
    return found


def _scan(tree, parsed):
    from .function_scans import _known_method, bound_arguments, static_callee
    from .written import written_params
    args = tree.args
    params = [a.id for a in args.args + args.kwonlyargs]
    aliases = _aliases(tree.body)
    local = {n.id for n in _walk(tree.body) if isinstance(n, gast.Name)
             and isinstance(n.ctx, gast.Store)} | set(params)
    found = {}

    def note(expr, stmt, extra=()):
        root, path = _steps(expr)
        if root is None:
            return
        root, path = _resolve(root, path + tuple(extra), aliases)
        if root in params and path and root not in _rebound:
            line = parsed.location(stmt).line or ""
            entry = (path, line.strip())
            if entry not in found.setdefault(root, ()):
                found[root] += (entry,)

    _rebound = {n.id for n in _walk(tree.body) if isinstance(n, gast.Name)
                and isinstance(n.ctx, gast.Store) and n.id in params}
    stmts = {}
    for node in _walk(tree.body):
        if isinstance(node, gast.stmt):
            for n in _walk([node]):
                stmts[id(n)] = node     # (the innermost statement: parents come first)
    for node in _walk(tree.body):
        stmt = stmts.get(id(node), node)
        for expr in _written_exprs(node):
            note(expr, stmt)
        if isinstance(node, gast.Call):
            f = node.func
            if isinstance(f, gast.Attribute) and not _known_method(f.attr):
                # `p.poke()`: a method of the object's class, known when the call runs
                note(f.value, stmt, (("call", f.attr),))
            callee = static_callee(f, parsed, local)
            if callee is None:
                continue
            inner, direct = held_writes(callee), written_params(callee)
            for q, arg in bound_arguments(callee, node).items():
                if isinstance(arg, (tuple, dict)):
                    continue
                for path, line in inner.get(q, ()):
                    note(arg, stmt, path)
                if q in direct:
                    root, path = _steps(arg)
                    if root is not None and (path or root in aliases):
                        note(arg, stmt)
    return found


# -- the pass ---------------------------------------------------------------------------

def guard_held_writes(tree, namer, parsed):
    """Put ``held_array_write`` before each write into what an attribute or an
    item holds, and ``held_arrays_apart`` before each call of a user function
    by name that writes through a parameter (``held_writes``): both refuse,
    when they run, a write into an array the function's arguments hold."""
    from .function_scans import bound_arguments, static_callee
    args = tree.args
    params = [a.id for a in args.args + args.kwonlyargs]
    params += [a.id for a in (args.vararg, args.kwarg) if a is not None]
    if not params:
        return
    aliases = _aliases(tree.body)
    local = {n.id for n in gast.walk(tree) if isinstance(n, gast.Name)
             and isinstance(n.ctx, gast.Store)} | set(params)
    # the parameters' current values: one rebound (a copy on entry) is the function's own
    checks_write = _helper(namer, parsed, "held_array_write", held_array_write)
    checks_call = _helper(namer, parsed, "held_arrays_apart", held_arrays_apart)
    checks_value = _helper(namer, parsed, "held_writes_of_value", held_writes_of_value)

    def arguments():
        return [gast.Name(id=p, ctx=gast.Load(), annotation=None, type_comment=None)
                for p in params]

    def checks(stmt):
        out = []
        roots = [stmt] if not isinstance(stmt, (gast.If, gast.While, gast.For)) else \
            [getattr(stmt, "test", None) or stmt.iter]
        for root_node in roots:
            nodes = list(_walk([root_node])) if root_node is not stmt else \
                [stmt] + [n for n in _walk([stmt]) if isinstance(n, gast.Call)]
            for node in nodes:
                for expr in _written_exprs(node):
                    root, path = _steps(expr)
                    if root is None or not (path or root in aliases):
                        continue
                    if any(isinstance(n, gast.Call) for n in gast.walk(expr)):
                        continue        # (evaluated twice otherwise)
                    text = _text(expr)
                    if root in aliases:
                        base, full = _resolve(root, path, aliases)
                        text = f"{_text(expr)}` (that is, `{_shown(base, full)}"
                    out.append(gast.Expr(value=gast.Call(
                        func=_load(checks_write), args=[
                            _reload(expr), _load(_resolve(root, (), aliases)[0]
                                                 if root in aliases else root),
                            gast.Constant(text, None)] + arguments(), keywords=[])))
                if isinstance(node, gast.Call):
                    out.extend(call_check(node))
        return out

    def call_check(call):
        callee = static_callee(call.func, parsed, local)
        if callee is None and isinstance(call.func, gast.Name) and call.func.id in local \
                and call.args and not any(isinstance(a, gast.Starred) for a in call.args) \
                and all(k.arg is not None for k in call.keywords):
            # `g = hh; g(p)`: a function value, its writes known when it runs
            plain = [a for a in call.args] + [k.value for k in call.keywords]
            if any(_steps(a)[0] is None or any(isinstance(n, gast.Call) for n in gast.walk(a))
                   for a in plain):
                return []
            return [gast.Expr(value=gast.Call(func=_load(checks_value), args=[
                _reload(call.func), gast.Tuple(elts=[_reload(a) for a in call.args],
                                               ctx=gast.Load()),
                gast.Dict(keys=[gast.Constant(k.arg, None) for k in call.keywords],
                          values=[_reload(k.value) for k in call.keywords])] + arguments(),
                keywords=[]))]
        if callee is None:
            return []
        found = held_writes(callee)
        if not found:
            return []
        rows = []
        for q, arg in bound_arguments(callee, call).items():
            if q not in found or isinstance(arg, (tuple, dict)):
                continue
            root, _ = _steps(arg)
            if root is None or any(isinstance(n, gast.Call) for n in gast.walk(arg)):
                continue
            for path, line in found[q]:
                rows.append(gast.Tuple(elts=[
                    gast.Constant(callee.__name__, None), gast.Constant(q, None),
                    _reload(arg), gast.Constant(repr(path), None),
                    gast.Constant(line, None)], ctx=gast.Load()))
        if not rows:
            return []
        return [gast.Expr(value=gast.Call(func=_load(checks_call), args=[
            gast.Tuple(elts=rows, ctx=gast.Load())] + arguments(), keywords=[]))]

    def block(stmts):
        out = []
        for s in stmts:
            if isinstance(s, _NESTED):
                out.append(s)
                continue
            for field in ("body", "orelse", "finalbody"):
                if getattr(s, field, None):
                    setattr(s, field, block(getattr(s, field)))
            if isinstance(s, gast.Try):
                for h in s.handlers:
                    h.body = block(h.body)
            for c in checks(s):
                out.append(_located(c, s))
            out.append(s)
        return out

    tree.body = block(tree.body)


def _shown(root, path):
    return root + "".join(f".{k}" if kind == "attr" else "[...]" if k is None
                          else f"[{k!r}]" for kind, k in path)


def _load(name):
    return gast.Name(id=name, ctx=gast.Load(), annotation=None, type_comment=None)


def _reload(expr):
    out = copy.deepcopy(expr)
    for n in gast.walk(out):
        if hasattr(n, "ctx"):
            n.ctx = gast.Load()
    return out


def _text(node):
    if isinstance(node, gast.Name):
        return node.id
    if isinstance(node, gast.Attribute):
        return f"{_text(node.value)}.{node.attr}"
    if isinstance(node, gast.Subscript):
        index = node.slice
        shown = repr(index.value) if isinstance(index, gast.Constant) else "..."
        return f"{_text(node.value)}[{shown}]"
    return "..."


def _located(stmt, where):
    for node in gast.walk(stmt):
        if getattr(node, "lineno", None) is None and hasattr(where, "lineno"):
            gast.copy_location(node, where)
    return stmt


nondifferentiable(held_writes_of_value)


# -- an argument that carries a gradient ------------------------------------------------

def varied_refusal(fn, bound, varied, parsed, call):
    """The refusal of a call of ``fn`` that writes into what an attribute or
    an item of its parameter holds, where the argument holds differentiated
    values (``p = P(x * 1.0); hh(p)``): the write runs as plain Python and
    the reads after it would be differentiated as if it had not happened (was
    a silent wrong gradient: ``[6, 4]`` where ``[5, 4]`` is right), or None."""
    found = held_writes(fn)
    for q, arg in bound.items():
        args = arg if isinstance(arg, tuple) else (arg,)
        if q not in found:
            continue
        writes = [(path, line) for path, line in found[q] if path[-1][0] != "call"]
        for a in args:
            if writes and isinstance(a, gast.Name) and a.id in varied:
                path, line = writes[0]
                shown = _shown(q, path)
                return UnsupportedSyntaxError(
                    f"pullback cannot differentiate this call of `{fn.__name__}`: it writes "
                    f"into `{shown}` (`{line}`), what an attribute or an item of its "
                    f"parameter `{q}` holds, and here `{a.id}` holds differentiated values; "
                    "such a write is not followed, so the reads of it after the call would "
                    "be differentiated as if it had not happened.", parsed.location(call),
                    f"Make `{fn.__name__}` return the new value (`w = {shown}.copy(); "
                    "w[...] = v; return w`) or a new object, and use that instead of "
                    f"changing `{a.id}` in place.")
    return None
