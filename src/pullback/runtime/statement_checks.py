"""Checks generated code runs where a statement's safety is known only when
it runs: a loop's sequence, an in-place update of a number, a store into an
attribute, a method followed as a direct call.

>>> indexable([1.0, 2.0])
[1.0, 2.0]
>>> indexable({"a": 1.0})
Traceback (most recent call last):
...
pullback.errors.UnsupportedSyntaxError: pullback differentiates loops over sequences (lists, tuples, arrays, ranges); this loop runs over a dict.
Loop over d.items(), d.keys() or d.values() instead.
"""
from __future__ import annotations

import collections.abc
import numbers
import operator
import types

import numpy as np

from .structures import is_structure

__all__ = ["indexable", "loops_over_keys", "mapping_keys", "no_float_in", "number_to_update",
           "plain_container", "plain_operands",
           "same_method", "store_attribute",
           "update_attribute"]


def indexable(seq):
    """``seq`` itself, checked to be what a loop over it reads by position: a
    dict, a set or an iterator would be read wrongly (``for k in d`` yields
    keys, not ``d[0], d[1]``), and an object iterated by its own ``__iter__``
    without ``__len__`` and ``__getitem__`` cannot be read by position, so
    each is refused with the fix."""
    if isinstance(seq, (dict, set, frozenset)) or (
            not hasattr(seq, "__getitem__") and hasattr(seq, "__next__")) or (
            # an object iterated by its own __iter__, with no positions to read
            # (`for b in Batches(X, 2)`): a TypeError from len() in the loop was all
            hasattr(seq, "__iter__") and not (hasattr(seq, "__getitem__")
                                              and hasattr(seq, "__len__"))):
        from ..errors import UnsupportedSyntaxError     # (the loader adds the loop's line)
        what = type(seq).__name__
        raise UnsupportedSyntaxError(
            f"pullback differentiates loops over sequences (lists, tuples, arrays, ranges); "
            f"this loop runs over a {what}.",
            hint="Loop over d.items(), d.keys() or d.values() instead."
            if isinstance(seq, dict) else
            "Make a list of it first (`items = list(it)`, or sorted(...)) and loop over "
            "that, or loop over the itertools call itself (`for i, j in "
            "itertools.combinations(range(n), 2):`).")
    return seq


def loops_over_keys(seq):
    """Whether ``for k in seq`` runs over keys: ``seq`` is a mapping (a dict);
    else ``seq`` is checked to be read by position (``indexable``: desugar
    writes such a loop both ways, ``frontend.dict_loops``)."""
    if isinstance(seq, collections.abc.Mapping):
        return True
    indexable(seq)
    return False


def same_method(obj, attr, fn):
    """Refuse, where ``obj.attr(...)`` was turned into ``fn(obj, ...)`` (a
    method that writes into its arguments, followed as a direct call by
    ``frontend.writes``), an ``obj`` whose ``attr`` is not ``fn`` bound to
    it (something set on the instance under that name)."""
    import types
    bound = getattr(obj, attr, None)
    if isinstance(bound, types.MethodType) and bound.__func__ is fn and bound.__self__ is obj:
        return
    from ..errors import UnsupportedSyntaxError
    raise UnsupportedSyntaxError(
        f"`{attr}` of this `{type(obj).__name__}` is not the method "
        f"`{fn.__qualname__}` that pullback followed (it writes into its arguments): "
        "the instance holds something else under that name.",
        hint=f"Call `{fn.__qualname__}` directly, or do not set `{attr}` on the instance.")


def number_to_update(y, name):
    """Check, where ``y op= v`` runs, that ``y`` is a number (a Python or
    NumPy scalar): numbers are never changed in place, so the update only
    rebinds ``y``, as its desugared ``y = y op v`` does.  The transform puts
    this check before an update of a value it cannot tell from an array that
    other names share (the result of a call known only at run time, an
    element of an array of unknown rank); an array is refused here (the
    loader adds the user's line)."""
    if isinstance(y, (numbers.Number, np.generic)):
        return
    from ..errors import UnsupportedSyntaxError
    raise UnsupportedSyntaxError(
        f"pullback cannot follow an in-place update of an array that other names may "
        f"share: here `{name}` holds a value of type {type(y).__name__}, not a number.",
        hint=f"Write `{name} = {name} + ...` (or -, *) to make a new array, if that is what "
             "you mean.")


_PLAIN = frozenset({float, int, bool, complex, np.ndarray, np.float64, np.float32,
                    np.complex128, np.int64, np.bool_, list, tuple, str, range, type(None)})
_ARRAY_LIBRARIES = ("jax", "jaxlib", "dask", "cupy", "torch")


