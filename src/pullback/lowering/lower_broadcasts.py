"""Lower broadcasts: pure elementwise regions become fused JAX jvp kernels.

Runs on the normal form after the analyses and before the reverse pass.  A
*region* is a maximal set of pure elementwise statements (``analyses.purity``)
of one block whose intermediates are read only inside the region; it has one
output.  Each region whose output is active becomes a single statement
``out = fused_...(inputs)`` (taking in the ``np.sum`` of the output, when
that is its only use) whose operation is a ``kernels.Kernel``, a
callee with its own rule: its primal returns the value and the elementwise
partial derivatives (one ``jax.jit`` kernel by ``jax.jvp``, or NumPy forward
mode for small arrays), its adjoint ``project(unbroadcast(g * partial, x), x)``
per input.  The reverse pass needs nothing new.  The kernel is called where
the root statement stood, so a region never reaches back across a statement
that writes into an array or rebinds a name; its value is copied out of
JAX's read-only buffer where the function writes into it or returns it.

When: only in a transform for large arguments (``kernels.size_class``; small
arrays keep plain NumPy code, exactly as without this pass), and only for
regions of ``kernels.MIN_OPERATIONS`` operations or more (one or two fuse
too little to beat NumPy on a CPU); each call then picks JAX or NumPy by its
own size (``kernels``).

``np.vectorize(g)(x, ...)`` with a pure elementwise scalar function ``g`` is
inlined into the region as array operations (``math.sin`` -> ``np.sin``, and
``jax.numpy`` in the kernel): a vmap of an elementwise body is the body on
arrays.  Values ``g`` reads from its globals or cells are read at each call
(closure conversion: they become extra kernel inputs).  A ``g`` with effects
(printing, appending to a list) or that is not elementwise is never fused:
its own primal and adjoint run once per element, in order.  A closure that
``closures`` lifted out of the function (``g = lambda z: z ** 2 + y[0]``) is
inlined where it is called: its elementwise part joins a region, and what
it computes from captured values (``y[0]``) stays an ordinary statement, a
kernel input with its own gradient.  (Comprehensions, ``map`` and
``sum(g(v) for v in x)`` reach this pass as loops, from ``desugar``; a loop
that maps a pure function over an array's elements could be recognized here
and handled as ``np.vectorize`` is: see ``elementwise_maps.vectorize_calls``.)

This module holds the pass itself: which statements may join a region,
whether the ``np.sum`` of its output joins too, and the statement that calls
its kernel.  ``elementwise_maps`` first makes lifted closures and
``np.vectorize`` calls into region material; ``elementwise_regions`` finds
the regions and builds each one's ``kernel_programs.Program``; ``kernels``
runs it.

Before and after, for ``f(x, y) = sum(tanh(2x + 1) * x + y[0])``:

>>> import pullback as pb, re
>>> from pullback.lowering import kernels
>>> from pullback.testing import function_from_source
>>> f = function_from_source('''
... def f(x, y):
...     z = np.tanh(2.0 * x + 1.0) * x + y[0]
...     return np.sum(z)
... ''')
>>> with kernels.options(lower=True):     # as for arrays of 100,000 elements or more
...     text = pb.source(f)
>>> print(re.sub(r" *#.*\\n", "", text))
def f_primal(x, y):
    y_item = y[0]
    out, out_res = fused_tanh_sum_primal(x, y_item)
    return (out, (out_res, y, x))
<BLANKLINE>
<BLANKLINE>
def f_adjoint(residuals, out_bar):
    out_res, y, x = residuals
    fused_tanh_sum_grads = fused_tanh_sum_adjoint(out_res, out_bar)
    x_bar = fused_tanh_sum_grads[0]
    y_item_bar = fused_tanh_sum_grads[1]
    y_bar = owned_zeros(y)
    index_add(y_bar, 0, y_item_bar)
    return (project(x_bar, x), project(y_bar, y))
<BLANKLINE>

The region (``2.0 * x``, ``+ 1.0``, ``np.tanh``, ``* x``, ``+ y_item``) is one
kernel, and so is the ``np.sum`` that is its output's only use: the
elementwise value is never stored.  ``y[0]`` is not elementwise; it stays a
statement of its own, and its value is a kernel input like ``x``.
The kernel's own code (``kernels.sources(f)``, or ``kernel.source``) shows
the region, its ``jax.numpy`` translation and the NumPy forward mode used
for small arrays.

``PULLBACK_JAX=0`` turns the lowering off (a pure ``np.vectorize`` is still
inlined, into a kernel that runs NumPy only).  Where the forward mode of a
kernel and the reverse mode of the unlowered code differ: at a point where
an untaken ``np.where`` branch has an infinite derivative
(``np.where(x > 0, np.log(x), 0)`` at 0), the kernel gives 0, the
unlowered path NaN (as JAX's forward and reverse modes do).
"""
from __future__ import annotations

import gast
import numpy as np

