"""Elementwise regions: where they are in a block, and the kernel program
each one becomes.

The helpers of ``lower_broadcasts``.  ``find_regions`` splits a block into
maximal regions of elementwise statements whose intermediates are read only
inside the region, none reaching back across a statement that writes into
an array or rebinds a name.  ``blocks``, ``name_counts``
and ``readers_of`` are the def-use facts over nested blocks that the pass
reads.  ``ProgramBuilder`` turns one region's statements, with the scalar
functions of fused maps inlined, into a ``kernel_programs.Program`` over
the region's inputs; a value an inlined function reads from its globals or
cells becomes an extra input, read at each call (``resolve`` finds the
object a name of the user's function stands for).

Before and after: ``np.max`` is not elementwise, so it splits the function
into two regions, each one kernel (its program: ``kernel_programs``):

>>> import pullback as pb, re
>>> from pullback.lowering import kernels
>>> from pullback.testing import function_from_source
>>> f = function_from_source('''
... def f(x):
...     z = np.exp(x) * x + 1.0
...     m = np.max(z)
...     return np.sum(np.tanh(z - m) * z)
... ''')
>>> with kernels.options(lower=True):
...     text = pb.source(f)
>>> print(re.sub(r" *#.*\\n", "", text).split("def f_adjoint")[0])
def f_primal(x):
    z, z_res = fused_exp_primal(x)
    m = np.max(z)
    out, out_res = fused_tanh_sum_primal(z, m)
    return (out, (out_res, z, m, z_res, x))
<BLANKLINE>
<BLANKLINE>
"""
from __future__ import annotations

import collections
import types

import gast
import numpy as np

from ..analyses import purity
from ..analyses.callable_facts import dotted, static_value
from ..analyses.ops import OpKind
from ..errors import UnsupportedSyntaxError
from ..ir.walk import own_nodes, statement_lists
from .kernel_programs import Program, Step
from .kernel_text import BINARY, UNARY, Cast

__all__ = ["blocks", "name_counts", "readers_of", "operands_of", "find_regions",
           "resolve", "ProgramBuilder", "load_name"]


# -- def-use over blocks ----------------------------------------------------------------

blocks = statement_lists      # every statement list of a body, outermost first


def name_counts(body, ctx):
    """How often each name is read (``ctx`` ``gast.Load``) or bound
    (``gast.Store``) in the statements of ``body``."""
    counts = collections.Counter()
    for stmt in body:
        for n in gast.walk(stmt):
            if isinstance(n, gast.Name) and isinstance(n.ctx, ctx):
                counts[n.id] += 1
    return counts


def readers_of(body, name):
    for block in blocks(body):
        for stmt in block:
            if any(isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load) and n.id == name
                   for n in own_nodes(stmt)):
                yield stmt


# -- regions ----------------------------------------------------------------------------

def operands_of(rhs):
    """The atoms an elementwise right-hand side reads."""
    if isinstance(rhs, gast.BinOp):
        return [rhs.left, rhs.right]
    if isinstance(rhs, gast.UnaryOp):
        return [rhs.operand]
    if isinstance(rhs, gast.Compare):
        return [rhs.left] + list(rhs.comparators)
    if isinstance(rhs, gast.Call):
        return list(rhs.args) + [k.value for k in rhs.keywords]
    return [rhs]


