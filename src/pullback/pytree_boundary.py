"""Gradients, cotangents and tangents across the boundary of ``grad``,
``value_and_grad``, ``vjp`` and ``jvp`` (``pytrees``' docstring): an
object's internal gradient (a dict of its attributes') out to what the user
sees, and the user's cotangents and tangents in to what generated code reads.

>>> from pullback.pytrees import register_pytree_node
>>> class P:
...     def __init__(self, w, name):
...         self.w, self.name = w, name
>>> register_pytree_node(P, lambda p: ((p.w,), p.name), lambda name, c: P(c[0], name))
>>> g = to_user_grad({"w": 2.0, "name": 0.0}, P(1.0, "l1"))
>>> type(g).__name__, g.w, g.name
('P', 2.0, 'l1')
"""
from __future__ import annotations

import numpy as np

from .runtime import core
from .runtime.structures import (_entry, fields_of, is_instance, is_structure, rebuild_like,
                                 set_attribute, slot_names)
from .pytree_paths import _at, _set, children_of
from .pytrees import (_attributes, _copy_object, _float_leaf, _holds_float, is_plain_object,
                      needs_boundary, object_inexact, registration)

__all__ = ["to_user_grad", "to_internal_cotangent", "to_internal_tangent", "to_user_tangent"]


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