def plain_operands(symbol, *values):
    """Check, where ``a + b`` (or ``-a``, ``a @ b``, ...) of values the
    transform could not prove numbers runs, that each is a number, an array
    (NumPy's or another library's), or a list, tuple or string: the rule the
    transform applied is arithmetic's (or joining's, for lists).  An object of
    a class of its own computes ``+`` with its ``__add__``, which may be
    anything, so it is refused here (the loader adds the user's line).

    >>> plain_operands("+", 1.0, np.ones(2))
    >>> class V:
    ...     def __add__(self, o): return self
    >>> plain_operands("+", V(), 1.0)
    Traceback (most recent call last):
    ...
    pullback.errors.UnsupportedSyntaxError: pullback cannot differentiate `+` of a V: its class defines what `+` computes (`__add__`, `__radd__`), and pullback follows arithmetic on numbers and arrays only.
    Call the method as a method, which pullback follows into (`a.__add__(b)`), or a method of your own (`a.plus(b)`).
    """
    for v in values:
        t = type(v)
        if t in _PLAIN or isinstance(v, (numbers.Number, np.ndarray, np.generic, list, tuple)) \
                or t.__module__.partition(".")[0] in _ARRAY_LIBRARIES:
            continue
        from ..errors import UnsupportedSyntaxError
        dunder, shown = _DUNDERS.get(symbol, ""), symbol.replace("unary ", "")
        raise UnsupportedSyntaxError(
            f"pullback cannot differentiate `{shown}` of a {t.__name__}: its class defines "
            f"what `{shown}` computes ({dunder}), and pullback follows arithmetic on numbers "
            "and arrays only.",
            hint="Call the method as a method, which pullback follows into "
                 f"({_CALLED.get(symbol, '`a.__add__(b)`')}), or a method of your own "
                 f"(`{'a.negated()' if shown != symbol else 'a.plus(b)'}`).")


_DUNDERS = {s: f"`__{n}__`, `__r{n}__`" for s, n in (
    ("+", "add"), ("-", "sub"), ("*", "mul"), ("/", "truediv"), ("//", "floordiv"),
    ("%", "mod"), ("**", "pow"), ("@", "matmul"))}
_DUNDERS.update({"unary -": "`__neg__`", "unary +": "`__pos__`"})
_CALLED = {s: f"`a.__{n}__(b)`" for s, n in (
    ("+", "add"), ("-", "sub"), ("*", "mul"), ("/", "truediv"), ("//", "floordiv"),
    ("%", "mod"), ("**", "pow"), ("@", "matmul"))}
_CALLED.update({"unary -": "`a.__neg__()`", "unary +": "`a.__pos__()`"})


def no_float_in(value):
    """Check, where a value the transform could not tell is appended to a list
    another container or an object's attribute holds, that it holds no float
    or complex number (nor such an array): it then carries no gradient (a
    record of strings and counts).  Otherwise refused: the container's reads
    would not see its gradient (the loader adds the user's line).

    >>> no_float_in({"kind": "grad", "args": ("f64[3]",), "int": True})
    >>> no_float_in({"loss": 0.5})
    Traceback (most recent call last):
    ...
    pullback.errors.UnsupportedSyntaxError: pullback does not follow an append of a value holding floats to a list held inside another container or by an object's attribute: the container's or the object's reads would not see their gradient.
    Keep the list in a local name (`xs = []`, `xs.append(v)`) and store it into the container after the loop, or build the container with it.
    """
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, (str, bytes, bool, int, type(None))) or (
                isinstance(v, np.ndarray) and v.dtype.kind not in "fc"):
            continue
        if isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, (list, tuple, set, frozenset)):
            stack.extend(v)
        elif isinstance(v, np.generic) and v.dtype.kind not in "fc":
            continue
        else:
            from ..errors import UnsupportedSyntaxError
            raise UnsupportedSyntaxError(
                "pullback does not follow an append of a value holding floats to a list "
                "held inside another container or by an object's attribute: the "
                "container's or the object's reads would not see their gradient.",
                hint="Keep the list in a local name (`xs = []`, `xs.append(v)`) and store it "
                     "into the container after the loop, or build the container with it.")


