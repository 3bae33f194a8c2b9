"""Kernel programs: a fused region as steps over named inputs, and the
Python code made from it.

A ``Program`` is what ``lower_broadcasts`` builds from a region's statements
(``elementwise_regions.ProgramBuilder``) and what a ``kernels.Kernel`` runs.
It renders as text in three forms, each readable (``kernel.source``,
``kernels.sources(fn)``):

* the region itself, in NumPy (``render("numpy", ...)``);
* its ``jax.numpy`` translation (``render("jax", ...)``), which
  ``jax_kernel`` differentiates by ``jax.jvp`` and jits;
* NumPy forward mode (``render_partials``): each step's value then its
  tangent along each differentiated input, each rule's contribution taken
  as the linear map it is, temporaries freed as soon as they are dead.

Before, a region; after, its three renderings (``api.kernel_sources``):

>>> from pullback.api import kernel_sources
>>> from pullback.testing import function_from_source
>>> f = function_from_source('''
... def f(x):
...     return np.sum(np.tanh(x) * x + 1.0)
... ''')
>>> print(kernel_sources(f))
# fused_tanh_sum: fused from line 2
<BLANKLINE>
def fused_tanh_sum(x):
    tanh_x = np.tanh(x)
    tanh_x_x = tanh_x * x
    tanh_x_x_plus_1 = tanh_x_x + 1.0
    return np.sum(tanh_x_x_plus_1)
<BLANKLINE>
<BLANKLINE>
def fused_tanh_sum_jax(x):
    tanh_x = strong(jnp.tanh(x))
    tanh_x_x = tanh_x * x
    tanh_x_x_plus_1 = tanh_x_x + 1.0
    return jnp.sum(tanh_x_x_plus_1)
<BLANKLINE>
<BLANKLINE>
def fused_tanh_sum_partials(x):
    tanh_x = np.tanh(x)
    tanh_x_dx = 1.0 - tanh_x * tanh_x
    tanh_x_x = tanh_x * x
    tanh_x_x_dx = tanh_x_dx * x + tanh_x
    tanh_x_x_plus_1 = tanh_x_x + 1.0
    return np.sum(tanh_x_x_plus_1), (tanh_x_x_dx,)
<BLANKLINE>
"""
from __future__ import annotations

import importlib
import itertools
import operator

import numpy as np

from .jax_bridge import load_jax

__all__ = ["Step", "Cast", "Program", "BINARY", "UNARY"]

_counter = itertools.count()

# operators the generated code writes as Python syntax
BINARY = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
          operator.floordiv: "//", operator.mod: "%", operator.pow: "**",
          operator.lt: "<", operator.le: "<=", operator.gt: ">", operator.ge: ">=",
          operator.eq: "==", operator.ne: "!="}
UNARY = {operator.neg: "-", operator.pos: "+"}


# -- programs: a region as steps, and the code made from it ----------------------

class Step:
    """``target = prim(*args)``: one elementwise operation of a region.

    ``args`` are gast atoms over the region's names.  ``prim`` is the NumPy
    primitive (an ``operator`` function for Python's operators, a ufunc,
    ``np.where``, ``np.clip``); None for a step computed from values that do
    not vary per element (``expr`` holds it, e.g. ``c[0]``)."""

    def __init__(self, target, prim, args, expr=None, lineno=None):
        self.target, self.prim, self.args, self.expr = target, prim, list(args), expr
        self.lineno = lineno


class Cast:
    """The step ``np.asarray(x, dtype)``: np.vectorize's ``otypes``.  Linear,
    so a tangent is cast the same way."""

    __name__ = "astype"

    def __init__(self, dtype):
        self.dtype = np.dtype(dtype)

    def text(self, arg, flavour):
        module = "jnp" if flavour == "jax" else "np"
        return f"{module}.asarray({arg}, dtype={self.dtype.name!r})"


def _passes_tangent(prim):
    """Steps whose tangent is their argument's, transformed alike."""
    return getattr(prim, "__name__", "") == "_identity" or isinstance(prim, Cast)


