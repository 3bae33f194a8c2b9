"""The namespace build: a transform's generated primal and adjoint, run on
JAX's traced arrays under ``jax.jit``.

Called with JAX tracers (``jax.jit(pb.grad(f))(x)``), pullback cannot read
the arguments as NumPy arrays.  It takes the transform it would use for NumPy
arrays of the same dtypes and ranks, built out of place (no ``x_bar[i] += g``:
``x_bar = x_bar + unindex(g, x, i)``) and without fused kernels, and builds its
functions again from the same source with two bindings changed: the names
that held NumPy (``np``, ``numpy``, ``from numpy import sin``) hold
``jax.numpy``, and the runtime helpers are their namespace-generic versions
(``GENERIC``: indexed scatters by ``.at[index].add``, no buffer written).
One generated source, two bindings; the NumPy build is untouched, so NumPy
keeps its fast path (the traced path starts only where ``checks.jax_boundary``
finds a tracer, after its type tests).

Whether that can work is decided on the generated source (``traceability``):
no Python ``if``/``while``/conversion to a number on a value computed from the
traced inputs, no write into an array, no helper or NumPy function without a
generic form.  ``pb.source`` states the answer in its header; a call under
``jax.jit`` that is not traceable raises ``NotTraceableError`` with the
first reason and the user's line.

>>> from pullback.testing import function_from_source
>>> import numpy as np, pullback as pb
>>> f = function_from_source('''
... def f(x):
...     if np.sum(x) > 0:
...         return np.sum(x ** 2)
...     return np.sum(x)
... ''')
>>> print(pb.source(f, np.ones(3)).splitlines()[1])
# jax.jit: not traceable: a Python `if` on a value computed from the inputs (line 2: if np.sum(x) > 0:)
"""
from __future__ import annotations

import ast
import builtins
import linecache
import types

import numpy as np

from ..checks import _has_tracer
from ..errors import Location, NotTraceableError
from ..runtime import core as _core
from ..runtime import rule_support as _rule_support
from ..runtime import accumulation as _accumulation
from ..runtime import forward_support as _forward_support
from ..runtime.core import Meta

__all__ = ["traceability", "header", "with_header", "value_and_grad", "vjp", "jvp", "is_traced", "GENERIC"]


# -- which calls are traceable -----------------------------------------------------

#: attributes whose value is fixed when JAX traces (shapes, not values)
_STATIC_ATTRS = frozenset({"shape", "ndim", "dtype", "size"})
#: helpers whose result is fixed when JAX traces, whatever their arguments
_STATIC_HELPERS = frozenset({"meta", "per_output"})
#: builtins that read shapes or build containers: traceable on any value
_SAFE_BUILTINS = frozenset({"len", "reversed", "enumerate", "zip", "tuple", "list",
                            "dict", "isinstance", "abs", "sum", "slice", "print"})
_STATIC_BUILTINS = frozenset({"len", "isinstance"})
#: builtins that turn a traced value into a Python number
_CONCRETE_BUILTINS = frozenset({"range", "float", "int", "bool", "complex", "round", "min", "max"})
_CONCRETE_METHODS = frozenset({"item", "tolist", "__float__", "__int__", "__bool__"})
_WRITABLE_MAKERS = frozenset({"list", "dict", "owned_zeros", "owned_copy"})
_INPLACE_METHODS = frozenset({"fill", "sort", "resize", "put", "itemset", "setfield"})


class Reason:
    """Why a transform cannot be traced: the construct and the user's line."""

    def __init__(self, what, user_file, user_line):
        self.what = what
        self.user_file = user_file
        self.user_line = user_line

    def text(self):
        line = linecache.getline(self.user_file, self.user_line).strip() \
            if self.user_line else ""
        return f"{self.what} (line {self.user_line}: {line})" if line else self.what

    def location(self):
        if not self.user_line:
            return None
        line = linecache.getline(self.user_file, self.user_line)
        indent = len(line) - len(line.lstrip())
        return Location(self.user_file, self.user_line, indent, len(line.rstrip()), line)


