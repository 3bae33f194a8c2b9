"""Elementwise maps: the calls of a scalar function over arrays, made into
region material before ``lower_broadcasts`` looks for regions.

Two kinds of call, each rewritten in place in the normal form:

* a call of a closure that ``closures`` lifted out of the function
  (``g = lambda z: z ** 2 + y[0]; g(x)``) is inlined (``inline_closures``):
  its elementwise statements can then join a region, and what it computes
  from captured values (``y[0]``) stays an ordinary statement with its own
  gradient;
* ``np.vectorize(g)(x, ...)`` (``vectorize_calls``) gets a fused-map
  operation for a pure elementwise ``g`` (``elementwise_regions``'s
  ``ProgramBuilder`` inlines ``g``'s body into the region as array
  operations), else a ``PerElement`` one (``g``'s own primal and adjoint,
  once per element).

Both take the pass's tables and update ``ops`` in place;
``vectorize_calls`` also adds the calls' kinds to ``kinds`` and records the
fused maps in ``mapped`` (``id(stmt) -> (fn, ScalarFunction or ufunc,
otypes)``), while ``inline_closures`` returns the kinds inferred again.

Before and after, for a pure scalar ``g`` mapped by ``np.vectorize``: its body
joins the region of the ``np.sum`` as array operations, one fused kernel:

>>> import pullback as pb, re
>>> from pullback.lowering import kernels
>>> from pullback.testing import function_from_source
>>> g = function_from_source('''
... def g(v):
...     return math.sin(v) * v
... ''')
>>> f = function_from_source('''
... def f(x):
...     return np.sum(np.vectorize(g)(x))
... ''', {"g": g})
>>> with kernels.options(lower=True):     # as for arrays of 100,000 elements or more
...     text = pb.source(f)
>>> print(re.sub(r" *#.*\\n", "", text).split("def f_adjoint")[0])
def f_primal(x):
    out, out_res = fused_g_sin_sum_primal(x)
    return (out, (out_res, x))
<BLANKLINE>
<BLANKLINE>
"""
from __future__ import annotations

import types

import gast
import numpy as np

from ..analyses import purity
from ..analyses.kinds import Kind, Shape
from ..analyses.ops import Op, OpKind
from .elementwise_regions import blocks, load_name, name_counts, resolve
from ..errors import UnsupportedSyntaxError
from .per_element import PerElement

__all__ = ["inline_closures", "vectorize_calls"]


# -- closures lifted out of the function ---------------------------------------

def inline_closures(body, normal, parsed, ops, kinds):
    """Inline calls of closures that ``closures`` lifted out of the function
    (``g = lambda z: z ** 2 + y[0]; g(x)``): their elementwise statements
    can then join a region, and what they compute from captured values
    (``y[0]``) stays an ordinary statement with its own gradient.  Returns
    whether a call was inlined, and the kinds (inferred again if so)."""
    changed = False
    for block in list(blocks(body)):
        i = 0
        while i < len(block):
            stmt = block[i]
            op = ops.get(id(stmt))
            info = None
            if op is not None and op.kind is OpKind.USER and isinstance(stmt, gast.Assign) \
                    and isinstance(stmt.targets[0], gast.Name) \
                    and getattr(op.primitive, "__pullback_lifted_source__", None):
                info = purity.inlinable(op.primitive)
            if info is None or set(op.bound) != set(info.normal.params):
                i += 1
                continue
            new = _splice(stmt, info, normal, parsed, ops)
            block[i:i + 1] = new
            i += len(new)
            changed = True
    if changed:
        from ..analyses import kinds as kinds_
        params = {p: kinds[p] for p in normal.params if p in kinds}
        kinds = kinds_.infer(normal.tree, params, ops)
        from ..analyses.settle_attributes import settle_attributes
        if settle_attributes(normal.tree, ops, kinds):    # `s.T` of a spliced object
            kinds = kinds_.infer(normal.tree, params, ops)
    return changed, kinds


