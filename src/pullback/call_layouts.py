"""Calls of functions with ``*args``, ``**kwargs`` or keyword-only
parameters, flattened to one value per positional parameter.

``flatten_call(fn, signature, args, kwargs)`` binds a call and gives a
``Flat`` tuple, whose ``Layout`` says how the call filled ``fn``'s variadic
parameters; the function is transformed once per layout (``callees``,
``forward.calls``), with the parameters ``Layout.params``.
"""
from __future__ import annotations

import dataclasses
import inspect


class Flat(tuple):
    """The arguments of one call of a function with ``*args``, ``**kwargs`` or
    keyword-only parameters, one per value, and their ``layout``."""

    def __new__(cls, values, layout):
        self = super().__new__(cls, values)
        self.layout = layout
        return self


@dataclasses.dataclass(frozen=True)
class Layout:
    """How one call fills a function's ``*args``, ``**kwargs`` and keyword-only
    parameters: ``nvar`` values in ``*args``, and the keys of ``**kwargs``.
    The function is transformed for one layout at a time, with one positional
    parameter per value (``params``): the named positional parameters, then
    ``args_0, args_1...``, the keyword-only ones, then ``kwargs_<key>``; its
    body starts by packing ``args = (args_0, args_1)`` and
    ``kwargs = {"key": kwargs_key}``."""

    nvar: int
    kwnames: tuple
    params: tuple
    packs: tuple        # ("tuple", vararg, its parameters), ("dict", kwarg, ((key, param)...))


def layout_for(fn, signature, nvar, kwnames):
    P = inspect.Parameter
    taken = set(fn.__code__.co_varnames) | set(fn.__code__.co_names) \
        | set(fn.__code__.co_freevars) | set(fn.__code__.co_cellvars)

    def fresh(base):
        name = base
        while name in taken:
            name += "_"
        taken.add(name)
        return name

    params, packs = [], []
    for p in signature.parameters.values():
        if p.kind == P.VAR_POSITIONAL:
            names = tuple(fresh(f"{p.name}_{i}") for i in range(nvar))
            params.extend(names)
            packs.append(("tuple", p.name, names))
        elif p.kind == P.VAR_KEYWORD:
            for k in kwnames:
                if not (isinstance(k, str) and k.isidentifier()):
                    raise TypeError(f"pullback differentiates calls whose keyword arguments "
                                    f"are identifiers; {k!r} is not one.")
            names = tuple((k, fresh(f"{p.name}_{k}")) for k in kwnames)
            params.extend(n for _, n in names)
            packs.append(("dict", p.name, names))
        else:
            params.append(p.name)
    return Layout(nvar, tuple(kwnames), tuple(params), tuple(packs))


_layouts = {}


def flatten_call(fn, signature, args, kwargs):
    """``fn(*args, **kwargs)`` bound to ``fn``'s parameters and flattened to one
    value per positional parameter of its ``Layout`` (a ``Flat``)."""
    P = inspect.Parameter
    b = signature.bind(*args, **kwargs)
    b.apply_defaults()
    flat, nvar, kwnames = [], 0, ()
    for p in signature.parameters.values():
        v = b.arguments[p.name]
        if p.kind == P.VAR_POSITIONAL:
            flat.extend(v)
            nvar = len(v)
        elif p.kind == P.VAR_KEYWORD:
            kwnames = tuple(v)
            flat.extend(v.values())
        else:
            flat.append(v)
    key = (fn, nvar, kwnames)
    layout = _layouts.get(key)
    if layout is None:
        if len(_layouts) > 4096:
            _layouts.clear()
        layout = _layouts[key] = layout_for(fn, signature, nvar, kwnames)
    return Flat(flat, layout)


def is_variadic_signature(sig):
    return any(p.kind not in (p.POSITIONAL_OR_KEYWORD, p.POSITIONAL_ONLY)
               for p in sig.parameters.values())


class _Marker:
    """Stands for the call's argument ``key`` (a position or a keyword) while
    its place among the flattened parameters is found."""

    def __init__(self, key):
        self.key = key


def argument_places(handle, fn, nargs, kwnames, signature=None):
    """``{argument position or keyword: parameter index}`` for a call with
    ``nargs`` positional arguments and the keywords ``kwnames`` of
    ``handle``, a handle of ``fn``: a handle with ``*args``, ``**kwargs`` or
    keyword-only parameters flattens the call (its ``Layout``); the others
    bind ``signature`` (``fn``'s by default), where an argument that goes into
    ``*args`` or ``**kwargs`` has no place.

    >>> def f(a, b, c=1.0):
    ...     pass
    >>> argument_places(None, f, 2, ("c",))
    {0: 0, 1: 1, 'c': 2}
    """
    if getattr(handle, "variadic", False):
        flat = handle.bind(tuple(_Marker(i) for i in range(nargs)),
                           {k: _Marker(k) for k in kwnames})
        return {m.key: i for i, m in enumerate(flat) if isinstance(m, _Marker)}
    sig = signature or inspect.signature(fn, follow_wrapped=False)
    params = list(sig.parameters)
    markers = sig.bind(*range(nargs), **{k: k for k in kwnames}).arguments
    return {m: params.index(p) for p, m in markers.items() if not isinstance(m, (tuple, dict))}
