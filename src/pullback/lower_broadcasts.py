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
and handled as ``np.vectorize`` is: see ``_Lowering.vectorize_calls``.)

Before and after, for ``f(x, y) = sum(tanh(2x + 1) * x + y[0])``:

>>> import pullback as pb, re
>>> from pullback import kernels
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

import collections
import types

import gast
import numpy as np

from . import kernels
from .analyses import activity, defuse, purity
from .analyses.kinds import Kind
from .analyses.ops import Op
from .errors import UnsupportedSyntaxError
from .kernels import Kernel, PerElement, Program, Step

__all__ = ["lower"]

_NUMBER_SHAPES = ("scalar", "array", "number")
_SUMS = (np.sum, "ndarray.sum")
# operations that write nothing (a user function or a custom rule may)
_PURE_KINDS = ("rule", "nondiff", "copy", "pack", "unpack", "mapped")


def lower(normal, parsed, ops, kinds, act, wrt, output):
    """Lower the pure elementwise regions of ``normal``; return the new
    ``(normal, ops, kinds, activity)`` (``normal`` is changed in place)."""
    return _Lowering(normal, parsed, ops, kinds, act, wrt, output).run()


class _Lowering:
    def __init__(self, normal, parsed, ops, kinds, act, wrt, output):
        self.normal, self.parsed, self.ops = normal, parsed, dict(ops)
        self.kinds, self.act, self.wrt, self.output = dict(kinds), act, wrt, output
        self.use_jax = kernels.jax_available()
        self.wanted = self.use_jax and kernels.lowering_wanted()
        self.threshold = kernels.threshold_from_env()
        self.mapped = {}          # id(stmt) -> (fn, ScalarFunction, otypes) of a fused map
        self._mutated = None

    def run(self):
        body = self.normal.tree.body
        changed = self.wanted and self.inline_closures(body)
        changed = self.vectorize_calls(body) or changed
        if changed:
            self.act = self.reanalyze()
        if self.wanted or self.mapped:
            self.lower_block(body)
            self.act = self.reanalyze()
        return self.normal, self.ops, self.kinds, self.act

    def reanalyze(self):
        tree = self.normal.tree
        chains = defuse.chains(tree)
        return activity.analyze(tree, chains, self.wrt, self.output,
                                lambda s: self.ops[id(s)].names(),
                                lambda s: self.ops[id(s)].mutates)

    # -- closures lifted out of the function ---------------------------------------

    def inline_closures(self, body):
        """Inline calls of closures that ``closures`` lifted out of the function
        (``g = lambda z: z ** 2 + y[0]; g(x)``): their elementwise statements
        can then join a region, and what they compute from captured values
        (``y[0]``) stays an ordinary statement with its own gradient."""
        changed = False
        for block in list(_blocks(body)):
            i = 0
            while i < len(block):
                stmt = block[i]
                op = self.ops.get(id(stmt))
                info = None
                if op is not None and op.kind == "user" and isinstance(stmt, gast.Assign) \
                        and isinstance(stmt.targets[0], gast.Name) \
                        and not stmt.value.keywords \
                        and getattr(op.primitive, "__pullback_lifted_source__", None):
                    info = purity.inlinable(op.primitive)
                if info is None or len(stmt.value.args) != len(info.normal.params):
                    i += 1
                    continue
                new = self.splice(stmt, info)
                block[i:i + 1] = new
                i += len(new)
                changed = True
        if changed:
            from .analyses import kinds as kinds_
            params = {p: self.kinds[p] for p in self.normal.params if p in self.kinds}
            self.kinds = kinds_.infer(self.normal.tree, params, self.ops)
        return changed

    def splice(self, stmt, info):
        """The statements of ``info``'s function with its parameters bound to
        the call's arguments, its locals renamed apart and its result bound
        to the call's target."""
        from .analyses import ops as ops_
        from .inline import clone
        normal = info.normal
        target = stmt.targets[0].id
        namer = self.normal.namer
        for n in gast.walk(normal.tree):
            if isinstance(n, gast.Name):
                namer.reserve(n.id)          # never shadow a name the callee reads
        env = dict(zip(normal.params, stmt.value.args))
        *body, ret = normal.tree.body
        returned = ret.value
        renames = {}
        for s in body:
            t = s.targets[0].id
            renames[t] = target if isinstance(returned, gast.Name) and returned.id == t \
                else namer.fresh(t)
        for t, new in renames.items():
            env[t] = _load(new)
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
            params=sorted(_local_names(self.normal) | set(renames.values())),
            tree=gast.FunctionDef(name="_", args=normal.tree.args, body=out,
                                  decorator_list=[], returns=None, type_comment=None,
                                  type_params=[]))
        self.ops.update(ops_.resolve(fake, self.parsed))
        return out

    # -- np.vectorize ---------------------------------------------------------------

    def vectorize_calls(self, body):
        """Give each ``np.vectorize(g)(...)`` call its operation: a fused map
        for a pure ``g`` (joining regions), else ``g`` element by element.

        The hook for the other spellings of a map: ``desugar`` turns
        ``[g(v) for v in x]``, ``map(g, x)`` and ``sum(g(v) for v in x)`` into
        a ``for i in range(len(x))`` loop that reads ``x[i]``, calls ``g``
        and appends (or accumulates).  Recognizing that loop here, for a
        pure ``g`` and an array ``x``, and giving it the same fused-map
        operation would lower those too."""
        changed = False
        lists = list(_blocks(body))
        loads = _load_counts(body)
        for block in lists:
            for stmt in list(block):
                op = self.ops.get(id(stmt))
                if op is None or op.primitive is not np.vectorize \
                        or not isinstance(stmt, gast.Assign) \
                        or not isinstance(stmt.targets[0], gast.Name):
                    continue
                v = stmt.targets[0].id
                calls = [s for b in lists for s in b if _calls_name(s, v)]
                if not calls or loads[v] != len(calls):
                    continue            # the vectorized function escapes: leave it
                fn, otypes = self.vectorized(stmt, op)
                info = purity.scalar_function(fn)
                for call in calls:
                    self.vectorize_call(call, fn, info, otypes)
                block.remove(stmt)
                changed = True
        return changed

    def vectorized(self, stmt, op):
        call = stmt.value
        keywords = {k.arg: k.value for k in call.keywords}
        unsupported = set(keywords) - {"otypes", "doc"}
        if unsupported or len(call.args) != 1:
            raise UnsupportedSyntaxError(
                "pullback cannot differentiate np.vectorize with "
                f"{', '.join(sorted(unsupported)) or 'these arguments'}.",
                self.parsed.location(call),
                "Call np.vectorize(fn) on a scalar function, or write the computation "
                "with NumPy operations on whole arrays.")
        fn = _resolve(call.args[0], self.parsed)
        otypes = None
        if "otypes" in keywords:
            otypes = _resolve(keywords["otypes"], self.parsed) if not isinstance(
                keywords["otypes"], gast.Constant) else keywords["otypes"].value
        if not callable(fn):
            raise UnsupportedSyntaxError(
                "pullback cannot tell which function np.vectorize is given here.",
                self.parsed.location(call),
                "Pass a function defined with def (or a lambda) at module level.")
        return fn, otypes

    def vectorize_call(self, stmt, fn, info, otypes):
        call = stmt.value
        if call.keywords or not isinstance(stmt, gast.Assign):
            raise UnsupportedSyntaxError(
                "pullback differentiates a vectorized function called with positional "
                "arguments only.", self.parsed.location(call),
                "Pass the arguments by position.")
        target = stmt.targets[0].id
        args = call.args
        arg_kinds = [self.atom_kind(a) for a in args]
        self.kinds[target] = _broadcast_kind(arg_kinds)
        names = _param_names(fn, len(args))
        bound = dict(zip(names, args))
        operands = tuple((p, a.id) for p, a in bound.items() if isinstance(a, gast.Name))
        label = f"np.vectorize({getattr(fn, '__name__', 'fn')})"
        twin = purity.numpy_twin(fn)
        if twin is not None and twin.nin != len(args):
            twin = None
        fused = twin is not None or (info.pure and _signature_ok(fn, len(args)))
        if fused and _otypes_ok(otypes):
            self.ops[id(stmt)] = Op("mapped", label=label, primitive=fn, bound=bound,
                                    operands=operands, node=call)
            self.mapped[id(stmt)] = (fn, twin or info, otypes)
        else:
            each = PerElement(fn, names, otypes)
            self.ops[id(stmt)] = Op("custom", label=label, primitive=each, bound=bound,
                                    operands=operands, node=call)

    def atom_kind(self, atom):
        if isinstance(atom, gast.Name):
            return self.kinds.get(atom.id, Kind("unknown", None))
        if isinstance(atom, gast.Constant) and isinstance(atom.value, (int, float, complex)):
            return Kind("scalar", isinstance(atom.value, complex))
        return Kind("unknown", None)

    # -- regions ---------------------------------------------------------------------

    def lower_block(self, block):
        for stmt in block:
            for field in ("body", "orelse"):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], gast.stmt):
                    self.lower_block(inner)
        loads = _load_counts(self.normal.tree.body)
        stores = _store_counts(self.normal.tree.body)
        regions = _regions(block, lambda s: self.member(s, stores), loads,
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
                or op is None or op.kind != "rule" or op.primitive not in _SUMS \
                or set(op.bound) != {"a"} or stores[stmt.targets[0].id] != 1:
            return None
        if any(self.barrier(block[j], stores) for j in range(root + 1, i)):
            return None
        return i

    def mutated(self):
        """Names of arrays the function writes into (a kernel's value is a
        read-only view of JAX's buffer: such a value is copied)."""
        if self._mutated is None:
            try:
                from .analyses.mutation import mutated_arrays
                self._mutated = set(mutated_arrays(self.normal, self.ops))
            except ImportError:
                self._mutated = {op.mutates for op in self.ops.values()
                                 if getattr(op, "mutates", None)}
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
        atoms = _operands(stmt.value)
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
        if cplx and (prim in purity.HOLOMORPHIC_EXCEPTIONS or any(
                self.kinds.get(a.id, Kind("unknown", None)).complex is True
                for a in atoms if isinstance(a, gast.Name))):
            return None
        if op.kind == "rule" and self.varied_static(op):
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
        return target in self.act.active and (kind is None or kind.shape != "scalar" or
                                              id(stmt) in self.mapped)

    def kernel_statement(self, stmts, summed=False):
        """One call of a new kernel computing the region ``stmts`` (in order,
        the root last; with ``summed``, then the sum of the root's value), to
        stand where the last statement stood."""
        root = stmts[-1]
        builder = _ProgramBuilder(self, stmts[:-1] if summed else stmts, summed)
        program, call_args, ambient = builder.build()
        target = root.targets[0].id
        name = self.normal.namer.fresh(f"fused_{builder.title()}")
        readers_ok = summed or target not in self.mutated() and all(
            self.ops[id(s)].kind in ("rule", "nondiff", "custom")
            and not isinstance(s, gast.Return)
            for s in _readers(self.normal.tree.body, target))
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
        self.ops[id(new)] = Op("custom", label=name, primitive=kernel, bound=bound,
                               operands=operands, node=root.value)
        for s in stmts[:-1]:
            self.kinds.pop(s.targets[0].id, None)
        return new


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
    if ks and all(k.shape == "scalar" for k in ks):
        return Kind("scalar", None)
    if any(k.shape == "array" for k in ks):
        return Kind("array", None)
    return Kind("number", None)


def _resolve(node, parsed):
    """The object a static atom of the user's function names now."""
    import builtins
    path = []
    while isinstance(node, gast.Attribute):
        path.append(node.attr)
        node = node.value
    if not isinstance(node, gast.Name):
        return None
    if node.id in parsed.closure:
        try:
            obj = parsed.closure[node.id].cell_contents
        except ValueError:
            return None
    elif node.id in parsed.globals:
        obj = parsed.globals[node.id]
    else:
        obj = getattr(builtins, node.id, None)
    for attr in reversed(path):
        obj = getattr(obj, attr, None)
    return obj


# -- def-use over blocks ----------------------------------------------------------------

def _local_names(normal):
    return set(normal.params) | {n.id for n in gast.walk(normal.tree)
                                 if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}


def _blocks(body):
    yield body
    for stmt in body:
        for field in ("body", "orelse"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], gast.stmt):
                yield from _blocks(inner)


