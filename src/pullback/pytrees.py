"""Registered pytree classes and plain objects at the boundary of ``grad``,
``value_and_grad``, ``vjp`` and ``jvp``.

Inside a differentiated function an object of the user's class is read by
attribute, and its gradient is a dict of its attributes' (``runtime.core``:
``is_instance``, ``FieldGrads``).  This module turns that dict into what the
user sees, and the user's cotangents and tangents into what the generated
code reads:

* a class registered with ``register_pytree_node(cls, flatten, unflatten)``
  (JAX's convention: ``flatten(obj) -> (children, aux)``,
  ``unflatten(aux, children) -> obj``), or with JAX's own
  ``jax.tree_util`` when JAX is already imported: its gradient is
  ``unflatten(aux, child_gradients)``.  Each child must be one of the
  object's attributes (found by identity, also inside lists, tuples, dicts
  and objects it holds), so the gradient of a child is the gradient of that
  attribute; the other attributes are the ``aux`` data and carry none;
* a plain object (no registration, not a dataclass): its gradient is a copy
  (``copy.copy``, ``__init__`` is not called) whose attributes holding floats
  are replaced by their gradients, recursively through the lists, tuples,
  dicts and objects it holds; attributes holding no float (ints, strings,
  functions, integer arrays: copied) are left as they are.

Before and after, for ``pb.grad(loss)(P(w, b, name="l1"), x)``::

    internal gradient {"w": gw, "b": gb, "name": 0.0}  ->  P(w=gw, b=gb, name="l1")

An object's attributes are those of its ``__dict__`` and of the
``__slots__`` of its class and bases.  Refused with ``NonDifferentiableError``
(what to write instead): an object that holds itself, a flatten whose children
are not attributes of the object.
"""
from __future__ import annotations

import copy as copy_module
import dataclasses
import numbers
import sys

import numpy as np

from .errors import NonDifferentiableError
from .runtime import core
from .runtime.structures import (REGISTERED, _NO_GRADIENT, _entry, attributes_of, fields_of,
                                 is_instance, is_structure, rebuild_like, set_attribute,
                                 slot_names)

__all__ = ["register_pytree_node", "register_pytree_node_class", "register_dataclass",
           "registration", "needs_boundary", "to_user_grad", "to_internal_cotangent",
           "to_internal_tangent", "to_user_tangent", "object_inexact", "children_of",
           "tree_items", "tree_replace", "zero_tree"]

_REGISTRY = REGISTERED     # class -> (flatten, unflatten)
_BUILTIN = (tuple, list, dict, type(None), np.ndarray, np.generic, numbers.Number, str, bytes)


def register_pytree_node(nodetype, flatten_func, unflatten_func):
    """Register ``nodetype`` as a pytree node, as JAX's
    ``jax.tree_util.register_pytree_node``: ``flatten_func(obj)`` returns
    ``(children, aux_data)``, ``unflatten_func(aux_data, children)`` builds an
    object again.  A registered object may be a differentiated argument (its
    gradient is ``unflatten_func(aux_data, child_gradients)``), an output
    (``vjp``'s cotangent and ``jvp``'s tangents are objects of the class) and
    a value inside the function, read by attribute.  Each child must be one of
    the object's attributes.

    >>> import numpy as np, pullback as pb
    >>> class Affine:
    ...     def __init__(self, w, b, name):
    ...         self.w, self.b, self.name = w, b, name
    >>> pb.register_pytree_node(Affine, lambda a: ((a.w, a.b), a.name),
    ...                         lambda name, ch: Affine(*ch, name))
    >>> g = pb.grad(lambda a, x: np.sum(a.w * x + a.b))(Affine(np.ones(2), 0.5, "a"), 3.0)
    >>> g.w, g.b, g.name
    (array([3., 3.]), 2.0, 'a')
    """
    if not isinstance(nodetype, type):
        raise TypeError(f"register_pytree_node takes a class, not {nodetype!r}.")
    if issubclass(nodetype, _BUILTIN) and not _is_namedtuple_class(nodetype):
        raise TypeError(f"{nodetype.__name__} is a built-in structure or leaf of pullback's "
                        "and cannot be registered again.")
    if not callable(flatten_func) or not callable(unflatten_func):
        raise TypeError("register_pytree_node takes (cls, flatten, unflatten) with flatten(obj) "
                        "-> (children, aux) and unflatten(aux, children) -> obj.")
    _REGISTRY[nodetype] = (flatten_func, unflatten_func)


def register_pytree_node_class(cls):
    """Class decorator: register ``cls`` with its ``tree_flatten`` method and
    ``tree_unflatten`` classmethod (as JAX's); returns ``cls``."""
    register_pytree_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)
    return cls