from . import kernels
from ..analyses import activity, defuse, purity
from ..analyses.kinds import Kind, Shape
from ..analyses.mutation import mutated_arrays
from ..analyses.ops import Op, OpKind
from ..frontend.parse import Parsed
from ..normalize.normalize import Normal
from .elementwise_maps import inline_closures, vectorize_calls
from .elementwise_regions import (ProgramBuilder, find_regions, name_counts, operands_of,
                                  readers_of)
from .kernels import Kernel
from ..rules.registry import NOT_HOLOMORPHIC, declared_elementwise

__all__ = ["start"]

_NUMBER_SHAPES = (Shape.SCALAR, Shape.ARRAY, Shape.NUMBER)
_SUMS = (np.sum, "ndarray.sum")
# operations that write nothing (a user function or a custom rule may)
_PURE_KINDS = (OpKind.RULE, OpKind.NONDIFF, OpKind.COPY, OpKind.PACK, OpKind.UNPACK,
               OpKind.MAPPED)


def start(normal: Normal, parsed: Parsed, ops: dict[int, Op], kinds: dict[str, Kind],
          act: activity.Activity, wrt: list[str], output: gast.expr) -> _Lowering:
    """The lowering of ``normal``'s pure elementwise regions, before its first
    step; ``pipeline.py`` runs its four steps in order (``inline`` ...
    ``lower``), the last of which returns the new ``(normal, ops, kinds,
    activity)`` (``normal`` is changed in place)."""
    return _Lowering(normal, parsed, ops, kinds, act, wrt, output)