class Program:
    """A region: named inputs, steps, one output; with ``summed``, the
    kernel's value is the output's sum (``np.sum`` of the region fused in:
    the elementwise value is never stored), its partials still elementwise."""

    def __init__(self, inputs, steps, output, ambient_names=(), summed=False):
        self.inputs = list(inputs)          # call-site inputs, then ambient ones
        self.ambient_names = list(ambient_names)
        self.steps = steps
        self.output = output
        self.summed = summed

    @property
    def all_inputs(self):
        return self.inputs + self.ambient_names

    def differentiable_inputs(self):
        """The inputs through which a gradient reaches the output."""
        from ..rules.registry import lookup
        import gast
        deps = {n: {n} for n in self.inputs}
        for step in self.steps:
            got = set()
            if step.prim is not None:
                if _passes_tangent(step.prim):
                    params, diff = ("x",), ("x",)
                else:
                    rule = lookup(step.prim)
                    params, diff = (rule.params, rule.diff) if rule else ((), ())
                for p, a in zip(params, step.args):
                    if p in diff and isinstance(a, gast.Name):
                        got |= deps.get(a.id, set())
            deps[step.target] = got
        return deps.get(self.output, set())

    # code text ------------------------------------------------------------------

    def render(self, flavour, name):
        return _render_values(self, flavour, name)[0]

    def render_partials(self, mask, name):
        return _render_partials(self, mask, name)[0]

    def constant_partials(self, mask):
        """{input index: value} for the partials that are constants (the 1 of
        ``x + c`` with respect to ``c``): no kernel need compute them."""
        return _render_partials(self, mask, "_")[2]

    def compile(self, flavour, name):
        text, namespace = _render_values(self, flavour, name)
        return _exec(_free_early(text) if flavour == "numpy" else text, namespace, name)

    def compile_partials(self, mask, name):
        text, namespace, _ = _render_partials(self, mask, name)
        return _exec(_free_early(text), namespace, name)

    def jax_kernel(self, diff, name):
        """A jitted function of all inputs returning the value and the partial
        derivatives with respect to the inputs at positions ``diff``."""
        jx = load_jax()
        jnp = jx.numpy
        text, namespace = _render_values(self, "jax", name + "_jax", summed=False)
        f = _exec(text, namespace, name + "_jax")
        constants = self.constant_partials(diff)

        def kernel(*args):
            out, parts = None, []
            for k in diff:
                if k in constants:
                    parts.append(None)
                    continue
                def along(a, k=k):
                    return f(*args[:k], a, *args[k + 1:])
                out, t = jx.jvp(along, (args[k],), (jnp.ones_like(args[k]),))
                parts.append(t)
            if out is None:
                out = f(*args)
            if self.summed:
                out = namespace["strong"](jnp.sum(out))
            return out, tuple(parts)

        kernel.__name__ = name
        return jx.jit(kernel)


def _free_early(text):
    """``text`` (a generated function of assignments and a return) with a
    ``del`` after the last use of each temporary: an intermediate array is
    freed as soon as nothing needs it, so the NumPy path holds a few arrays
    at a time, not the whole region."""
    import ast
    lines = text.splitlines()
    header, body = lines[0], lines[1:]
    params = {a.arg for a in ast.parse(header + " pass").body[0].args.args}
    assigned, last = set(), {}
    for i, line in enumerate(body):
        tree = ast.parse(line.strip())
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                if isinstance(node.ctx, ast.Store):
                    assigned.add(node.id)
                last[node.id] = i
    returned = {n.id for n in ast.walk(ast.parse(body[-1].strip())) if isinstance(n, ast.Name)}
    out = [header]
    for i, line in enumerate(body):
        out.append(line)
        dead = sorted(n for n in assigned if last.get(n) == i and n not in returned
                      and n not in params)
        if dead and i < len(body) - 1:
            out.append(f"    del {', '.join(dead)}")
    return "\n".join(out) + "\n"


def _exec(text, namespace, name):
    from ..backend.codegen import register_source
    filename = f"<pullback kernel {name} #{next(_counter)}>"
    register_source(filename, text)
    exec(compile(text, filename, "exec"), namespace)
    return namespace[name]


# -- rendering a program as Python ---------------------------------------------------

def _atom_text(node):
    from ..backend.codegen import unparse
    text = unparse(node)
    return f"({text})" if text.startswith("-") else text    # (-0.7) ** 2, not -0.7 ** 2


def _callee_text(prim, flavour):
    """How generated code of ``flavour`` ("numpy" or "jax") calls ``prim``."""
    from ..rules.registry import declared_elementwise, kernel_name
    declared = declared_elementwise(prim)
    if declared is not None:            # scipy.special.gammaln, jax.scipy.special.gammaln
        return declared.jax if flavour == "jax" else declared.numpy
    name = kernel_name(prim)
    return f"{'jnp' if flavour == 'jax' else 'np'}.{name}"


