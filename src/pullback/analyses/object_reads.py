"""Reads and writes of an object holding differentiated values that pullback
does not follow, refused when the function is transformed (split from
``analyses.attributes``).

An object holding differentiated values (``s = S(x)``, ``self`` in its
method) is differentiated as the dict of its attributes.  Refused here, each
once a silent wrong gradient: a write into what an attribute holds
(``s.x[0] = v``, ``s.hist.append(v)``, ``np.add.at(s.x, i, v)``:
``writes_through_attributes``), a read of a property without a setter
(``c.area``: ``property_reads``), and ``s[i]`` / ``for v in s`` on a class
with its own ``__getitem__`` / ``__iter__`` (``own_item_reads``)::

    s = Sim(x)                  UnsupportedSyntaxError: pullback cannot
    s.x[0] = 5.0        ->      differentiate this write into `s.x`: `s`
    return np.sum(s.x)          holds differentiated values, ...

>>> import numpy as np, pullback as pb
>>> class Sim:
...     def __init__(self, x):
...         self.x = x
>>> def f(x):
...     s = Sim(x)
...     s.x[0] = 5.0
...     return np.sum(s.x)
>>> pb.grad(f)(np.ones(2))
Traceback (most recent call last):
...
pullback.errors.UnsupportedSyntaxError: pullback cannot differentiate this write into `s.x`: ...
"""
from __future__ import annotations

import functools
import inspect
import types

import gast

from ..errors import UnsupportedSyntaxError
from ..frontend.self_changes import _CHANGING
from .object_classes import class_of

__all__ = ["property_reads", "own_item_reads", "writes_through_attributes"]


def property_reads(stmt, normal, parsed, varied, binds):
    """The refusal of ``v = obj.attr`` where ``attr`` is a property (or
    another data descriptor) of the class of an object holding differentiated
    values: the read is differentiated as a read of a stored attribute, so
    the gradient of what the property computes was dropped (was a silent
    wrong gradient: ``c = Circle(r); np.sum(c.area)`` gave zeros)."""
    if not (isinstance(stmt, gast.Assign) and isinstance(stmt.value, gast.Attribute)
            and isinstance(stmt.value.value, gast.Name) and stmt.value.value.id in varied):
        return []
    obj, attr = stmt.value.value.id, stmt.value.attr
    cls = class_of(obj, normal, parsed, binds)
    found = inspect.getattr_static(cls, attr, None) if cls is not None else None
    # (a property with a setter that `__init__` stores into: instances refuses the class)
    if not (isinstance(found, functools.cached_property)
            or (isinstance(found, property) and found.fset is None)):
        return []
    if obj not in (parsed.location(stmt).line or ""):
        obj = "..."                 # a name normalize made (`Circle(r).area`)
    return [UnsupportedSyntaxError(
        f"pullback cannot differentiate the read of `{obj}.{attr}`: `{attr}` is a property of "
        f"`{cls.__name__}`, computed by code pullback does not follow through an attribute "
        "read, so the gradient of what it computes would be lost.", parsed.location(stmt),
        f"Make `{attr}` a method and call it (`{obj}.{attr}()`): a method's result is "
        "differentiated.")]


def own_item_reads(stmt, normal, parsed, varied, binds):
    """The refusal of ``v = obj[i]`` and ``for v in obj`` where ``obj``, holding
    differentiated values, is of a user class with its own ``__getitem__`` or
    ``__iter__``: the read was differentiated as a namedtuple's (``obj[0]``
    as its first attribute), a silent wrong gradient (``Pair(a, b)[0]``
    returning ``b`` gave ``a`` the gradient) or an IndexError."""
    if isinstance(stmt, gast.Assign) and isinstance(stmt.value, gast.Subscript):
        node, dunder = stmt.value.value, ("__getitem__",)
    elif isinstance(stmt, gast.For):
        node, dunder = stmt.iter, ("__iter__", "__getitem__")
    else:
        return []
    if not (isinstance(node, gast.Name) and node.id in varied):
        return []
    cls = class_of(node.id, normal, parsed, binds)
    if cls is None or issubclass(cls, (tuple, list, dict)) or not any(
            isinstance(inspect.getattr_static(cls, d, None), types.FunctionType)
            for d in dunder):
        return []
    obj = node.id if node.id in (parsed.location(stmt).line or "") else "..."
    how = "indexing" if isinstance(stmt, gast.Assign) else "iterating over"
    return [UnsupportedSyntaxError(
        f"pullback cannot differentiate {how} `{obj}`: `{cls.__name__}` defines its own "
        f"`{dunder[0]}`, which pullback does not follow (it would read the object's "
        "attributes in order, as a namedtuple's).", parsed.location(stmt),
        "Index or walk the attribute that holds the items (`obj.layers[i]`, "
        "`for layer in obj.layers`), or call a method that returns the item.")]


