"""Cotangents and tangents sent along the routes a checked library call found.

``runtime.opaque.call`` runs a library call and records, for each
differentiated leaf of its result, the place of the argument it *is*
(``(path in the result, argument, path in the argument)``).  The adjoint
sends each cotangent back along its route, and nothing to the rest; forward
mode sends each argument's tangent the other way.  A bag's leaves (an
iterator, ``d.values()``) are keyed by identity, ``("@", id(leaf))``.

>>> import numpy as np, operator
>>> from pullback.runtime.opaque import call
>>> xs = [np.array([1.0]), np.array([2.0])]
>>> out, res = call(operator.itemgetter(1), (xs,), {}, (0,))
>>> out is xs[1], adjoint(res, np.array([5.0]))
(True, ([array([0.]), array([5.])],))
"""
from __future__ import annotations

import numbers
import types

import numpy as np

from . import core as _core
from .leaves import ATOMS, Walk, at_path, children, is_leaf
from .opaque import _refuse, call, callee_name

__all__ = ["adjoint", "forward", "is_iterator", "is_bag", "items_cotangent", "bag_cotangent"]


def _at(ct, key):
    if ct is None:
        return None
    if isinstance(ct, dict):
        from .core import FieldGrads      # (core imports this module)
        if isinstance(ct, FieldGrads) and isinstance(key, int) and -len(ct) <= key < len(ct):
            key = ct.keys_at(key)[0]    # a namedtuple's gradient, by field name in order
        return ct.get(key)
    if isinstance(ct, (list, tuple)) and isinstance(key, int) and not isinstance(key, bool):
        return ct[key] if -len(ct) <= key < len(ct) else None
    if isinstance(ct, numbers.Number) and not isinstance(ct, np.ndarray):
        return None       # a zero standing for a whole structure
    if isinstance(key, str):
        return getattr(ct, key, None)
    return None


def adjoint(res, ct):
    """One cotangent per entry of the call's mask: each leaf of the result
    sends its cotangent to the place of the argument it is."""
    from .core import add_cotangents, project
    routes, held, keep, fn = res
    _no_stray_items(fn, ct, {id(leaf) for leaf in keep})
    acc = [{} for _ in held]
    for path, k, inpath in routes:
        g = at_path(ct, path, _at)
        if g is None:
            continue
        acc[k][inpath] = add_cotangents(acc[k].get(inpath), g)
    return tuple(_build(v, a, (), project) for v, a in zip(held, acc))


def _no_stray_items(fn, ct, known):
    """Refuse a cotangent sent to an item read from a bag (``list(it)``) that
    was none of the values the bag held when the call made it: iterating an
    array (``iter(x)``, ``reversed(x)``, ``itertools.pairwise(x)``) or summing
    in the library (``itertools.accumulate``) gives new numbers, whose
    cotangent has no route back; dropping it would be a zero gradient."""
    stack = [ct]
    while stack:
        c = stack.pop()
        if isinstance(c, dict):
            for key, g in c.items():
                if (isinstance(key, tuple) and len(key) == 2 and key[0] == "@"
                        and g is not None and key[1] not in known):
                    _refuse(fn, "a value read out of what it returned (an iterator) is none "
                                "of the values it was given: iterating an array, or a library "
                                "that computes (`itertools.accumulate`), makes new numbers "
                                "whose gradient pullback cannot send back.",
                            "Loop over the indices instead (`for i in range(len(x))`, "
                            "reading `x[i]`), or compute the values in your own function.")
                stack.append(g)
        elif isinstance(c, (list, tuple)):
            stack.extend(c)


def _build(value, acc, path, project):
    """The cotangent of ``value`` with ``acc`` (path -> cotangent) placed."""
    from .core import zeros_like
    from .structures import is_instance
    if path in acc:
        return project(acc[path], value)
    if not any(p[:len(path)] == path for p in acc):
        if is_leaf(value) or isinstance(value, (tuple, list, dict)) or is_instance(value):
            return zeros_like(value)
        return 0.0 if isinstance(value, ATOMS) else {}
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(_build(c, acc, path + (k,), project)
                             for k, c in enumerate(value)))
    if isinstance(value, (tuple, list)):
        return type(value)(_build(c, acc, path + (k,), project) for k, c in enumerate(value)) \
            if type(value) in (tuple, list) else [_build(c, acc, path + (k,), project)
                                                  for k, c in enumerate(value)]
    if isinstance(value, (dict, types.MappingProxyType)):
        return {k: _build(value[k], acc, path + (k,), project) for k in list(value)}
    out = {}
    for key, child, in_bag in children(value, False):
        if not in_bag:
            out[key] = _build(child, acc, path + (key,), project)
    for p, g in acc.items():
        if len(p) == len(path) + 1 and p[:len(path)] == path and isinstance(p[-1], tuple):
            out[p[-1]] = g          # a bag's leaf, by identity
    return out


def is_iterator(x):
    """An iterator (``iter(x) is x``): reading it consumes it."""
    return not isinstance(x, (tuple, list, dict, np.ndarray)) and hasattr(x, "__next__")


