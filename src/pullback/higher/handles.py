"""The reverse- and forward-mode handles of functions made by pullback's API,
made once per function.

``callees.derivative_of`` and ``forward.calls.forward_of`` ask here for a
function made by ``pb.grad``, ``pb.value_and_grad``, ``pb.vjp``,
``pb.jacfwd`` or ``pb.linearize``::

    reverse_handle(pb.grad(f))      # GradVJP: reverse over reverse
    forward_handle(pb.grad(f))      # GradForward: forward over reverse
    forward_handle(pb.jacfwd(f))    # JacfwdForward: forward over forward
    forward_handle(pb.jacrev(f))    # JacrevForward: forward over reverse, row by row
    reverse_handle(pb.jacfwd(f))    # JacfwdVJP: reverse over forward
"""
from __future__ import annotations

import weakref

from .forward_over_forward import JacfwdForward, LinearizeForward
from .forward_over_reverse import GradForward, JacrevForward, PullbackForward
from .made import made_by
from .reverse_over_forward import JacfwdVJP, LinearizeVJP
from .reverse_over_reverse import GradVJP, PullbackVJP

__all__ = ["reverse_handle", "forward_handle"]

_reverse = weakref.WeakKeyDictionary()
_forward = weakref.WeakKeyDictionary()

_REVERSE = {"grad": GradVJP, "value_and_grad": GradVJP, "vjp": PullbackVJP,
            "jacfwd": JacfwdVJP, "linearize": LinearizeVJP}
_FORWARD = {"grad": GradForward, "value_and_grad": GradForward, "vjp": PullbackForward,
            "jacfwd": JacfwdForward, "linearize": LinearizeForward, "jacrev": JacrevForward}


def _handle(fn, kinds, made):
    """The handle of ``fn`` (made by pullback's API) of ``kinds``, made once, else None."""
    m = made_by(fn)
    if m is None:
        return None
    h = made.get(fn)
    if h is None:
        kind = kinds.get(m.kind)        # (pb.jacrev has no reverse handle)
        if kind is None:
            return None
        h = made[fn] = kind(fn)
    return h


def reverse_handle(fn):
    """``callees.derivative_of`` of a function made by pullback's API, else None."""
    return _handle(fn, _REVERSE, _reverse)


def forward_handle(fn):
    """``forward.calls.forward_of`` of a function made by pullback's API, else None."""
    return _handle(fn, _FORWARD, _forward)
