"""The front end as steps: a Python function to its normal form, with its
operations resolved.

``pipeline.STEPS`` starts with ``FRONT``; ``front(fn)`` runs them alone, for
``pipeline.return_kind`` and for ``analyses.purity`` (which must see a
function exactly as a transform of it would).  Each step reads what earlier
steps set on the ``Transform`` and sets its own fields.

>>> from pullback.testing import function_from_source
>>> from pullback.backend.codegen import unparse
>>> f = function_from_source('''
... def f(x, n):
...     y = 0.0
...     for i in range(n):
...         y += np.sin(x * i)
...     return y
... ''')
>>> parsed, normal, ops = front(f)
>>> print(unparse(normal.tree).strip())
def f(x, n):
    y = 0.0
    range_n = range(n)
    y_1 = y
    for i in range_n:
        x_i = x * i
        sin_x_i = np.sin(x_i)
        y_2 = y_1 + sin_x_i
        y_1 = y_2
    return y_1
"""
from __future__ import annotations

import types

from .analyses import op_resolver
from .frontend import closures, desugar as desugar_, exceptions, parse as frontend, \
    structure as structure_
from .frontend import grown_lists, out_arguments, series_calls, state_calls, super_calls, writes
from .frontend import global_state, list_methods
from .ir.naming import Namer
from .normalize import normalize as normalize_

__all__ = ["Transform", "FRONT", "front"]


class Transform:
    """What the steps have made so far for one function: each step reads
    the fields earlier steps set and sets its own."""

    def __init__(self, fn, param_kinds=None, wrt=(), has_aux=False, inplace=True,
                 layout=None):
        self.fn, self.param_kinds, self.wrt = fn, param_kinds or {}, list(wrt)
        self.has_aux, self.inplace = has_aux, inplace
        self.layout = layout        # *args/**kwargs: how this call fills them (call_layouts.Layout)


def parse(t: Transform) -> None:
    # a variant (frontend.writes) is its function's own source, rewritten
    t.parsed = frontend.parse(getattr(t.fn, "__pullback_variant__", (t.fn,))[0], t.layout)
    t.namer = Namer.for_tree(t.parsed.tree, t.parsed.globals.keys())


def write_out_arguments(t: Transform) -> None:
    out_arguments.write_out_arguments(t.parsed.tree, t.namer, t.parsed)


def write_series_calls(t: Transform) -> None:
    series_calls.write_series_calls(t.parsed.tree, t.namer, t.parsed)


def write_super_calls(t: Transform) -> None:
    super_calls.write_super_calls(t.parsed.tree, t.namer, t.parsed)


def lower_blocks(t: Transform) -> None:
    exceptions.lower_blocks(t.parsed.tree, t.namer, t.parsed)


def follow_globals(t: Transform) -> None:
    global_state.follow_globals(t.parsed.tree, t.namer, t.parsed)


def rewrite_list_methods(t: Transform) -> None:
    list_methods.rewrite_list_methods(t.parsed.tree, t.namer, t.parsed)


def pin_list_indices(t: Transform) -> None:
    grown_lists.pin_list_indices(t.parsed.tree, t.namer, t.parsed)


def desugar(t: Transform) -> None:
    desugar_.desugar(t.parsed.tree, t.namer, t.parsed, t.param_kinds)


def lift_closures(t: Transform) -> None:
    closures.lift_closures(t.parsed.tree, t.namer, t.parsed)


def structure(t: Transform) -> None:
    structure_.structure(t.parsed.tree, t.namer, t.parsed)


def follow_state(t: Transform) -> None:
    state_calls.follow_state_calls(t.parsed.tree, t.namer, t.parsed)


def follow_writes(t: Transform) -> None:
    writes.follow_writes(t.parsed.tree, t.namer, t.parsed, t.param_kinds,
                         getattr(t.fn, "__pullback_variant__", None))


def normalize(t: Transform) -> None:
    t.normal = normalize_.normalize(t.parsed, t.namer)


def resolve_ops(t: Transform) -> None:
    t.ops = op_resolver.resolve(t.normal, t.parsed)


FRONT = [parse, write_out_arguments, write_series_calls, write_super_calls, lower_blocks,
         follow_globals, rewrite_list_methods, pin_list_indices, desugar, lift_closures, structure, follow_state, follow_writes,
         normalize, resolve_ops]


def front(fn: types.FunctionType) -> tuple[frontend.Parsed, normalize_.Normal, dict]:
    """``(parsed, normal, ops)``: ``fn`` parsed, brought to normal form, and
    its operations resolved."""
    t = Transform(fn)
    for step in FRONT:
        step(t)
    return t.parsed, t.normal, t.ops