def find_regions(block, member, loads, is_root, barrier):
    """Maximal regions of ``block``: lists of statement indices, each ending
    with its root (the one statement whose target is read outside).  The
    kernel is called where the root stood, so no region reaches back across
    a barrier: a statement that writes into an array, rebinds a name, or may
    do either (a call kept for its effect, a nested block)."""
    kinds = {i: member(s) for i, s in enumerate(block)}
    barriers = [i for i, s in enumerate(block) if barrier(s)]
    index = {}
    for i, s in enumerate(block):
        if kinds[i] is not None:
            index[s.targets[0].id] = i
    uses = collections.defaultdict(collections.Counter)    # name -> {index: loads}
    for i, s in enumerate(block):
        for n in gast.walk(s):
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load):
                uses[n.id][i] += 1
    taken, regions = set(), []
    for root in reversed(range(len(block))):
        if kinds[root] is None or root in taken or not is_root(block[root]):
            continue
        region = {root}
        floor = max((b for b in barriers if b < root), default=-1)
        grew = True
        while grew:
            grew = False
            for j in sorted(region):
                for a in operands_of(block[j].value):
                    if not isinstance(a, gast.Name):
                        continue
                    d = index.get(a.id)
                    if d is None or d in region or d in taken or d > j or d < floor:
                        continue
                    readers = uses[a.id]
                    if sum(readers.values()) == loads[a.id] and set(readers) <= region:
                        region.add(d)
                        grew = True
        taken |= region
        regions.append(sorted(region))
    return regions


# -- from statements to a kernel program -----------------------------------------------

class ProgramBuilder:
    """Turns a region's statements (with fused maps inlined) into a
    ``kernel_programs.Program`` over its inputs."""

    def __init__(self, lowering, stmts, summed=False):
        self.low = lowering
        self.stmts = stmts
        self.summed = summed
        self.defined = {s.targets[0].id for s in stmts}
        self.inputs = []            # kernel parameter names (call-site inputs)
        self.call_args = []         # the atoms the call site passes
        self.ambient = []           # getters of values read at call time
        self.ambient_names = []
        self.steps = []
        self.titles = []
        taken = {n.id for s in stmts for n in gast.walk(s) if isinstance(n, gast.Name)}
        from ..ir.naming import Namer
        self.namer = Namer(taken | {"np", "jnp"})
        self._static_inputs = {}

    def title(self):
        words = list(dict.fromkeys(self.titles))[:2] or ["arith"]
        return "_".join(words + (["sum"] if self.summed else []))

    def build(self):
        for s in self.stmts:
            self.statement(s)
        output = self.stmts[-1].targets[0].id
        program = Program(self.inputs, self.steps, output, self.ambient_names, self.summed)
        return program, self.call_args, self.ambient

    # atoms of the user's function
    def atom(self, a):
        if isinstance(a, gast.Constant):
            return a
        if isinstance(a, gast.Name) and a.id in self.defined:
            return load_name(a.id)
        key = _dump(a)
        if key not in self._static_inputs:
            if isinstance(a, gast.Name):
                name = a.id
                self.namer.reserve(name)
            else:
                name = self.namer.fresh(dotted(a, "_", "value"))
            self._static_inputs[key] = name
            self.inputs.append(name)
            self.call_args.append(a)
        return load_name(self._static_inputs[key])

    def statement(self, stmt):
        target = stmt.targets[0].id
        op = self.low.ops[id(stmt)]
        rhs = stmt.value
        if id(stmt) in self.low.mapped:
            fn, info, otypes = self.low.mapped[id(stmt)]
            args = [self.atom(a) for a in rhs.args]
            self.titles.append(getattr(fn, "__name__", "map"))
            result = target if otypes is None else self.namer.fresh(f"{target}_value")
            if isinstance(info, np.ufunc):          # np.vectorize(np.sin), math.sin...
                self.steps.append(Step(result, info, args))
            else:
                self.inline(info, args, result, depth=0)
            if otypes is not None:                  # np.vectorize(g, otypes=[...])
                self.steps.append(Step(target, Cast(np.dtype(otypes[0])),
                                       [load_name(result)]))
            return
        prim = purity.elementwise(op, rhs)
        self.titles.extend(_title(prim))
        args = [self.atom(a) for a in _arguments(op, rhs)]
        self.steps.append(Step(target, prim, args, lineno=stmt.lineno))

    def inline(self, info, args, target, depth):
        """Inline the pure scalar function ``info`` applied to ``args``,
        binding its result to ``target``."""
        if depth > 16:
            raise UnsupportedSyntaxError("pullback inlines scalar functions 16 deep at most.")
        normal, parsed, ops = info.normal, info.parsed, info.ops
        env = dict(zip(normal.params, args))
        for stmt in normal.tree.body:
            if isinstance(stmt, gast.Return):
                ret = self.g_atom(stmt.value, env, parsed)
                self.steps.append(Step(target, purity._identity, [ret]))
                return
            t = stmt.targets[0].id
            local = self.namer.fresh(t)
            rhs = stmt.value
            op = ops[id(stmt)]
            if isinstance(rhs, gast.Constant):
                self.steps.append(Step(local, None, [], expr=rhs))
            elif op.kind is OpKind.USER:
                inner = purity.scalar_function(op.primitive)
                call_args = [self.g_atom(a, env, parsed) for a in _arguments(op, rhs)]
                self.inline(inner, call_args, local, depth + 1)
            else:
                prim = purity.elementwise(op, rhs)
                if prim is None:        # indexing a value that does not vary
                    expr = _substitute(rhs, env, lambda a: self.g_atom(a, env, parsed))
                    self.steps.append(Step(local, None, [], expr=expr))
                else:
                    self.titles.extend(_title(prim))
                    self.steps.append(Step(local, prim, [self.g_atom(a, env, parsed)
                                                         for a in _arguments(op, rhs)]))
            env[t] = load_name(local)

    def g_atom(self, a, env, parsed):
        """An atom of an inlined function: its own names, or a value it reads
        from its globals or cells (read again at each call)."""
        if isinstance(a, gast.Constant):
            return a
        if isinstance(a, gast.Name) and a.id in env:
            return env[a.id]
        value = resolve(a, parsed)
        if isinstance(value, (bool, int, float)) and _is_module_path(a, parsed):
            return gast.Constant(value=value, kind=None)
        key = ("ambient", id(parsed.fn), _dump(a))
        if key not in self._static_inputs:
            name = self.namer.fresh(dotted(a, "_", "value"))
            self._static_inputs[key] = name
            self.ambient_names.append(name)
            self.ambient.append(_getter(a, parsed))
        return load_name(self._static_inputs[key])


