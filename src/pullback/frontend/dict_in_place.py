"""The function's own dicts that stores may change in place: O(1) a store.

``frontend.dict_stores`` follows a dict the function holds alone as a new
dict per store (``dict_set``), which copies it: a dict filled in a loop of
n steps cost O(n^2), and its adjoint, with a dict of zeros as large as the
dict per step, O(n^2) too (n = 4,000: two minutes).  Where, besides, the
dict is read only by item (``d[k]``), key test (``k in d``) or ``len(d)``
until its last store, no later read can tell the dict before a store from
the dict after it, so the store may change it in place, as Python does:
``dict_store`` (O(1)), and its reads are ``dict_item(d, k)``, whose
cotangent is the one entry ``{k: g}``.  Cotangents of such a dict are then
sparse (``rules.dicts``): a store's adjoint takes its entry out, O(entries
read after the store and not stored again).  Its binding must be a display
(``{}``, ``{"a": x}``; one with entries is ``dict_merge({...})``, whose
adjoint reads a sparse cotangent with ``.get``)::

    hs = {}                                   hs = {}
    hs[-1] = h0                      ->       hs = dict_store(hs, -1, h0)
    for t in range(n):                        for t in range(n):
        hs[t] = np.tanh(hs[t - 1])                hs = dict_store(hs, t, np.tanh(dict_item(hs, t - 1)))
    return np.sum(hs[n - 1])                  return np.sum(dict_item(hs, n - 1))

>>> from pullback.testing import function_from_source, desugared
>>> print(desugared(function_from_source('''
... def f(x, n):
...     hs = {"x": x}
...     for t in range(n):
...         hs[t] = np.tanh(hs["x"] * t)
...     return hs[n - 1]
... ''')))
def f(x, n):
    hs = dict_merge({'x': x})
    for t in range(n):
        hs = dict_store(hs, t, np.tanh(dict_item(hs, 'x') * t))
    return dict_item(hs, n - 1)
"""
from __future__ import annotations

import gast

from ..runtime import control
from .dict_targets import own_walk

__all__ = ["in_place_dicts", "read_in_place"]


def in_place_dicts(r, own):
    """The names of ``own`` (``dict_stores``' own dicts: name -> its store
    statements) whose stores may change the dict in place; ``r`` is
    ``dict_stores``' pass (its statement order, parents and helpers)."""
    out = set()
    for d, found in own.items():
        if all(_item_store(t) for t in found) and _bound_to_displays(r, d) \
                and _read_by_item(r, d, found):
            out.add(d)
    return out


def _item_store(stmt):
    if isinstance(stmt, gast.Assign):
        return len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Subscript)
    return isinstance(stmt, gast.AugAssign) and isinstance(stmt.target, gast.Subscript)


def _bound_to_displays(r, d):
    for s in r.statements():
        if isinstance(s, gast.Assign) and any(
                isinstance(t, gast.Name) and t.id == d for t in s.targets):
            v = s.value
            if not (isinstance(v, gast.Dict) and None not in v.keys) and not (
                    isinstance(v, gast.Call) and r.is_builtin(v.func, "dict")
                    and not v.args and not v.keywords):
                return False
    return True


def _read_by_item(r, d, found):
    """Every read of ``d`` before a store that may follow it takes an item,
    tests a key or its length."""
    for n in _loads(r, d):
        up = r.parents.get(n)
        if isinstance(up, gast.Subscript) and up.value is n:
            continue
        if isinstance(up, gast.Compare) and n in up.comparators and all(
                isinstance(o, (gast.In, gast.NotIn)) for o in up.ops):
            continue
        if isinstance(up, gast.Call) and r.is_builtin(up.func, "len") and up.args == [n]:
            continue
        s = r.stmt_of.get(id(n))
        if isinstance(s, gast.Return):
            continue
        if s is None or any(r.may_follow(t, s, d) for t in found):
            return False
    return True


def _loads(r, d):
    return [n for n in own_walk(r.tree) if isinstance(n, gast.Name) and n.id == d
            and isinstance(n.ctx, gast.Load)]


def read_in_place(r, names):
    """Rewrite, in ``r.tree`` (after the stores), the item reads of the dicts
    ``names`` into ``dict_item(d, k)`` and their displays with entries into
    ``dict_merge({...})``."""
    for n in list(own_walk(r.tree)):
        for field, value in gast.iter_fields(n):
            if isinstance(value, list):
                for i, v in enumerate(value):
                    new = _read(r, v, names)
                    if new is not None:
                        value[i] = new
            else:
                new = _read(r, value, names)
                if new is not None:
                    setattr(n, field, new)
        if isinstance(n, gast.Assign) and len(n.targets) == 1 \
                and isinstance(n.targets[0], gast.Name) and n.targets[0].id in names \
                and isinstance(n.value, gast.Dict) and n.value.keys:
            n.value = gast.copy_location(r.call(control.dict_merge, n.value), n.value)


def _read(r, node, names):
    if isinstance(node, gast.Subscript) and isinstance(node.ctx, gast.Load) \
            and isinstance(node.value, gast.Name) and node.value.id in names \
            and not isinstance(node.slice, gast.Slice):
        return gast.copy_location(r.call(control.dict_item, node.value, node.slice), node)
    return None
