"""Derivatives of derivatives.

The code pullback generates (primal, adjoint, tangent function) is Python
and NumPy whose run-time helpers have forward rules, so it is transformed
again like any user function.  One module per pair of modes, and the
machinery they share:

- ``made``: what a function made by ``pb.grad`` & co. holds; the handles' base
- ``inner``: the inner derivative, transformed (unfused, out of place) to be
  differentiated again
- ``forward_over_reverse``: ``pb.jvp(pb.grad(f))``, ``pb.hessian``, ``pb.hvp``
- ``reverse_over_reverse``: ``pb.grad(pb.grad(f))``, by the Hessian's symmetry
- ``forward_over_forward``: ``pb.jacfwd(pb.jacfwd(f))``, jvp of jvp
- ``reverse_over_forward``: ``pb.grad`` of a function calling ``pb.jvp``
- ``reverse_calls``, ``tangent_calls``: forward mode over the calls generated
  code makes (callees, function values, run-time helpers)
- ``handles``: the handles of functions made by the API, one per function

``callees`` and ``forward.calls`` import nothing above them: importing this
package hands them the hooks below (``made_by``, ``reverse_handle``,
``forward_handle``, ``callee_forward``, ``nested_reverse``).
"""
from __future__ import annotations

from .forward_over_reverse import source_of
from .handles import forward_handle, reverse_handle
from .made import Made, made_by
from .reverse_calls import callee_forward
from .reverse_over_forward import nested_reverse

__all__ = ["Made", "made_by", "reverse_handle", "forward_handle", "callee_forward",
           "nested_reverse", "source_of"]


def _install():
    """Hand this package's hooks to the modules below it (``callees``,
    ``forward.calls``), which import nothing above them."""
    import sys
    from .. import callees
    from ..forward import calls
    callees.higher_order = sys.modules[__name__]
    calls.higher_order = sys.modules[__name__]


_install()
