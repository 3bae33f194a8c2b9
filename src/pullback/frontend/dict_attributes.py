"""Item stores into a dict an attribute of ``self`` holds, in a state function.

A method that changes its object is followed as its state function
(``frontend.method_state``): each store makes a new object.  A store into
an item of a dict that an attribute holds (``self.m[k] = v``, ``self.m[k]
+= v``, Adam's moments keyed like the parameters) is followed the same way,
as a new dict in a new object (``dict_set``, whose rule is
``rules.dicts``)::

    self.m[k] = self.b1 * self.m[k] + g     ->   value = self.b1 * self.m[k] + g
                                                 self = with_attribute(self, 'm',
                                                     dict_set(self.m, k, value), self)

That is Python's meaning when nothing else holds the dict, which is checked
over the whole class (``why_not_owned``): every store of the attribute, in
every method, binds a new dict (a display, a dict comprehension, ``dict(...)``)
or None, and every read of it takes an item (``self.m[k]``, ``self.m.get(k,
default)``), tests a key
(``k in self.m``) or its length; a method returning it, passing it on or
giving it another name could let another name see the change, and is
refused, naming its line.  The caller, where the object is built, reads it
the same way only (``frontend.state_calls``).  A store into an item of an
item (``self.m[a][b] = v``) is refused.

>>> import numpy as np, pullback as pb
>>> from pullback.testing import function_from_source
>>> Acc = function_from_source('''
... def make():
...     class Acc:
...         def __init__(self):
...             self.m = {}
...         def add(self, k, v):
...             self.m[k] = 2.0 * v
...             self.m[k] += v
...     return Acc
... ''', {"__name__": "example"})()
>>> f = function_from_source('''
... def f(x):
...     acc = Acc()
...     acc.add("a", x)
...     acc.add("b", x * x)
...     return acc.m["a"] * acc.m["b"]
... ''', {"Acc": Acc})
>>> float(pb.grad(f)(2.0))          # 3x * 3x^2 = 9x^3
108.0
"""
from __future__ import annotations

import ast
import copy
import inspect
import textwrap
import types
import weakref

import gast

from ..runtime import control, objects

__all__ = ["why_not_owned", "attribute_dict_store", "item_attribute", "whole_read"]

_owned = weakref.WeakKeyDictionary()      # class -> {attribute: why not, or None}


def item_attribute(target, me):
    """``attr`` where ``target`` is ``me.attr[key]``, else None."""
    if isinstance(target, gast.Subscript) and not isinstance(target.slice, gast.Slice) \
            and isinstance(target.value, gast.Attribute) \
            and isinstance(target.value.value, gast.Name) and target.value.value.id == me:
        return target.value.attr
    return None


def why_not_owned(cls, attr):
    """Why the dict the attribute ``attr`` of ``cls``'s objects holds may be
    held by another name too (a sentence naming the line), or None where
    every method of the class stores only new dicts into it and reads it
    only by item, key test or length.  Checked once per class and attribute."""
    table = _owned.setdefault(cls, {})
    if attr not in table:
        table[attr] = _why_not_owned(cls, attr)
    return table[attr]


def _why_not_owned(cls, attr):
    seen = set()
    for klass in cls.__mro__:
        if klass is object:
            continue
        for member in vars(klass).values():
            fn = member.__func__ if isinstance(member, (staticmethod, classmethod)) else \
                member.fget if isinstance(member, property) else member
            if not isinstance(fn, types.FunctionType) or fn in seen:
                continue
            seen.add(fn)
            why = _uses(fn, attr)
            if why is not None:
                return why
    return None


def _uses(fn, attr):
    try:
        lines, first = inspect.getsourcelines(fn)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError):
        return f"the source of `{fn.__qualname__}` cannot be read"
    parents = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    where = f"line {{}} of {fn.__code__.co_filename}"
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and node.attr == attr):
            continue
        up = parents.get(node)
        line = where.format(node.lineno + first - 1)
        if isinstance(node.ctx, ast.Store):
            if isinstance(up, ast.Assign) and len(up.targets) == 1 \
                    and up.targets[0] is node and _new_dict(up.value):
                continue
            return (f"`{fn.__name__}` stores into `.{attr}` something other than a new "
                    f"dict ({line})")
        if isinstance(node.ctx, ast.Del):
            return f"`{fn.__name__}` deletes `.{attr}` ({line})"
        if isinstance(up, ast.Subscript) and up.value is node \
                and not isinstance(up.ctx, ast.Del):
            continue            # (`self.m[a][b] = v`: refused where it is rewritten)
        if isinstance(up, ast.Compare) and node in up.comparators and all(
                isinstance(o, (ast.In, ast.NotIn)) for o in up.ops):
            continue
        if _get_call(node, up, parents):
            continue
        if isinstance(up, ast.Call) and isinstance(up.func, ast.Name) \
                and up.func.id == "len" and up.args == [node]:
            continue
        return (f"`{fn.__name__}` uses `.{attr}` otherwise than by item, key test or "
                f"length (or deletes an item), so another name may hold the dict or miss "
                f"a change ({line})")
    return None


