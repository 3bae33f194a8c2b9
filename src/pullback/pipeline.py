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


def transform(fn, param_kinds, wrt, has_aux=False, inplace=True):
    """Differentiate ``fn`` for arguments of ``param_kinds`` (name -> Kind)
    with respect to the parameters named in ``wrt``; return a ``Loaded``."""
    parsed, normal, ops = _front(fn)
    kind_of = kinds.infer(normal.tree, {**_global_kinds(normal, parsed), **param_kinds}, ops,
                          _returns_of(fn))
    output = _output(normal, ops, has_aux, parsed)
    chains = defuse.chains(normal.tree)
    act = activity.analyze(normal.tree, chains, wrt, output, lambda s: ops[id(s)].names(),
                           lambda s: ops[id(s)].mutates)
    _check_augmented(normal, kind_of, chains, ops, parsed)
    written = mutation.check(normal, ops, parsed, kind_of)
    normal, ops, kind_of, act = lower_broadcasts.lower(normal, parsed, ops, kind_of, act,
                                                       wrt, output)
    derived = reverse.differentiate(normal, parsed, ops, kind_of, act, wrt, output,
                                    inplace=inplace, written=frozenset(written))
    propagate_copies.propagate_copies(derived.adjoint)
    return loader.load(derived, parsed)


def _front(fn):
    """``fn`` parsed, brought to normal form, and its operations resolved."""
    parsed = frontend.parse(fn)
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
    sig = inspect.signature(fn)
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
        kind_of = kinds.infer(normal.tree, {**_global_kinds(normal, parsed), **params}, ops,
                              _returns_of(fn))
        result = kinds.of_atom(normal.returned, kind_of)
    except PullbackError:
        result = kinds.UNKNOWN
    memo[key] = result
    return result


def _global_kinds(normal, parsed):
    """Kinds of the module constants and closure values the function reads
    (``DT = 0.01``): numbers and arrays only, as they are now."""
    import numpy as np
    from .grammar import assigned_names
    local = set(normal.params) | assigned_names(normal.tree.body)
    out = {}
    for node in gast.walk(normal.tree):
        if isinstance(node, gast.Name) and node.id not in local and node.id not in out:
            if node.id in parsed.closure:
                try:
                    value = parsed.closure[node.id].cell_contents
                except ValueError:
                    continue
            elif node.id in parsed.globals:
                value = parsed.globals[node.id]
            else:
                continue
            if isinstance(value, (int, float, complex, np.generic, np.ndarray)) \
                    and not isinstance(value, bool):
                out[node.id] = kinds.of_value(value)
    return out


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


def _check_augmented(normal, kind_of, chains, ops, parsed):
    """Refuse `y += v` on an array another name may share: NumPy would mutate
    the shared array, and the desugared `y = y + v` would not."""
    from .errors import UnsupportedSyntaxError
    for stmt, old, origin in normal.augmented:
        kind = kind_of.get(old)
        if kind is not None and kind.shape == "scalar":
            continue
        # a write into the array (`y[i] = v`), a non-differentiable use
        # (`y.shape`), a view used up before the update and anything that can
        # run only after it share nothing; a new array from np.zeros and the
        # like is the function's own.  The names normalize gives the variable
        # in loops and branches (joined by its own copies) are one array:
        # their definitions and uses count.
        versions = mutation.versions(normal, old)
        copies = mutation.copy_ids(normal)
        readers = [s for v in versions for s in chains.readers(v)
                   if s is not stmt and id(s) not in copies
                   and not mutation.runs_only_after(normal, stmt, s)]
        shared = bool(versions & set(normal.params)) or any(
            (ops[id(s)].kind not in ("rule", "nondiff", "setitem")
             and not mutation.packed_to_be_copied(normal, ops, s)) or (
                _is_view(ops[id(s)], kind_of) and not mutation.used_up_before(normal, s, stmt))
            for s in readers)
        definers = [d for v in versions for d in chains.defs.get(v, ())
                    if id(d) not in copies and not _placeholder(d)]
        for definer in definers:
            op = ops[id(definer)]
            allocated = op.kind == "rule" or (op.kind == "nondiff"
                                              and _allocates(op.primitive))
            if not allocated or _is_view(op, kind_of):
                shared = True
        if shared:
            raise UnsupportedSyntaxError(
                "pullback cannot follow an in-place update of an array that other names "
                "may share.", parsed.location(origin),
                f"Write `{origin.target.id} = {origin.target.id} "
                f"{_symbol(origin.op)} ...` to make a new array, if that is what you mean.")


_VIEWS = {"ndarray.T", "ndarray.reshape", "ndarray.transpose", "ndarray.ravel",
          "ndarray.squeeze", "ndarray.real", "ndarray.imag"}


def _placeholder(stmt):
    """`y = None`, which normalize puts before a loop that defines y."""
    return isinstance(stmt, gast.Assign) and isinstance(stmt.value, gast.Constant) \
        and stmt.value.value is None


def _allocates(prim):
    from .analyses.mutation import ALLOCATING
    try:
        return prim in ALLOCATING
    except TypeError:       # an unhashable callable
        return False


def _is_view(op, kinds):
    import numpy as np
    from .analyses.mutation import _is_view as is_view
    prim = op.primitive
    if getattr(prim, "__name__", "") == "getitem":
        return is_view(op, None, kinds)     # `y[0]` of a vector is a number, not a view
    if isinstance(prim, str):
        return prim in _VIEWS
    return prim in (np.reshape, np.transpose, np.ravel, np.squeeze, np.expand_dims,
                    np.broadcast_to, np.asarray, np.real, np.imag, np.swapaxes, np.moveaxis) \
        or getattr(prim, "__name__", "") == "getitem"


def _symbol(op):
    return {gast.Add: "+", gast.Sub: "-", gast.Mult: "*", gast.Div: "/",
            gast.MatMult: "@", gast.Pow: "**"}.get(type(op), "op")
