"""Rules for ``runtime.objects``: an object with one attribute replaced.

``s1 = with_attribute(s, 'x', v)``: the cotangent of ``s1`` (a dict of its
attributes') gives ``v`` its ``x`` entry and ``s`` the others; forwards, the
tangent of ``s1`` is ``s``'s tangent object with ``x`` replaced by ``v``'s
tangent (``linear``: the helper applied to the tangents, ``like`` building
the zero tangent of ``s`` where it has none).
"""
from __future__ import annotations

from ..runtime.core import field_cotangent
from ..runtime.objects import other_fields, rebinds, with_attribute
from .registry import linear, nondifferentiable, vjp

__all__ = []


@vjp(with_attribute, nondiff=("name",), discrete=("name", "like"))
def with_attribute_rule(g, ans, obj, name, value, like=None):
    return other_fields(g, name), field_cotangent(g, name)


linear(with_attribute)
nondifferentiable(rebinds)