def _step_text(step, flavour):
    if step.prim is None:
        return _atom_text(step.expr)
    args = [_atom_text(a) for a in step.args]
    if step.prim in BINARY:
        return f"{args[0]} {BINARY[step.prim]} {args[1]}"
    if step.prim in UNARY:
        return f"{UNARY[step.prim]}{args[0]}"
    if getattr(step.prim, "__name__", "") == "_identity":
        return args[0]
    if isinstance(step.prim, Cast):
        return step.prim.text(args[0], flavour)
    call = f"{_callee_text(step.prim, flavour)}({', '.join(args)})"
    # a NumPy function returns an array or a NumPy scalar even for Python
    # numbers, never a weakly typed value: so must the translation
    return f"strong({call})" if flavour == "jax" else call


def _namespace(flavour):
    from ..rules.registry import ELEMENTWISE
    tops = {}
    for declared in ELEMENTWISE.values():     # the packages declared ufuncs come from
        text = declared.jax if flavour == "jax" else declared.numpy
        importlib.import_module(text.rsplit(".", 1)[0])
        top = text.split(".", 1)[0]
        tops[top] = importlib.import_module(top)
    if flavour == "jax":
        jx = load_jax()

        def strong(v):
            return v.astype(v.dtype) if getattr(v, "weak_type", False) else v
        return {**tops, "jnp": jx.numpy, "np": np, "strong": strong}
    return {**tops, "np": np}


def _render_values(program, flavour, name, summed=None):
    """The region as a function of its inputs returning its value (summed if
    the program is, unless ``summed=False``: the JAX kernel sums after jvp)."""
    summed = program.summed if summed is None else summed
    lines = [f"def {name}({', '.join(program.all_inputs)}):"]
    for step in program.steps:
        lines.append(f"    {step.target} = {_step_text(step, flavour)}")
    out = program.output
    if summed:
        out = f"jnp.sum({out})" if flavour == "jax" else f"np.sum({out})"
    lines.append(f"    return {out}")
    return "\n".join(lines) + "\n", _namespace(flavour)


def _render_partials(program, mask, name):
    """Forward mode over the region in NumPy: each step's value, then its
    tangent along each differentiated input, from the step's own rule taken
    as the linear map it is (``exp``: ``t * ans``).  Returns the value and one
    partial derivative per input in ``mask`` (None where none flows)."""
    import gast
    from ..backend.codegen import unparse
    from ..rules.inline import instantiate
    from ..ir.naming import Namer
    from ..rules.registry import lookup

    namespace = _namespace("numpy")
    taken = set(program.all_inputs) | {s.target for s in program.steps} | set(namespace)
    namer = Namer(taken)

    def bind_global(n, value):
        if namespace.get(n) is value:
            return n
        fresh = n if n not in namer.taken else namer.fresh(n)
        namer.taken.add(fresh)
        namespace[fresh] = value
        return fresh

    def load(n):
        return gast.Name(id=n, ctx=gast.Load(), annotation=None, type_comment=None)

    seen = {}

    def emit(expr, base):
        """Bind ``expr`` to a fresh name (the same name for the same text: the
        tangents along two inputs often coincide, as for ``x + b``)."""
        if isinstance(expr, (gast.Constant, gast.Name)):
            return expr
        text = unparse(expr)
        if text not in seen:
            seen[text] = namer.fresh(base)
            lines.append(f"    {seen[text]} = {text}")
        return load(seen[text])

    inputs = program.inputs
    tangent = {inputs[k]: {k: gast.Constant(value=1.0, kind=None)} for k in mask}
    lines = [f"def {name}({', '.join(program.all_inputs)}):"]
    for step in program.steps:
        lines.append(f"    {step.target} = {_step_text(step, 'numpy')}")
        if step.prim is None:
            continue
        if _passes_tangent(step.prim):
            arg = step.args[0]
            if isinstance(arg, gast.Name) and arg.id in tangent:
                if isinstance(step.prim, Cast):
                    tangent[step.target] = {
                        k: emit(gast.parse(step.prim.text(unparse(t), "numpy"),
                                           mode="eval").body, f"{step.target}_d{inputs[k]}")
                        for k, t in tangent[arg.id].items()}
                else:
                    tangent[step.target] = dict(tangent[arg.id])
            continue
        rule = lookup(step.prim)
        if rule is None:
            continue                  # no gradient: comparisons, floor, sign...
        subst = {"ans": load(step.target)}
        for p, a in zip(rule.params, step.args):
            subst[p] = a
        for p in rule.params[len(step.args):]:
            default = rule.signature.parameters[p].default
            subst[p] = gast.Constant(value=None if default is rule.signature.empty
                                     else default, kind=None)
        shared = _shared_partial(step, rule, subst, mask, tangent, namer, bind_global, emit)
        mine = {}
        for k in mask:
            if step.prim is np.where:       # one select of the two branches' tangents
                branch = [tangent.get(a.id, {}).get(k) if isinstance(a, gast.Name) else None
                          for a in step.args[1:]]
                if any(t is not None for t in branch):
                    zero = gast.Constant(value=0.0, kind=None)
                    total = gast.Call(func=gast.Attribute(value=load("np"), attr="where",
                                                          ctx=gast.Load()),
                                      args=[step.args[0]] + [t or zero for t in branch],
                                      keywords=[])
                    mine[k] = emit(total, f"{step.target}_d{inputs[k]}")
                continue
            terms = []
            for p, a in zip(rule.params, step.args):
                if p not in rule.diff or not isinstance(a, gast.Name):
                    continue
                t = tangent.get(a.id, {}).get(k)
                if t is None:
                    continue
                if shared is not None:      # the step's own partial, computed once
                    terms.append(gast.BinOp(left=t, op=gast.Mult(), right=shared))
                    continue
                stmts, exprs = instantiate(rule, dict(subst, g=t), [p], namer, bind_global)
                for s in stmts:
                    lines.append(f"    {unparse(s)}")
                terms.append(exprs[p])
            if not terms:
                continue
            total = terms[0]
            for t in terms[1:]:
                total = gast.BinOp(left=total, op=gast.Add(), right=t)
            mine[k] = emit(total, f"{step.target}_d{inputs[k]}")
        if mine:
            tangent[step.target] = mine
    outs = tangent.get(program.output, {})
    parts = [unparse(outs[k]) if k in outs else "None" for k in mask]
    tail = ", ".join(parts) + ("," if len(parts) == 1 else "")
    out = f"np.sum({program.output})" if program.summed else program.output
    lines.append(f"    return {out}, ({tail})")
    constants = {k: outs[k].value for k in mask
                 if isinstance(outs.get(k), gast.Constant)}
    return "\n".join(lines) + "\n", namespace, constants