def traceability(loaded, fn, traced=None):
    """``None`` if the generated functions of ``loaded`` (a ``Loaded``) can
    run on JAX tracers, else the first ``Reason`` they cannot.  ``traced``:
    the indices of the parameters that are tracers (default: all)."""
    key = "_traceable" if traced is None else ("_traceable", tuple(traced))
    cache = loaded.__dict__.setdefault("_traceability", {})
    if key in cache:
        return cache[key]
    tree = ast.parse(loaded.text)
    factory = tree.body[0]
    inner = {node.name: node for node in factory.body if isinstance(node, ast.FunctionDef)}
    primal = inner[loaded.primal.__name__]
    adjoint = inner.get(loaded.adjoint.__name__)
    scan = _Scan(loaded, fn)
    params = [a.arg for a in primal.args.args]
    seeds = set(params if traced is None else [params[i] for i in traced if i < len(params)])
    seeds |= {a.arg for a in (primal.args.vararg, primal.args.kwarg) if a is not None}
    reason = scan.function(primal, seeds)
    if reason is None and adjoint is not None and adjoint is not primal:
        residuals = scan.residual_taint(primal)
        # the cotangent is traced; so is the residual tuple, read as a whole
        # (unpacked, each residual is as traced as the primal's value was)
        reason = scan.function(adjoint, {a.arg for a in adjoint.args.args}, residuals)
    cache[key] = reason
    return reason


def header(loaded, fn):
    """The ``pb.source`` header line that says whether ``jax.jit`` traces it."""
    try:
        reason = traceability(loaded, fn)
    except Exception as err:            # never let the header hide the source
        return f"# jax.jit: not known ({type(err).__name__})\n"
    if reason is None:
        callees = sorted({getattr(_callee_of(v).fun, "__name__", "?")
                          for v in loaded.helpers.values() if _callee_of(v) is not None})
        also = f"; the calls of {', '.join(callees)} are checked when traced" if callees else ""
        return ("# jax.jit: traceable (JAX arrays under jax.jit run this code on jax.numpy"
                f"{also})\n")
    return f"# jax.jit: not traceable: {reason.text()}\n"


def with_header(loaded, fn):
    """``loaded.source`` with the ``header`` line after its first line."""
    first, _, rest = loaded.source.partition("\n")
    return first + "\n" + header(loaded, fn) + rest


