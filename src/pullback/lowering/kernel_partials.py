"""Kernel partials: NumPy forward mode over a kernel program, each step's
value then its tangent along each differentiated input, from the step's own
rule taken as the linear map it is (``exp``: ``t * ans``); a one-argument
ufunc's partial that several inputs need is computed once
(``shared_partial``)::

>>> import operator
>>> import numpy as np
>>> from pullback.ir.build import name
>>> from pullback.lowering.kernel_programs import Program, Step
>>> p = Program(["x", "w"], [Step("s", np.sin, [name("x")]),
...                          Step("y", operator.mul, [name("s"), name("w")])], "y")
>>> print(render_partials(p, (0, 1), "k_partials")[0])
def k_partials(x, w):
    s = np.sin(x)
    s_dx = np.cos(x)
    y = s * w
    y_dx = s_dx * w
    return y, (y_dx, s)
<BLANKLINE>
"""
from __future__ import annotations

import numpy as np

from .kernel_text import Cast, namespace_for, passes_tangent, step_text

__all__ = ["render_partials"]


def render_partials(program, mask, name):
    """Forward mode over the region in NumPy: each step's value, then its
    tangent along each differentiated input, from the step's own rule taken
    as the linear map it is (``exp``: ``t * ans``).  Returns the value and one
    partial derivative per input in ``mask`` (None where none flows)."""
    import gast
    from ..backend.codegen import unparse
    from ..rules.inline import instantiate
    from ..ir.naming import Namer
    from ..rules.registry import lookup

    namespace = namespace_for("numpy")
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
        lines.append(f"    {step.target} = {step_text(step, 'numpy')}")
        if step.prim is None:
            continue
        if passes_tangent(step.prim):
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
        shared = shared_partial(step, rule, subst, mask, tangent, namer, bind_global, emit)
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


def shared_partial(step, rule, subst, mask, tangent, namer, bind_global, emit):
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
    return emit(times_one(expr), f"{step.target}_d")


def times_one(expr):
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
                return times_one(other)
            if v == -1.0:
                return gast.UnaryOp(op=gast.USub(), operand=times_one(other))
        left = times_one(expr.left)
        if left is not expr.left:
            return gast.BinOp(left=left, op=gast.Mult(), right=expr.right)
    return expr
