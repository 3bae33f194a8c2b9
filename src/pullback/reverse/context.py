"""The reverse pass's context: what its steps, the adjoints
(``adjoints.Adjoints``), the loop adjoints and the residuals read and write,
built once by ``reverse.start`` and handed to each of them.

It holds the analyses' results (``normal``, ``ops``, ``kinds``, the active
and varied names), the gradient states (``grads``), the names given out and
the helpers the generated code binds.  The ``Block`` tree (a primal block and
its adjoint) is made here too; a parameter named ``block`` is always such a
node, and the statement list an adjoint is appended to is always ``out``.

Each statement's adjoint is recorded in ``parts`` with its block:

>>> import gast, numpy as np
>>> from pullback import pipeline
>>> from pullback.analyses import kinds
>>> from pullback.testing import function_from_source
>>> f = function_from_source('''
... def f(x):
...     y = np.sin(x)
...     return y * x
... ''')
>>> t = pipeline.Transform(f, {"x": kinds.NUMBER}, ["x"], False, True, None)
>>> for step in pipeline.STEPS[:pipeline.STEPS.index(pipeline.adjoint) + 1]:
...     step(t)
>>> ctx = t.reverse.ctx
>>> sorted(ctx.active)
['out', 'x', 'y']
>>> for stmt, out, block in ctx.parts:
...     print(block.kind, gast.unparse(stmt).strip(), "->", [gast.unparse(s) for s in out])
top out = y * x -> ['y_bar = out_bar * x', 'x_bar = out_bar * y']
top y = np.sin(x) -> ['x_bar = x_bar + y_bar * np.cos(x)']
"""
from __future__ import annotations


import gast
import numpy as np

from .. import runtime
from ..analyses import kinds as kinds_
from ..analyses.activity import Activity
from ..analyses.kinds import Kind, Shape
from ..again import transforming_again
from ..analyses.ops import Op, all_statements
from ..frontend.parse import Parsed
from ..ir.build import call as _call, name as _name
from ..ir.naming import HelperNames
from ..ir.grammar import assigned_names
from ..normalize.normalize import Normal
from .accumulate import Gradients

__all__ = ["Block", "ReverseContext", "assignments"]


class Block:
    """A primal block (function body, branch, loop body) and its adjoint."""

    def __init__(self, stmts, kind, parent, also_assigned=(), assigned=None):
        self.stmts, self.kind, self.parent = stmts, kind, parent
        self.children = []          # nested blocks, in the order their adjoints appear
        self.adjoint = []
        self.extra = set(also_assigned)         # a loop body's target
        self.recomputed = set()                 # ... when the adjoint loop recomputes it
        self.owner_if = None                    # a branch's ``if`` statement
        self.lifted = set()                     # saves kept as residuals, not taped
        self.assigned = (assigned_names(stmts) if assigned is None else assigned) | self.extra
        self.save = []
        if parent is not None:
            parent.children.append(self)


