"""``index_items``: the items of an ``itertools`` iterator a loop runs over,
read into a list when none can carry a gradient (``frontend.desugar``)."""
from __future__ import annotations

import itertools
import numbers

__all__ = ["by_position", "index_items", "plain_items"]


def index_items(it):
    """``list(it)`` for an iterator whose items are integers, strings, None or
    tuples of them (``itertools.pairwise(range(n))``, ``combinations``,
    ``product`` of ranges, ``repeat(None, n)``): a loop reads them by
    position.  An item that is a float, an array or an object may carry a
    gradient the loop would lose (the iterator made it): refused.  An
    iterator that never ends (``count()``, ``cycle``, ``repeat(v)``) is
    refused before it is read.  A sequence that is no iterator is returned
    as it is.

    >>> import itertools
    >>> index_items(itertools.pairwise(range(4)))
    [(0, 1), (1, 2), (2, 3)]
    """
    if not hasattr(it, "__next__") or hasattr(it, "__getitem__"):
        return it
    if _endless(it):
        _refuse_endless(it)
    items = list(it)
    for item in items:
        bad = _not_plain(item)
        if bad is not None:
            from ..errors import UnsupportedSyntaxError
            raise UnsupportedSyntaxError(
                f"pullback differentiates a loop over a {type(it).__name__} bound to a name, "
                f"or nested in another call, only where its items are ints (indices); here "
                f"an item holds a {type(bad).__name__}, which the iterator gave and pullback "
                "cannot send a gradient through.",
                hint="Loop over the itertools call itself (`for a, b in itertools.pairwise(x):`, "
                     "followed for an array or a list of values), or over indices, reading "
                     "the values in the body: `for i, j in itertools.pairwise(range(len(x))):` "
                     "then `x[i]`, `x[j]`.")
    return items


def by_position(seq):
    """Whether ``seq`` is read by position (a list, a tuple, an array, a range,
    a string): ``frontend.itertools_rows`` reads its items ``seq[i]``.

    >>> by_position([1.0]), by_position({1: 2}), by_position({3})
    (True, False, False)
    """
    return hasattr(seq, "__getitem__") and hasattr(seq, "__len__") \
        and not isinstance(seq, (dict, set, frozenset)) and not hasattr(seq, "keys")


def plain_items(seq):
    """``list(seq)`` of a set, a dict (its keys) or an iterator whose items are
    ints, strings or None (``itertools.combinations(s, 2)`` of a set of
    indices); items that may carry a gradient are refused (``by_position``
    failed: they cannot be read by index)."""
    if _endless(seq):
        _refuse_endless(seq)
    items = list(seq)
    bad = next((b for b in map(_not_plain, items) if b is not None), None)
    if bad is not None:
        from ..errors import UnsupportedSyntaxError
        raise UnsupportedSyntaxError(
            f"pullback reads the values an itertools call picks by their position in its "
            f"sequence, and a {type(seq).__name__} has none; here an item is a "
            f"{type(bad).__name__}, which may carry a gradient.",
            hint="Make a list of the values first (`xs = list(...)`) and give the list to "
                 "the itertools call.")
    return items


def _refuse_endless(it):
    from ..errors import UnsupportedSyntaxError     # (the loader adds the loop's line)
    hint = {"count": "Number the items with `enumerate(x, start=k)` in place of "
                     "`zip(x, itertools.count(k))`.",
            "cycle": "Loop over indices and read `w[i % len(w)]` in place of "
                     "`zip(x, itertools.cycle(w))`."}.get(
        type(it).__name__, "Give the number of items: `itertools.repeat(v, n)`.")
    raise UnsupportedSyntaxError(
        f"this `itertools.{type(it).__name__}` never ends, and pullback reads the items "
        "of an iterator a loop runs over into a list before the loop.", hint=hint)


def _endless(it):
    if isinstance(it, (itertools.count, itertools.cycle)):
        return True
    return isinstance(it, itertools.repeat) and len(it.__reduce__()[1]) == 1


def _not_plain(item):
    """The first value in ``item`` (through tuples) that is not an int, a
    string or None; None if there is none."""
    if isinstance(item, tuple):
        return next((bad for bad in map(_not_plain, item) if bad is not None), None)
    return None if item is None or isinstance(item, (numbers.Integral, str)) else item
