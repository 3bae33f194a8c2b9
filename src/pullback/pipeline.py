"""The pipeline: every step of a transform, in order, in one flat list.

Each pass is one module and takes its inputs explicitly (DESIGN.md,
"Pipeline"); a step here is one line that calls it and keeps what it
returns on the ``Transform`` in hand.  ``STEPS`` is the whole compiler, from
a Python function to its loaded primal and adjoint.  Its first steps, the
front end (``front.FRONT``), also run alone: in ``return_kind``, so that the
kind of what a user function returns is known where it is called, and in
``analyses.purity``, for the scalar functions a fused kernel may inline.
``FORWARD_STEPS`` is forward mode's compiler, to a loaded tangent function:
the same front end, analyses and lowering, then the tangents pass
(``forward/tangents``) in place of the reverse pass.

>>> [step.__name__ for step in STEPS[:len(FRONT)]]
['parse', 'write_out_arguments', 'write_series_calls', 'write_super_calls', 'lower_blocks',
 'follow_globals', 'rewrite_list_methods', 'pin_list_indices', 'desugar',
 'lift_closures', 'structure', 'follow_state', 'follow_writes', 'normalize', 'resolve_ops']
>>> [step.__name__ for step in FORWARD_STEPS if step not in STEPS]
['find_written', 'tangents', 'load_forward']
"""
from __future__ import annotations

import inspect
import types
import weakref

import gast

from .analyses import (activity as activity_, aliases, attributes, defuse, item_stores, kinds,
                       mutation, updates)
from .analyses import op_resolver
from .analyses.operator_guards import guard_operators as guard_operators_
from .analyses.settle_attributes import settle_attributes
from .backend import loader
from .again import transforming_again
from .errors import PullbackError
from .front import (FRONT, Transform, desugar, follow_state, follow_writes,  # noqa: F401
                    lift_closures,
                    lower_blocks, pin_list_indices, rewrite_list_methods, follow_globals,
                    normalize, parse, resolve_ops, structure, write_out_arguments, write_series_calls,
                    write_super_calls)
from .forward import tangents as tangents_
from .lowering import lower_broadcasts
from .reverse import fold_negations as fold_negations_, propagate_copies as propagate_copies_, reverse
from .reverse import scalar_guards, shape_guards


# -- analyses -------------------------------------------------------------------

def infer_kinds(t: Transform) -> None:
    def infer():
        return kinds.infer(t.normal.tree, {**kinds.of_globals(t.normal, t.parsed),
                                           **t.param_kinds}, t.ops, _returns_of(t.fn))
    t.kinds = infer()
    if settle_attributes(t.normal.tree, t.ops, t.kinds):
        t.kinds = infer()     # `s.T` of an object not proven an array: a field read


def follow_aliases(t: Transform) -> None:
    if aliases.follow_aliases(t.normal, t.ops, t.kinds, t.parsed):
        t.ops = op_resolver.resolve(t.normal, t.parsed)
        infer_kinds(t)


def find_output(t: Transform) -> None:
    t.output = _output(t.normal, t.ops, t.has_aux, t.parsed)


def def_use(t: Transform) -> None:
    t.chains = defuse.chains(t.normal.tree)


def activity(t: Transform) -> None:
    ops = t.ops
    t.act = activity_.analyze(t.normal.tree, t.chains, t.wrt, t.output,
                              lambda s: ops[id(s)].names(), lambda s: ops[id(s)].mutates)


def mark_item_stores(t: Transform) -> None:
    item_stores.mark(t.normal, t.ops, t.act, t.parsed, t.kinds)


def check_attributes(t: Transform) -> None:
    attributes.check(t.normal, t.parsed, t.act.varied, t.ops, t.act.useful)


def check_updates(t: Transform) -> None:
    updates.check_updates(t.normal, t.kinds, t.chains, t.ops, t.parsed)


def check_mutation(t: Transform) -> None:
    t.written = frozenset(mutation.check(t.normal, t.ops, t.parsed, t.kinds))


def guard_operators(t: Transform) -> None:
    guard_operators_(t.normal, t.ops, t.kinds, t.act.varied, t.parsed)


