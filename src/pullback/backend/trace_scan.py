"""The scan behind ``backend.traceability``: a forward pass over one
generated function (primal or adjoint, as ``ast``) that marks the names
holding values computed from the traced inputs, to a fixed point for loops,
and stops at the first construct that needs such a value concrete: a Python
``if``/``while``/conversion to a number on it, a write into an array, a
helper or NumPy function without a jax.numpy form (split from
``traceability``).  The first such construct is the ``Reason``, with the
user's line.

Before, a function that turns a value computed from its input into a
Python number; after, the reason ``pb.source`` states for it:

>>> from pullback.testing import function_from_source
>>> import numpy as np, pullback as pb
>>> f = function_from_source('''
... def f(x):
...     s = float(np.sum(x))
...     return s * np.sum(x ** 2)
... ''')
>>> print(pb.source(f, np.ones(3)).splitlines()[1])
# jax.jit: not traceable: `float(...)` of a value computed from the inputs (line 2: s = float(np.sum(x)))
"""
from __future__ import annotations

import ast
import builtins
import linecache
import types

import numpy as np

from ..errors import Location
from .generic import _accumulation_only, _callee_of, _generic_of
from .twins import (_MATH_TWINS, _SPECIAL_TWINS, _jnp_has, _numpy_function, _special_name,
                    _twin_name)

__all__ = ["Reason", "Scan"]


# -- which calls are traceable -----------------------------------------------------

#: attributes whose value is fixed when JAX traces (shapes, not values)
_STATIC_ATTRS = frozenset({"shape", "ndim", "dtype", "size"})
#: helpers whose result is fixed when JAX traces, whatever their arguments
_STATIC_HELPERS = frozenset({"meta", "per_output", "loops_over_keys"})
#: builtins that read shapes or build containers: traceable on any value
_SAFE_BUILTINS = frozenset({"len", "reversed", "enumerate", "zip", "tuple", "list",
                            "dict", "isinstance", "abs", "sum", "slice", "print", "type"})
_STATIC_BUILTINS = frozenset({"len", "isinstance", "type"})
#: builtins that turn a traced value into a Python number
_CONCRETE_BUILTINS = frozenset({"range", "float", "int", "bool", "complex", "round", "min", "max"})
_CONCRETE_METHODS = frozenset({"item", "tolist", "__float__", "__int__", "__bool__"})
_WRITABLE_MAKERS = frozenset({"list", "dict", "owned_zeros", "owned_copy"})
#: NumPy functions whose result is fixed when JAX traces (dtypes, shapes)
_STATIC_NUMPY = frozenset({"iscomplexobj", "isrealobj", "ndim", "shape", "size", "result_type",
                           "issubdtype"})
#: modules whose functions run under jax.jit through a twin (backend.generic)
_TWINNED_MODULES = frozenset({"numpy", "numpy.linalg", "numpy.fft", "scipy.special", "math"})
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




class Scan:
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
            if self.module_of(e.value) is not None:
                self.module_attribute(e)
            return inner
        if isinstance(e, ast.Call):
            return self.call(e)
        if isinstance(e, (ast.IfExp,)):
            if self.numpy_type_test(e.test):
                # `float(v) if type(v) is float64 else v`: a traced value is
                # never of a NumPy scalar type, so only the other branch runs
                return self.traced(e.orelse)
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

    def numpy_type_test(self, test):
        """``type(v) is T`` with ``T`` a NumPy scalar type or a Python number
        type: never true of a tracer."""
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1
                and isinstance(test.ops[0], ast.Is) and isinstance(test.left, ast.Call)
                and isinstance(test.left.func, ast.Name) and test.left.func.id == "type"
                and self.resolve("type")[0] == "builtin"
                and isinstance(test.comparators[0], ast.Name)):
            return False
        kind, value = self.resolve(test.comparators[0].id)
        return kind != "local" and isinstance(value, type) and (
            issubclass(value, np.generic) or value in (float, int, complex, bool))

    def module_of(self, e):
        """The module ``e`` (a name or a chain of attributes: ``np``,
        ``scipy.special``) holds, else None."""
        if isinstance(e, ast.Name):
            if e.id in self.locals:
                return None
            value = self.resolve(e.id)[1]
        elif isinstance(e, ast.Attribute):
            outer = self.module_of(e.value)
            value = getattr(outer, e.attr, None) if outer is not None else None
        else:
            return None
        return value if isinstance(value, types.ModuleType) else None

    def module_attribute(self, e):
        """``np.tanh``, ``math.sin``, ``scipy.special.erf``: a module's
        function must have a jax.numpy (or jax.scipy.special) form."""
        module = self.module_of(e.value)
        name, text = module.__name__, ast.unparse(e)
        value = getattr(module, e.attr, None)
        if isinstance(value, types.ModuleType):
            if value.__name__ not in _TWINNED_MODULES:
                self.fail(f"`{text}` ({value.__name__}), a module jax.jit does not run "
                          "with a jax.numpy twin", e)
            return
        if name == "numpy" and not _jnp_has(e.attr):
            self.fail(f"`{text}`, which jax.numpy does not have", e)
        elif name in ("numpy.linalg", "numpy.fft") and not _jnp_has(name[6:] + "." + e.attr):
            self.fail(f"`{text}`, which jax.numpy.{name[6:]} does not have", e)
        elif name == "scipy.special" and e.attr not in _SPECIAL_TWINS:
            self.fail(f"`{text}` (scipy.special), which pullback does not run under jax.jit "
                      "(jax.scipy.special has no function of the same meaning)", e)
        elif name == "math" and e.attr in _MATH_TWINS:
            pass
        elif name not in ("numpy", "numpy.linalg", "numpy.fft", "scipy.special", "operator",
                          "builtins") and _is_callable_attr(module, e.attr):
            what = "works on Python numbers, not traced arrays" if name == "math" else \
                "pullback does not run on traced arrays"
            self.fail(f"`{text}` ({name}), which {what}", e)

    def call(self, e):
        args_traced = [self.traced(a) for a in e.args] + \
            [self.traced(k.value) for k in e.keywords]
        any_traced = any(args_traced)
        func = e.func
        if isinstance(func, ast.Attribute):
            obj_traced = self.traced(func)
            module = self.module_of(func.value)
            if module is not None:       # a module's function (checked above)
                if module.__name__ == "numpy" and func.attr in _STATIC_NUMPY:
                    return False         # reads a dtype or a shape
                return any_traced
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
                if _special_name(value) is not None:
                    if _special_name(value) not in _SPECIAL_TWINS:
                        self.fail(f"`{func.id}` (scipy.special.{_special_name(value)}), which "
                                  "pullback does not run under jax.jit", e)
                    return any_traced
                if _numpy_function(value):
                    if not _jnp_has(func.id if not hasattr(value, "__name__")
                                    else _twin_name(value)):
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
        if _callee_of(value) is not None or hasattr(value, "__pullback_forward__"):
            return True          # a user function: its own build is checked when traced
        if _generic_of(value) is None and not _accumulation_only(value) \
                and getattr(value, "__pullback_kernel__", None) is None:
            what = getattr(value, "__qualname__", None) or type(value).__name__
            self.fail(f"`{name}` ({what}), a runtime helper or callee with no "
                      "namespace-generic form", e)
        return any_traced or name in ("owned_zeros", "zeros_like", "unindex")


def _is_callable_attr(module, attr):
    return callable(getattr(module, attr, None))
