"""Aliases: a write through one name of an array, followed to every name
that shares it.

``z = y`` makes ``z`` another name of ``y``'s array, and ``v = y[1:]`` or
``v = y.T`` a view of it: ``z += 1``, ``v *= 2`` or ``v[0] = 3`` change
``y`` as well (NumPy's semantics).  Where the write and the alias are
statements of the function's own body (not inside a loop or a branch) and
the array is known to be an array, this pass spells the change out: the
written name gets a new array holding its new value, the array it views gets
a new array with that part replaced, and later reads of every name of the
array read the new arrays (views taken again).  Each new array is the
function's own, so the rest of the compiler follows the writes as usual.
Writes it cannot place this way are left to ``mutation``'s checks, which
refuse them::

>>> from pullback.testing import function_from_source
>>> from pullback.backend.codegen import unparse
>>> from pullback import pipeline
>>> f = function_from_source('''
... def f(x):
...     y = x * 1.0
...     v = y[1:]
...     v *= 2.0
...     return np.sum(y)
... ''')
>>> t = pipeline.Transform(f, {"x": ARRAY})
>>> for step in pipeline.STEPS[:pipeline.STEPS.index(pipeline.follow_aliases) + 1]:
...     step(t)
>>> print(unparse(t.normal.tree).strip())
def f(x):
    y = x * 1.0
    v = y[1:]
    v_1 = v * 2.0
    y_written = array_copy(y)
    y_written[1:] = v_1
    v_2 = y_written[1:]
    out = np.sum(y_written)
    return out
"""
from __future__ import annotations

import copy

import gast
import numpy as np

from ..ir.build import closure_name as _helper, name as _name
from ..ir.walk import all_statements, own_nodes
from .kinds import ARRAY, Shape  # noqa: F401  (ARRAY: the docstring's)
from .ops import OpKind

__all__ = ["follow_aliases"]


class _Group:
    """The names of one array: its base (current name), plain aliases and
    views (name -> (how, index node)), each by its current name."""

    def __init__(self, base):
        self.base = base
        self.aliases = set()
        self.views = {}         # name -> ("index", slice node) | ("T", None)


def follow_aliases(normal, ops, kinds, parsed) -> bool:
    """Rewrite ``normal`` (in place) so that writes through aliases and views
    reach the array they share; True if anything changed (ops and kinds
    must then be resolved again)."""
    from .copies import copy_ids
    from .views import _is_view
    body = normal.tree.body
    updates = {id(stmt): old for stmt, old, origin in normal.augmented
               if not getattr(origin, "written_by", None)}
    merges = copy_ids(normal)
    groups = {}                 # current name -> its _Group
    rename = {}
    out, handled = [], set()
    namer = normal.namer
    copier = None

    def copy_of(name):
        nonlocal copier
        if copier is None:
            copier = _helper(namer, parsed, "array_copy", np.copy)
        return gast.Call(func=_name(copier), args=[_name(name)], keywords=[])

    made = set()                # the arrays this pass makes (no kinds yet)

    def is_array(n):
        k = kinds.get(n)
        return n in made or (k is not None and k.shape is Shape.ARRAY)

    if _blocked(normal, ops, kinds, merges, updates, is_array):
        return False
    for s in body:
        _rename_loads(s, rename)
        op = ops.get(id(s))
        target = s.targets[0].id if isinstance(s, gast.Assign) and isinstance(
            s.targets[0], gast.Name) else None
        if op is None or id(s) in merges:
            out.append(s)
            continue
        old = _current(updates.get(id(s)), rename)
        if old in groups and _member(groups, old):
            # `m op= w` (normal form: `m_1 = m op w`): m's new value is m_1
            out.append(s)
            out.extend(_propagate(groups, old, target, rename, copy_of, namer, s, made))
            handled.add(id(s))
            continue
        m = _current(op.mutates, rename) if op.kind is OpKind.SETITEM else None
        if m in groups and (_member(groups, m) or _has_members(groups[m])):
            new = namer.fresh(f"{m}_written")
            out.append(_at(gast.Assign(targets=[_name(new, True)], value=copy_of(m),
                                       type_comment=None), s))
            _retarget(s, new)
            out.append(s)
            out.extend(_propagate(groups, m, new, rename, copy_of, namer, s, made))
            continue
        out.append(s)
        if target is None:
            continue
        if op.kind is OpKind.COPY and isinstance(s.value, gast.Name) and is_array(s.value.id):
            source = s.value.id
            g = groups.get(source) or _new_group(groups, source)
            g.aliases.add(target)
            groups[target] = g
        elif op.kind is OpKind.RULE:
            view = _view_of(s, op, kinds, _is_view)
            if view is None or not is_array(view[0]):
                continue
            base, how, index = view
            g = groups.get(base) or _new_group(groups, base)
            g.views[target] = (how, index)
            groups[target] = g
    if not handled and out == body:
        return False
    body[:] = out
    normal.augmented = [a for a in normal.augmented if id(a[0]) not in handled]
    return True