# -- lowering for large arrays (lower_broadcasts' four steps) ---------------------

def inline_closures(t: Transform) -> None:
    t.lowering = lower_broadcasts.start(t.normal, t.parsed, t.ops, t.kinds, t.act, t.wrt,
                                        t.output)
    t.lowering.inline()


def vectorize_calls(t: Transform) -> None:
    t.lowering.vectorize()


def refresh_activity(t: Transform) -> None:
    t.lowering.refresh()


def lower_regions(t: Transform) -> None:
    t.normal, t.ops, t.kinds, t.act = t.lowering.lower()


# -- the reverse pass (reverse's eight steps) -----------------------------------------

def primal(t: Transform) -> None:
    t.reverse = reverse.start(t.normal, t.parsed, t.ops, t.kinds, t.act, t.wrt, t.output,
                              inplace=t.inplace, written=t.written)
    t.reverse.primal()


def adjoint(t: Transform) -> None:
    t.reverse.adjoint()


def adjoint_return(t: Transform) -> None:
    t.reverse.returns()


def snapshots(t: Transform) -> None:
    t.reverse.snapshots()


def saves(t: Transform) -> None:
    t.reverse.saves()


def tapes(t: Transform) -> None:
    t.reverse.tapes()


def residuals(t: Transform) -> None:
    t.reverse.residual_list()


def assemble(t: Transform) -> None:
    t.derived = t.reverse.assemble()


# -- the back end -----------------------------------------------------------------

def propagate_copies(t: Transform) -> None:
    propagate_copies_.propagate_copies(t.derived.adjoint)


def fold_negations(t: Transform) -> None:
    fold_negations_.fold_derived(t.derived)


def guard_scalars(t: Transform) -> None:
    if not transforming_again():     # (code differentiated again: left plain)
        scalar_guards.guard_derived(t.derived, t.kinds)


def guard_shapes(t: Transform) -> None:
    if not transforming_again():     # (code differentiated again: left plain)
        shape_guards.guard_derived(t.derived, t.kinds)


def load(t: Transform) -> None:
    t.loaded = loader.load(t.derived, t.parsed)


STEPS = [
    # front end (frontend/, normalize/, analyses/ops)
    parse, write_out_arguments, write_series_calls, write_super_calls, lower_blocks, follow_globals, rewrite_list_methods, pin_list_indices, desugar, lift_closures, structure, follow_state,
    follow_writes,
    normalize, resolve_ops,
    # analyses
    infer_kinds, follow_aliases, find_output, def_use, activity, mark_item_stores, check_attributes, check_updates,
    check_mutation, guard_operators,
    # lowering for large arrays (lowering/lower_broadcasts)
    inline_closures, vectorize_calls, refresh_activity, lower_regions,
    # reverse pass (reverse/reverse)
    primal, adjoint, adjoint_return, snapshots, saves, tapes, residuals, assemble,
    # back end
    propagate_copies, fold_negations, guard_scalars, guard_shapes, load,
]
assert STEPS[:len(FRONT)] == FRONT


def transform(fn: types.FunctionType, param_kinds: dict[str, kinds.Kind], wrt: list[str],
              has_aux: bool = False, inplace: bool = True, layout: object = None) -> loader.Loaded:
    """Differentiate ``fn`` for arguments of ``param_kinds`` (name -> Kind)
    with respect to the parameters named in ``wrt``; return a ``Loaded``."""
    t = Transform(fn, param_kinds, wrt, has_aux, inplace, layout)
    for step in STEPS:
        step(t)
    return t.loaded


# -- forward mode (forward/tangents) ------------------------------------------------

def find_written(t):
    # the arrays written into, read again after lowering (whose fused kernels
    # replace statements): their tangents are buffers the function owns
    t.written = frozenset(mutation.mutated_arrays(t.normal, t.ops))


def tangents(t):
    t.derived = tangents_.differentiate(t.normal, t.parsed, t.ops, t.kinds, t.act, t.wrt,
                                        t.output, t.written)


def load_forward(t):
    t.loaded = loader.load_forward(t.derived, t.parsed)