class _Scan:
    """A forward scan of one generated function: which names hold values
    computed from the traced inputs (to a fixed point, for loops), and the
    first construct that needs such a value concrete."""

    def __init__(self, loaded, fn):
        self.loaded = loaded
        self.fn = fn
        self.helpers = loaded.helpers
        self.globals = getattr(fn, "__globals__", {})
        code = getattr(fn, "__code__", None)
        self.cells = dict(zip(code.co_freevars, fn.__closure__ or ())) if code else {}
        self.reason = None

    # -- names ---------------------------------------------------------------
    def resolve(self, name):
        if name in self.helpers:
            return "helper", self.helpers[name]
        if name in self.cells:
            try:
                return "global", self.cells[name].cell_contents
            except ValueError:          # an empty cell
                return "local", None
        if name in self.globals:
            return "global", self.globals[name]
        if hasattr(builtins, name):
            return "builtin", getattr(builtins, name)
        return "local", None

    def fail(self, what, node):
        if self.reason is None:
            line = self.loaded.user_line(getattr(node, "lineno", 0) or 0)
            self.reason = Reason(what, self.loaded.user_file, line)

    # -- the scan ------------------------------------------------------------
    def function(self, fn_node, seeds, residuals=None):
        self.tainted = set(seeds)
        self.lists = set()
        self.locals = {a.arg for a in fn_node.args.args}
        for node in ast.walk(fn_node):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                self.locals.add(node.id)
        if residuals is not None:
            self.residuals = (fn_node.args.args[0].arg, residuals)
        else:
            self.residuals = None
        for _ in range(50):                 # to a fixed point (loops carry values round)
            before = set(self.tainted)
            self.reason = None
            self.block(fn_node.body)
            if self.tainted == before:
                break
        return self.reason

    def residual_taint(self, primal):
        """For each residual the primal returns, whether it is traced (after
        ``function`` scanned ``primal``)."""
        for node in ast.walk(primal):
            if isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple) \
                    and len(node.value.elts) == 2 and isinstance(node.value.elts[1], ast.Tuple):
                return [self.traced(e) for e in node.value.elts[1].elts]
        return None

    def block(self, body):
        for stmt in body:
            self.statement(stmt)

    def statement(self, s):
        if isinstance(s, ast.Assign):
            if self.residuals is not None and isinstance(s.value, ast.Name) \
                    and s.value.id == self.residuals[0] and len(s.targets) == 1 \
                    and isinstance(s.targets[0], ast.Tuple):
                flags = self.residuals[1]
                for i, t in enumerate(s.targets[0].elts):
                    if flags is None or i >= len(flags) or flags[i]:
                        self.bind(t, True)
                return
            traced = self.traced(s.value)
            if isinstance(s.value, (ast.List, ast.ListComp, ast.Dict)) or (
                    isinstance(s.value, ast.Call) and isinstance(s.value.func, ast.Name)
                    and s.value.func.id in _WRITABLE_MAKERS
                    and self.resolve(s.value.func.id)[0] != "local"):
                # a list or dict (a tape), or a gradient buffer that the
                # out-of-place build (the one jax.jit runs) adds to functionally
                for t in s.targets:
                    if isinstance(t, ast.Name):
                        self.lists.add(t.id)
            for t in s.targets:
                self.bind(t, traced)
        elif isinstance(s, ast.AugAssign):
            traced = self.traced(s.value) or self.traced(s.target)
            if isinstance(s.target, ast.Subscript):
                self.store_into(s.target, s)
            self.bind(s.target, traced)
        elif isinstance(s, ast.AnnAssign) and s.value is not None:
            self.bind(s.target, self.traced(s.value))
        elif isinstance(s, (ast.For, ast.AsyncFor)):
            # (values carried round the loop: the function's scan runs again
            # until no name is newly traced)
            self.bind(s.target, self.traced(s.iter))
            self.block(s.body)
            self.block(s.orelse)
        elif isinstance(s, ast.While):
            if self.traced(s.test):
                self.fail("a Python `while` on a value computed from the inputs", s)
            self.block(s.body)
            self.block(s.orelse)
        elif isinstance(s, ast.If):
            if self.traced(s.test):
                self.fail("a Python `if` on a value computed from the inputs", s)
            self.block(s.body)
            self.block(s.orelse)
        elif isinstance(s, ast.Return) and s.value is not None:
            self.traced(s.value)
        elif isinstance(s, ast.Expr):
            self.traced(s.value)
        elif isinstance(s, ast.Assert):
            if self.traced(s.test):
                self.fail("an `assert` on a value computed from the inputs", s)
        elif isinstance(s, (ast.Try, ast.With)):
            self.fail(f"a `{type(s).__name__.lower()}` block in the generated code", s)
        elif isinstance(s, (ast.Pass, ast.Break, ast.Continue, ast.Delete, ast.Global,
                            ast.Nonlocal, ast.Return)):
            pass
        else:
            self.fail(f"a `{type(s).__name__}` statement in the generated code", s)

    def store_into(self, target, stmt):
        base = target
        while isinstance(base, (ast.Subscript, ast.Attribute)):
            base = base.value
        if isinstance(base, ast.Name) and base.id in self.lists:
            return
        self.fail("a write into an array (`" + ast.unparse(target) + " = ...`), which "
                  "jax.numpy's immutable arrays cannot take", stmt)

    def bind(self, target, traced):
        if isinstance(target, ast.Name):
            if traced:
                self.tainted.add(target.id)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for t in target.elts:
                self.bind(t, traced)
        elif isinstance(target, ast.Starred):
            self.bind(target.value, traced)
        elif isinstance(target, ast.Subscript):
            self.store_into(target, target)
            self.traced(target.slice)
        elif isinstance(target, ast.Attribute):
            self.fail("an attribute store (`" + ast.unparse(target) + " = ...`)", target)

    # -- expressions ---------------------------------------------------------
    def traced(self, e):
        """Whether ``e``'s value is computed from the traced inputs (checking
        the calls in it on the way)."""
        if e is None:
            return False
        if isinstance(e, ast.Name):
            return e.id in self.tainted
        if isinstance(e, ast.Constant):
            return False
        if isinstance(e, ast.Attribute):
            inner = self.traced(e.value)
            if e.attr in _STATIC_ATTRS:
                return False
            if isinstance(e.value, ast.Name) and e.value.id not in self.locals:
                self.module_attribute(e)
            return inner
        if isinstance(e, ast.Call):
            return self.call(e)
        if isinstance(e, (ast.IfExp,)):
            if self.traced(e.test):
                self.fail("a conditional expression on a value computed from the inputs", e)
            return self.traced(e.body) | self.traced(e.orelse)
        if isinstance(e, ast.BoolOp):
            parts = [self.traced(v) for v in e.values]
            if any(parts[:-1]):
                self.fail("`and`/`or` on a value computed from the inputs", e)
            return any(parts)
        if isinstance(e, (ast.Lambda, ast.ListComp, ast.GeneratorExp, ast.SetComp, ast.DictComp)):
            self.fail(f"a `{type(e).__name__}` in the generated code", e)
            return True
        found = False
        for child in ast.iter_child_nodes(e):
            if isinstance(child, ast.expr):
                found |= self.traced(child)
            elif isinstance(child, ast.keyword):
                found |= self.traced(child.value)
        return found

    def module_attribute(self, e):
        """``np.tanh``, ``math.sin``: a module's function must have a
        jax.numpy form."""
        kind, value = self.resolve(e.value.id)
        if isinstance(value, types.ModuleType):
            name = value.__name__
            if name == "numpy" and not _jnp_has(e.attr):
                self.fail(f"`{e.value.id}.{e.attr}`, which jax.numpy does not have", e)
            elif name == "math" and e.attr in _MATH_TWINS:
                pass
            elif name not in ("numpy", "operator", "builtins") and _is_callable_attr(value,
                                                                                       e.attr):
                self.fail(f"`{e.value.id}.{e.attr}` ({name}), which works on Python numbers, "
                          "not traced arrays", e)

    def call(self, e):
        args_traced = [self.traced(a) for a in e.args] + \
            [self.traced(k.value) for k in e.keywords]
        any_traced = any(args_traced)
        func = e.func
        if isinstance(func, ast.Attribute):
            obj_traced = self.traced(func)
            if isinstance(func.value, ast.Name) and func.value.id not in self.locals:
                return any_traced        # a module's function (checked above)
            if func.attr in _CONCRETE_METHODS and obj_traced:
                self.fail(f"`.{func.attr}()` of a value computed from the inputs", e)
            if func.attr in _INPLACE_METHODS and obj_traced:
                self.fail(f"`.{func.attr}()`, which writes into an array", e)
            if func.attr in ("append", "pop", "extend") and isinstance(func.value, ast.Name):
                if any_traced:
                    self.tainted.add(func.value.id)
                return func.value.id in self.tainted
            return obj_traced or any_traced
        if isinstance(func, ast.Name):
            kind, value = self.resolve(func.id)
            if kind == "helper":
                return self.helper_call(func.id, value, e, any_traced)
            if kind == "builtin":
                if func.id in _CONCRETE_BUILTINS and any_traced:
                    self.fail(f"`{func.id}(...)` of a value computed from the inputs", e)
                elif func.id not in _SAFE_BUILTINS and func.id not in _CONCRETE_BUILTINS \
                        and any_traced:
                    self.fail(f"`{func.id}(...)` on a value computed from the inputs", e)
                return any_traced and func.id not in _STATIC_BUILTINS
            if kind == "global":
                if _numpy_function(value):
                    if not _jnp_has(func.id if not hasattr(value, "__name__")
                                    else value.__name__):
                        self.fail(f"`{func.id}` (NumPy's), which jax.numpy does not have", e)
                    return any_traced
                self.fail(f"a call of `{func.id}` ({type(value).__name__}), which pullback "
                          "does not run on traced arrays", e)
                return True
            return True          # a local function value
        self.traced(func)
        return True

    def helper_call(self, name, value, e, any_traced):
        if name in _STATIC_HELPERS and _generic_of(value) is not None:
            return False
        if _callee_of(value) is not None:
            return True          # a user function: its own build is checked when traced
        if _generic_of(value) is None and not _accumulation_only(value) \
                and getattr(value, "__pullback_kernel__", None) is None:
            what = getattr(value, "__qualname__", None) or type(value).__name__
            self.fail(f"`{name}` ({what}), a runtime helper or callee with no "
                      "namespace-generic form", e)
        return any_traced or name in ("owned_zeros", "zeros_like", "unindex")


