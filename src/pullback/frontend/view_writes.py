"""Writes through a view inside a loop or a branch, spelled out.

``v = y[1:]`` makes ``v`` a view of ``y``: ``v *= 2`` or ``v[0] = 3`` change
``y``, and a write into ``y`` shows in ``v`` (NumPy).  Where the view is
taken once, at the top of the function, of a local array bound once, and
the two names are only read otherwise (by arithmetic, NumPy reductions and
indexing, never handed on), each write through either one inside a loop or a
branch is written out as the new values of both: the written name gets a new
array, the base a copy with that part replaced, and the view is taken again.
Loops and branches then carry the two names as they carry any variable::

    y = x * 1.0                          y = x * 1.0
    v = y[1:]                            v = y[1:]
    for i in range(n):        ->         view_of(v, y, 'v', 'y')
        v *= 2.0                         for i in range(n):
                                             v = v * 2.0
                                             y_part = array_copy(y)
                                             y_part[1:] = v
                                             y = array_copy(y_part)
                                             v = y[1:]

``view_of`` checks, where the view is taken, that ``v`` is a view of the
array ``y`` (a slice of a list is a copy, an integer index of a vector a
number: then the write is refused).  Writes at the top level are left to
``analyses.aliases``; anything else (a second view, an alias ``z = y``, a
view handed to a function) to ``analyses.mutation``'s checks.

>>> from pullback.testing import function_from_source
>>> from pullback.backend.codegen import unparse
>>> from pullback.frontend.parse import parse
>>> from pullback.ir.naming import Namer
>>> f = function_from_source('''
... def f(x, c):
...     y = x * 1.0
...     v = y[1:]
...     if c > 0:
...         v[0] = 3.0
...     return np.sum(y)
... ''')
>>> parsed = parse(f)
>>> write_views(parsed.tree, Namer.for_tree(parsed.tree, ()), parsed)
>>> print(unparse(parsed.tree).strip())
def f(x, c):
    y = x * 1.0
    v = y[1:]
    view_of(v, y, 'v', 'y')
    if c > 0:
        v = array_copy(v)
        v[0] = 3.0
        y_part = array_copy(y)
        y_part[1:] = v
        y = array_copy(y_part)
        v = y[1:]
    return np.sum(y)
"""
from __future__ import annotations

import copy

import gast
import numpy as np

from ..ir.build import closure_name as _helper
from ..rules.registry import nondifferentiable
from ..runtime.arguments import alias_of, view_of

__all__ = ["write_views"]

nondifferentiable(view_of, alias_of)

_BLOCKS = (gast.If, gast.For, gast.While)
_NESTED = (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ClassDef)
# NumPy functions whose result may share memory with their argument
_VIEW_MAKERS = {"reshape", "ravel", "transpose", "squeeze", "swapaxes", "moveaxis",
                "asarray", "asanyarray", "array", "expand_dims", "atleast_1d", "atleast_2d",
                "atleast_3d", "broadcast_to", "diagonal", "flip", "fliplr", "flipud", "rot90",
                "real", "imag", "split", "array_split", "hsplit", "vsplit", "ascontiguousarray",
                "asfortranarray", "require", "flatten", "view", "take_along_axis"}


def write_views(tree, namer, parsed):
    """Rewrite the FunctionDef ``tree`` in place (see the module docstring)."""
    done = set()
    for view, base, index, stmt in _views(tree):
        writes = _writes(tree, view, base)
        if not writes or not any(nested for _, nested in writes):
            continue
        if not _only_read(tree, {view, base}, [stmt], {id(w) for w, _ in writes}):
            continue
        _rewrite(tree, namer, parsed, view, base, index, stmt, [w for w, _ in writes])
        done |= {view, base}
    for alias, base, binds in _aliases(tree):
        if {alias, base} & done:
            continue
        writes = _writes(tree, alias, base)
        if not any(nested for _, nested in writes) and len(binds) == 1:
            continue            # all at the top level: analyses.aliases follows them
        if not writes or not _only_read(tree, {alias, base}, binds,
                                        {id(w) for w, _ in writes}):
            continue
        _rewrite_alias(tree, namer, parsed, alias, base, binds, [w for w, _ in writes])
        done |= {alias, base}