def writes_through_attributes(normal, parsed, varied):
    """The refusals of writes into a value read from an attribute of an object
    holding differentiated values (``s.x[0] = 5.0``, ``s.x[1] += v``,
    ``s.hist.append(v)``, ``np.add.at(s.x, i, v)``, here or in a method on
    ``self``): the attribute is not followed as a variable, so the reads of
    it after the write were differentiated as if it had not happened (was a
    silent wrong gradient: ``s.hist.append(3 * x)`` then
    ``np.sum(s.hist[0] ** 2)`` gave zeros, ``s.x[0] = 5.0`` kept the gradient
    of the overwritten element)."""
    held = {}
    for node in gast.walk(normal.tree):
        if isinstance(node, gast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], gast.Name) \
                and isinstance(node.value, gast.Attribute) \
                and isinstance(node.value.value, gast.Name) and node.value.value.id in varied:
            held[node.targets[0].id] = f"{node.value.value.id}.{node.value.attr}"
    if not held:
        return []

    def root(node):
        while isinstance(node, (gast.Attribute, gast.Subscript, gast.Starred)):
            node = node.value
        return node.id if isinstance(node, gast.Name) else None
    errors = []
    for stmt in gast.walk(normal.tree):
        name = None
        if isinstance(stmt, (gast.Assign, gast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, gast.Assign) else [stmt.target]
            name = next((root(t) for t in targets if isinstance(t, gast.Subscript)
                         and root(t) in held), None)
        if name is None and isinstance(stmt, (gast.Expr, gast.Assign)) \
                and isinstance(stmt.value, gast.Call):
            call = stmt.value
            func = call.func
            if isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name) \
                    and func.value.id in held and func.attr in _CHANGING:
                name = func.value.id
            elif isinstance(func, gast.Attribute) and func.attr == "at" and call.args \
                    and isinstance(call.args[0], gast.Name) and call.args[0].id in held:
                name = call.args[0].id
            else:
                name = next((k.value.id for k in call.keywords if k.arg == "out"
                             and isinstance(k.value, gast.Name) and k.value.id in held), None)
        if name is None:
            continue
        attr = held[name]
        obj = attr.split(".")[0]
        if attr.rpartition(".")[2] in _ARRAY_VIEWS:
            errors.append(_view_attribute_write(parsed, stmt, name, attr, obj))
            continue
        shown = attr if attr in (parsed.location(stmt).line or "") else f"an attribute of `{obj}`"
        shown = f"`{shown}`" if shown == attr else shown
        errors.append(UnsupportedSyntaxError(
            f"pullback cannot differentiate this write into {shown}: `{obj}` holds "
            "differentiated values, and an attribute is not followed as a variable, so the "
            "reads of it after the write would be differentiated as if it had not happened.",
            parsed.location(stmt),
            "Build the new value in a local name (`x = s.x.copy(); x[0] = v`, "
            "`hist = s.hist + [v]`) and use it, or make a new object with it."))
    return errors


_ARRAY_VIEWS = ("T", "mT", "real", "imag", "flat")


def _view_attribute_write(parsed, stmt, name, attr, obj):
    """The refusal of a write into ``t = y.T`` (``.mT``, ``.real``, ``.imag``,
    ``.flat``) that ``analyses.aliases`` did not place: a view of the array."""
    return UnsupportedSyntaxError(
        f"pullback cannot follow this write into `{name}`, which is `{attr}`: a view of the "
        f"array `{obj}` (NumPy: the write changes `{obj}` too), used here in a way pullback "
        "does not place (read again after the write, or viewed again).", parsed.location(stmt),
        f"Write into `{obj}` itself by index"
        + (f" (for `{obj}.T[0]`, `{obj}[:, 0]`)" if attr.endswith(".T") else "")
        + f", or take a copy first (`{name} = {attr}.copy()`) if `{obj}` should not change.")