def _is_callable_attr(module, attr):
    return callable(getattr(module, attr, None))


def _numpy_function(value):
    return isinstance(value, np.ufunc) or (
        callable(value) and (getattr(value, "__module__", "") or "").split(".")[0] == "numpy")


_JNP_NAMES = None


def _jnp_has(name):
    global _JNP_NAMES
    if _JNP_NAMES is None:
        try:
            import jax.numpy as jnp
        except ImportError:
            return False
        _JNP_NAMES = frozenset(n for n in dir(jnp) if not n.startswith("_"))
    return name in _JNP_NAMES


# -- the namespace-generic helpers ---------------------------------------------------

def _shape(x):
    return tuple(x.shape) if hasattr(x, "shape") else np.shape(x)


def _make_generic(xp):
    """The runtime helpers as functions of arrays of namespace ``xp``
    (jax.numpy): the same results as NumPy's helpers, no buffer written."""

    def meta(x):
        if hasattr(x, "shape") and hasattr(x, "dtype") and not isinstance(x, Meta):
            return Meta(tuple(x.shape), np.dtype(x.dtype))
        return x

    def unbroadcast(g, x):
        shape, gshape = _shape(x), _shape(g)
        if gshape == shape:
            return g
        lead = len(gshape) - len(shape)
        axes = tuple(range(lead)) + tuple(
            lead + i for i, n in enumerate(shape) if n == 1 and gshape[lead + i] != 1)
        if axes:
            g = xp.sum(g, axis=axes)
        if _shape(g) != shape:
            g = xp.reshape(g, shape)
        return g

    def unreduce(g, x, axis=None, keepdims=False):
        shape = _shape(x)
        if axis is not None and not keepdims:
            axes = axis if isinstance(axis, tuple) else (axis,)
            g = xp.expand_dims(g, tuple(sorted(a % len(shape) for a in axes)))
        return xp.broadcast_to(g, shape)

    def _dtype(x):
        return np.dtype(x.dtype) if hasattr(x, "dtype") else np.result_type(x)

    def realify(g, x):
        if xp.iscomplexobj(g) and not np.issubdtype(_dtype(x), np.complexfloating):
            return xp.real(g)
        return g

    def _plain(x):
        if isinstance(x, (list, tuple, dict)) or _core.is_structure(x) or _core.is_instance(x):
            raise NotTraceableError(
                "pullback runs generated code under jax.jit on arrays and numbers; this "
                f"value is a {type(x).__name__} (containers of arrays are not traced yet).",
                hint="Pass the arrays as separate arguments, or call pullback outside jax.jit.")

    def project(g, x, copy=False):
        _plain(x)
        if isinstance(x, bool):
            raise TypeError("booleans carry no gradient")
        if g is None:
            return zeros_like(x)
        if isinstance(x, (float, int, complex)) and not hasattr(x, "shape"):
            return xp.sum(g) if len(_shape(g)) else g
        g = unbroadcast(g, x)
        g = realify(g, x)
        dtype = _dtype(x)
        if _shape(g) != _shape(x):
            g = xp.broadcast_to(g, _shape(x))
        g = xp.asarray(g)
        return g.astype(dtype) if g.dtype != dtype else g

    def zeros_like(x):
        if x is None or (isinstance(x, (float, int)) and not hasattr(x, "shape")):
            return 0.0
        _plain(x)
        return xp.zeros(_shape(x), dtype=_dtype(x))

    def owned_zeros(x):
        _plain(x)
        return xp.zeros(_shape(x), dtype=np.result_type(_dtype(x), 0.0))

    def unindex(g, a, index):
        _plain(a)
        dtype = np.result_type(_dtype(a), 0.0) if not isinstance(a, Meta) else a.dtype
        out = xp.zeros(_shape(a), dtype=dtype)
        return out.at[index].add(realify(g, out))    # repeats accumulate, as np.add.at

    def _inexact(x):
        return hasattr(x, "dtype") and np.dtype(x.dtype).kind in "fc" or (
            isinstance(x, (float, complex)) and not hasattr(x, "shape"))

    def zeros_tangent(x):
        _plain(x)
        if isinstance(x, range):
            return xp.zeros(len(x))
        if not _inexact(x):
            if hasattr(x, "dtype") and np.dtype(x.dtype).kind in "iu":
                return xp.zeros(_shape(x))
            if isinstance(x, int) and not isinstance(x, bool):
                return 0.0
            return None
        if not hasattr(x, "shape"):
            return 0j if isinstance(x, complex) else 0.0
        return xp.zeros(_shape(x), dtype=_dtype(x))

    def broadcast_tangent(t, x):
        shape = _shape(x)
        return t if _shape(t) == shape else xp.broadcast_to(t, shape)

    def output_tangent(t, y, fresh=False):
        _plain(y)
        if not _inexact(y):
            return zeros_tangent(y) if t is None else t
        if t is None:
            return zeros_tangent(y)
        return project(t, y)

    made = {"meta": meta, "zeros_tangent": zeros_tangent,
            "broadcast_tangent": broadcast_tangent, "output_tangent": output_tangent, "unbroadcast": unbroadcast, "unreduce": unreduce,
            "realify": realify, "project": project, "zeros_like": zeros_like,
            "owned_zeros": owned_zeros, "unindex": unindex,
            "per_output": _core.per_output}      # reads shapes only
    # helpers whose code calls only NumPy functions and the helpers above:
    # the same code with its `np` bound to xp
    for fn in _REBOUND:
        g = dict(fn.__globals__)
        g.update(made)
        g["np"] = xp
        made[fn.__name__] = types.FunctionType(fn.__code__, g, fn.__name__, fn.__defaults__,
                                               fn.__closure__)
    return made