def register_dataclass(nodetype, data_fields, meta_fields):
    """Register a class whose ``data_fields`` are children and ``meta_fields``
    aux data (as JAX's ``register_dataclass``; built again with keyword
    arguments ``nodetype(**fields)``); returns ``nodetype``."""
    data_fields, meta_fields = tuple(data_fields), tuple(meta_fields)

    def flatten(x):
        return ([getattr(x, f) for f in data_fields], tuple(getattr(x, f) for f in meta_fields))

    def unflatten(aux, children):
        return nodetype(**dict(zip(data_fields, children)), **dict(zip(meta_fields, aux)))
    register_pytree_node(nodetype, flatten, unflatten)
    return nodetype


def _is_namedtuple_class(t):
    return issubclass(t, tuple) and hasattr(t, "_fields")


def _jax_flatten(x):
    """``x``'s registration with JAX, only if JAX is already imported (pullback
    never imports it for this): ``(flatten, unflatten)`` or None."""
    tree_util = sys.modules.get("jax.tree_util")
    if tree_util is None:
        return None
    try:
        leaves, treedef = tree_util.tree_flatten(x, is_leaf=lambda y: y is not x)
    except Exception:       # noqa: BLE001  (JAX refuses the object: not a node)
        return None
    if tree_util.treedef_is_leaf(treedef):
        return None

    def flatten(obj):
        ls, td = tree_util.tree_flatten(obj, is_leaf=lambda y: y is not obj)
        return ls, td
    return flatten, lambda treedef, children: treedef.unflatten(children)


def registration(x):
    """``(flatten, unflatten)`` of ``x``'s class if it is registered (with
    pullback, or with JAX when JAX is imported), else None."""
    t = type(x)
    got = _REGISTRY.get(t)
    if got is not None:
        return got
    if t is np.ndarray or t is float or isinstance(x, (tuple, list, dict, np.generic,
                                                       numbers.Number, str, bytes)) \
            or x is None or isinstance(x, _NO_GRADIENT):
        return None
    if "jax" in sys.modules and (is_instance(x) or dataclasses.is_dataclass(x)):
        return _jax_flatten(x)
    return None


def _attributes(x):
    """The attributes of a plain object: its ``__dict__`` and the ``__slots__``
    of its class and bases that hold a value (``runtime.attributes_of``)."""
    return attributes_of(x)


def check_readable(x):
    """A registered object is read by attribute (``__dict__`` or ``__slots__``):
    nothing to refuse any more (kept for the callers)."""
    return None


def is_plain_object(x):
    """An object of the user's class that is neither registered nor a
    structure: differentiated attribute by attribute."""
    if registration(x) is not None or is_structure(x):
        return False
    return is_instance(x)


def _float_leaf(v):
    t = type(v)
    if t is float or t is complex:
        return True
    if t is np.ndarray or isinstance(v, np.generic):
        return v.dtype.kind in "fc"
    return isinstance(v, (float, complex)) and not isinstance(v, bool)


def object_inexact(x, seen=None):
    """Whether the plain object ``x`` holds a float somewhere (so it has a
    gradient).  An object that holds itself is refused."""
    seen = set() if seen is None else seen
    if id(x) in seen:
        raise NonDifferentiableError(
            f"pullback cannot differentiate with respect to this `{type(x).__name__}`: it "
            "holds itself (through its attributes), and pullback walks an object's "
            "attributes to build its gradient.",
            None, "Pass the arrays it holds as arguments, or a dict of them.")
    seen = seen | {id(x)}
    return any([_holds_float(v, seen) for v in _attributes(x).values()])   # all: cycles


def _holds_float(v, seen):
    if _float_leaf(v):
        return True
    if registration(v) is not None:
        return any([_holds_float(c, seen) for c in registration(v)[0](v)[0]])
    if is_structure(v):
        if id(v) in seen:
            return False
        return any([_holds_float(c, seen | {id(v)}) for _, c in fields_of(v)])
    if is_plain_object(v):
        return object_inexact(v, seen)
    return False


def needs_boundary(x):
    """Whether ``x`` is, or holds, a registered or plain object (whose
    gradient, cotangent and tangent this module converts)."""
    t = type(x)
    if t is np.ndarray or t is float or t is int or t is complex:
        return False
    if registration(x) is not None or is_plain_object(x):
        return True
    if is_structure(x):
        return any(needs_boundary(v) for _, v in fields_of(x))
    return False


# -- where a registered object's children are ---------------------------------------

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


