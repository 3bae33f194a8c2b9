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

How a step is written is ``kernel_text``; the forward mode, ``kernel_partials``.

Before, a region; after, its three renderings (``sources.kernel_sources``):

>>> from pullback.sources import kernel_sources
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

from .jax_bridge import load_jax
from .kernel_partials import render_partials
from .kernel_text import exec_text, free_early, jax_values, passes_tangent, render_values

__all__ = ["Step", "Program"]

class Step:
    """``target = prim(*args)``: one elementwise operation of a region.

    ``args`` are gast atoms over the region's names.  ``prim`` is the NumPy
    primitive (an ``operator`` function for Python's operators, a ufunc,
    ``np.where``, ``np.clip``); None for a step computed from values that do
    not vary per element (``expr`` holds it, e.g. ``c[0]``)."""

    def __init__(self, target, prim, args, expr=None, lineno=None):
        self.target, self.prim, self.args, self.expr = target, prim, list(args), expr
        self.lineno = lineno


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
                if passes_tangent(step.prim):
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
        return render_values(self, flavour, name)[0]

    def render_partials(self, mask, name):
        return render_partials(self, mask, name)[0]

    def constant_partials(self, mask):
        """{input index: value} for the partials that are constants (the 1 of
        ``x + c`` with respect to ``c``): no kernel need compute them."""
        return render_partials(self, mask, "_")[2]

    def compile(self, flavour, name):
        text, namespace = render_values(self, flavour, name)
        return exec_text(free_early(text) if flavour == "numpy" else text, namespace, name)

    def compile_partials(self, mask, name):
        text, namespace, _ = render_partials(self, mask, name)
        return exec_text(free_early(text), namespace, name)

    def jax_kernel(self, diff, name):
        """A jitted function of all inputs returning the value and the partial
        derivatives with respect to the inputs at positions ``diff``."""
        jx = load_jax()
        jnp = jx.numpy
        f, namespace = jax_values(self, name + "_jax")
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