def _load_counts(body):
    counts = collections.Counter()
    for stmt in body:
        for n in gast.walk(stmt):
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load):
                counts[n.id] += 1
    return counts


def _store_counts(body):
    counts = collections.Counter()
    for stmt in body:
        for n in gast.walk(stmt):
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
                counts[n.id] += 1
    return counts


def _readers(body, name):
    for block in _blocks(body):
        for stmt in block:
            own = [stmt.test] if isinstance(stmt, (gast.If, gast.While)) else \
                [stmt.iter] if isinstance(stmt, gast.For) else [stmt]
            if any(isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load) and n.id == name
                   for o in own for n in gast.walk(o)):
                yield stmt


def _calls_name(stmt, name):
    return isinstance(stmt, (gast.Assign, gast.Expr)) and isinstance(stmt.value, gast.Call) \
        and isinstance(stmt.value.func, gast.Name) and stmt.value.func.id == name


def _operands(rhs):
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


def _regions(block, member, loads, is_root, barrier):
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
                for a in _operands(block[j].value):
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

class _ProgramBuilder:
    """Turns a region's statements (with fused maps inlined) into a
    ``kernels.Program`` over its inputs."""

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
        from .naming import Namer
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
            return _load(a.id)
        key = _dump(a)
        if key not in self._static_inputs:
            if isinstance(a, gast.Name):
                name = a.id
                self.namer.reserve(name)
            else:
                name = self.namer.fresh(_dotted(a))
            self._static_inputs[key] = name
            self.inputs.append(name)
            self.call_args.append(a)
        return _load(self._static_inputs[key])

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
                self.steps.append(Step(target, kernels.Cast(np.dtype(otypes[0])),
                                       [_load(result)]))
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
            elif op.kind == "user":
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
            env[t] = _load(local)

    def g_atom(self, a, env, parsed):
        """An atom of an inlined function: its own names, or a value it reads
        from its globals or cells (read again at each call)."""
        if isinstance(a, gast.Constant):
            return a
        if isinstance(a, gast.Name) and a.id in env:
            return env[a.id]
        value = _resolve(a, parsed)
        if isinstance(value, (bool, int, float)) and _is_module_path(a, parsed):
            return gast.Constant(value=value, kind=None)
        key = ("ambient", id(parsed.fn), _dump(a))
        if key not in self._static_inputs:
            name = self.namer.fresh(_dotted(a))
            self._static_inputs[key] = name
            self.ambient_names.append(name)
            self.ambient.append(_getter(a, parsed))
        return _load(self._static_inputs[key])


