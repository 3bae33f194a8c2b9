"""Dicts the function builds and changes: the helpers ``frontend.dict_stores``
(and ``dict_displays``, ``dict_in_place``, ``dict_attributes``) write, and
the gradients their rules (``rules.dicts``) compute.

``d[k] = v`` into a dict only the function holds becomes
``d = dict_set(d, k, v)``, a new dict, so that the value the dict had before
stays what the adjoint reads; a dict filled in a loop and never read as a
whole is changed in place (``dict_store``), and read by ``dict_item``::

    d[k] = v                       ->    d = dict_set(d, k, v)
    q = {**p, "b": v}              ->    q = dict_merge(p, {"b": v})
    for k in xs: ... xs[k] ...     ->    for k in loop_keys(xs): ...

>>> dict_set({"a": 1.0}, "b", 2.0)
{'a': 1.0, 'b': 2.0}

Generated code reaches them as ``runtime.control.dict_set`` (``control``
imports them); they import nothing of the compiler.
"""
from __future__ import annotations

import numpy as np

def _dict_of(d, what):
    if type(d) is not dict:
        from ..errors import UnsupportedSyntaxError
        raise UnsupportedSyntaxError(
            f"pullback followed {what} as a store into a dict, and this value is a "
            f"{type(d).__name__}.", None,
            "Build the dict with `{}`, `dict(...)` or a dict comprehension, or make a new "
            "array instead of writing into this one.")
    return d


def dict_set(d, key, value):
    """``d[key] = value`` as a new dict (the key keeps its place, a new key
    comes last, as in Python)."""
    out = dict(_dict_of(d, f"`[{key!r}] = ...`"))
    out[key] = value
    return out


def dict_set_in_place(d, key, value):
    """``d[key] = value`` as Python runs it, where no gradient reaches the
    store (``analyses.item_stores``): no copy."""
    _dict_of(d, f"`[{key!r}] = ...`")[key] = value
    return d


def dict_store(d, key, value):
    """``d[key] = value`` as Python runs it, for a dict the function holds
    alone and reads only by item until its last store (``frontend.
    dict_stores``): no copy, O(1).  Its cotangents are sparse (an entry
    nothing reached is missing), so the adjoint never reads the dict."""
    _dict_of(d, f"`[{key!r}] = ...`")[key] = value
    return d


def dict_item(d, key):
    """``d[key]`` of a dict ``dict_store`` changes: its cotangent is the one
    entry ``{key: g}``, not a dict of zeros as large as ``d``."""
    return d[key]


def dict_merge(*parts):
    """``{**a, **b}``, ``dict(a, **b)``, ``a | b``, ``d.update(b)``: a new dict,
    later parts' entries replacing earlier ones' in place."""
    out = {}
    for p in parts:
        if not hasattr(p, "keys"):
            raise TypeError(f"'{type(p).__name__}' object is not a mapping")
        out.update(p)
    return out


def dict_setdefault(d, key, value):
    """``d.setdefault(key, value)``'s change of ``d``, as a new dict."""
    if key in _dict_of(d, "`.setdefault(...)`"):
        return d
    out = dict(d)
    out[key] = value
    return out


def item_rebinds(item, key, name="d"):
    """``d[key] += v`` (and the other operators) on a dict the function holds
    is followed as ``d[key] = d[key] + v``: true where the item is a number.
    An array (or a list) would be changed in place, and every other name for
    it would see that: refused."""
    if isinstance(item, (np.ndarray, list, dict)):
        from ..errors import UnsupportedSyntaxError
        what = "a NumPy array" if isinstance(item, np.ndarray) else f"a {type(item).__name__}"
        raise UnsupportedSyntaxError(
            f"`{name}[{key!r}] += ...` on an item that is {what} changes that object in "
            "place (every other name for it sees the change), which pullback does not "
            "follow for items of a dict.", None,
            f"Store a new value: `{name}[{key!r}] = {name}[{key!r}] + v`.")


