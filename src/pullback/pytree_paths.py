"""Where a registered object's children are: each child of its flatten
function found, by identity, among the object's attributes (and inside the
lists, tuples, dicts and objects they hold), as a path of attribute names
and keys, so that a child's gradient is that attribute's.

>>> class P:
...     def __init__(self, w, b):
...         self.w, self.b = w, b
>>> import numpy as np
>>> from pullback.pytrees import register_pytree_node
>>> register_pytree_node(P, lambda p: ((p.b, p.w), None), lambda aux, c: P(c[1], c[0]))
>>> children_of(P(np.ones(2), np.zeros(1)))[2]
[('b',), ('w',)]
"""
from __future__ import annotations

import copy as copy_module
import dataclasses

import numpy as np

from .errors import NonDifferentiableError
from .runtime import core
from .runtime.leaves import at_path
from .runtime.structures import (_entry, fields_of, is_instance, is_structure, rebuild_like,
                                 set_attribute, slot_names)
from .pytrees import _attributes, _copy_object, _float_leaf, _holds_float, registration

__all__ = ["children_of"]


def children_of(x):
    """``(children, aux, paths)`` of the registered object ``x``: each child's
    path of attribute names and keys inside ``x`` (None for a child holding no
    float: None, an int; it carries no gradient)."""
    flatten, _ = registration(x)
    children, aux = flatten(x)
    children = list(children)
    found = {}
    _index(x, (), found, set(), 0)
    paths = []
    shared = [id(c) for c in children if c is not None and _is_number(c)
              and len(found.get(id(c), [])) > 1]
    probed = _probe(x, shared, found) if shared else None
    for i, c in enumerate(children):
        if c is None or not _holds_float(c, set()):
            paths.append(None)
            continue
        where = found.get(id(c), [])
        if probed is not None and len(where) > 1 and probed[i] is not None:
            where = [probed[i]]
        if len(where) != 1:
            name = type(x).__name__
            if not where:
                raise NonDifferentiableError(
                    f"The flatten function registered for `{name}` returned a child "
                    f"(number {i}, a {type(c).__name__}) that is not one of the object's "
                    "attributes: pullback reads the object's attributes in your function, "
                    "so each child must be an attribute's value itself (not a copy or a "
                    "value computed from it).", None,
                    "Return the attributes themselves from flatten, e.g. "
                    "`lambda p: ((p.w, p.b), None)`.")
            shown = " and ".join(_show(p) for p in where[:2])
            raise NonDifferentiableError(
                f"The `{name}` object holds child {i} of its flatten function at two "
                f"places ({shown}), so pullback cannot tell which of them a gradient "
                "belongs to.", None,
                "Give each attribute its own value (a copy: `x.copy()`), or store it once.")
        paths.append(where[0])
    return children, aux, paths


def _is_number(v):
    return type(v) in (float, complex) or isinstance(v, np.generic)


def _probe(x, shared, found):
    """The paths of the children that are one number held at several places
    (``P(0.0, 0.0)``: Python shares the constant between the attributes):
    ``x`` is flattened again as a copy in which each of those places holds
    a number of its own, equal to it; None where that does not tell."""
    probe, marks, keep = x, {}, []
    for cid in set(shared):
        for path in found[cid]:
            old = _user_at(x, path)
            fresh = complex(old.real, old.imag) if type(old) is complex else \
                old * 1.0 if type(old) is float else old.copy()
            if fresh is old:
                return None
            keep.append(fresh)
            marks[id(fresh)] = path
            probe = _replace_path(probe, path, fresh)
    got = [marks.get(id(c)) for c in registration(x)[0](probe)[0]]
    named = [p for p in got if p is not None]
    return got if len(set(named)) == len(named) else None


def _user_at(x, path):
    for k in path:
        x = dict(fields_of(x))[k] if is_structure(x) else _attributes(x)[k]
    return x


def _replace_path(x, path, value):
    """A copy of the user's tree ``x`` with ``value`` at ``path`` (copies
    along the path only; nothing of ``x`` is changed)."""
    if not path:
        return value
    k, rest = path[0], path[1:]
    if is_structure(x):
        fields = dict(fields_of(x))
        fields[k] = _replace_path(fields[k], rest, value)
        return rebuild_like(x, fields)
    new = _copy_object(x)
    set_attribute(new, k, _replace_path(_attributes(x)[k], rest, value))
    return new


def _show(path):
    return "obj" + "".join(f".{k}" if isinstance(k, str) and k.isidentifier() else f"[{k!r}]"
                           for k in path)


def _index(v, path, found, seen, depth):
    if path:
        found.setdefault(id(v), []).append(path)
    if id(v) in seen or depth > 8 or _float_leaf(v):
        return
    seen = seen | {id(v)}
    if is_structure(v):
        items = fields_of(v)
    elif is_instance(v) or (registration(v) is not None
                                 and (getattr(v, "__dict__", None) is not None
                                      or slot_names(type(v)))):
        items = list(_attributes(v).items())
    else:
        return
    for k, c in items:
        _index(c, path + (k,), found, seen, depth + 1)


def _at(tree, path):
    return at_path(tree, path, _entry)


def _set(tree, path, value):
    """``tree`` (an internal cotangent or tangent: dicts, lists, tuples,
    objects) with ``value`` at ``path``, copying what the path goes through."""
    if not path:
        return value
    k, rest = path[0], path[1:]
    if isinstance(tree, dict):
        new = copy_module.copy(tree)
        new[k] = _set(tree.get(k), rest, value)
        return new
    if isinstance(tree, (list, tuple)):
        items = list(tree)
        items[k] = _set(items[k], rest, value)
        return core.pack_like(tree, items) if isinstance(tree, tuple) else items
    if dataclasses.is_dataclass(tree) and not isinstance(tree, type):
        return rebuild_like(tree, {k: _set(getattr(tree, k), rest, value)})
    new = _copy_object(tree)
    set_attribute(new, k, _set(getattr(tree, k, None), rest, value))
    return new
