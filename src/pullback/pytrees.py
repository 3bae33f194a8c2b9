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
``__slots__`` of its class and bases.  This module registers classes and
tells which values cross the boundary as objects; where a registered
object's children are is ``pytree_paths``; the conversions both ways are
``pytree_boundary``.  Refused with ``NonDifferentiableError``
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
from .runtime.structures import (REGISTERED, _NO_GRADIENT, attributes_of, fields_of, is_instance,
                                 is_structure, rebuild_like, set_attribute)

__all__ = ["register_pytree_node", "register_pytree_node_class", "register_dataclass",
           "registration", "needs_boundary", "object_inexact", "tree_items", "tree_replace",
           "zero_tree"]

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