_REBOUND = (_rule_support.matmul_lhs_grad, _rule_support.matmul_rhs_grad,
            _rule_support.inner_lhs_grad, _rule_support.inner_rhs_grad)

#: the NumPy helpers that have a namespace-generic form, by identity
GENERIC = {_core.meta: "meta", _core.unbroadcast: "unbroadcast", _core.unreduce: "unreduce",
           _core.realify: "realify", _core.project: "project", _core.zeros_like: "zeros_like",
           _accumulation.owned_zeros: "owned_zeros", _rule_support.unindex: "unindex",
           _core.per_output: "per_output"}
GENERIC.update({fn: fn.__name__ for fn in _REBOUND})
GENERIC.update({getattr(_forward_support, n): n for n in ("zeros_tangent", "broadcast_tangent",
                                                          "output_tangent")})
#: helpers the in-place build calls that the out-of-place build (the one
#: jax.jit runs) does not
_ACCUMULATION_ONLY = {getattr(_accumulation, n) for n in ("owned_copy", "index_add")
                      if hasattr(_accumulation, n)}


def _generic_of(value):
    try:
        return GENERIC.get(value)
    except TypeError:       # unhashable
        return None


def _accumulation_only(value):
    try:
        return value in _ACCUMULATION_ONLY
    except TypeError:
        return False


