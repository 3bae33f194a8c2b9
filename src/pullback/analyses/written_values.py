"""What a refused write writes into, in the user's words: the name the user
wrote (normalize's versions ``memo_1`` are ``memo``) and whether the value is
a dict, a list or an array (``analyses.mutation``'s messages).

>>> import gast
>>> from types import SimpleNamespace
>>> tree = gast.parse("memo_1 = {}")
>>> normal = SimpleNamespace(tree=tree, renames=set())
>>> user_words(normal, "memo_1", "    memo = {} if memo is None else memo")
('memo', 'dict')
"""
from __future__ import annotations

import re

import gast

from ..ir.walk import all_statements

__all__ = ["user_words"]


def user_words(normal, name, line):
    """``(shown, what)``: ``name`` as the user's ``line`` spells it, and
    ``"dict"``, ``"list"`` or ``"array"`` for what the function binds to it
    (or to a version of it)."""
    from .copies import versions
    shown = name
    base = re.sub(r"(_\d+)+$", "", name)
    if not re.search(rf"\b{re.escape(name)}\b", line or "") and base != name \
            and re.search(rf"\b{re.escape(base)}\b", line or ""):
        shown = base
    binds = [s for s in all_statements(normal.tree.body)
             if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)]
    names, todo = set(), [name]
    while todo:                   # its versions, and the names copied into it
        new = versions(normal, todo.pop()) - names
        names |= new
        todo += [s.value.id for s in binds if s.targets[0].id in new
                 and isinstance(s.value, gast.Name)]
    what = "array"
    for s in binds:
        if s.targets[0].id in names:
            if isinstance(s.value, (gast.Dict, gast.DictComp)):
                what = "dict"
            elif isinstance(s.value, (gast.List, gast.ListComp)):
                what = "list"
            elif _called(s.value) in _DICTS:
                what = _called(s.value)    # `defaultdict(float)`: the message says so
    return shown, what


#: calls that make a dict the transform does not know to be new (issue 13)
_DICTS = ("defaultdict", "Counter", "OrderedDict")


def _called(value):
    func = value.func if isinstance(value, gast.Call) else None
    return func.id if isinstance(func, gast.Name) else \
        func.attr if isinstance(func, gast.Attribute) else None