def _aliases(tree):
    """(alias, base, its bindings) for a name ``z`` bound by plain assignments
    only, one of them ``z = y`` with ``y`` a local bound once at the top
    level before, the others new values (arithmetic, calls)."""
    counts = _stores(tree)
    params = {a.id for a in tree.args.args + tree.args.kwonlyargs + tree.args.posonlyargs}
    top = {}
    for i, stmt in enumerate(tree.body):
        if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 \
                and isinstance(stmt.targets[0], gast.Name):
            top.setdefault(stmt.targets[0].id, i)
    binds = {}
    for n in gast.walk(tree):
        if isinstance(n, gast.Assign) and len(n.targets) == 1 \
                and isinstance(n.targets[0], gast.Name):
            binds.setdefault(n.targets[0].id, []).append(n)
    out = []
    for z, stmts in binds.items():
        if z in params or len(stmts) != counts.get(z):
            continue            # also bound otherwise (a loop target, a tuple, ...)
        sources = [s.value.id for s in stmts if isinstance(s.value, gast.Name)]
        if len(set(sources)) != 1 or any(isinstance(s.value, (gast.Subscript, gast.Attribute,
                                                             gast.Starred)) for s in stmts):
            continue
        y = sources[0]
        if y == z or y in params or counts.get(y) != 1 or y not in top:
            continue
        first = min(tree.body.index(s) for s in tree.body if any(b is s for b in stmts)) \
            if any(any(b is s for b in stmts) for s in tree.body) else None
        if first is not None and first < top[y]:
            continue
        if not all(_new_value(s.value) for s in stmts if not isinstance(s.value, gast.Name)):
            continue
        out.append((z, y, stmts))
    return out


def _new_value(node):
    if isinstance(node, (gast.BinOp, gast.UnaryOp, gast.Constant, gast.Compare)):
        return True
    if isinstance(node, gast.Call):
        f = node.func
        return isinstance(f, gast.Attribute) and isinstance(f.value, gast.Name) \
            and f.value.id in ("np", "numpy") and f.attr not in _VIEW_MAKERS
    return False


def _name(id_, store=False):
    return gast.Name(id=id_, ctx=gast.Store() if store else gast.Load(), annotation=None,
                     type_comment=None)


def _stores(tree):
    """How many times each name is bound (``n op= e`` is a write, not counted)."""
    updated = {id(n.target) for n in gast.walk(tree) if isinstance(n, gast.AugAssign)}
    counts = {}
    for n in gast.walk(tree):
        if isinstance(n, gast.Name) and isinstance(n.ctx, (gast.Store, gast.Del, gast.Param)) \
                and id(n) not in updated:
            counts[n.id] = counts.get(n.id, 0) + 1
    return counts


def _constant_index(node):
    """Whether ``node`` indexes with constants only, one slice at least."""
    parts = node.elts if isinstance(node, gast.Tuple) else [node]
    ok = all(isinstance(p, gast.Slice) and all(
        b is None or (isinstance(b, gast.Constant) and type(b.value) is int)
        or (isinstance(b, gast.UnaryOp) and isinstance(b.operand, gast.Constant)
            and type(b.operand.value) is int)
        for b in (p.lower, p.upper, p.step))
        or (isinstance(p, gast.Constant) and (type(p.value) is int or p.value is Ellipsis))
        for p in parts)
    return ok and any(isinstance(p, gast.Slice) for p in parts)


def _views(tree):
    """(view, base, index node, statement) for ``v = y[c]`` at the top level,
    ``y`` a local bound once before it, ``v`` bound only there."""
    counts = _stores(tree)
    params = {a.id for a in tree.args.args + tree.args.kwonlyargs + tree.args.posonlyargs}
    bound_before = set()
    out = []
    for stmt in tree.body:
        if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 \
                and isinstance(stmt.targets[0], gast.Name) \
                and isinstance(stmt.value, gast.Subscript) \
                and isinstance(stmt.value.value, gast.Name) \
                and _constant_index(stmt.value.slice):
            v, y = stmt.targets[0].id, stmt.value.value.id
            if v != y and counts.get(v) == 1 and counts.get(y) == 1 and y in bound_before \
                    and y not in params:
                out.append((v, y, stmt.value.slice, stmt))
        if isinstance(stmt, gast.Assign):
            bound_before.update(n.id for t in stmt.targets for n in gast.walk(t)
                                if isinstance(n, gast.Name))
    used = {}
    for v, y, _, _ in out:
        used[y] = used.get(y, 0) + 1
    return [t for t in out if used[t[1]] == 1]     # one view per base