FORWARD_STEPS = [
    # front end, analyses and lowering: reverse mode's
    parse, write_out_arguments, write_series_calls, write_super_calls, lower_blocks, follow_globals, rewrite_list_methods, pin_list_indices, desugar, lift_closures, structure, follow_state,
    follow_writes,
    normalize,
    resolve_ops, infer_kinds, follow_aliases, find_output, def_use, activity, mark_item_stores, check_attributes,
    check_updates, check_mutation, guard_operators,
    inline_closures, vectorize_calls, refresh_activity, lower_regions,
    # the tangents pass (forward/tangents), then the back end
    find_written, tangents, load_forward,
]
assert FORWARD_STEPS[:len(FRONT)] == FRONT


def forward_transform(fn, param_kinds, wrt, has_aux=False, layout=None):
    """The tangent function of ``fn`` for arguments of ``param_kinds`` (name
    -> Kind), with tangents for the parameters named in ``wrt``; return a
    ``LoadedForward`` (``layout``: how a call fills ``*args`` and ``**kwargs``,
    ``call_layouts.Layout``).

    >>> import numpy as np
    >>> from pullback.testing import function_from_source
    >>> f = function_from_source('''
    ... def f(x):
    ...     return np.sin(x) * x
    ... ''')
    >>> loaded = forward_transform(f, {"x": kinds.NUMBER}, ["x"])
    >>> loaded.jvp(0.5, 1.0)          # (f(x), f'(x) * 1.0)
    (np.float64(0.2397127693021015), np.float64(0.9182168195493894))
    """
    t = Transform(fn, param_kinds, wrt, has_aux, layout=layout)
    for step in FORWARD_STEPS:
        step(t)
    return t.loaded


_return_kinds = weakref.WeakKeyDictionary()    # fn -> {param kinds: Kind}; None: in progress


def _returns_of(caller):
    """The kind of what a call in ``caller`` returns (``kinds.infer``'s
    ``returns``): inferred from the callee's own code, for a user function
    defined in the caller's own file (whose text is part of every cache and
    artifact key, so the kind cannot go stale); otherwise unknown."""
    home = caller.__code__.co_filename

    def returns(callee, arg_kinds):
        if not isinstance(callee, types.FunctionType) \
                or callee.__code__.co_filename != home:
            return kinds.UNKNOWN
        return return_kind(callee, arg_kinds)
    return returns


def return_kind(fn, arg_kinds):
    """The kind of ``fn``'s result for arguments of ``arg_kinds`` (parameter
    name -> Kind); unknown for a recursive call, or a function pullback will
    refuse (the refusal comes when it is called)."""
    sig = inspect.signature(fn, follow_wrapped=False)
    params = {}
    for p in sig.parameters.values():
        if p.name in arg_kinds:
            params[p.name] = arg_kinds[p.name]
        elif p.default is not inspect.Parameter.empty:
            params[p.name] = kinds.of_value(p.default)
        else:
            return kinds.UNKNOWN
    key = tuple(sorted(params.items(), key=lambda kv: kv[0]))
    memo = _return_kinds.setdefault(fn, {})
    if key in memo:
        return memo[key] or kinds.UNKNOWN        # None: a recursive call
    memo[key] = None
    try:
        t = Transform(fn, params)
        for step in FRONT + [infer_kinds]:
            step(t)
        result = kinds.of_atom(t.normal.returned, t.kinds)
    except PullbackError:
        result = kinds.UNKNOWN
    memo[key] = result
    return result


def _output(normal, ops, has_aux, parsed):
    """The atom whose cotangent the adjoint receives."""
    returned = normal.returned
    if not has_aux:
        return returned
    for stmt in normal.tree.body:
        if isinstance(stmt, gast.Assign) and isinstance(returned, gast.Name) \
                and isinstance(stmt.targets[0], gast.Name) \
                and stmt.targets[0].id == returned.id \
                and isinstance(stmt.value, (gast.Tuple, gast.List)) \
                and len(stmt.value.elts) == 2:
            return stmt.value.elts[0]
    raise PullbackError(
        "With has_aux=True the function must return a pair `(output, aux)`.",
        parsed.location(normal.tree.body[-1]),
        "End the function with `return value, aux`.")