_GENERIC_CACHE = {}


def _generic_helpers():
    import jax.numpy as jnp
    made = _GENERIC_CACHE.get("jax")
    if made is None:
        made = _GENERIC_CACHE["jax"] = _make_generic(jnp)
    return made


# -- building and running -------------------------------------------------------------

def is_traced(args):
    """Whether ``args`` (a tuple, possibly of structures) hold a JAX tracer."""
    import jax
    for a in args:
        if isinstance(a, jax.core.Tracer):
            return True
        if isinstance(a, (tuple, list)) and is_traced(a):
            return True
        if isinstance(a, dict) and is_traced(tuple(a.values())):
            return True
    return False


def _stand_in(a):
    """A NumPy value of ``a``'s abstract signature (dtype and rank), as small
    as can be: the transform is chosen by signature, never by size (and a
    size-1 stand-in keeps fused kernels out)."""
    import jax
    if isinstance(a, (jax.core.Tracer, jax.Array)) or (
            isinstance(a, np.ndarray) and type(a) is not np.ndarray) or type(a) is np.ndarray:
        return np.zeros((1,) * a.ndim, dtype=np.dtype(a.dtype))
    if (isinstance(a, (tuple, list, dict)) or _core.is_structure(a)) and _has_tracer(a):
        raise NotTraceableError(
            "pullback runs generated code under jax.jit on arrays and numbers as arguments; "
            f"this argument is a {type(a).__name__} holding traced arrays (containers are "
            "not traced yet).",
            hint="Pass the arrays as separate arguments, or call pullback outside jax.jit.")
    return a


#: ``math`` functions and their jax.numpy twins (the same function of one
#: number; math.log with a base, math.pow and the rest are refused)
_MATH_TWINS = {"sin": "sin", "cos": "cos", "tan": "tan", "asin": "arcsin", "acos": "arccos",
               "atan": "arctan", "atan2": "arctan2", "sinh": "sinh", "cosh": "cosh",
               "tanh": "tanh", "asinh": "arcsinh", "acosh": "arccosh", "atanh": "arctanh",
               "exp": "exp", "expm1": "expm1", "log1p": "log1p", "sqrt": "sqrt",
               "fabs": "abs", "hypot": "hypot", "log": "log", "log10": "log10",
               "log2": "log2", "pi": None, "e": None, "tau": None, "inf": None, "nan": None}


def _math_twin(math, jnp):
    twin = types.SimpleNamespace(**vars(math))
    for name, jname in _MATH_TWINS.items():
        if jname is not None:
            setattr(twin, name, getattr(jnp, jname))

    def log(x, base=None):          # math.log(x, base) is log(x) / log(base)
        return jnp.log(x) if base is None else jnp.log(x) / jnp.log(base)
    twin.log = log
    twin.__name__ = "math"
    return twin


def _numpy_twin(value, jnp):
    if isinstance(value, types.ModuleType) and value.__name__ == "numpy":
        return jnp
    if isinstance(value, types.ModuleType) and value.__name__ == "math":
        return _math_twin(value, jnp)
    if _numpy_function(value):
        name = getattr(value, "__name__", None)
        if name and hasattr(jnp, name):
            return getattr(jnp, name)
    return value