def _writes(tree, view, base):
    """(statement, inside a block) for each write through ``view`` or into
    ``base``: ``n op= e``, ``n[i] = e``, ``n[i] op= e``."""
    out = []

    def visit(stmts, nested):
        for s in stmts:
            if isinstance(s, gast.AugAssign) and isinstance(s.target, gast.Name) \
                    and s.target.id in (view, base):
                out.append((s, nested))
            elif isinstance(s, (gast.Assign, gast.AugAssign)):
                targets = s.targets if isinstance(s, gast.Assign) else [s.target]
                if len(targets) == 1 and isinstance(targets[0], gast.Subscript) \
                        and isinstance(targets[0].value, gast.Name) \
                        and targets[0].value.id in (view, base):
                    out.append((s, nested))
            if isinstance(s, _BLOCKS):
                visit(s.body, True)
                visit(s.orelse, True)
    visit(tree.body, False)
    return out


def _only_read(tree, names, bindings, writes):
    """Whether every other use of ``names`` is a read that makes a new value
    (arithmetic, a comparison, a NumPy call that is not a view, an item, a
    return); nothing else (an alias, a call of a user function, a container,
    a loop over it, a nested function) may hold the array."""
    parents = {}
    for n in gast.walk(tree):
        for c in gast.iter_child_nodes(n):
            parents[c] = n
    skip = set()
    for s in bindings + [w for w in gast.walk(tree) if id(w) in writes]:
        if any(s is b for b in bindings):
            skip.add(id(s.targets[0]))
            value = s.value.value if isinstance(s.value, gast.Subscript) else s.value
            skip.add(id(value))
        else:
            target = s.target if isinstance(s, gast.AugAssign) else s.targets[0]
            skip.add(id(target if isinstance(target, gast.Name) else target.value))
    for n in gast.walk(tree):
        if isinstance(n, _NESTED) and n is not tree and any(
                isinstance(m, gast.Name) and m.id in names for m in gast.walk(n)):
            return False
        if not (isinstance(n, gast.Name) and n.id in names) or id(n) in skip \
                or not isinstance(n.ctx, gast.Load):
            continue
        if not _fresh_use(n, parents):
            return False
    return True


def _fresh_use(node, parents):
    up = parents.get(node)
    if isinstance(up, gast.Subscript) and up.value is node:
        # an item (`y[0]`): a number or a view; fine where what holds it is new
        return _fresh_use(up, parents)
    if isinstance(up, gast.Attribute) and up.value is node:
        return up.attr in ("shape", "ndim", "size", "dtype") or (
            up.attr == "T" and _fresh_use(up, parents))
    if isinstance(up, (gast.BinOp, gast.UnaryOp, gast.Compare, gast.Return)):
        return True
    if isinstance(up, gast.AugAssign) and up.value is node:
        return True
    if isinstance(up, gast.keyword):
        up = parents.get(up)
    if isinstance(up, gast.Call) and node is not up.func:
        f = up.func
        return isinstance(f, gast.Attribute) and isinstance(f.value, gast.Name) \
            and f.value.id in ("np", "numpy") and f.attr not in _VIEW_MAKERS
    return False


