"""``index_items``: the items of an ``itertools`` iterator a loop runs over,
read into a list when none can carry a gradient (``frontend.desugar``)."""
from __future__ import annotations

import numbers

__all__ = ["index_items"]


def index_items(it):
    """``list(it)`` for an iterator whose items are integers, strings, None or
    tuples of them (``itertools.pairwise(range(n))``, ``combinations``,
    ``product`` of ranges, ``repeat(None, n)``): a loop reads them by
    position.  An item that is a float, an array or an object may carry a
    gradient the loop would lose (the iterator made it): refused.  A
    sequence that is no iterator is returned as it is.

    >>> import itertools
    >>> index_items(itertools.pairwise(range(4)))
    [(0, 1), (1, 2), (2, 3)]
    """
    if not hasattr(it, "__next__") or hasattr(it, "__getitem__"):
        return it
    items = list(it)
    for item in items:
        bad = _not_plain(item)
        if bad is not None:
            from ..errors import UnsupportedSyntaxError
            raise UnsupportedSyntaxError(
                f"pullback differentiates a loop over a {type(it).__name__} only where its "
                f"items are ints (indices); here an item holds a {type(bad).__name__}, "
                "which the iterator gave and pullback cannot send a gradient through.",
                hint="Loop over indices and read the values in the body: "
                     "`for i, j in itertools.pairwise(range(len(x))):` then `x[i]`, `x[j]`.")
    return items


def _not_plain(item):
    """The first value in ``item`` (through tuples) that is not an int, a
    string or None; None if there is none."""
    if isinstance(item, tuple):
        return next((bad for bad in map(_not_plain, item) if bad is not None), None)
    return None if item is None or isinstance(item, (numbers.Integral, str)) else item
