"""pullback never transforms its own code.

Every path that would transform a function from its source asks
``refuse_own(fn)`` first: ``callees.derivative_of`` (reverse mode),
``forward.calls.forward_of`` and the forward handles of run-time helpers
(``higher.reverse_calls``).  A function defined in one of pullback's own
files is then either

- a run-time helper of a module written as plain NumPy to be differentiated
  from its source (``SOURCE_HELPERS``: ``prod_grad``, ``det_grad``, ...),
  which calls nothing of pullback's machinery; or
- a function pullback builds around the user's function to be
  differentiated as the user's code is (``check_grads``' ``f_jvp``: a call of
  ``pb.jvp`` of the user's function, marked ``__pullback_user_code__``; the
  variant of a function writing into its arguments, ``__pullback_variant__``,
  which is transformed from the user's function); or
- refused with ``NonDifferentiableError``: pullback's machinery (``attempt``,
  ``dynamic_call``, the driver, the API) is a rule or a known run-time call
  that the dispatchers route, and reaching its source means a call of it was
  met where user code was expected.  Transforming it would transform the
  transform (``attempt``'s source runs a ``try``, which is ``attempt``
  again: an endless recursion).

Generated code (primal, adjoint, tangent function, dispatch wrappers) lives
in ``<pullback ...>`` files, not in the package, and is transformed again as
any user code is (derivatives of derivatives).

>>> from pullback.runtime import control, rule_support
>>> is_own(control.attempt), is_source_helper(rule_support.prod_grad)
(True, True)
>>> refuse_own(rule_support.prod_grad) is None
True
>>> try:
...     refuse_own(control.attempt)
... except NonDifferentiableError as err:
...     print(str(err)[:80])
pullback does not transform its own code: pullback.runtime.control.attempt was r
"""
from __future__ import annotations

import os

from .errors import NonDifferentiableError

__all__ = ["SOURCE_HELPERS", "is_own", "is_source_helper", "refuse_own"]

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep

#: pullback's run-time modules whose functions are plain NumPy, written so
#: that their source is differentiated where they have no rule of their own
#: (forward mode over a generated adjoint: ``prod_grad``, ``det_grad``)
SOURCE_HELPERS = frozenset(f"pullback.runtime.{m}" for m in (
    "accumulation", "complex_forward", "contraction_support", "core", "fft_support", "forward_support", "layout_support",
    "linalg_forward", "linalg_support", "quantile_support", "reduction_forward", "rule_support",
    "scipy_factor", "scipy_linalg_forward", "scipy_linalg_grads", "scipy_solvers", "scipy_support",
    "dot_support", "index_support"))

_own_files = {}     # co_filename -> whether it is one of pullback's own files


def is_own(fn):
    """Whether ``fn``'s code is in one of pullback's own source files."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return False
    name = code.co_filename
    own = _own_files.get(name)
    if own is None:
        own = _own_files[name] = os.path.abspath(name).startswith(_PACKAGE)
    return own


def is_source_helper(fn):
    """A function of a ``SOURCE_HELPERS`` module, defined in pullback's files."""
    return getattr(fn, "__module__", None) in SOURCE_HELPERS and is_own(fn)


def refuse_own(fn, mode="reverse"):
    """Raise ``NonDifferentiableError`` where ``fn`` is pullback's own code
    that is not a run-time helper differentiated from its source; else None."""
    if not is_own(fn) or is_source_helper(fn) or getattr(fn, "__pullback_user_code__", False) \
            or getattr(fn, "__pullback_variant__", None) is not None:
        return None
    name = f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', fn)}"
    raise NonDifferentiableError(
        f"pullback does not transform its own code: {name} was reached as a function to "
        f"differentiate ({mode} mode) from your code, through a call pullback follows "
        "(pullback's API or machinery called from inside a function being differentiated, "
        "by way of code that is not a plain call of pb.grad, pb.jvp & co.).",
        hint="Call pb.grad / pb.jvp & co. directly in the function being differentiated, "
             "or compute the inner derivative outside it.")