def whole_read(cls, node, parents):
    """Why the read ``node`` (``s.attr``, of an object of ``cls`` that the
    caller follows) may keep the dict a method of ``cls`` stores into by
    item, or None: read by item, key test or length, it keeps nothing."""
    up = parents.get(node)
    if node.attr not in _item_stored(cls) or why_not_owned(cls, node.attr) is not None \
            or (isinstance(up, gast.Subscript) and up.value is node
                and not isinstance(up.ctx, gast.Del)) \
            or (isinstance(up, gast.Compare) and node in up.comparators) \
            or _get_call(node, up, parents) \
            or (isinstance(up, gast.Call) and isinstance(up.func, gast.Name)
                and up.func.id == "len" and up.args == [node]):
        return None
    if isinstance(up, gast.Subscript) and up.value is node:      # `del s.m[k]`
        return (f"an item of `{_text(node)}` is deleted, and a method of {cls.__name__} "
                "stores into its items (a new dict each time); store a new dict without it "
                f"(`{_text(node)} = {{k: v for k, v in {_text(node)}.items() if k != key}}`)")
    return (f"`{_text(node)}` is read whole, and a method of {cls.__name__} stores into its "
            f"items (a new dict each time, which this name would not see); read it by item "
            f"(`{_text(node)}[k]`) or copy it (`dict({_text(node)})`) after the last change")


def _get_call(node, up, parents):
    """Whether ``node`` (``self.m``) is read by ``self.m.get(k[, default])``:
    an item read, as ``self.m[k]``."""
    call = parents.get(up)
    return isinstance(up, (ast.Attribute, gast.Attribute)) and up.value is node \
        and up.attr == "get" and isinstance(call, (ast.Call, gast.Call)) and call.func is up \
        and 1 <= len(call.args) <= 2 and not call.keywords


def _text(node):
    return f"{node.value.id}.{node.attr}" if isinstance(node.value, gast.Name) \
        else f"....{node.attr}"


def _item_stored(cls):
    """The attributes whose items some method of ``cls`` stores into
    (``self.m[k] = v``, ``self.m[k] += v``)."""
    table = _owned.setdefault(cls, {})
    if _ITEMS not in table:
        found = set()
        for klass in cls.__mro__:
            for member in vars(klass).values() if klass is not object else ():
                if not isinstance(member, types.FunctionType):
                    continue
                try:
                    tree = ast.parse(textwrap.dedent(inspect.getsource(member)))
                except (OSError, TypeError, SyntaxError):
                    continue
                for n in ast.walk(tree):
                    targets = n.targets if isinstance(n, ast.Assign) else \
                        [n.target] if isinstance(n, ast.AugAssign) else []
                    found.update(t.value.attr for t in targets
                                 if isinstance(t, ast.Subscript)
                                 and isinstance(t.value, ast.Attribute))
        table[_ITEMS] = frozenset(found)
    return table[_ITEMS]


_ITEMS = ("item stores",)       # (a key no attribute name can be)


def _new_dict(value):
    return isinstance(value, (ast.Dict, ast.DictComp)) or (
        isinstance(value, ast.Constant) and value.value is None) or (
        isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
        and value.func.id == "dict")


def attribute_dict_store(stmt, me, cls, fresh, helper, located, refuse):
    """The statements replacing ``me.attr[key] = v`` or ``me.attr[key] op= v``
    (module docstring), or None for another statement.  ``helper(name, obj)``
    names a runtime helper; ``refuse(node, why)`` raises."""
    if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1:
        target, value, op = stmt.targets[0], stmt.value, None
    elif isinstance(stmt, gast.AugAssign):
        target, value, op = stmt.target, stmt.value, stmt.op
    else:
        return None
    attr = item_attribute(target, me)
    if attr is None:
        return None
    why = why_not_owned(cls, attr)
    if why is not None:
        refuse(stmt, f"it writes into what an attribute of `{me}` holds (`{me}.{attr}[...] = "
                     f"...` is followed for a dict only the object holds, and {why})")

    def load(n):
        return gast.Name(id=n, ctx=gast.Load(), annotation=None, type_comment=None)

    def assign(n, v):
        return located(gast.Assign(targets=[gast.Name(id=n, ctx=gast.Store(), annotation=None,
                                                      type_comment=None)],
                                   value=v, type_comment=None), stmt)

    def read():
        return gast.Attribute(value=load(me), attr=attr, ctx=gast.Load())
    out = []
    if op is None:                      # Python: the value, then the dict, then the key
        held = fresh("value")
        out.append(assign(held, value))
        value = load(held)
    key = copy.deepcopy(target.slice)
    if not isinstance(key, (gast.Name, gast.Constant)):
        k = fresh("key")
        out.append(assign(k, key))
        key = load(k)
    if op is not None:
        item = fresh(f"{attr}_item")
        out.append(assign(item, gast.Subscript(value=read(), slice=key, ctx=gast.Load())))
        out.append(located(gast.Expr(value=gast.Call(
            func=load(helper("item_rebinds", control.item_rebinds)),
            args=[load(item), copy.deepcopy(key), gast.Constant(f"{me}.{attr}", None)], keywords=[])), stmt))
        value = gast.BinOp(left=load(item), op=op, right=value)
    new = gast.Call(func=load(helper("dict_set", control.dict_set)),
                    args=[read(), key, value], keywords=[])
    out.append(located(gast.Assign(
        targets=[gast.Name(id=me, ctx=gast.Store(), annotation=None, type_comment=None)],
        value=gast.Call(func=load(helper("with_attribute", objects.with_attribute)),
                        args=[load(me), gast.Constant(attr, None), new, load(me)],
                        keywords=[]), type_comment=None), stmt))
    return out
