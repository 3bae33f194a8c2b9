"""Views: which statements make a view of an array, and whether a view of
an array the function writes into is used up before the write.

A basic slice, a reshape, a transpose, or integers that leave axes give a
view (``_is_view``); NumPy shows a view the values written into its array
later.  pullback follows a view that is read only before the next write
(``used_up_before``); one read after a write is refused (``_check_views``),
where differentiating it as a value would be wrong::

>>> import numpy as np, pullback as pb
>>> from pullback.testing import function_from_source
>>> f = function_from_source('''
... def f(x, n):
...     y = x * 1.0
...     v = y[1:]
...     for i in range(n):
...         y[0] = y[0] + np.sum(v)
...     return np.sum(y)
... ''')
>>> try:
...     pb.grad(f)(np.ones(3), 2)
... except pb.PullbackError as err:
...     print(str(err).splitlines()[0])
`v_2` is a view of an array the function writes into, and it is read after a write, where NumPy would show it the new values.
"""
from __future__ import annotations

import gast

from ..errors import UnsupportedSyntaxError
from ..rules.registry import VIEWS   # declared beside each rule: facts(...)
from .copies import (_blocks, _closure, _copies_of, _hashable_in, _reads, _renames, _simple,
                     _targets, _writes)
from .kinds import Shape
from .ops import OpKind, all_statements
from .order import may_run_between


def used_up_before(normal, view_stmt, stmt, ops=None, kinds=None):
    """Whether the view that ``view_stmt`` binds cannot show a change made to
    its array at ``stmt``: it is read only between it and ``stmt`` (later in
    the same block, or nested in a later statement of it), or ``stmt`` comes
    first, or lies outside the view's block, and the view is read only in the
    rest of its block."""
    if not (isinstance(view_stmt, gast.Assign) and isinstance(view_stmt.targets[0], gast.Name)):
        return False
    copies = {id(s) for s in all_statements(normal.tree.body) if id(s) in normal.renames}
    names = _copies_of(view_stmt.targets[0].id, _renames(normal))
    if ops is not None:     # what shows the view: views and copies of it
        names = _derived(normal.tree.body, ops, kinds, names)
    for block in _blocks(normal.tree.body):
        i = next((k for k, t in enumerate(block) if t is view_stmt), None)
        if i is None:
            continue
        # where `stmt` is in this block (itself, or inside one of its statements)
        j = next((k for k, t in enumerate(block)
                  if any(u is stmt for u in all_statements([t]))), None)
        if j == i:
            return False
        # a view used up before the update, or taken after it (or in a block
        # the update is not in: another branch, a loop body) and used up in the
        # rest of its block (a loop's next update comes after that)
        span = block[i + 1:j] if j is not None and i < j else block[i + 1:]
        inside = {id(t) for t in all_statements(span)}
        return not any(_reads(t, names, copies) and id(t) not in inside
                       for t in _simple(normal.tree.body))
    return False


def _is_view(op, stmt, kinds=None):
    """Whether ``stmt`` makes a view: a reshape, a transpose, a basic slice,
    or integers that leave axes (``m[0]`` of a matrix is its first row).  An
    index of integers whose array's rank is not known counts as a view."""
    if op.kind is not OpKind.RULE:
        return False
    if op.primitive in VIEWS or _may_return_its_argument(op):
        return True
    import operator
    if op.primitive is operator.getitem:
        index = op.bound.get("b")
        items = index.elts if isinstance(index, gast.Tuple) else [index]
        if kinds is not None and any(
                isinstance(i, gast.Name) and getattr(kinds.get(i.id), "shape", None) is Shape.ARRAY
                for i in items):
            return False    # an integer array or a mask anywhere in the index: NumPy copies
        if any(isinstance(i, gast.Slice) or (isinstance(i, gast.Constant)
                                             and i.value in (None, Ellipsis))
               for i in items):
            return True
        if kinds is None:
            return False
        base = op.bound.get("a")
        k = kinds.get(base.id) if isinstance(base, gast.Name) else None
        rank = k.ndim if k is not None and k.shape is Shape.ARRAY else None
        return rank is None or rank > len(items)
    return False


