"""Kernel text: how a kernel program's steps are written as Python, in
NumPy or in ``jax.numpy``, and how the text is made a function.

A step is written as Python syntax for an operator (``BINARY``, ``UNARY``),
as a call of its NumPy or JAX function otherwise, wrapped in ``strong`` in
JAX (a NumPy function never returns a weakly typed value, so neither may the
translation); ``free_early`` deletes each temporary after its last use::

>>> import operator
>>> import numpy as np
>>> from pullback.ir.build import name
>>> from pullback.lowering.kernel_programs import Program, Step
>>> p = Program(["x"], [Step("s", np.sin, [name("x")]),
...                     Step("y", operator.mul, [name("s"), name("x")])], "y")
>>> print(render_values(p, "jax", "k_jax")[0])
def k_jax(x):
    s = strong(jnp.sin(x))
    y = s * x
    return y
<BLANKLINE>
>>> print(free_early(render_values(p, "numpy", "k")[0]))
def k(x):
    s = np.sin(x)
    y = s * x
    del s
    return y
<BLANKLINE>
"""
from __future__ import annotations

import importlib
import itertools
import operator

import numpy as np

from .jax_bridge import load_jax

__all__ = ["BINARY", "UNARY", "Cast", "passes_tangent", "step_text", "namespace_for",
           "render_values", "free_early", "exec_text", "jax_values"]

_counter = itertools.count()

# operators the generated code writes as Python syntax
BINARY = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
          operator.floordiv: "//", operator.mod: "%", operator.pow: "**",
          operator.lt: "<", operator.le: "<=", operator.gt: ">", operator.ge: ">=",
          operator.eq: "==", operator.ne: "!="}
UNARY = {operator.neg: "-", operator.pos: "+"}


class Cast:
    """The step ``np.asarray(x, dtype)``: np.vectorize's ``otypes``.  Linear,
    so a tangent is cast the same way."""

    __name__ = "astype"

    def __init__(self, dtype):
        self.dtype = np.dtype(dtype)

    def text(self, arg, flavour):
        module = "jnp" if flavour == "jax" else "np"
        return f"{module}.asarray({arg}, dtype={self.dtype.name!r})"


def passes_tangent(prim):
    """Steps whose tangent is their argument's, transformed alike."""
    return getattr(prim, "__name__", "") == "_identity" or isinstance(prim, Cast)


def atom_text(node):
    from ..backend.codegen import unparse
    text = unparse(node)
    return f"({text})" if text.startswith("-") else text    # (-0.7) ** 2, not -0.7 ** 2


def callee_text(prim, flavour):
    """How generated code of ``flavour`` ("numpy" or "jax") calls ``prim``."""
    from ..rules.registry import declared_elementwise, kernel_name
    declared = declared_elementwise(prim)
    if declared is not None:            # scipy.special.gammaln, jax.scipy.special.gammaln
        return declared.jax if flavour == "jax" else declared.numpy
    name = kernel_name(prim)
    return f"{'jnp' if flavour == 'jax' else 'np'}.{name}"


def step_text(step, flavour):
    if step.prim is None:
        return atom_text(step.expr)
    args = [atom_text(a) for a in step.args]
    if step.prim in BINARY:
        return f"{args[0]} {BINARY[step.prim]} {args[1]}"
    if step.prim in UNARY:
        return f"{UNARY[step.prim]}{args[0]}"
    if getattr(step.prim, "__name__", "") == "_identity":
        return args[0]
    if isinstance(step.prim, Cast):
        return step.prim.text(args[0], flavour)
    call = f"{callee_text(step.prim, flavour)}({', '.join(args)})"
    # a NumPy function returns an array or a NumPy scalar even for Python
    # numbers, never a weakly typed value: so must the translation
    return f"strong({call})" if flavour == "jax" else call


def namespace_for(flavour):
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


def render_values(program, flavour, name, summed=None):
    """The region as a function of its inputs returning its value (summed if
    the program is, unless ``summed=False``: the JAX kernel sums after jvp)."""
    summed = program.summed if summed is None else summed
    lines = [f"def {name}({', '.join(program.all_inputs)}):"]
    for step in program.steps:
        lines.append(f"    {step.target} = {step_text(step, flavour)}")
    out = program.output
    if summed:
        out = f"jnp.sum({out})" if flavour == "jax" else f"np.sum({out})"
    lines.append(f"    return {out}")
    return "\n".join(lines) + "\n", namespace_for(flavour)


def free_early(text):
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


def exec_text(text, namespace, name):
    from ..backend.codegen import register_source
    filename = f"<pullback kernel {name} #{next(_counter)}>"
    register_source(filename, text)
    exec(compile(text, filename, "exec"), namespace)
    return namespace[name]


def jax_values(program, name):
    """The region in ``jax.numpy`` as a function of all its inputs, its value
    not summed (a kernel sums after ``jax.jvp``), and its namespace."""
    text, namespace = render_values(program, "jax", name, summed=False)
    return exec_text(text, namespace, name), namespace