def resolve(node, parsed):
    """The object a static atom of the user's function names now."""
    return static_value(node, parsed)


def _is_module_path(a, parsed):
    """``math.pi``: an attribute of a module, taken as a constant."""
    if not isinstance(a, gast.Attribute):
        return False
    root = a
    while isinstance(root, gast.Attribute):
        root = root.value
    return isinstance(resolve(root, parsed), types.ModuleType)


def _getter(a, parsed):
    def get():
        return resolve(a, parsed)
    return get


def _arguments(op, rhs):
    """An elementwise operation's data arguments, in its rule's order."""
    if op.kind is OpKind.RULE and isinstance(rhs, gast.Call):
        out = []
        for p in op.rule.params:
            if p in op.bound:
                v = op.bound[p]
                out.extend(v if isinstance(v, tuple) else (v,))
        return out
    if op.kind is OpKind.USER:
        return list(op.bound.values())       # bound in the callee's parameter order
    return operands_of(rhs)


def _title(prim):
    if prim is None or prim in BINARY or prim in UNARY:
        return []
    name = getattr(prim, "__name__", "")
    return [] if name == "_identity" else [{"absolute": "abs", "true_divide": "div"}
                                          .get(name, name)]


def _substitute(expr, env, replace):
    """``expr`` with each atom replaced (a local's attribute stays an attribute)."""
    from ..rules.inline import clone
    expr = clone(expr)

    class _Sub(gast.NodeTransformer):
        def visit_Name(self, node):
            return replace(node) if isinstance(node.ctx, gast.Load) else node

        def visit_Attribute(self, node):
            root = node
            while isinstance(root, gast.Attribute):
                root = root.value
            if isinstance(root, gast.Name) and root.id in env:
                return self.generic_visit(node)
            return replace(node)

    return _Sub().visit(expr)


def load_name(name):
    return gast.Name(id=name, ctx=gast.Load(), annotation=None, type_comment=None)


def _dump(node):
    return gast.dump(node)