def _copy_object(x):
    """A shallow copy of the object ``x`` with a ``__dict__`` of its own
    (``copy.copy``; never ``x`` itself, whatever its ``__copy__`` does, so the
    user's object is never written into; ``__init__`` is not called)."""
    new = copy_module.copy(x)
    if new is x or type(new) is not type(x) or (
            getattr(x, "__dict__", None) is not None
            and getattr(new, "__dict__", None) is getattr(x, "__dict__", None)):
        new = object.__new__(type(x))
        for k, v in _attributes(x).items():
            set_attribute(new, k, v)
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
    for k in path:
        tree = _entry(tree, k)
        if tree is None:
            return None
    return tree


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


# -- gradients out -------------------------------------------------------------------

def to_user_grad(g, x):
    """The gradient the user sees for the argument ``x`` from the internal
    gradient ``g`` (for a registered object, ``unflatten(aux, ...)``; for a
    plain object, a copy with the gradients of its float attributes)."""
    reg = registration(x)
    if reg is not None:
        children, aux, paths = children_of(x)
        grads = [c if p is None else to_user_grad(_at(g, p), c)     # no float: left
                 for c, p in zip(children, paths)]
        grads = [core.zeros_like(c) if gc is None and c is not None else gc
                 for gc, c in zip(grads, children)]
        return reg[1](aux, grads)
    if is_structure(x):
        if not needs_boundary(x):
            return g
        values = {k: to_user_grad(_entry(g, k), v) for k, v in fields_of(x)}
        return rebuild_like(x, values)
    if is_plain_object(x):
        return _object_like(x, g, _grad_leaf)
    if g is None:
        return core.zeros_like(x)
    return g


def _grad_leaf(g, v):
    if _float_leaf(v):
        return core.zeros_like(v) if g is None else core.project(g, v, copy=True)
    return to_user_grad(g, v)


def _object_like(x, t, leaf):
    """A copy of the plain object ``x`` whose float-holding attributes are
    ``leaf(entry of t, value)``; the others are left (arrays copied)."""
    new = _copy_object(x)
    for k, v in _attributes(x).items():
        set_attribute(new, k, _kept(t, k, v, leaf))
    return new


def _kept(t, k, v, leaf):
    e = _entry(t, k)
    if _float_leaf(v):
        return leaf(e, v)
    if registration(v) is not None:
        return leaf(e, v) if _holds_float(v, set()) else v
    if is_structure(v):
        if not _holds_float(v, set()):
            return _copy_arrays(v)
        return rebuild_like(v, {k2: _kept(e, k2, v2, leaf) for k2, v2 in fields_of(v)})
    if is_plain_object(v):
        return _object_like(v, e, leaf) if object_inexact(v) else v
    return _copy_arrays(v)


def _copy_arrays(v):
    if isinstance(v, np.ndarray):
        return v.copy()
    if is_structure(v):
        return rebuild_like(v, {k: _copy_arrays(c) for k, c in fields_of(v)})
    return v


# -- cotangents and tangents in (vjp of a function returning objects; jvp) --------------

def _to_internal(t, x, where, what):
    """The user's cotangent or tangent ``t`` (``what``) of ``x`` as the
    generated code reads it: a registered or plain object's cotangent as the
    dict of its attributes' cotangents, its tangent as an object of its class
    whose attributes are tangents (None or zeros for those that carry none).
    One walk for both: they differ only in what an object becomes."""
    reg = registration(x)
    if reg is not None or is_plain_object(x):
        _same_class(t, x, where, what)
    if reg is not None:
        children, _, paths = children_of(x)
        t_children = list(reg[0](t)[0])
        if len(t_children) != len(children):
            raise ValueError(f"The {what} of {where} has {len(t_children)} children, but "
                             f"the {'output' if what == 'cotangent' else 'primal'} has "
                             f"{len(children)}.")
        internal = core.zeros_like(x) if what == "cotangent" else \
            _tangent_zeros(x, _zeros_tangent())
        for c, tc, path in zip(children, t_children, paths):
            if path is not None:
                internal = _set(internal, path, _to_internal(tc, c, where, what))
        return internal
    if is_structure(x):
        if not needs_boundary(x):
            return t
        return rebuild_like(x, {k: _to_internal(_entry(t, k), v, where, what)
                                     for k, v in fields_of(x)})
    if not is_plain_object(x):
        return t
    if what == "cotangent":
        return {k: _internal_ct_attr(getattr(t, k, None), v, where)
                for k, v in _attributes(x).items()}
    zeros_tangent = _zeros_tangent()

    def leaf(e, v):
        if _float_leaf(v):
            return zeros_tangent(v) if e is None else e
        return _to_internal(e, v, where, what)
    new = _copy_object(x)
    for k, v in _attributes(x).items():
        set_attribute(new, k, _kept(t, k, v, leaf) if _holds_float(v, set())
                           else _tangent_zeros(v, zeros_tangent))
    return new


