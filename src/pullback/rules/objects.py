"""Rules for ``runtime.objects``: an object with one attribute replaced.

``s1 = with_attribute(s, 'x', v)``: the cotangent of ``s1`` (a dict of its
attributes') gives ``v`` its ``x`` entry and ``s`` the others; forwards, the
tangent of ``s1`` is ``s``'s tangent object with ``x`` replaced by ``v``'s
tangent (``linear``: the helper applied to the tangents, ``like`` building
the zero tangent of ``s`` where it has none).  ``property_getter`` picks a
function when it runs: no gradient flows through it (the gradient goes
through the call of what it picks).
"""
from __future__ import annotations

from ..runtime.structures import field_cotangent
from ..runtime.objects import other_fields, property_getter, rebinds, with_attribute
from .registry import linear, nondifferentiable, vjp

__all__ = []


@vjp(with_attribute, nondiff=("name",), discrete=("name", "like"))
def with_attribute_rule(g, ans, obj, name, value, like=None):
    return other_fields(g, name), field_cotangent(g, name)


linear(with_attribute)
nondifferentiable(rebinds, property_getter)     # (picks a function: no gradient)



def _second_order():
    """Forwards over the generated adjoint and tangent code (``pb.hessian``,
    jvp of jvp): ``other_fields`` and ``field_tangent`` are linear in the
    cotangent or tangent they are given, their other arguments discrete."""
    from ..runtime.objects import field_tangent
    from .runtime_helpers import _register_linear
    for fn in (other_fields, field_tangent):
        _register_linear(fn, (0,))
        linear(fn)


_second_order()