def _callee_of(value):
    """The ``Derivative`` handle of a callee's primal or adjoint as generated
    code holds them (``Derivative.for_callers``), else None."""
    tag = getattr(value, "__pullback_callee__", None)
    if tag is not None and hasattr(tag[0], "specialize"):
        return tag[0]
    owner = getattr(value, "__self__", None)
    if owner is not None and getattr(value, "__name__", "") == "call_adjoint" \
            and hasattr(owner, "specialize") and hasattr(owner, "for_callers"):
        return owner
    return None


def _traced_callee(value):
    """A callee's primal or adjoint for traced arguments: its own namespace
    build, made when it is first called (the callee's arguments are known
    then), with the same calling convention as ``Derivative.for_callers``."""
    tag = getattr(value, "__pullback_callee__", None)
    if tag is None:                                 # the adjoint
        def adjoint(res, ct):
            run_adjoint, r, mask, n = res
            return _spread(run_adjoint(r, ct), mask, n)
        return adjoint
    handle, mask = tag[0], tag[1]

    def primal(*args, **kwargs):
        if kwargs or getattr(handle, "variadic", False) or len(args) != len(handle.params):
            args = handle.bind(args, kwargs)
        _, (run_primal, run_adjoint) = _traced_build(handle.fun, handle, args, mask, False)
        out, r = run_primal(*args)
        return out, (run_adjoint, r, mask, len(args))
    return primal


def build(loaded, fn):
    """The primal and adjoint of ``loaded`` with NumPy bound to jax.numpy and
    the generic helpers in place of NumPy's."""
    import jax.numpy as jnp
    generic = _generic_helpers()
    helpers = {}
    for name, value in loaded.helpers.items():
        key = _generic_of(value)
        helpers[name] = generic[key] if key is not None else \
            _traced_callee(value) if _callee_of(value) is not None else _numpy_twin(value, jnp)
    globals_ = {k: _numpy_twin(v, jnp) for k, v in fn.__globals__.items()}
    code = compile(loaded.text, loaded.filename, "exec")
    make = next(c for c in code.co_consts
                if isinstance(c, types.CodeType) and c.co_name == "__pullback_make__")
    inner = {c.co_name: c for c in make.co_consts if isinstance(c, types.CodeType)}
    closure = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))

    def function(name):
        c = inner[name]
        cells = tuple(_twin_cell(closure[v], jnp) if v in closure and v not in helpers
                      else types.CellType(helpers[v]) for v in c.co_freevars)
        return types.FunctionType(c, globals_, name, None, cells)

    return function(loaded.primal.__name__), function(loaded.adjoint.__name__)


def _twin_cell(cell, jnp):
    """The user's closure cell, or a new one holding jax.numpy's twin where
    the cell holds NumPy or one of its functions."""
    try:
        value = cell.cell_contents
    except ValueError:
        return cell
    twin = _numpy_twin(value, jnp)
    return cell if twin is value else types.CellType(twin)


def _spread(grads, wrt, n):
    """The adjoint's gradients (one per parameter in ``wrt``) as one per
    parameter, ``None`` for the others."""
    full = [None] * n
    for k, i in enumerate(wrt):
        full[i] = grads[k]
    return tuple(full)


def _traced_build(fun, handle, args, wrt, has_aux):
    import jax
    stand_ins = tuple(_stand_in(a) for a in args)
    if hasattr(args, "layout"):         # a call of a *args/**kwargs function, bound
        stand_ins = type(args)(stand_ins, args.layout)
    loaded = handle.specialize(stand_ins, wrt, has_aux, inplace=False)
    traced = [i for i, a in enumerate(args) if isinstance(a, jax.core.Tracer)]
    reason = traceability(loaded, handle.fun, traced)
    if reason is not None:
        raise NotTraceableError(
            f"{getattr(fun, '__qualname__', fun)}'s derivative cannot run under jax.jit: "
            f"its generated code has {reason.what}.", reason.location(),
            "Call the pullback function outside jax.jit (it takes concrete JAX arrays), "
            "write the branch with np.where, or differentiate with jax.grad. pb.source(f) "
            "says in its header whether jax.jit can trace f's gradient.")
    return loaded, build(loaded, handle.fun)


