"""Dict displays with ``**``, ``dict(p, ...)`` and ``p | q`` as new dicts.

Run by ``frontend.dict_stores`` (the function's body, not its nested
functions, which are rewritten when they are transformed): each becomes
``dict_merge(...)`` of its parts in order, a new dict whose entries'
cotangents go back to the part each came from (``rules.dicts``; an entry a
later part replaces gets none).  ``p | q`` is a merge where either side is
known to be a dict (a display, ``dict(...)``, a name read by key or by a
dict method); elsewhere ``|`` stays Python's (ints, boolean arrays).
``dict(pairs)`` of a list of pairs and ``dict(a=x)`` are left to desugar,
which writes the display::

    q = {**p, "b": v, **r}        ->    q = dict_merge(p, {"b": v}, r)
    q = dict(p, b=v)              ->    q = dict_merge(p, {"b": v})
    q = p | {"b": v}              ->    q = dict_merge(p, {"b": v})

>>> from pullback.testing import function_from_source
>>> from pullback.backend.codegen import unparse
>>> from pullback.frontend.parse import parse
>>> from pullback.frontend.dict_stores import follow_dict_stores
>>> from pullback.ir.naming import Namer
>>> f = function_from_source('''
... def f(p, v, flags):
...     q = dict(p, b=v)
...     return {**q, "c": v} | {"d": v}, flags | 4
... ''')
>>> parsed = parse(f)
>>> follow_dict_stores(parsed.tree, Namer.for_tree(parsed.tree, ()), parsed)
>>> print(unparse(parsed.tree).strip())
def f(p, v, flags):
    q = dict_merge(p, {'b': v})
    return (dict_merge(dict_merge(q, {'c': v}), {'d': v}), flags | 4)
"""
from __future__ import annotations

import gast

from ..runtime import control

__all__ = ["Displays"]


class Displays(gast.NodeTransformer):
    """The rewrite of the module docstring; ``r`` is ``dict_stores``' pass
    (its helpers, the own dicts and the names known to be dicts)."""

    def __init__(self, r):
        self.r = r

    def visit_FunctionDef(self, node):
        if node is self.r.tree:
            self.generic_visit(node)
        return node         # a nested function: rewritten when it is transformed itself

    visit_AsyncFunctionDef = visit_ClassDef = visit_Lambda = visit_FunctionDef

    def visit_Dict(self, node):
        self.generic_visit(node)
        if None not in node.keys:
            return node
        parts, keys, values = [], [], []
        for k, v in zip(node.keys, node.values):
            if k is None:
                if keys:
                    parts.append(gast.Dict(keys=keys, values=values))
                    keys, values = [], []
                parts.append(v)
            else:
                keys.append(k)
                values.append(v)
        if keys:
            parts.append(gast.Dict(keys=keys, values=values))
        return gast.copy_location(self.r.call(control.dict_merge, *parts), node)

    def visit_Call(self, node):
        self.generic_visit(node)
        if not self.r.is_builtin(node.func, "dict") or len(node.args) > 1 \
                or any(isinstance(a, gast.Starred) for a in node.args):
            return node
        if not node.args:
            if any(k.arg is None for k in node.keywords):
                return gast.copy_location(self.r.call(control.dict_merge, self.keywords(
                    node.keywords)), node)
            return node                     # dict(a=x): desugar's display
        first = node.args[0]
        if isinstance(first, gast.Dict) and not any(k.arg is None for k in node.keywords):
            return node                     # a display: desugar's display
        if not isinstance(first, (gast.Name, gast.Attribute, gast.Subscript, gast.Dict,
                                  gast.DictComp, gast.Call)) or (
                isinstance(first, gast.Call) and not isinstance(first.func, gast.Attribute)
                and getattr(first.func, "id", None) != self.r.helpers.get("dict_merge")
                and not self.r.is_builtin(first.func, "dict")):
            return node                     # pairs (`dict(zip(ks, vs))`): as before
        parts = [first] + ([self.keywords(node.keywords)] if node.keywords else [])
        return gast.copy_location(self.r.call(control.dict_merge, *parts), node)

    def keywords(self, keywords):
        return self.visit_Dict(gast.Dict(keys=[gast.Constant(k.arg, None) if k.arg else None
                                               for k in keywords],
                                         values=[k.value for k in keywords]))

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, gast.BitOr) and any(
                self.r.fresh_dict(v, set(self.r.own)) or (
                    isinstance(v, gast.Call) and isinstance(v.func, gast.Name)
                    and v.func.id == self.r.helpers.get("dict_merge"))
                or (isinstance(v, gast.Name) and (v.id in self.r.own or v.id in self.r.evident))
                for v in (node.left, node.right)):
            return gast.copy_location(self.r.call(control.dict_merge, node.left, node.right),
                                      node)
        return node
