"""What a statement stores into a dict, and how a loop reads one: the shapes
``frontend.dict_stores`` recognises.

A store statement changes the dict its name holds: ``d[k] = v``, ``d[k] op=
v``, ``d |= q``, ``d.update(q)``, ``d.setdefault(k, v)`` (``store_target``);
a loop reads the dict live when its sequence is the dict, a view of it, or
one of those in ``enumerate``/``zip``/``reversed`` (``iterates``), with the
key in its variable for ``for k in d``, ``d.keys()`` and ``for k, v in
d.items()`` (``loop_key``).

>>> import gast
>>> stmt = gast.parse("d[k] += 1").body[0]
>>> store_target(stmt), store_target(gast.parse("d.update(q)").body[0])
('d', 'd')
"""
from __future__ import annotations

import copy

import gast

from ..ir.walk import scope_nodes

__all__ = ["own_walk", "store_target", "method_call", "item_target", "iterates", "loop_key",
           "simple", "copy_node"]

_LAZY = {"zip", "enumerate", "reversed", "iter", "map", "filter"}
_VIEWS = ("keys", "values", "items")


own_walk = scope_nodes         # (ir.walk: the function's own nodes)


def store_target(s):
    """The name a store statement of a dict changes, else None."""
    if isinstance(s, gast.Assign) and len(s.targets) == 1:
        t = s.targets[0]
        if isinstance(t, gast.Subscript) and isinstance(t.value, gast.Name) \
                and not isinstance(t.slice, gast.Slice):
            return t.value.id
        value = s.value
        if isinstance(t, gast.Name) and method_call(value, "setdefault", (1, 2)):
            return value.func.value.id
        return None
    if isinstance(s, gast.AugAssign):
        t = s.target
        if isinstance(t, gast.Subscript) and isinstance(t.value, gast.Name) \
                and not isinstance(t.slice, gast.Slice):
            return t.value.id
        if isinstance(t, gast.Name) and isinstance(s.op, gast.BitOr):
            return t.id
        return None
    if isinstance(s, gast.Expr):
        v = s.value
        if method_call(v, "setdefault", (1, 2)):
            return v.func.value.id
        if isinstance(v, gast.Call) and isinstance(v.func, gast.Attribute) \
                and v.func.attr == "update" and isinstance(v.func.value, gast.Name) \
                and len(v.args) <= 1 and not any(isinstance(a, gast.Starred) for a in v.args):
            return v.func.value.id
    return None


def method_call(v, attr, counts):
    return isinstance(v, gast.Call) and isinstance(v.func, gast.Attribute) \
        and v.func.attr == attr and isinstance(v.func.value, gast.Name) \
        and len(v.args) in counts and not v.keywords \
        and not any(isinstance(a, gast.Starred) for a in v.args)


def item_target(s):
    if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Subscript):
        return s.targets[0]
    if isinstance(s, gast.AugAssign) and isinstance(s.target, gast.Subscript):
        return s.target
    return None


def iterates(it, d):
    """The loop sequence ``it`` reads the dict ``d`` live (itself, a view,
    or those in ``enumerate``/``zip``/``reversed``)."""
    if isinstance(it, gast.Name):
        return it.id == d
    if isinstance(it, gast.Call) and isinstance(it.func, gast.Attribute) \
            and it.func.attr in _VIEWS and isinstance(it.func.value, gast.Name):
        return it.func.value.id == d
    if isinstance(it, gast.Call) and isinstance(it.func, gast.Name) and it.func.id in _LAZY:
        return any(iterates(a, d) for a in it.args)
    return False


def loop_key(loop, d):
    """The loop variable that holds the key, for ``for k in d``, ``for k in
    d.keys()`` and ``for k, v in d.items()``; else None."""
    it, target = loop.iter, loop.target
    view = it.func.attr if isinstance(it, gast.Call) and isinstance(it.func, gast.Attribute) \
        else None
    if isinstance(it, gast.Name) or view == "keys":
        return target.id if isinstance(target, gast.Name) else None
    if view == "items" and isinstance(target, gast.Tuple) \
            and len(target.elts) == 2 and isinstance(target.elts[0], gast.Name):
        return target.elts[0].id
    return None


def simple(node):
    return isinstance(node, (gast.Name, gast.Constant))


def copy_node(node):
    return copy.deepcopy(node)
