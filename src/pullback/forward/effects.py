"""Forward mode over a library call run for its effect on values that carry
tangents (``analyses.opaque_calls`` marks it ``checked_method_call`` or
``checked_call``): the call runs as Python, checked to have only moved data
(``runtime.opaque``), and the tangents held for its arguments stay as they
are; where it adds or removes an argument's items, they would no longer
match it, so the call is refused when it runs (``kept_structure``).

Before / after::

    checked_method_call((-1,), True, b, 'apply_defaults')
    kept_structure((b,), checked_method_call, (-1,), True, b, 'apply_defaults')
"""
from __future__ import annotations

import gast

from ..ir.build import name as _name
from ..runtime import checked_calls

__all__ = ["library_effect"]


def library_effect(fwd, stmt, op, varied):
    """Wrap ``stmt`` (an expression statement of the pass ``fwd``, whose
    operands ``varied`` carry tangents) in ``kept_structure`` if it is a
    library call run for its effect."""
    call = stmt.value
    if not (isinstance(call, gast.Call) and _is_marked(fwd, call, op)):
        return
    held = gast.Tuple(elts=[_name(n) for _, n in varied], ctx=gast.Load())
    stmt.value = gast.Call(func=_name(fwd.support("kept_structure")),
                           args=[held, call.func] + call.args, keywords=call.keywords)


def _is_marked(fwd, call, op):
    marks = (checked_calls.checked_method_call, checked_calls.checked_call)
    if getattr(op, "primitive", None) in marks:
        return True
    cell = fwd.parsed.closure.get(getattr(call.func, "id", None))
    try:
        return cell is not None and cell.cell_contents in marks
    except ValueError:
        return False
