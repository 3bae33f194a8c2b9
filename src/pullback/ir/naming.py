"""Readable, collision-free names for generated code.

Temporaries are named after what they hold (``xw`` for ``x @ w``,
``tanh_h`` for ``np.tanh(h)``), gradients after their primal (``x_bar``),
and a name already used anywhere in the user's function is never reused.

>>> import gast
>>> namer = Namer({"x", "xw"})
>>> namer.fresh("xw"), namer.fresh("xw"), namer.version("x"), namer.fresh("x_bar")
('xw_1', 'xw_2', 'x_1', 'x_bar')
>>> e = gast.parse("np.tanh(x @ w)").body[0].value
>>> describe(e), describe(e.args[0])
('tanh', 'xw')
"""
from __future__ import annotations

import builtins
import keyword
import re

import gast

_MAX = 16
_BUILTINS = set(dir(builtins))
_OP_NOUNS = {gast.Add: "total", gast.Sub: "diff", gast.Mult: "prod", gast.Div: "ratio",
             gast.MatMult: "matprod", gast.Pow: "power"}

_BINOP_WORDS = {
    gast.Add: "plus", gast.Sub: "minus", gast.Div: "over", gast.FloorDiv: "floordiv",
    gast.Mod: "mod", gast.Pow: "pow", gast.BitAnd: "and", gast.BitOr: "or",
    gast.BitXor: "xor", gast.LShift: "lshift", gast.RShift: "rshift",
}


class Namer:
    """Hands out fresh names that clash with nothing in ``taken``."""

    def __init__(self, taken=()):
        self.taken = set(taken) | _BUILTINS

    @classmethod
    def for_tree(cls, tree, extra=()):
        names = {n.id for n in gast.walk(tree) if isinstance(n, gast.Name)}
        names |= {a for n in gast.walk(tree) if isinstance(n, gast.FunctionDef)
                  for a in [n.name]}
        return cls(names | set(extra))

    def reserve(self, name):
        self.taken.add(name)
        return name

    def fresh(self, base):
        base = _clean(base)
        name, k = base, 1
        while name in self.taken or keyword.iskeyword(name):
            name = f"{base}_{k}"
            k += 1
        self.taken.add(name)
        return name

    def version(self, name):
        """A new SSA name for a re-assigned variable: ``y`` -> ``y_1``."""
        return self.fresh(re.sub(r"_\d+$", "", name) or name)


def _clean(base):
    base = re.sub(r"\W+", "_", str(base)).strip("_") or "tmp"
    if base[0].isdigit():
        base = "v" + base
    if len(base) > 40:
        base = base[:40].rstrip("_")
    return base


def describe(expr):
    """A short name for the value ``expr`` computes (an ANF right-hand side)."""
    name = _describe(expr)
    if len(name) > _MAX and isinstance(expr, gast.BinOp):
        return _OP_NOUNS.get(type(expr.op), "tmp")
    if len(name) > _MAX and isinstance(expr, gast.Call):
        fn = expr.func.attr if isinstance(expr.func, gast.Attribute) else \
            getattr(expr.func, "id", "call")
        return fn if len(fn) <= _MAX else "result"
    return name[:_MAX].rstrip("_") if len(name) > _MAX else name


def _describe(expr):
    if isinstance(expr, gast.Name):
        return expr.id
    if isinstance(expr, gast.Constant):
        v = expr.value
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return re.sub(r"\W", "_", repr(v).replace("-", "neg").replace(".0", ""))
        return "const"
    if isinstance(expr, gast.Attribute):
        return expr.attr if isinstance(expr.value, gast.Name) and expr.attr != "T" \
            else f"{describe(expr.value)}_{expr.attr}"
    if isinstance(expr, gast.BinOp):
        a, b = describe(expr.left), describe(expr.right)
        if isinstance(expr.op, gast.Mult):
            return f"{a}_{b}"
        if isinstance(expr.op, gast.MatMult):
            return f"{a}{b}" if len(a) + len(b) <= 4 else f"{a}_at_{b}"
        return f"{a}_{_BINOP_WORDS.get(type(expr.op), 'op')}_{b}"
    if isinstance(expr, gast.UnaryOp):
        return ("neg_" if isinstance(expr.op, gast.USub) else "") + describe(expr.operand)
    if isinstance(expr, gast.Call):
        fn = expr.func.attr if isinstance(expr.func, gast.Attribute) else \
            getattr(expr.func, "id", "call")
        if isinstance(expr.func, gast.Attribute) and _is_method(expr.func):
            return f"{describe(expr.func.value)}_{fn}"
        args = [describe(a) for a in expr.args[:2] if isinstance(a, gast.Name)]
        return "_".join([fn] + args)
    if isinstance(expr, gast.Subscript):
        return f"{describe(expr.value)}_item"
    if isinstance(expr, (gast.Compare, gast.BoolOp)):
        return "cond"
    if isinstance(expr, (gast.Tuple, gast.List)):
        return "pack"
    return "tmp"


def _is_method(func):
    # x.sum() (a method on a local) versus np.sum (a module attribute); the
    # caller knows which; describe only needs a plausible word.
    return isinstance(func.value, gast.Name) and func.value.id not in ("np", "math", "numpy")


class HelperNames:
    """How generated code names the values it calls (``np``, a runtime
    helper, a callee's pair): the user's own binding or an unshadowed builtin
    where one holds the very value, else a fresh name recorded in
    ``helpers`` (name -> value), which the loader binds.  The reverse pass's
    context and the forward pass share it; each sets ``helpers`` (a dict),
    ``namer`` (a ``Namer``), ``parsed`` (its ``globals``) and ``user_locals``.

    >>> import numpy as np, types
    >>> h = HelperNames()
    >>> h.helpers, h.namer, h.user_locals = {}, Namer({"x"}), {"x"}
    >>> h.parsed = types.SimpleNamespace(globals={"np": np})
    >>> h.helper("np", np), h.helper("slice", slice), h.helper("x", abs), h.helpers
    ('np', 'slice', 'x_1', {'x_1': <built-in function abs>})
    >>> h.resolve(gast.parse("np.linalg").body[0].value) is np.linalg
    True
    """

    helpers: dict
    namer: Namer
    user_locals: set

    def helper(self, name, value):
        """The name under which generated code refers to ``value``."""
        if self.helpers.get(name) is value:
            return name
        if self.parsed.globals.get(name) is value and name not in self.helpers \
                and name not in self.user_locals:
            return name        # the user's module already binds it, e.g. np
        if getattr(builtins, name, None) is value and name not in self.parsed.globals \
                and name not in self.user_locals:
            return name        # a builtin nobody shadows, e.g. slice
        for used, v in self.helpers.items():
            if v is value and used.startswith(name):
                return used
        fresh = self.namer.fresh(name)
        self.helpers[fresh] = value
        return fresh

    def resolve(self, node):
        """The value a dotted name in generated code refers to, or None."""
        if isinstance(node, gast.Attribute):
            base = self.resolve(node.value)
            return getattr(base, node.attr, None) if base is not None else None
        if isinstance(node, gast.Name):
            if node.id in self.helpers:
                return self.helpers[node.id]
            return self.parsed.globals.get(node.id)
        return None