class ReverseContext(HelperNames):
    """The state of one reverse pass, shared by its parts (see the module)."""

    def __init__(self, normal: Normal, parsed: Parsed, ops: dict[int, Op],
                 kinds: dict[str, Kind], activity: Activity, wrt, output: gast.expr,
                 inplace: bool, written: frozenset[str]):
        self.normal, self.parsed, self.ops = normal, parsed, ops
        self.kinds, self.wrt, self.output = kinds, tuple(wrt), output
        self.active, self.varied = activity.active, activity.varied
        self.namer = normal.namer
        self.helpers = {}
        self.residual_of = {}   # id(call statement) -> name of its callee residuals
        self.trips = {}         # id(loop) -> name of its trip counter
        self.indexed = set()    # names whose gradient received an indexed add
        self.user_locals = set(normal.params) | assigned_names(normal.tree.body)
        self.grads = Gradients(self.namer, kinds, self.helper, inplace,
                               self.shaped_like, self.whole_in_place)
        self.int_names = kinds_.int_names(normal.tree.body, ops)
        self.written = written            # arrays the primal writes into
        # every input float64 (or a Python float), or an integer that NumPy
        # meets with float64 (int32 and wider: int8 or int16 give float16 or
        # float32 from np.sqrt): contributions need no rounding
        self.float64 = all(kinds[p].dtype in _FLOAT64_INPUTS for p in normal.params
                           if p in kinds and kinds[p].shape in (Shape.SCALAR, Shape.ARRAY))
        # every input a number of known dtype: not the generic transform
        # (pb.source(f) without examples: any dtype), no container or object
        # (whose arrays the kinds do not see)
        self.typed = all(p in kinds and kinds[p].is_number and kinds[p].dtype is not None
                         for p in normal.params)
        self.parts = []                   # (primal statement, its adjoint, block)
        self.primal_names = set(normal.params) | assigned_names(normal.tree.body)
        self.bound_up_front = set()       # names the primal reads before any assignment
        self.kept_before = {}             # (id(loop), name) -> the name its value is kept in
        self.kept_names = set()           # names given out that dry runs must not reuse
        self.dry = 0                      # inside a loop's dry runs (loop_adjoint)
        self.loop_effects = {}            # loop_adjoint: a loop's effect per entry state
        self.loop_builds = 0              # ... and how many adjoints were built (tests count)
        self.assigned_of = {}             # id(simple statement) -> (it, names it assigns)
        self.only_float64 = None          # whole_in_place: every array float64 (lazily)
        self.real_only = None             # nothing_complex (lazily)
        self.definitions_of = None        # definitions: name -> its assignments (lazily)
        self.shape_classes = None         # same_shape: name -> its class (lazily)
        # names the two functions use, given out by the first step (reverse.primal)
        self.out_bar = self.residuals_name = self.tape = self.tape_at = None

    def kind(self, name):
        return self.kinds.get(name) or kinds_.UNKNOWN

    # -- whole-buffer accumulation in place (accumulate.Gradients) --------------

    def shaped_like(self, expr, name):
        """``expr`` is an array of exactly ``name``'s shape: ``zeros_like(name)``,
        ``owned_zeros(name)``, ``unbroadcast(g, name)``, ``unreduce(g, name, ...)``."""
        if not isinstance(expr, gast.Call) or expr.keywords:
            return False
        fn = self.resolve(expr.func)
        at = {runtime.zeros_like: 0, runtime.owned_zeros: 0, runtime.unbroadcast: 1,
              runtime.unreduce: 1}.get(fn) if callable(fn) else None
        return at is not None and len(expr.args) > at and isinstance(expr.args[at], gast.Name) \
            and expr.args[at].id == name

    def whole_in_place(self, name):
        """``name_bar += g`` into a buffer of ``name``'s shape adds exactly what
        ``name_bar + g`` would: ``name`` is a real array and every array the
        function computes is float64 (no wider value to round, no complex one)."""
        kind = self.kind(name)
        if kind.shape != "array" or kind.complex is not False \
                or kind.dtype not in (None, "float64"):
            return False
        return self.all_float64()

    def nothing_complex(self):
        """No value the function computes may be complex (every number's kind
        real, no complex literal), worked out once: a real item's cotangent is
        then real (``1j * x[1]`` gives a complex one, its real part added)."""
        if self.real_only is None:
            self.real_only = all(k.complex is False for k in self.kinds.values()
                                 if k.is_number) and not any(
                isinstance(node, gast.Constant) and isinstance(node.value, complex)
                for node in gast.walk(self.normal.tree))
        return self.real_only

    def all_float64(self):
        """Every float array the function computes is float64 and nothing is
        complex (``_only_float64``), worked out once."""
        if self.only_float64 is None:
            self.only_float64 = self.float64 and _only_float64(self)
        return self.only_float64

    def new_block(self, stmts, kind, parent, also_assigned=()):
        """A ``Block`` for ``stmts`` under ``parent``."""
        return Block(stmts, kind, parent, also_assigned, self.assigned_in(stmts))

    def assigned_in(self, stmts):
        """``assigned_names(stmts)``, each simple statement's names walked once
        (a loop's blocks are built again for each enclosing loop's dry run)."""
        out = set()
        for s in stmts:
            if isinstance(s, (gast.If, gast.For, gast.While)):
                head = [s.target, s.iter] if isinstance(s, gast.For) else [s.test]
                out |= assigned_names(head) | self.assigned_in(s.body) \
                    | self.assigned_in(s.orelse)
            elif hasattr(s, "body"):
                out |= assigned_names([s])
            else:
                known = self.assigned_of.get(id(s))
                if known is None or known[0] is not s:
                    known = self.assigned_of[id(s)] = (s, assigned_names([s]))
                out |= known[1]
        return out

    # -- helpers bound in the generated code ---------------------------------

    def runtime(self, fn_name):
        return self.helper(fn_name, getattr(runtime, fn_name))

    def callee(self, op, which, call=None, live=None):
        """The name of the callee's primal or adjoint, for this call site's
        active arguments.  A primal for a ``call`` passing every parameter by
        position is the callee's positional one where it has one (no
        ``**kwargs`` dict made per call: ``call_sites._caller_primal``).  A
        compact call site (``compact_callee``) has no adjoint name."""
        from ..callees import derivative_of
        handle = derivative_of(op.primitive)
        params = list(handle.params)
        mask = self.callee_mask(op, live)
        if self.compact_callee(op):
            primal, adjoint = handle.for_callers(mask, self.grads.inplace, True)
        else:
            primal, adjoint = handle.for_callers(mask, self.grads.inplace)
        name = getattr(op.primitive, "__name__", "callee")
        # (code differentiated again reads the primal's own parameter names)
        if which == "primal" and call is not None and not call.keywords \
                and not transforming_again() \
                and len(call.args) == len(params) \
                and not any(isinstance(a, gast.Starred) for a in call.args) \
                and getattr(primal, "positional", None) is not None:
            return self.helper(f"{name}_{which}", primal.positional)
        return self.helper(f"{name}_{which}", primal if which == "primal" else adjoint)

    def callee_mask(self, op, live=None):
        """The positions of the parameters of user function ``op`` that its
        call site passes active arguments (or those in ``live``) to."""
        from ..callees import derivative_of
        params = list(derivative_of(op.primitive).params)
        live = self.active if live is None else live
        return tuple(sorted(params.index(p) for p, n in op.operands if n in live))

    def compact_callee(self, op):
        """Whether the call site of ``op`` finds the callee's adjoint in its
        residuals (``Derivative.for_callers(compact=True)``): ``g_res[0](g_res[1],
        g_bar)`` gives the gradients of the active arguments only, in order,
        with no handle's frame in between.  A plain function of positional
        parameters, in code not differentiated again (forward mode over it
        follows the callee by the name its adjoint is bound to)."""
        from ..callees import Derivative, derivative_of
        handle = derivative_of(op.primitive)
        return type(handle) is Derivative and not handle.variadic and not transforming_again()

    def dynamic_mask(self, op):
        """The keys (position, keyword, -1 for the receiver) of a dynamic call's
        arguments that carry a gradient."""
        return tuple(k for k, n in op.operands if n in self.active)

    def zero_buffer(self, name):
        return _call(self.runtime("owned_zeros"), _name(name))

    def same_shape(self, a, b):
        """``a`` and ``b`` are arrays of one shape whenever both are bound:
        each assigned once, and related by elementwise arithmetic with a
        scalar or with arrays of the class (``d = x - y``, ``e = 2.0 * d``),
        a copy, or as slices ``x[k:]`` and ``x[:-k]`` of one array (both
        ``max(len(x) - k, 0)`` long).  Names assigned more than once (a loop's
        carried values) are in no class; lists and tuples never are."""
        if a == b:
            return True
        if self.shape_classes is None:
            self.shape_classes = _shape_classes(self.normal, self.kinds, self.ops)
        ca = self.shape_classes.get(a)
        return ca is not None and ca == self.shape_classes.get(b)

    def definitions(self, name):
        """The statements that assign ``name``."""
        if self.definitions_of is None:
            self.definitions_of = assignments(self.normal.tree.body)
        return self.definitions_of.get(name, [])