def _shared_partial(step, rule, subst, mask, tangent, namer, bind_global, emit):
    """The partial derivative of a one-argument ufunc step (``np.sin(w_x)``'s
    ``np.cos(w_x)``), bound once, when the tangents of several inputs reach
    its argument and computing it calls a function: each input's tangent is
    then that input's tangent of the argument times it, and the function is
    evaluated once, not once per input (``chain2``'s ``np.sin``: 1.2 ms of
    4.1 at 100,000 elements).  None otherwise (the rule inlined per input)."""
    import gast
    from ..rules.inline import instantiate
    if not (isinstance(step.prim, np.ufunc) and step.prim.nin == 1 and rule.diff
            and step.args and isinstance(step.args[0], gast.Name)):
        return None
    reached = [k for k in mask if tangent.get(step.args[0].id, {}).get(k) is not None]
    if len(reached) < 2:
        return None
    one = gast.Constant(value=1.0, kind=None)
    stmts, exprs = instantiate(rule, dict(subst, g=one), [rule.diff[0]], namer, bind_global)
    expr = exprs[rule.diff[0]]
    if stmts or not any(isinstance(n, gast.Call) for n in gast.walk(expr)):
        return None
    return emit(_times_one(expr), f"{step.target}_d")


def _times_one(expr):
    """``1.0 * e`` and ``-1.0 * e`` (a rule's ``g * ...`` with ``g = 1``) as
    ``e`` and ``-e``."""
    import gast

    def value(node):
        if isinstance(node, gast.Constant) and node.value in (1.0, -1.0) \
                and not isinstance(node.value, bool):
            return float(node.value)
        if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub) \
                and isinstance(node.operand, gast.Constant) and node.operand.value == 1.0:
            return -1.0
        return None

    if isinstance(expr, gast.BinOp) and isinstance(expr.op, gast.Mult):
        for unit, other in ((expr.left, expr.right), (expr.right, expr.left)):
            v = value(unit)
            if v == 1.0:
                return _times_one(other)
            if v == -1.0:
                return gast.UnaryOp(op=gast.USub(), operand=_times_one(other))
        left = _times_one(expr.left)
        if left is not expr.left:
            return gast.BinOp(left=left, op=gast.Mult(), right=expr.right)
    return expr
