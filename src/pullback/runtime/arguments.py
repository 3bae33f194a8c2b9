"""Checks generated code makes on the arguments of a function that writes
into them (``frontend.writes`` puts the calls in; moved here from
``frontend.written`` so that an ahead-of-time artifact of such a function
imports only ``pullback.runtime``)::

    def step_primal(s, v, dt):          # step writes into s, updates v
        arguments_apart('s', s, 'v', v)
        number_argument(v, 'v')         # v -= dt rebinds a number
        ...

>>> import numpy as np
>>> number_argument(1.0, "v")
>>> number_argument(np.float64(1.0), "v")
"""
from __future__ import annotations

import numbers

import numpy as np

__all__ = ["arguments_apart", "result_apart", "number_argument", "view_of", "alias_of"]


def _refuse(message, hint):
    from ..errors import UnsupportedSyntaxError
    return UnsupportedSyntaxError(message, hint=hint)


def arguments_apart(*pairs):
    """Refuse, when the function runs, arguments written into that share
    memory with another argument: NumPy would show the write through both
    (``pairs``: name, value, name, value...)."""
    arrays = [(n, v) for n, v in zip(pairs[::2], pairs[1::2]) if isinstance(v, np.ndarray)]
    for i, (n, v) in enumerate(arrays):
        for m, w in arrays[i + 1:]:
            if np.shares_memory(v, w):
                raise _refuse(
                    f"The arguments `{n}` and `{m}` share memory, and the function writes "
                    "into one of them, so NumPy would show the write through the other.",
                    f"Pass a copy: `{m}.copy()`.")


def result_apart(result, *pairs):
    """Refuse a result that shares memory with an argument the function
    writes into (``return s`` from ``step(s)``; ``pairs``: name, value...)."""
    for n, v in zip(pairs[::2], pairs[1::2]):
        if isinstance(v, np.ndarray) and isinstance(result, np.ndarray) \
                and np.shares_memory(result, v):
            raise _refuse(
                f"The function returns an array that shares memory with its argument `{n}`, "
                "which it writes into; pullback does not follow the two as one.",
                f"Return a copy (`{n}.copy()`), or nothing: the caller's `{n}` changes.")


def number_argument(x, name):
    """A variant's parameter updated with ``op=`` that is not an array: a
    number, which the update rebinds; a 0-d array would change in place."""
    if isinstance(x, np.ndarray) and x.ndim:
        raise _refuse(
            f"`{name}` is an array that the function updates in place (`{name} op= v`), but "
            "this code was transformed for a number there (the generic entry of an "
            "ahead-of-time artifact is).",
            "Give `pullback compile` a --signature with an array there "
            "(`f(float64[:], float)`), or call the function through pullback.")
    if isinstance(x, np.ndarray):
        raise _refuse(
            f"`{name}` is a 0-d array that the function updates in place (`{name} op= v`), "
            "which pullback does not follow.",
            f"Pass a number (`float({name})`) or a 1-d array of one element.")


def view_of(view, base, view_name, base_name):
    """Check, where ``view = base[...]`` runs in a function whose later
    writes through either name pullback spells out (``frontend.view_writes``),
    that ``view`` is a view of the array ``base``: a slice of a list is a
    copy, and an integer index of a vector gives a number."""
    if isinstance(base, np.ndarray) and isinstance(view, np.ndarray) \
            and np.shares_memory(view, base):
        return
    raise _refuse(
        f"`{view_name}` is written into later, and pullback follows such a write to "
        f"`{base_name}` only where `{view_name}` is a view of the array `{base_name}`; here "
        f"`{base_name}` is a {type(base).__name__} and `{view_name}` a "
        f"{type(view).__name__} that does not share its memory.",
        f"Write into `{base_name}` itself, or make `{view_name}` a new value: "
        f"`{view_name} = {base_name}[...].copy()`.")


def alias_of(alias, base, alias_name, base_name):
    """Where ``alias = base`` runs in a function whose later writes through
    either name pullback spells out (``frontend.view_writes``): True for an
    array (a write through one name changes the other), False for a number
    or a tuple (an update rebinds the name); a list or another mutable
    object is refused."""
    if isinstance(base, np.ndarray):
        return True
    if isinstance(base, (numbers.Number, np.generic, tuple, str, bytes)):
        return False
    raise _refuse(
        f"`{alias_name} = {base_name}` makes two names of one {type(base).__name__}, which "
        f"the function then changes through one of them; pullback follows that for arrays "
        "and numbers only.",
        f"Make `{alias_name}` a copy: `{alias_name} = {base_name}.copy()`.")