def _check_scalar(fun, value):
    from ..checks import fun_name
    shape = _shape(value)
    dtype = np.dtype(value.dtype) if hasattr(value, "dtype") else np.result_type(value)
    if shape != () or dtype.kind != "f":
        what = f"an array of shape {shape}" if shape != () else f"a value of {dtype}"
        raise TypeError(f"pb.grad requires a real float scalar output, but {fun_name(fun)} "
                        f"returned {what} (under jax.jit). Reduce it to a float scalar, or "
                        "use pb.vjp.")


def value_and_grad(fun, handle, args, argnums, wrt, has_aux):
    """``pb.value_and_grad(fun, argnums, has_aux)(*args)`` for arguments that
    hold JAX tracers (under ``jax.jit``)."""
    import jax.numpy as jnp
    argnums_t = argnums if isinstance(argnums, tuple) else (argnums,)
    _, (primal, adjoint) = _traced_build(fun, handle, args, wrt, has_aux)
    for i in argnums_t:
        a = args[i]
        dtype = np.dtype(a.dtype) if hasattr(a, "dtype") else np.result_type(a)
        if dtype.kind not in "fc":
            raise TypeError(f"pb.grad is asked for the gradient of argument {i}, which is "
                            f"of {dtype}: an integer or boolean carries no gradient.")
    out, res = primal(*args)
    value, aux = (out[0], out[1]) if has_aux else (out, None)
    _check_scalar(fun, value)
    grads = _spread(adjoint(res, jnp.ones_like(value)), wrt, len(args))
    g = tuple(grads[i] for i in argnums_t)
    result = g[0] if isinstance(argnums, int) else g
    return ((value, aux), result) if has_aux else (value, result)


def vjp(fun, handle, args, has_aux):
    """``pb.vjp(fun, *args)`` for arguments that hold JAX tracers."""
    wrt = tuple(i for i, a in enumerate(args)
                if (np.dtype(a.dtype).kind if hasattr(a, "dtype")
                    else np.result_type(a).kind) in "fc" and not isinstance(a, bool))
    _, (primal, adjoint) = _traced_build(fun, handle, args, wrt, has_aux)
    out, res = primal(*args)
    value, aux = (out[0], out[1]) if has_aux else (out, None)

    def pullback(ct):
        return _spread(adjoint(res, ct), wrt, len(args))

    pullback.__pullback_api__ = "pb.vjp"
    return (value, pullback, aux) if has_aux else (value, pullback)


def _inexact_arg(a):
    if isinstance(a, bool):
        return False
    kind = np.dtype(a.dtype).kind if hasattr(a, "dtype") else np.result_type(a).kind
    return kind in "fc"


def jvp(fun, primals, tangents, has_aux):
    """``pb.jvp(fun, primals, tangents)`` for primals or tangents that hold
    JAX tracers: the tangent function (forward mode), built as above."""
    from ..forward.calls import forward_of
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise ValueError(f"pb.jvp takes one tangent per primal: {len(primals)} primals, "
                         f"{len(tangents)} tangents.")
    for p, t in zip(primals, tangents):
        if _shape(p) != _shape(t):
            raise ValueError(f"A tangent of shape {_shape(t)} was given for a primal of "
                             f"shape {_shape(p)}; each tangent must match its primal.")
    handle = forward_of(fun)
    if not hasattr(handle, "specialize") or getattr(handle, "variadic", False):
        raise NotTraceableError(
            f"pb.jvp runs under jax.jit for plain Python functions with named parameters; "
            f"{getattr(fun, '__qualname__', fun)} is not one.",
            hint="Call pb.jvp outside jax.jit, or differentiate with jax.jvp.")
    wrt = tuple(i for i, a in enumerate(primals) if _inexact_arg(a))
    import jax
    stand_ins = tuple(_stand_in(a) for a in primals)
    loaded = handle.specialize(stand_ins, wrt, has_aux)
    traced = [i for i, a in enumerate(primals) if isinstance(a, jax.core.Tracer)]
    n = len(primals)
    traced += [n + k for k, i in enumerate(wrt)]           # the tangents
    reason = traceability(loaded._loaded, handle.fun, traced)
    if reason is not None:
        raise NotTraceableError(
            f"{getattr(fun, '__qualname__', fun)}'s tangent function cannot run under "
            f"jax.jit: its generated code has {reason.what}.", reason.location(),
            "Call pb.jvp outside jax.jit (it takes concrete JAX arrays), write the branch "
            "with np.where, or differentiate with jax.jvp.")
    tangent_fn, _ = build(loaded._loaded, handle.fun)
    out, out_dot = tangent_fn(*primals, *(tangents[i] for i in wrt))
    if has_aux:
        return out[0], out_dot, out[1]
    return out, out_dot