class _Lowering:
    def __init__(self, normal, parsed, ops, kinds, act, wrt, output):
        self.normal, self.parsed, self.ops = normal, parsed, dict(ops)
        self.kinds, self.act, self.wrt, self.output = dict(kinds), act, wrt, output
        self.use_jax = kernels.jax_available()
        self.wanted = self.use_jax and kernels.lowering_wanted()
        self.threshold = kernels.threshold_from_env()
        self.mapped = {}          # id(stmt) -> (fn, ScalarFunction, otypes) of a fused map
        self.changed = False      # whether steps 1 and 2 changed the code
        self._mutated = None

    # -- the four steps (pipeline.py runs them in this order) -------------------

    def inline(self):
        """1. Calls of lifted closures that are elementwise, inlined (large arrays)."""
        if self.wanted:
            self.changed, self.kinds = inline_closures(self.normal.tree.body, self.normal,
                                                       self.parsed, self.ops, self.kinds)

    def vectorize(self):
        """2. Each ``np.vectorize`` call given its operation: a fused map for a
        pure function, else the function element by element."""
        self.changed = vectorize_calls(self.normal.tree.body, self.parsed, self.ops,
                                       self.kinds, self.mapped) or self.changed

    def refresh(self):
        """3. Activity again, if the first two steps changed the code."""
        if self.changed:
            self.act = self.reanalyze()

    def lower(self):
        """4. Each region becomes one kernel call; activity again."""
        if self.wanted or self.mapped:
            self.lower_block(self.normal.tree.body)
            self.act = self.reanalyze()
        return self.normal, self.ops, self.kinds, self.act

    def reanalyze(self):
        tree = self.normal.tree
        chains = defuse.chains(tree)
        return activity.analyze(tree, chains, self.wrt, self.output,
                                lambda s: self.ops[id(s)].names(),
                                lambda s: self.ops[id(s)].mutates)


    # -- regions ---------------------------------------------------------------------

    def lower_block(self, block):
        for stmt in block:
            for field in ("body", "orelse"):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], gast.stmt):
                    self.lower_block(inner)
        loads = name_counts(self.normal.tree.body, gast.Load)
        stores = name_counts(self.normal.tree.body, gast.Store)
        regions = find_regions(block, lambda s: self.member(s, stores), loads,
                               lambda s: self.is_root(s), lambda s: self.barrier(s, stores))
        fewest = kernels.min_operations()
        swap, gone = {}, set()
        for region in regions:
            mapped = any(id(block[i]) in self.mapped for i in region)
            if not (mapped or len(region) >= fewest):
                continue
            total = self.summed_by(block, region[-1], loads, stores)
            stmts = [block[i] for i in region] + ([block[total]] if total is not None else [])
            swap[id(stmts[-1])] = self.kernel_statement(stmts, summed=total is not None)
            gone.update(id(s) for s in stmts)
        block[:] = [swap.get(id(s), s) for s in block if id(s) in swap or id(s) not in gone]

    def summed_by(self, block, root, loads, stores):
        """The index of ``total = np.sum(out)`` if that is the only use of the
        region's output ``out``, with nothing between that could change the
        region's inputs: the sum is then fused into the kernel."""
        out = block[root].targets[0].id
        readers = [i for i, s in enumerate(block) for n in gast.walk(s)
                   if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load) and n.id == out]
        if len(readers) != 1 or loads[out] != 1 or readers[0] <= root:
            return None
        i = readers[0]
        stmt, op = block[i], self.ops.get(id(block[i]))
        if not isinstance(stmt, gast.Assign) or not isinstance(stmt.targets[0], gast.Name) \
                or op is None or op.kind is not OpKind.RULE or op.primitive not in _SUMS \
                or set(op.bound) != {"a"} or stores[stmt.targets[0].id] != 1:
            return None
        if any(self.barrier(block[j], stores) for j in range(root + 1, i)):
            return None
        return i

    def mutated(self):
        """Names of arrays the function writes into (a kernel's value is a
        read-only view of JAX's buffer: such a value is copied)."""
        if self._mutated is None:
            self._mutated = set(mutated_arrays(self.normal, self.ops))
        return self._mutated

    def barrier(self, stmt, stores):
        """Whether moving a computation across ``stmt`` could change it."""
        if not isinstance(stmt, gast.Assign):
            return True            # an effect, a nested block, an assertion, a return
        op = self.ops.get(id(stmt))
        if op is None or op.kind not in _PURE_KINDS or getattr(op, "mutates", None):
            return True
        return any(isinstance(t, gast.Name) and stores[t.id] != 1
                   for t in gast.walk(stmt.targets[0]))

    def member(self, stmt, stores):
        """The statement's elementwise operation, if it may join a region."""
        if not isinstance(stmt, gast.Assign) or not isinstance(stmt.targets[0], gast.Name):
            return None
        target = stmt.targets[0].id
        if stores[target] != 1:
            return None
        op = self.ops.get(id(stmt))
        if op is None:
            return None
        if id(stmt) in self.mapped:
            return "mapped"
        if not self.wanted:
            return None
        prim = purity.elementwise(op, stmt.value)
        if prim is None:
            return None
        atoms = operands_of(stmt.value)
        cplx = False
        for a in atoms:
            if isinstance(a, gast.Name):
                if a.id in stores or a.id in self.normal.params:
                    kind = self.kinds.get(a.id)
                    if kind is None or kind.shape not in _NUMBER_SHAPES:
                        return None
                    cplx = cplx or kind.complex is not False
            elif isinstance(a, gast.Constant):
                if not isinstance(a.value, (bool, int, float)) and a.value is not None:
                    return None
        declared = declared_elementwise(prim)
        if cplx and (prim in NOT_HOLOMORPHIC or (
                declared is not None and not declared.holomorphic) or any(
                self.kinds.get(a.id, Kind(Shape.UNKNOWN, None)).complex is True
                for a in atoms if isinstance(a, gast.Name))):
            return None
        if op.kind is OpKind.RULE and self.varied_static(op):
            return None
        return prim

    def varied_static(self, op):
        """A varied value where the rule takes no gradient: the reverse pass
        reports it; leave the statement to it."""
        for p, v in op.bound.items():
            if p in op.rule.diff:
                continue
            for a in v if isinstance(v, tuple) else (v,):
                if isinstance(a, gast.Name) and a.id in self.act.varied:
                    return True
        return False

    def is_root(self, stmt):
        target = stmt.targets[0].id
        kind = self.kinds.get(target)
        return target in self.act.active and (kind is None or kind.shape is not Shape.SCALAR or
                                              id(stmt) in self.mapped)

    def kernel_statement(self, stmts, summed=False):
        """One call of a new kernel computing the region ``stmts`` (in order,
        the root last; with ``summed``, then the sum of the root's value), to
        stand where the last statement stood."""
        root = stmts[-1]
        builder = ProgramBuilder(self, stmts[:-1] if summed else stmts, summed)
        program, call_args, ambient = builder.build()
        target = root.targets[0].id
        name = self.normal.namer.fresh(f"fused_{builder.title()}")
        readers_ok = summed or target not in self.mutated() and all(
            self.ops[id(s)].kind in (OpKind.RULE, OpKind.NONDIFF, OpKind.CUSTOM)
            and not isinstance(s, gast.Return)
            for s in readers_of(self.normal.tree.body, target))
        doc = "fused from line" + ("s " if len({s.lineno for s in stmts}) > 1 else " ") + \
            ", ".join(str(n) for n in sorted({s.lineno for s in stmts if s.lineno}))
        kernel = Kernel(name, program, program.inputs, ambient, copy_out=not readers_ok,
                        threshold=self.threshold, use_jax=self.use_jax, doc=doc)
        call = gast.Call(func=gast.Name(id=name, ctx=gast.Load(), annotation=None,
                                        type_comment=None),
                         args=list(call_args), keywords=[])
        new = gast.Assign(targets=[gast.Name(id=target, ctx=gast.Store(), annotation=None,
                                             type_comment=None)],
                          value=call, type_comment=None)
        gast.copy_location(new, root)
        new.lineno = root.lineno
        bound = dict(zip(program.inputs, call_args))
        reach = program.differentiable_inputs()
        operands = tuple((p, a.id) for p, a in bound.items()
                         if isinstance(a, gast.Name) and p in reach)
        self.ops[id(new)] = Op(OpKind.CUSTOM, label=name, primitive=kernel, bound=bound,
                               operands=operands, node=root.value)
        for s in stmts[:-1]:
            self.kinds.pop(s.targets[0].id, None)
        return new