def _is_module_path(a, parsed):
    """``math.pi``: an attribute of a module, taken as a constant."""
    if not isinstance(a, gast.Attribute):
        return False
    root = a
    while isinstance(root, gast.Attribute):
        root = root.value
    return isinstance(_resolve(root, parsed), types.ModuleType)


def _getter(a, parsed):
    def get():
        return _resolve(a, parsed)
    return get


def _arguments(op, rhs):
    """An elementwise operation's data arguments, in its rule's order."""
    if op.kind == "rule" and isinstance(rhs, gast.Call):
        out = []
        for p in op.rule.params:
            if p in op.bound:
                v = op.bound[p]
                out.extend(v if isinstance(v, tuple) else (v,))
        return out
    return _operands(rhs)


def _title(prim):
    if prim is None or prim in kernels.BINARY or prim in kernels.UNARY:
        return []
    name = getattr(prim, "__name__", "")
    return [] if name == "_identity" else [{"absolute": "abs", "true_divide": "div"}
                                          .get(name, name)]


def _substitute(expr, env, replace):
    """``expr`` with each atom replaced (a local's attribute stays an attribute)."""
    from .inline import clone
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


def _load(name):
    return gast.Name(id=name, ctx=gast.Load(), annotation=None, type_comment=None)


def _dump(node):
    return gast.dump(node)


def _dotted(node):
    parts = []
    while isinstance(node, gast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, gast.Name):
        parts.append(node.id)
    return "_".join(reversed(parts)) or "value"