def loop_keys(seq):
    """What ``for k in seq`` reads, where the body reads ``seq[k]``: a dict's
    keys (as a list); a sequence of keys or indices (ints, strings) as it is.
    A sequence of numbers that may carry a gradient is refused (its items
    would be read as keys, without one)."""
    if isinstance(seq, dict):
        return list(seq)
    if isinstance(seq, np.ndarray) and seq.dtype.kind in "iub":
        return seq
    if isinstance(seq, (list, tuple, range)) and all(
            isinstance(v, (int, str, bytes, tuple)) for v in seq):
        return seq
    from ..errors import UnsupportedSyntaxError
    raise UnsupportedSyntaxError(
        f"pullback took this loop for a loop over a dict's keys (its body reads the "
        f"sequence by the loop's variable), and it runs over a {type(seq).__name__} of "
        "values.", None, "Loop over `range(len(xs))` and read `xs[i]`, or over the dict's "
        "`.keys()`.")


def _zero(v):
    from .core import zeros_like
    return zeros_like(v)


def dict_set_grads(g, d, key, value):
    """The cotangents of ``d`` and ``value`` in ``dict_set(d, key, value)``,
    from ``g``, the new dict's (a dict, perhaps missing entries: zero)."""
    g = g if isinstance(g, dict) else {}
    d_bar = {k: _zero(v) if k == key or g.get(k) is None else g[k] for k, v in d.items()}
    v_bar = g.get(key)
    return d_bar, _zero(value) if v_bar is None else v_bar


class ChainGrads(dict):
    """The cotangent of a dict ``dict_store`` changes, as ``dict_without``
    makes it: no other value holds it (the versions of the dict before a
    store are read only by item until the next store, so nothing passes
    their cotangent on), so a store's adjoint takes its entry out in place."""


def dict_without(g, key):
    """The cotangent of the dict before ``dict_store(d, key, value)`` from
    ``g``, the changed dict's (sparse): ``g`` without ``key``'s entry.  O(1)
    on the ``ChainGrads`` a previous store's adjoint made; a copy once
    otherwise (an incoming cotangent is never changed)."""
    if type(g) is ChainGrads:
        g.pop(key, None)
        return g
    out = ChainGrads(g) if isinstance(g, dict) else ChainGrads()
    out.pop(key, None)
    return out


def dict_stored_grad(g, key, value):
    """The cotangent of ``value`` in ``dict_store(d, key, value)``: ``g``'s
    entry for ``key`` (zero where it has none)."""
    v_bar = g.get(key) if isinstance(g, dict) else None
    return _zero(value) if v_bar is None else v_bar


def dict_item_grads(g, key):
    """The cotangent of the dict in ``dict_item(d, key)``: one entry."""
    return {key: g}


def dict_setdefault_grads(g, d, key, value):
    """The cotangents of ``d`` and ``value`` in ``dict_setdefault(d, key, value)``."""
    if key in d:
        g = g if isinstance(g, dict) else {}
        return {k: _zero(v) if g.get(k) is None else g[k] for k, v in d.items()}, _zero(value)
    return dict_set_grads(g, d, key, value)


def dict_merge_grads(g, parts):
    """The cotangent of each part of ``dict_merge(*parts)``: an entry gets
    ``g``'s where its part is the last to hold its key, else zero."""
    g = g if isinstance(g, dict) else {}
    last = {}
    for i, p in enumerate(parts):
        for k in (p.keys() if hasattr(p, "keys") else (k for k, _ in p)):
            last[k] = i
    out = []
    for i, p in enumerate(parts):
        if hasattr(p, "keys"):
            out.append({k: g[k] if last[k] == i and g.get(k) is not None else _zero(v)
                        for k, v in p.items()})
            continue
        # `dict(pairs)`: the pairs carry no gradient; refused where one reaches them
        if any(last[k] == i and g.get(k) is not None and np.any(g[k] != 0) for k, _ in p):
            from ..errors import NonDifferentiableError
            raise NonDifferentiableError(
                "pullback does not send gradients back through the (key, value) pairs "
                "`dict(pairs)` is built from.", None,
                "Build the dict with a display or a dict comprehension: "
                "`{k: v for k, v in pairs}`.")
        out.append(_zero(p))
    return out


for _f in (dict_set, dict_set_in_place, dict_store, dict_merge, dict_setdefault):
    _f.makes_dict = True        # (analyses.kinds: a container)