def _check_views(stmts, ops, group, parsed, root, pairs, copies, kinds):
    """A view of a written array must be used up before the next write.  The
    copies normalize adds where branches and loops merge are not uses: the
    names they bind stand for the view too."""
    for i, s in enumerate(stmts):
        for field in ("body", "orelse"):
            if getattr(s, field, None):
                _check_views(getattr(s, field), ops, group, parsed, root, pairs, copies,
                             kinds)
        op = ops.get(id(s))
        if op is None or not _is_view(op, s, kinds) or not any(n in group for n in op.names()):
            continue
        view = s.targets[0].id
        # the view, and what shows it: views of it and plain copies of those
        # (`w = view[1:]`, `z = view`), which a write changes as well
        names = _derived(root, ops, kinds, _copies_of(view, pairs))
        # only writes into the array viewed (any of its versions) can change the
        # view: the arrays written into are the function's own, each allocated
        # apart, so a write into another one cannot reach it
        base = _closure({n for n in op.names() if n in group}, pairs) & group
        later = stmts[i + 1:]
        uses = [j for j, t in enumerate(later) if _reads(t, names, copies)]
        last = uses[-1] if uses else -1
        inside = {id(t) for t in all_statements(later)}
        # read outside its block (after a loop, say), where a write may have
        # come in between
        writers = [t for t in _simple(root) if _writes(t, ops, base)]
        escapes = any(_reads(t, names, copies) and id(t) not in inside
                      and any(may_run_between(root, w, s, t) for w in writers)
                      for t in _simple(root))
        span = later[:last + 1]
        if span and getattr(ops.get(id(span[-1])), "kind", None) is OpKind.SETITEM:
            span = span[:-1]    # `y[1:] = v`: a write reads its value before it writes
        writes = [j for j, t in enumerate(span) if _writes(t, ops, base)]
        if writes or escapes:
            raise UnsupportedSyntaxError(
                f"`{view}` is a view of an array the function writes into, and it is read "
                "after a write, where NumPy would show it the new values.",
                parsed.location(s), "Take a copy of the slice (`.copy()`) before writing, "
                "or read it again after the write.")


def _derived(root, ops, kinds, names):
    """``names`` and every name bound to a view or a plain copy of one of
    them (`w = v[1:]`, `u = v.T`, `z = v`, a loop's row of v), to a fixpoint:
    each shows the memory ``names`` show."""
    edges = _derivations(root, ops, kinds)
    out, work = set(names), list(names)
    while work:
        for t in edges.get(work.pop(), ()):
            if t not in out:
                out.add(t)
                work.append(t)
    return out


_last_derivations = (None, None, None, None)    # ops, root, kinds, edges: one transform's


def _derivations(root, ops, kinds):
    """name -> the names bound to a view or a plain copy of it (one pass over
    the function, kept while the same transform asks; one tuple, read and
    replaced whole, so transforms in other threads never mix)."""
    global _last_derivations
    last = _last_derivations
    if last[0] is ops and last[1] is root and last[2] is kinds:
        return last[3]
    edges = {}
    for s in all_statements(root):
        op = ops.get(id(s))
        if op is None or not (op.kind == "copy" or _is_view_op(op, kinds)):
            continue
        for n in op.names():
            edges.setdefault(n, set()).update(_targets(s))
    _last_derivations = (ops, root, kinds, edges)
    return edges


def _is_view_op(op, kinds):
    """Whether ``op``, of whatever kind, makes a view (``_is_view`` asks it
    of a rule's statement)."""
    if getattr(op.primitive, "__name__", "") == "getitem":
        return _is_view(op, None, kinds)     # `y[0]` of a vector is a number, not a view
    return _hashable_in(op.primitive, VIEWS) or _may_return_its_argument(op)


def _may_return_its_argument(op):
    """``np.array(y, copy=False)``, ``y.astype(t, copy=False)``: without a
    copy asked for, NumPy hands back ``y`` itself where it can."""
    copy = op.bound.get("copy", True)
    return "copy" in op.bound and not (isinstance(copy, gast.Constant) and copy.value is True)