def assignments(body) -> dict[str, list[gast.Assign]]:
    """Each name assigned in ``body`` (nested blocks included) -> the
    statements that assign it, in order."""
    found = {}
    for s in all_statements(body):
        if isinstance(s, gast.Assign):
            t = s.targets[0]
            for e in t.elts if isinstance(t, gast.Tuple) else [t]:
                if isinstance(e, gast.Name):
                    found.setdefault(e.id, []).append(s)
    return found

_FLOAT64_INPUTS = ("float64", "int64", "int32", "uint64", "uint32")
_ELEMENTWISE = (gast.Add, gast.Sub, gast.Mult, gast.Div, gast.Pow)


def _shape_classes(normal, kinds, ops=None):
    """Name -> a representative of its equal-shape class (see ``same_shape``)."""
    counts = {}
    for s in all_statements(normal.tree.body):
        if isinstance(s, gast.For):
            targets = assigned_names([s.target])
        elif isinstance(s, (gast.If, gast.While)):
            continue
        else:
            targets = assigned_names([s])
        for n in targets:
            counts[n] = counts.get(n, 0) + 1
    for p in normal.params:
        counts[p] = counts.get(p, 0) + 1
    # a value read later may be one an earlier iteration left (a branch that
    # did not run this time, a loop that broke or ran no times): only names
    # assigned once, outside loops or directly in the body of an outer `for`
    # without `break`, each read as the latest run assigned it
    stale = set(normal.carried_names)

    def settle(stmts, in_loop):
        for s in stmts:
            if isinstance(s, gast.If):
                if in_loop:
                    stale.update(assigned_names(s.body + s.orelse))
                else:
                    settle(s.body + s.orelse, False)
            elif isinstance(s, (gast.For, gast.While)):
                loose = in_loop or isinstance(s, gast.While) or s.orelse or any(
                    isinstance(b, gast.If) and any(isinstance(x, (gast.Break, gast.Continue))
                                                   for x in gast.walk(b)) for b in s.body)
                if loose:
                    stale.update(assigned_names([s]))
                else:
                    stale.update(assigned_names([s.target]))
                    settle(s.body, True)
    settle(normal.tree.body, False)
    for n in stale:
        counts[n] = 2

    def array(node):        # (a number the kinds cannot tell apart is a scalar or an array)
        return isinstance(node, gast.Name) and counts.get(node.id) == 1 \
            and getattr(kinds.get(node.id), "shape", None) in (Shape.ARRAY, Shape.NUMBER)

    def scalar(node):
        if isinstance(node, gast.Constant):
            return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
        return isinstance(node, gast.Name) and getattr(kinds.get(node.id), "shape", None) \
            is Shape.SCALAR

    def drop(sl):
        """``k`` for ``x[k:]`` or ``x[:-k]`` (k a positive int constant), else None."""
        if not isinstance(sl, gast.Slice) or sl.step is not None:
            return None
        lo, hi = sl.lower, sl.upper
        if hi is None and isinstance(lo, gast.Constant) and type(lo.value) is int \
                and lo.value > 0:
            return lo.value
        if lo is None and isinstance(hi, gast.UnaryOp) and isinstance(hi.op, gast.USub):
            hi = hi.operand
            return hi.value if isinstance(hi, gast.Constant) and type(hi.value) is int \
                and hi.value > 0 else None
        if lo is None and isinstance(hi, gast.Constant) and type(hi.value) is int \
                and hi.value < 0:
            return -hi.value
        return None

    parent, members = {}, set()

    def find(x):
        while parent.get(x, x) != x:
            x = parent[x]
        return x

    def union(x, y):
        members.update(n for n in (x, y) if isinstance(n, str))
        rx, ry = find(x), find(y)
        if rx != ry:
            parent[rx] = ry

    for s in all_statements(normal.tree.body):
        if not (isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)):
            continue
        t, v = s.targets[0], s.value
        if not array(t):
            continue
        if isinstance(v, gast.Name) and array(v):
            union(t.id, v.id)
        elif isinstance(v, gast.BinOp) and isinstance(v.op, _ELEMENTWISE):
            left, right = v.left, v.right
            if array(left) and (scalar(right) or (array(right)
                                                  and find(left.id) == find(right.id))):
                union(t.id, left.id)
            elif array(right) and scalar(left):
                union(t.id, right.id)
        elif isinstance(v, gast.UnaryOp) and isinstance(v.op, gast.USub) and array(v.operand):
            union(t.id, v.operand.id)
        elif isinstance(v, gast.Call) and len(v.args) == 1 and not v.keywords \
                and array(v.args[0]) and ops is not None and id(s) in ops \
                and isinstance(ops[id(s)].primitive, np.ufunc) and ops[id(s)].primitive.nin == 1 \
                and ops[id(s)].primitive.nout == 1:
            union(t.id, v.args[0].id)           # np.sin(c): one array in, one of its shape out
        elif isinstance(v, gast.Subscript) and array(v.value):
            k = drop(v.slice)
            if k is not None:
                union(t.id, ("drop", v.value.id, k))
    return {n: find(n) for n in members}