def _rewrite(tree, namer, parsed, view, base, index, view_stmt, writes):
    copier = _helper(namer, parsed, "array_copy", np.copy)
    check = _helper(namer, parsed, "view_of", view_of)
    at = tree.body.index(view_stmt)
    tree.body.insert(at + 1, _located(gast.Expr(value=gast.Call(
        func=_name(check), args=[_name(view), _name(base), gast.Constant(view, None),
                                 gast.Constant(base, None)], keywords=[])), view_stmt))

    def retake(where):
        return _located(gast.Assign(targets=[_name(view, True)], value=gast.Subscript(
            value=_name(base), slice=copy.deepcopy(index), ctx=gast.Load()),
            type_comment=None), where)

    def assign(target, value, where):
        return _located(gast.Assign(targets=[target], value=value, type_comment=None), where)

    def spelled(s):
        target = s.target if isinstance(s, gast.AugAssign) else s.targets[0]
        name = target.id if isinstance(target, gast.Name) else target.value.id
        out = []
        if isinstance(target, gast.Name):           # `n op= e`: a new array
            out.append(assign(_name(name, True), gast.BinOp(
                left=_name(name), op=s.op, right=s.value), s))
        else:                                       # `n[i] = e`: into a copy of n
            out.append(assign(_name(name, True), gast.Call(
                func=_name(copier), args=[_name(name)], keywords=[]), s))
            out.append(s)
        if name == view:
            # the base's part replaced, in an array of its own (a write into
            # the base itself would reach, for the checks, the views taken of it)
            part = namer.fresh(f"{base}_part")
            out.append(assign(_name(part, True), gast.Call(
                func=_name(copier), args=[_name(base)], keywords=[]), s))
            out.append(assign(gast.Subscript(value=_name(part), slice=copy.deepcopy(index),
                                             ctx=gast.Store()), _name(view), s))
            out.append(assign(_name(base, True), gast.Call(
                func=_name(copier), args=[_name(part)], keywords=[]), s))
        out.append(retake(s))
        return out

    ids = {id(w) for w in writes}

    def visit(stmts):
        out = []
        for s in stmts:
            if id(s) in ids:
                out.extend(spelled(s))
                continue
            if isinstance(s, _BLOCKS):
                s.body = visit(s.body)
                s.orelse = visit(s.orelse)
            out.append(s)
        return out
    tree.body = visit(tree.body)


def _rewrite_alias(tree, namer, parsed, alias, base, binds, writes):
    """``z = y`` on some paths: a flag, set where ``z`` is bound, says whether
    the two hold one array; each write through one gives the other the new
    value where it is set."""
    copier = _helper(namer, parsed, "array_copy", np.copy)
    check = _helper(namer, parsed, "alias_of", alias_of)
    flag = namer.fresh(f"{alias}_is_{base}")

    def assign(target, value, where):
        return _located(gast.Assign(targets=[target], value=value, type_comment=None), where)

    def spelled(s):
        target = s.target if isinstance(s, gast.AugAssign) else s.targets[0]
        name = target.id if isinstance(target, gast.Name) else target.value.id
        other = base if name == alias else alias
        out = []
        if isinstance(target, gast.Name):
            out.append(assign(_name(name, True), gast.BinOp(
                left=_name(name), op=s.op, right=s.value), s))
        else:
            out.append(assign(_name(name, True), gast.Call(
                func=_name(copier), args=[_name(name)], keywords=[]), s))
            out.append(s)
        out.append(_located(gast.If(test=_name(flag), body=[assign(
            _name(other, True), gast.Call(func=_name(copier), args=[_name(name)],
                                          keywords=[]), s)], orelse=[]), s))
        return out

    ids = {id(w) for w in writes}
    bind_ids = {id(b) for b in binds}

    def visit(stmts):
        out = []
        for s in stmts:
            if id(s) in ids:
                out.extend(spelled(s))
                continue
            if id(s) in bind_ids:
                out.append(s)
                value = gast.Call(func=_name(check), args=[
                    _name(alias), _name(base), gast.Constant(alias, None),
                    gast.Constant(base, None)], keywords=[]) \
                    if isinstance(s.value, gast.Name) else gast.Constant(False, None)
                out.append(assign(_name(flag, True), value, s))
                continue
            if isinstance(s, _BLOCKS):
                s.body = visit(s.body)
                s.orelse = visit(s.orelse)
            out.append(s)
        return out
    tree.body = visit(tree.body)
    # False until `alias` is first bound (it is no parameter, and every binding of
    # it sets the flag): a write through `base` before then has no alias to update
    at = 1 if tree.body and isinstance(tree.body[0], gast.Expr) and isinstance(
        tree.body[0].value, gast.Constant) and isinstance(tree.body[0].value.value, str) else 0
    tree.body.insert(at, assign(_name(flag, True), gast.Constant(False, None),
                                tree.body[min(at, len(tree.body) - 1)]))


def _located(node, at):
    for n in gast.walk(node):
        if getattr(n, "lineno", None) is None or n is node:
            gast.copy_location(n, at)
    return node