def _zeros_tangent():
    from .runtime.forward_support import zeros_tangent
    return zeros_tangent


def to_internal_cotangent(ct, value, where="the output"):
    """The user's cotangent ``ct`` for the output ``value`` as the generated
    adjoint reads it: a registered or plain object's as the dict of its
    attributes' cotangents."""
    return _to_internal(ct, value, where, "cotangent")


def to_internal_tangent(t, p, where="the primal"):
    """The user's tangent ``t`` of the primal ``p`` as the tangent function
    reads it: an object of ``p``'s class whose attributes are tangents
    (None or zeros for attributes that carry none)."""
    return _to_internal(t, p, where, "tangent")


def _internal_ct_attr(c, v, where):
    if _float_leaf(v) or registration(v) is not None or is_structure(v) \
            or (is_plain_object(v) and object_inexact(v)):
        if c is None:
            return core.zeros_like(v)
        if is_structure(v) and not registration(v):
            return rebuild_like(v, {k: _internal_ct_attr(_entry(c, k), x, where)
                                         for k, x in fields_of(v)})
        return to_internal_cotangent(c, v, where)
    return core.zeros_like(v)


def _same_class(t, value, where, what):
    if type(t) is not type(value):
        raise TypeError(f"The {what} of {where} must be an object of its class "
                        f"`{type(value).__name__}` (as JAX's pytrees), not "
                        f"{type(t).__name__}.")


def _tangent_zeros(p, zeros_tangent):
    """A copy of the object ``p`` (and of the structures and objects it
    holds) with a zero tangent in every attribute."""
    if is_structure(p):
        return rebuild_like(p, {k: _tangent_zeros(v, zeros_tangent)
                                     for k, v in fields_of(p)})
    if is_instance(p) or (registration(p) is not None and (
            getattr(p, "__dict__", None) is not None or slot_names(type(p)))):
        new = _copy_object(p)
        for k, v in _attributes(p).items():
            set_attribute(new, k, _tangent_zeros(v, zeros_tangent))
        return new
    return zeros_tangent(p)


def to_user_tangent(t, y):
    """The tangent the user sees for the output ``y`` from the tangent
    function's ``t``: an object of ``y``'s class (``unflatten`` for a
    registered one)."""
    from .runtime.forward_support import output_tangent, zeros_tangent
    reg = registration(y)
    if reg is not None:
        children, aux, paths = children_of(y)
        tangents = [c if p is None else to_user_tangent(_at(t, p), c)
                    for c, p in zip(children, paths)]
        tangents = [zeros_tangent(c) if tc is None and c is not None else tc
                    for tc, c in zip(tangents, children)]
        return reg[1](aux, tangents)
    if is_structure(y):
        if not needs_boundary(y):
            return t
        return rebuild_like(y, {k: to_user_tangent(_entry(t, k), v)
                                     for k, v in fields_of(y)})
    if is_plain_object(y):
        if not object_inexact(y):
            return t
        return _object_like(y, t, lambda e, v: output_tangent(e, v) if _float_leaf(v)
                            else to_user_tangent(e, v))
    return t


# -- the user's view of a tree (Jacobians: jacfwd, jacrev) ----------------------------

def tree_items(x):
    """``(key, child)`` pairs of ``x`` as the user's pytree: a structure's
    fields, a registered object's children (by position), a plain object's
    attributes that hold floats; None for a leaf."""
    reg = registration(x)
    if reg is not None:
        return [(i, c) for i, c in enumerate(reg[0](x)[0]) if c is not None]
    if is_structure(x):
        return fields_of(x)
    if is_plain_object(x):
        return [(k, v) for k, v in _attributes(x).items() if _holds_float(v, set())]
    return None


def tree_replace(x, values):
    """``x`` with the children ``values`` (key -> value) in place of its own:
    a registered object built by its ``unflatten``, a plain object copied."""
    reg = registration(x)
    if reg is not None:
        children, aux = reg[0](x)
        children = [values.get(i, c) for i, c in enumerate(children)]
        return reg[1](aux, children)
    if is_structure(x):
        return rebuild_like(x, {k: values.get(k, v) for k, v in fields_of(x)})
    new = _copy_object(x)
    for k, v in values.items():
        set_attribute(new, k, v)
    return new


def zero_tree(x):
    """The zero tangent of ``x`` in the user's view (objects of their class)."""
    from .runtime.forward_support import zeros_tangent
    items = tree_items(x)
    if items is None:
        return zeros_tangent(x)
    return tree_replace(x, {k: zero_tree(v) for k, v in items})