def is_bag(x):
    """An iterable that is not a tuple, a list, a dict or an array (an iterator,
    a view such as ``d.values()``, a set, a deque): its cotangent is keyed by
    the identity of the values it holds (module docstring)."""
    return not isinstance(x, (tuple, list, dict, np.ndarray)) and not is_leaf(x)


def items_cotangent(iterable, ans, g):
    """The cotangent of ``iterable`` that ``list(...)`` / ``tuple(...)`` read into
    ``ans``, from ``g`` (the cotangent of ``ans``): for a tuple, a list or an
    array, ``pack_like(iterable, g)``; for a bag (an iterator, consumed by the
    time the adjoint runs, or a view), by the identity of the values it gave
    (the checked call that made it routes each back by identity)."""
    from .core import pack_like
    if not is_bag(iterable):
        return pack_like(iterable, g)
    return bag_cotangent(ans, [_at(g, i) for i in range(len(ans))])


def bag_cotangent(items, cts):
    """``{("@", id(leaf)): cotangent}`` for the leaves of ``items``, each item's
    cotangent in ``cts`` (None: nothing)."""
    from .core import add_cotangents
    out = {}
    walk = Walk()
    for item, gi in zip(items, cts):
        if gi is None:
            continue
        for path, leaf in walk.leaves(item):
            part = at_path(gi, path, _at)
            if part is not None:
                key = ("@", id(leaf))
                out[key] = add_cotangents(out.get(key), part)
    return out


# -- forward mode ---------------------------------------------------------------------

def forward(fn, args, kwargs, mask, tangents):
    """``fn(*args, **kwargs)`` and the tangent of its result: each leaf of the
    result has the tangent of the argument's leaf it is (zero for constants)."""
    out, res = call(fn, args, kwargs, mask)
    return out, routed_tangent(fn, out, res[0], tangents)


def routed_tangent(fn, out, routes, tangents):
    """The tangent of ``out``, the result of the library call ``fn`` whose
    ``routes`` (``opaque.call``) say which argument's leaf each of its leaves
    is; ``tangents``: one per entry of the call's mask (None: none)."""
    placed = {}
    if any(isinstance(key, tuple) for path, _, inpath in routes for key in path + inpath):
        from ..errors import NonDifferentiableError
        raise NonDifferentiableError(
            f"forward mode cannot follow tangents through `{callee_name(fn)}`, whose argument or "
            "result is an object that holds values it does not show (an iterator).",
            None, "Make a list of it first (`list(...)`), or use reverse mode (pb.grad).")
    for path, k, inpath in routes:
        t = at_path(tangents[k], inpath, _at) if tangents[k] is not None else None
        if t is not None:
            placed[path] = t
    if () in placed:
        return placed[()]
    return _tangent(out, placed, ())


class _Fields(dict):
    """The tangent of an object a library call made: its attributes' tangents,
    read as attributes too (``b_dot.arguments``, as the tangent code reads a field).
    No ``__dict__``: ``objects.field_tangent`` reads an empty one as "no such
    attribute", a zero tangent (``types.SimpleNamespace(w=2 * x).w`` had none)."""

    __slots__ = ()

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def _zero_tangent(x):
    """Zeros of ``x``'s shape for a float leaf, the same structure for a
    container, None for what has no tangent (``forward_support.zeros_tangent``)."""
    if is_leaf(x):
        return np.zeros_like(x) if isinstance(x, np.ndarray) else type(x)(0)
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*(_zero_tangent(v) for v in x))
    if isinstance(x, (tuple, list)):
        return type(x)(_zero_tangent(v) for v in x) if type(x) in (tuple, list) \
            else [_zero_tangent(v) for v in x]
    if isinstance(x, dict):
        return {k: _zero_tangent(v) for k, v in x.items()}
    return None


def _tangent(value, placed, path):
    zeros_tangent = _zero_tangent
    if path in placed:
        return placed[path]
    if not any(p[:len(path)] == path for p in placed):
        return zeros_tangent(value) if is_leaf(value) or isinstance(
            value, (tuple, list, dict)) else {}
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(_tangent(c, placed, path + (k,)) for k, c in enumerate(value)))
    if isinstance(value, (tuple, list)):
        return (tuple if isinstance(value, tuple) else list)(
            _tangent(c, placed, path + (k,)) for k, c in enumerate(value))
    if isinstance(value, (dict, types.MappingProxyType)):
        return {k: _tangent(value[k], placed, path + (k,)) for k in list(value)}
    out = _Fields((key, _tangent(c, placed, path + (key,)))
                  for key, c, in_bag in children(value, False) if not in_bag)
    for p, t in placed.items():
        if len(p) == len(path) + 1 and p[:len(path)] == path and isinstance(p[-1], tuple):
            out[p[-1]] = t
    return out


_core.BAG_ROUTES[:] = [is_bag, is_iterator, bag_cotangent]   # (core.pack_like)