# dtypes narrower or wider than float64, and the ways to reach them
_OTHER_FLOAT = {np.float16, np.float32, np.longdouble, np.complex64, np.complex128,
                np.clongdouble}
_CASTS = {"astype", "view", "float16", "float32", "half", "single", "longdouble", "float128",
          "longfloat", "complex64", "complex128", "complex256", "csingle", "cdouble",
          "clongdouble", "complex_", "frombuffer", "fromfile",
          # and what may make a complex value from real ones (the kinds do not
          # always know: np.fft's results are complex)
          "fft", "linalg", "emath", "scimath", "conj", "conjugate", "real", "imag", "angle",
          "vectorize", "frompyfunc", "roots", "complex"}
_COMPLEX_MODULES = ("numpy.fft", "numpy.linalg", "numpy.lib.scimath", "cmath", "scipy")


def _only_float64(ctx):
    """Whether every float array the function computes is float64: its inputs
    are (``ctx.float64``), no value can be complex (nothing complex in the
    kinds, no complex literal, no np.fft, np.linalg, conj...), no module value it reads
    has another float dtype, it names no cast or other dtype, passes no
    ``dtype=``, and calls no function whose results pullback does not see
    (the user's own code is read too: fused regions no longer appear)."""
    for k in ctx.kinds.values():
        if k.is_number and (k.complex is not False or (
                k.dtype is not None and k.dtype != "float64"
                and not k.dtype.startswith(("int", "uint", "bool")))):
            return False
    from ..lowering.kernels import Kernel       # (a fused region of this function's own code)
    if any(op.kind in ("user", "dynamic") or (
            op.kind == "custom" and not isinstance(op.primitive, Kernel))
            for op in ctx.ops.values()):
        return False
    nodes = list(gast.walk(ctx.normal.tree)) + list(gast.walk(ctx.parsed.tree))
    for node in nodes:
        if isinstance(node, gast.keyword) and node.arg == "dtype":
            return False
        if isinstance(node, gast.Attribute) and node.attr in _CASTS:
            return False
        if isinstance(node, gast.Constant) and isinstance(node.value, complex):
            return False
        if isinstance(node, gast.BinOp) and isinstance(node.op, gast.Pow) and not (
                isinstance(node.right, gast.Constant) and type(node.right.value) is int) and not (
                isinstance(node.left, gast.Name) and ctx.kind(node.left.id).shape == "array"):
            return False      # a Python float to a fractional power may be complex
        if isinstance(node, gast.Name):
            if node.id in _CASTS:
                return False
            v = ctx.parsed.globals.get(node.id)
            if v is None and node.id in ctx.parsed.closure:
                try:
                    v = ctx.parsed.closure[node.id].cell_contents
                except ValueError:
                    v = None
            if isinstance(v, type) and v in _OTHER_FLOAT:
                return False
            module = getattr(v, "__module__", None) or getattr(v, "__name__", None)
            if isinstance(module, str) and module.startswith(_COMPLEX_MODULES):
                return False
            if isinstance(v, np.ndarray) and v.dtype.kind in "fc" and v.dtype != np.float64:
                return False
    return True