def _splice(stmt, info, caller, parsed, ops):
    """The statements of ``info``'s function with its parameters bound to
    the call's arguments, its locals renamed apart and its result bound
    to the call's target (``caller`` is the normal form the call is in)."""
    from ..analyses import op_resolver
    from ..rules.inline import clone
    normal = info.normal
    target = stmt.targets[0].id
    namer = caller.namer
    for n in gast.walk(normal.tree):
        if isinstance(n, gast.Name):
            namer.reserve(n.id)          # never shadow a name the callee reads
    env = dict(ops[id(stmt)].bound)      # parameter -> the call's argument
    *body, ret = normal.tree.body
    returned = ret.value
    renames = {}
    for s in body:
        t = s.targets[0].id
        renames[t] = target if isinstance(returned, gast.Name) and returned.id == t \
            else namer.fresh(t)
    for t, new in renames.items():
        env[t] = load_name(new)
    out = []
    for s in body:
        new = clone(s, env)
        new.targets[0].id = renames[s.targets[0].id]
        new.lineno = stmt.lineno          # computed where the call is
        out.append(new)
    if not (isinstance(returned, gast.Name) and returned.id in renames):
        value = clone(returned, env)
        copy = gast.Assign(targets=[gast.Name(id=target, ctx=gast.Store(), annotation=None,
                                              type_comment=None)],
                           value=value, type_comment=None)
        copy.lineno = stmt.lineno
        out.append(copy)
    fake = types.SimpleNamespace(
        params=sorted(_local_names(caller) | set(renames.values())),
        tree=gast.FunctionDef(name="_", args=normal.tree.args, body=out,
                              decorator_list=[], returns=None, type_comment=None,
                              type_params=[]))
    ops.update(op_resolver.resolve(fake, parsed))
    return out


def _local_names(normal):
    return set(normal.params) | {n.id for n in gast.walk(normal.tree)
                                 if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}


# -- np.vectorize ---------------------------------------------------------------

def vectorize_calls(body, parsed, ops, kinds, mapped):
    """Give each ``np.vectorize(g)(...)`` call its operation: a fused map
    for a pure ``g`` (joining regions, recorded in ``mapped``), else ``g``
    element by element.  Returns whether a call was given one.

    The hook for the other spellings of a map: ``desugar`` turns
    ``[g(v) for v in x]``, ``map(g, x)`` and ``sum(g(v) for v in x)`` into
    a ``for i in range(len(x))`` loop that reads ``x[i]``, calls ``g``
    and appends (or accumulates).  Recognizing that loop here, for a
    pure ``g`` and an array ``x``, and giving it the same fused-map
    operation would lower those too."""
    changed = False
    lists = list(blocks(body))
    loads = name_counts(body, gast.Load)
    for block in lists:
        for stmt in list(block):
            op = ops.get(id(stmt))
            if op is None or op.primitive is not np.vectorize \
                    or not isinstance(stmt, gast.Assign) \
                    or not isinstance(stmt.targets[0], gast.Name):
                continue
            v = stmt.targets[0].id
            calls = [s for b in lists for s in b if _calls_name(s, v)]
            if not calls or loads[v] != len(calls):
                continue            # the vectorized function escapes: leave it
            if _for_the_rule(stmt, calls):
                continue            # excluded=, keywords: the object's rule, when it runs
            fn, otypes = _vectorized(stmt, parsed)
            info = purity.scalar_function(fn)
            for call in calls:
                call_op, fused = _vectorize_call(call, fn, info, otypes, parsed, kinds)
                ops[id(call)] = call_op
                if fused is not None:
                    mapped[id(call)] = fused
            block.remove(stmt)
            changed = True
    return changed


def _for_the_rule(stmt, calls):
    """``np.vectorize(g, excluded=...)``, ``cache=``, or a call passing
    keywords: left to the rule of the object's calls (``rules.numpy_vectorize``)."""
    keywords = {k.arg for k in stmt.value.keywords}
    return bool(keywords - {"otypes", "doc", "signature"}) \
        or any(c.value.keywords for c in calls)