def plain_container(container):
    """Check, before a store of a value that carries no gradient into a
    container of a kind the transform could not tell (what a call it does not
    see into returned, ``m = y.view()``), that the container is a dict or a
    list: an array may share memory with a differentiated one (NumPy's views),
    and another object's ``__setitem__`` may write into one, so the store would
    change values the gradient does not see changed (the loader adds the line).

    >>> plain_container({"n": 1})
    >>> plain_container(np.zeros(2))
    Traceback (most recent call last):
    ...
    pullback.errors.UnsupportedSyntaxError: pullback cannot follow this store into a ndarray it cannot trace to the array it came from (a call's result, an item of a list or a dict): it may be, or share memory with, a differentiated array (`y.view()`, `rows = [r for r in A]`, `d = {"a": y}`), whose gradient would not see the write.
    Write into the array itself by index (`y[0] = v`, `A[0, 1] = v`), or make the array to write into yourself (`m = y.copy()`, `np.zeros_like(y)`).
    """
    if isinstance(container, (dict, list)):
        return
    from ..errors import UnsupportedSyntaxError
    raise UnsupportedSyntaxError(
        f"pullback cannot follow this store into a {type(container).__name__} it cannot trace "
        "to the array it came from (a call's result, an item of a list or a dict): it may "
        "be, or share memory with, a differentiated array (`y.view()`, `rows = [r for r in "
        "A]`, `d = {\"a\": y}`), whose gradient would not see the write.",
        hint="Write into the array itself by index (`y[0] = v`, `A[0, 1] = v`), or make the "
             "array to write into yourself (`m = y.copy()`, `np.zeros_like(y)`).")


def store_attribute(obj, name, value):
    """``obj.name = value`` as the user wrote it (a store that carries no
    gradient: the transform refuses the others)."""
    _check_store(obj, name)
    setattr(obj, name, value)


def _check_store(obj, name):
    """Refuse a store the transform cannot see the consequences of: into a
    module (its attributes are read as constants), and into a dataclass or an
    array, which pullback differentiates as values (a caller may be
    differentiating with respect to this very object)."""
    from ..errors import UnsupportedSyntaxError
    if isinstance(obj, types.ModuleType):
        raise UnsupportedSyntaxError(
            f"pullback cannot differentiate a store into the module attribute "
            f"`{obj.__name__}.{name}`: a module's attributes are read as constants.",
            None, "Pass the value as an argument, or keep it on an object of your own.")
    if is_structure(obj) or isinstance(obj, np.ndarray):
        kind = "an array" if isinstance(obj, np.ndarray) else \
            f"a dataclass (`{type(obj).__name__}`)"
        raise UnsupportedSyntaxError(
            f"pullback cannot differentiate a store into the attribute `{name}` of "
            f"{kind}: pullback differentiates it as a value, and a gradient taken "
            f"with respect to it would not see the change.",
            None, "Build a new value instead: `dataclasses.replace(obj, "
                  f"{name}=...)`, `y = y.reshape(...)`.")


_IN_PLACE = {"Add": operator.iadd, "Sub": operator.isub, "Mult": operator.imul,
             "Div": operator.itruediv, "FloorDiv": operator.ifloordiv,
             "Mod": operator.imod, "Pow": operator.ipow, "MatMult": operator.imatmul,
             "LShift": operator.ilshift, "RShift": operator.irshift,
             "BitOr": operator.ior, "BitXor": operator.ixor, "BitAnd": operator.iand}


_SYMBOLS = {"Add": "+", "Sub": "-", "Mult": "*", "Div": "/", "FloorDiv": "//", "Mod": "%",
            "Pow": "**", "MatMult": "@", "LShift": "<<", "RShift": ">>", "BitOr": "|",
            "BitXor": "^", "BitAnd": "&"}


def update_attribute(obj, name, old, op, value):
    """``obj.name op= value``, ``old`` being ``obj.name`` read before ``value``
    was computed: the in-place operator, then the result stored back.  A
    value that the operator would change in place (an array, a list) is
    refused: a value read from it before may be needed by the adjoint."""
    _check_store(obj, name)
    method = _IN_PLACE[op].__name__.replace("i", "__i", 1) + "__"
    if hasattr(type(old), method):
        from ..errors import UnsupportedSyntaxError
        raise UnsupportedSyntaxError(
            f"pullback cannot differentiate `{name} {_SYMBOLS[op]}= ...` on an attribute "
            f"that holds a mutable `{type(old).__name__}`: it would change that value "
            f"in place, and every earlier read of it with it.",
            None, f"Store a new value: `obj.{name} = obj.{name} {_SYMBOLS[op]} ...`.")
    setattr(obj, name, _IN_PLACE[op](old, value))


def mapping_keys(d):
    """The keys of the dict ``d``, in its order (``for k, v in d.items()``)."""
    if not isinstance(d, dict):
        if isinstance(d, collections.abc.Mapping):
            return list(d)     # a read-only mapping (inspect's parameters): read by key
        raise TypeError(f"`.items()`, `.keys()` and `.values()` are differentiated on dicts; "
                        f"this is a {type(d).__name__}.")
    return list(d)
