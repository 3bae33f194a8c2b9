"""The pipeline: every pass, in order, in one flat list.

Each pass is one module and takes its inputs explicitly (DESIGN.md,
"Pipeline").  ``return_kind`` runs the front of the pipeline on a callee, so
that the kind of what a user function returns is known where it is called.
"""
from __future__ import annotations

import inspect
import types
import weakref

import gast

from . import (closures, desugar, frontend, loader, lower_broadcasts, normalize,
               propagate_copies, reverse, structure)
from .analyses import activity, defuse, kinds, mutation, ops as ops_
from .errors import PullbackError
from .naming import Namer


def transform(fn, param_kinds, wrt, has_aux=False, inplace=True, layout=None):
    """Differentiate ``fn`` for arguments of ``param_kinds`` (name -> Kind)
    with respect to the parameters named in ``wrt``; return a ``Loaded``."""
    parsed, normal, ops = _front(fn, layout)
    kind_of = kinds.infer(normal.tree, {**kinds.of_globals(normal, parsed), **param_kinds}, ops,
                          _returns_of(fn))
    output = _output(normal, ops, has_aux, parsed)
    chains = defuse.chains(normal.tree)
    act = activity.analyze(normal.tree, chains, wrt, output, lambda s: ops[id(s)].names(),
                           lambda s: ops[id(s)].mutates)
    mutation.check_updates(normal, kind_of, chains, ops, parsed)
    written = mutation.check(normal, ops, parsed, kind_of)
    normal, ops, kind_of, act = lower_broadcasts.lower(normal, parsed, ops, kind_of, act,
                                                       wrt, output)
    derived = reverse.differentiate(normal, parsed, ops, kind_of, act, wrt, output,
                                    inplace=inplace, written=frozenset(written))
    propagate_copies.propagate_copies(derived.adjoint)
    return loader.load(derived, parsed)


def _front(fn, layout=None):
    """``fn`` parsed, brought to normal form, and its operations resolved."""
    parsed = frontend.parse(fn, layout)
    namer = Namer.for_tree(parsed.tree, parsed.globals.keys())
    desugar.desugar(parsed.tree, namer, parsed)
    closures.lift_closures(parsed.tree, namer, parsed)
    structure.structure(parsed.tree, namer, parsed)
    normal = normalize.normalize(parsed, namer)
    return parsed, normal, ops_.resolve(normal, parsed)


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
        parsed, normal, ops = _front(fn)
        kind_of = kinds.infer(normal.tree, {**kinds.of_globals(normal, parsed), **params}, ops,
                              _returns_of(fn))
        result = kinds.of_atom(normal.returned, kind_of)
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
