"""New dicts bound together, one name at a time.

Run by ``frontend.dict_stores`` first, so that each name is seen bound to a
new dict of its own: ``xs, hs = {}, {}`` (Karpathy's min-char-rnn) becomes
one assignment per name, in order.  That is Python's meaning when no value
reads a name the statement binds (all values are evaluated before any name
is bound); where one does (``a, b = {}, {**a}``), or a value is not a new
dict, the statement is left as it is::

    xs, hs = {}, {}            ->      xs = {}
                                       hs = {}

>>> from pullback.testing import function_from_source
>>> from pullback.backend.codegen import unparse
>>> from pullback.frontend.parse import parse
>>> f = function_from_source('''
... def f(x):
...     xs, hs = {}, {0: x}
...     a, b = {}, {**a}
...     return xs, hs, a, b
... ''')
>>> tree = parse(f).tree
>>> split_dict_unpacking(tree)
>>> print(unparse(tree).strip())
def f(x):
    xs = {}
    hs = {0: x}
    a, b = ({}, {**a})
    return (xs, hs, a, b)
"""
from __future__ import annotations

import gast

__all__ = ["split_dict_unpacking"]

_NEW = (gast.Dict, gast.DictComp)


def split_dict_unpacking(tree):
    """Rewrite the FunctionDef ``tree`` in place (see the module docstring);
    nested functions are rewritten when they are transformed themselves."""
    def block(body):
        out = []
        for stmt in body:
            parts = _split(stmt)
            if parts is not None:
                out.extend(parts)
                continue
            if not isinstance(stmt, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
                for field in ("body", "orelse", "finalbody"):
                    inner = getattr(stmt, field, None)
                    if isinstance(inner, list) and inner and isinstance(inner[0], gast.stmt):
                        setattr(stmt, field, block(inner))
                for h in getattr(stmt, "handlers", None) or ():
                    h.body = block(h.body)
            out.append(stmt)
        return out
    tree.body = block(tree.body)


def _split(stmt):
    """One assignment per name for ``a, b = {}, {}``, or None."""
    if not (isinstance(stmt, gast.Assign) and len(stmt.targets) == 1):
        return None
    target, value = stmt.targets[0], stmt.value
    if not (isinstance(target, (gast.Tuple, gast.List)) and isinstance(value, (gast.Tuple,
                                                                               gast.List))):
        return None
    if len(target.elts) != len(value.elts) or not all(
            isinstance(t, gast.Name) for t in target.elts) or not all(
            isinstance(v, _NEW) for v in value.elts):
        return None
    names = {t.id for t in target.elts}
    if len(names) != len(target.elts) or any(
            isinstance(n, gast.Name) and n.id in names for v in value.elts
            for n in gast.walk(v)):
        return None
    return [gast.copy_location(gast.Assign(targets=[t], value=v, type_comment=None), stmt)
            for t, v in zip(target.elts, value.elts)]