def _blocked(normal, ops, kinds, merges, updates, is_array):
    """Whether a name that shares an array (an alias or a view taken in the
    body, or the array it names) is used in a way this pass does not place:
    rebound or written inside a loop or a branch, aliased there, iterated
    over, viewed by something other than indexing or ``.T``, or handed to
    anything but NumPy (a list, a call of a user function).  Then nothing
    is rewritten, and ``mutation`` checks the function as it is."""
    from .views import _is_view, _is_view_op
    from .updates import keeps_nothing
    body = normal.tree.body
    top = {id(s) for s in body}
    names, views = set(), set()
    readers = {}                # name -> how many statements read it
    for s in all_statements(body):
        for n in {n.id for n in own_nodes(s) if isinstance(n, gast.Name)
                  and isinstance(n.ctx, gast.Load)}:
            readers[n] = readers.get(n, 0) + 1
    for s in body:
        op = ops.get(id(s))
        if op is None or id(s) in merges or not (isinstance(s, gast.Assign)
                                                 and isinstance(s.targets[0], gast.Name)):
            continue
        if op.kind is OpKind.RULE and _is_view_op(op, kinds) and any(
                readers.get(n, 0) > 1 for n in op.names()):
            views.add(s.targets[0].id)    # any view (`m = y.reshape(2, 3)`) of an array
            # read elsewhere too: its own views are views of a view, not followed here
        source = None
        if op.kind is OpKind.COPY and isinstance(s.value, gast.Name) and is_array(s.value.id):
            source = s.value.id
        elif op.kind is OpKind.RULE and _view_of(s, op, kinds, _is_view) is not None:
            source = _view_of(s, op, kinds, _is_view)[0]
            views.add(s.targets[0].id)
        if source is not None:
            if source in views:
                return True         # a view of a view, or an alias of one
            names |= {s.targets[0].id, source}
    if not names:
        return False
    for s in all_statements(body):
        if id(s) in merges:
            if {s.targets[0].id, s.value.id} & names:
                return True         # rebound in a loop or a branch
            continue
        op = ops.get(id(s))
        reads = {n.id for n in gast.walk(s) if isinstance(n, gast.Name)
                 and isinstance(n.ctx, gast.Load)} & names
        if isinstance(s, gast.For) and isinstance(s.iter, gast.Name) and s.iter.id in names:
            return True             # its rows are views
        if op is None or not (reads or op.mutates in names):
            continue
        nested = id(s) not in top
        if nested and (op.kind is OpKind.SETITEM or id(s) in updates
                       or op.kind is OpKind.COPY or _is_view_op(op, kinds)):
            return True
        if op.kind not in (OpKind.RULE, OpKind.NONDIFF, OpKind.SETITEM, OpKind.COPY) \
                and not (op.kind is OpKind.USER and keeps_nothing(op.primitive)):
            return True             # shared with a list, a call that may keep it, ...
        if op.kind is OpKind.RULE and _is_view_op(op, kinds) \
                and _view_of(s, op, kinds, _is_view) is None:
            return True             # a view this pass does not follow (reshape, ...)
    return False


