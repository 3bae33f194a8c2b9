"""Whether the reverse transform being made will be differentiated again.

``higher.inner.inner_transform`` sets it while it transforms a function whose
primal and adjoint forward mode will then transform (derivatives of
derivatives); the reverse pass reads it (``reverse.reverse``,
``reverse.residuals``) to write code forward mode can follow: an array the
primal wrote into leaves as a copy, and the tape is read by a position
rather than popped::

    tape = list(tape)                 ->   tape_at = len(tape)
    a, b = tape.pop()                 ->   tape_at = tape_at - 1
                                           a, b = tape[tape_at]

A module of its own, imported by both, so that neither imports the other.
"""
from __future__ import annotations

import contextlib
import threading

__all__ = ["transforming_again", "again"]

_state = threading.local()


def transforming_again():
    """Whether the transform being made will be differentiated again."""
    return getattr(_state, "again", False)


@contextlib.contextmanager
def again():
    """Within: transforms are made to be differentiated again."""
    before = transforming_again()
    _state.again = True
    try:
        yield
    finally:
        _state.again = before