def _vectorized(stmt, parsed):
    """The function and ``otypes`` of ``v = np.vectorize(fn, ...)``."""
    call = stmt.value
    keywords = {k.arg: k.value for k in call.keywords}
    unsupported = set(keywords) - {"otypes", "doc"}
    if unsupported or len(call.args) != 1:
        raise UnsupportedSyntaxError(
            "pullback cannot differentiate np.vectorize with "
            f"{', '.join(sorted(unsupported)) or 'these arguments'}.",
            parsed.location(call),
            "Call np.vectorize(fn) on a scalar function, or write the computation "
            "with NumPy operations on whole arrays.")
    fn = resolve(call.args[0], parsed)
    otypes = None
    if "otypes" in keywords:
        otypes = resolve(keywords["otypes"], parsed) if not isinstance(
            keywords["otypes"], gast.Constant) else keywords["otypes"].value
    if not callable(fn):
        raise UnsupportedSyntaxError(
            "pullback cannot tell which function np.vectorize is given here.",
            parsed.location(call),
            "Pass a function defined with def (or a lambda) at module level.")
    return fn, otypes


def _vectorize_call(stmt, fn, info, otypes, parsed, kinds):
    """The operation of one call ``out = v(...)`` of the vectorized ``fn``,
    and the fused map's ``(fn, ScalarFunction or ufunc, otypes)`` (None for
    the per-element path); ``kinds`` gains ``out``'s."""
    call = stmt.value
    if call.keywords or not isinstance(stmt, gast.Assign):
        raise UnsupportedSyntaxError(
            "pullback differentiates a vectorized function called with positional "
            "arguments only.", parsed.location(call),
            "Pass the arguments by position.")
    target = stmt.targets[0].id
    args = call.args
    arg_kinds = [_atom_kind(a, kinds) for a in args]
    kinds[target] = _broadcast_kind(arg_kinds)
    names = _param_names(fn, len(args))
    bound = dict(zip(names, args))
    operands = tuple((p, a.id) for p, a in bound.items() if isinstance(a, gast.Name))
    label = f"np.vectorize({getattr(fn, '__name__', 'fn')})"
    twin = purity.numpy_twin(fn)
    if twin is not None and twin.nin != len(args):
        twin = None
    fused = twin is not None or (info.pure and _signature_ok(fn, len(args)))
    if fused and _otypes_ok(otypes):
        return Op(OpKind.MAPPED, label=label, primitive=fn, bound=bound,
                  operands=operands, node=call), (fn, twin or info, otypes)
    each = PerElement(fn, names, otypes)
    return Op(OpKind.CUSTOM, label=label, primitive=each, bound=bound,
              operands=operands, node=call), None


def _atom_kind(atom, kinds):
    if isinstance(atom, gast.Name):
        return kinds.get(atom.id, Kind(Shape.UNKNOWN, None))
    if isinstance(atom, gast.Constant) and isinstance(atom.value, (int, float, complex)):
        return Kind(Shape.SCALAR, isinstance(atom.value, complex))
    return Kind(Shape.UNKNOWN, None)


def _calls_name(stmt, name):
    return isinstance(stmt, (gast.Assign, gast.Expr)) and isinstance(stmt.value, gast.Call) \
        and isinstance(stmt.value.func, gast.Name) and stmt.value.func.id == name


def _otypes_ok(otypes):
    """No output types, or one inexact type (the kernel casts to it)."""
    if otypes is None:
        return True
    try:
        return len(otypes) == 1 and np.dtype(otypes[0]).kind in "fc"
    except TypeError:
        return False


def _signature_ok(fn, n):
    code = getattr(fn, "__code__", None)
    return code is not None and code.co_argcount == n and not code.co_flags & 0x0C


def _param_names(fn, n):
    code = getattr(fn, "__code__", None)
    if code is not None and code.co_argcount == n:
        return list(code.co_varnames[:n])
    return [f"arg{i}" for i in range(n)]


def _broadcast_kind(ks):
    if ks and all(k.shape is Shape.SCALAR for k in ks):
        return Kind(Shape.SCALAR, None)
    if any(k.shape is Shape.ARRAY for k in ks):
        return Kind(Shape.ARRAY, None)
    return Kind(Shape.NUMBER, None)