def _current(name, rename):
    while name in rename:
        name = rename[name]
    return name


def _new_group(groups, base):
    g = _Group(base)
    groups[base] = g
    return g


def _member(groups, name):
    g = groups[name]
    return name in g.aliases or name in g.views or (name == g.base and _has_members(g))


def _has_members(g):
    return bool(g.aliases or g.views)


def _view_of(s, op, kinds, is_view):
    """(base, how, index) for ``v = y[index]`` (a view) or ``v = y.T``."""
    value = s.value
    if isinstance(value, gast.Attribute) and value.attr == "T" \
            and isinstance(value.value, gast.Name):
        return value.value.id, "T", None
    if isinstance(value, gast.Subscript) and isinstance(value.value, gast.Name) \
            and is_view(op, s, kinds):
        return value.value.id, "index", value.slice
    return None


def _propagate(groups, m, new, rename, copy_of, namer, where, made):
    """Statements after a write that gave ``m`` (a name of a group) the new
    value ``new``: the base gets a new array, later reads read the new names,
    other views are taken again."""
    g = groups[m]
    stmts = []
    if m == g.base or m in g.aliases:
        base_new = new
    else:
        how, index = g.views[m]
        base_new = namer.fresh(f"{g.base}_written")
        if how == "T":
            t = namer.fresh(f"{new}_T")
            stmts.append(_at(gast.Assign(targets=[_name(t, True)], value=gast.Attribute(
                value=_name(new), attr="T", ctx=gast.Load()), type_comment=None), where))
            stmts.append(_at(gast.Assign(targets=[_name(base_new, True)], value=copy_of(t),
                                         type_comment=None), where))
        else:
            stmts.append(_at(gast.Assign(targets=[_name(base_new, True)],
                                         value=copy_of(g.base), type_comment=None), where))
            stmts.append(_at(gast.Assign(targets=[gast.Subscript(
                value=_name(base_new), slice=copy.deepcopy(index), ctx=gast.Store())],
                value=_name(new), type_comment=None), where))
    for a in {g.base} | g.aliases:
        rename[a] = base_new
    views = {}
    for v, (how, index) in g.views.items():
        # every view, the one written through too, taken again of the new
        # array: a real view, which mutation's checks see as one
        again = namer.fresh(v)
        value = gast.Attribute(value=_name(base_new), attr="T", ctx=gast.Load()) \
            if how == "T" else gast.Subscript(value=_name(base_new),
                                              slice=copy.deepcopy(index), ctx=gast.Load())
        stmts.append(_at(gast.Assign(targets=[_name(again, True)], value=value,
                                     type_comment=None), where))
        views[again] = (how, index)
        rename[v] = again
        if v == m:
            rename[new] = again     # `v_1 = v * 2`: later reads of v_1 read the view
    made.update(views, {base_new, new})
    for n in [n for n, grp in groups.items() if grp is g]:
        del groups[n]
    h = _Group(base_new)
    h.views = views
    # the names now read as base_new: a later write into it reaches them too
    h.aliases = ({g.base} | g.aliases) - {base_new}
    groups[base_new] = h
    for v in views:
        groups[v] = h
    return stmts


def _rename_loads(stmt, rename):
    if not rename:
        return
    for s in all_statements([stmt]):
        for node in gast.walk(s):
            if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load):
                while node.id in rename:
                    node.id = rename[node.id]


def _retarget(stmt, new):
    target = stmt.target if isinstance(stmt, gast.AugAssign) else (
        stmt.targets[0] if isinstance(stmt, gast.Assign) else None)
    if target is not None:
        target.value = _name(new)
        return
    call = stmt.value                   # np.add.at(m, idx, v)
    call.args[0] = _name(new)


def _at(stmt, where):
    for node in gast.walk(stmt):
        gast.copy_location(node, where)
    return stmt


