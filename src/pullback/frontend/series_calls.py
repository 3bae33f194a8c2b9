"""Series objects of ``np.polynomial`` built and called in the function.

``Polynomial(c)(x)`` makes an object from ``c`` and calls it: the object is a
function value built from ``c``, which pullback does not send gradients
through.  Written as one call, ``series_value(Polynomial, c, x=x)``
(``runtime.series_value``), it is a function of ``c`` and ``x`` with a rule in
both (``rules.numpy_series_classes``).  A series bound to a name that is only
called (``p = Chebyshev(c, domain=d)``, then ``p(x)``, ``p(y)``) keeps its
arguments in names of their own (a literal, ``domain=[0.0, 2.0]``, is
written at each call), evaluated where ``p`` was made, in Python's order,
and each call reads them::

    p = Chebyshev(c, domain=d)        ->      p_coef = c
    y = p(x) + p(2 * x)                       p_domain = d
                                              y = series_value(Chebyshev, p_coef,
                                                               domain=p_domain, x=x) + ...

Applies to NumPy's series classes (``Polynomial``, ``Chebyshev``, ``Legendre``,
``Hermite``, ``HermiteE``, ``Laguerre``; not a user's subclass) named
by the function (a global, a captured value, ``np.polynomial.Polynomial``),
called with the coefficients and at most ``domain``, ``window`` and
``symbol``.  A series used otherwise (``p.deriv()``, ``p.coef``, passed on)
is left as it is (a series built from values being differentiated is then
refused where it is made, naming the line).

>>> from numpy.polynomial import Polynomial
>>> from pullback.testing import function_from_source
>>> from pullback.backend.codegen import unparse
>>> from pullback.frontend.parse import parse
>>> from pullback.ir.naming import Namer
>>> f = function_from_source('''
... def f(c, x):
...     p = Polynomial(c * 2.0)
...     return p(x) + Polynomial(c, [0.0, 2.0])(x)
... ''', {"Polynomial": Polynomial})
>>> parsed = parse(f)
>>> write_series_calls(parsed.tree, Namer.for_tree(parsed.tree, ()), parsed)
>>> print(unparse(parsed.tree).strip())
def f(c, x):
    p_coef = c * 2.0
    return series_value(Polynomial, p_coef, x=x) + series_value(Polynomial, c, domain=[0.0, 2.0], x=x)
>>> import numpy as np, pullback as pb
>>> pb.grad(f)(np.array([1.0, 1.0]), 3.0)   # 2 (1, x) + (1, u): u = x - 1 maps [0, 2] to [-1, 1]
array([3., 8.])
"""
from __future__ import annotations

import copy

import gast
from numpy.polynomial._polybase import ABCPolyBase

from ..ir.build import closure_name as _helper
from ..runtime.origin import module_name
from ..runtime.series_support import series_value
from .properties import static_value

__all__ = ["write_series_calls"]

_PARAMS = ("domain", "window", "symbol")        # ABCPolyBase.__init__'s, after coef


def write_series_calls(fn: gast.FunctionDef, namer, parsed) -> None:
    """Rewrite, in the FunctionDef ``fn`` (in place), series objects made and
    called in it into ``series_value`` calls (module docstring)."""
    if not any(_series_class(n.func, parsed) for n in gast.walk(fn)
               if isinstance(n, gast.Call)):
        return
    helper = None

    def value(cls, coef, x, rest, where):
        nonlocal helper
        helper = helper or _helper(namer, parsed, "series_value", series_value)
        # (x last, by keyword: evaluated after the series' arguments, as Python does)
        call = gast.Call(func=_name(helper), args=[cls, coef],
                         keywords=[gast.keyword(arg=k, value=v) for k, v in rest + [("x", x)]])
        for n in gast.walk(call):
            if getattr(n, "lineno", None) is None:
                gast.copy_location(n, where)
        return call

    named = _named_series(fn, parsed)
    made = {}       # series name -> (class node, coef name, [(param, name or literal)])
    for name, (cls, coef, rest) in named.values():
        # (a literal, `domain=[-2.0, 3.0]`, is written at each call: a constant there)
        made[name] = (cls, namer.fresh(f"{name}_coef"),
                      [(k, v if _literal(v) else namer.fresh(f"{name}_{k}")) for k, v in rest])

    class Calls(gast.NodeTransformer):
        def visit_Call(self, node):
            self.generic_visit(node)
            if len(node.args) != 1 or node.keywords or isinstance(node.args[0], gast.Starred):
                return node
            f = node.func
            if isinstance(f, gast.Name) and f.id in made:
                cls, coef, rest = made[f.id]
                return value(cls, _name(coef), node.args[0], [
                    (k, _name(v) if isinstance(v, str) else copy.deepcopy(v)) for k, v in rest],
                    node)
            inner = _arguments(f, parsed) if isinstance(f, gast.Call) else None
            return node if inner is None else value(*inner[:2], node.args[0], inner[2], node)

    def block(stmts):
        out = []
        for stmt in stmts:
            if id(stmt) in named:       # its arguments, in order, into the names calls read
                name, (_, coef, rest) = named[id(stmt)]
                _, held, kept = made[name]
                for new, v in zip([held] + [n for _, n in kept], [coef] + [v for _, v in rest]):
                    if not isinstance(new, str):
                        continue
                    out.append(gast.copy_location(gast.Assign(
                        targets=[_name(new, gast.Store())], value=Calls().visit(v),
                        type_comment=None), stmt))
                continue
            for field in ("body", "orelse", "finalbody"):
                if isinstance(getattr(stmt, field, None), list):
                    setattr(stmt, field, block(getattr(stmt, field)))
            for h in getattr(stmt, "handlers", None) or []:
                h.body = block(h.body)
            out.append(_heads(stmt) if isinstance(stmt, (
                gast.If, gast.For, gast.While, gast.With, gast.Try, gast.FunctionDef,
                gast.ClassDef)) else Calls().visit(stmt))
        return out

    def _heads(stmt):
        """A compound statement's own expressions (its blocks are done)."""
        for field in ("test", "iter"):
            if getattr(stmt, field, None) is not None:
                setattr(stmt, field, Calls().visit(getattr(stmt, field)))
        for item in getattr(stmt, "items", None) or []:
            item.context_expr = Calls().visit(item.context_expr)
        return stmt

    fn.body = block(fn.body)


def _series_class(func, parsed):
    """Whether ``func`` names one of NumPy's series classes (a subclass of the
    user's could evaluate otherwise than the rules say)."""
    cls = static_value(func, parsed)
    return isinstance(cls, type) and issubclass(cls, ABCPolyBase) \
        and module_name(cls).startswith("numpy.")


def _arguments(call, parsed):
    """``(class node, coef node, [(param, node)])`` of ``S(c, ...)`` with ``S``
    a series class and only ``domain``, ``window``, ``symbol`` besides; else
    None."""
    if not _series_class(call.func, parsed) or len(call.args) not in range(1, 5) \
            or any(isinstance(a, gast.Starred) for a in call.args) \
            or any(k.arg not in _PARAMS for k in call.keywords):
        return None
    rest = list(zip(_PARAMS, call.args[1:])) + [(k.arg, k.value) for k in call.keywords]
    if len({k for k, _ in rest}) != len(rest):
        return None
    return call.func, call.args[0], rest


def _named_series(fn, parsed):
    """Statement id -> (name, arguments) for ``p = S(c, ...)`` where ``p`` is
    bound there only and every use of it is a call ``p(x)``."""
    binds, calls, uses = {}, set(), {}
    for n in gast.walk(fn):
        if isinstance(n, gast.Name):
            key = "stores" if isinstance(n.ctx, (gast.Store, gast.Del, gast.Param)) else "loads"
            uses.setdefault(n.id, {"stores": 0, "loads": 0})[key] += 1
        if isinstance(n, gast.Call) and isinstance(n.func, gast.Name) and len(n.args) == 1 \
                and not n.keywords and not isinstance(n.args[0], gast.Starred):
            calls.add(id(n.func))
        if isinstance(n, (gast.Global, gast.Nonlocal)):
            for name in n.names:
                uses.setdefault(name, {"stores": 0, "loads": 0})["stores"] += 2
        if isinstance(n, gast.Assign) and len(n.targets) == 1 \
                and isinstance(n.targets[0], gast.Name) and isinstance(n.value, gast.Call):
            args = _arguments(n.value, parsed)
            if args is not None:
                binds[n.targets[0].id] = (n, args)
    called = {}
    for n in gast.walk(fn):
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load):
            called.setdefault(n.id, []).append(id(n) in calls)
    return {id(stmt): (name, args) for name, (stmt, args) in binds.items()
            if uses[name]["stores"] == 1 and called.get(name) and all(called[name])}


def _literal(node):
    """A constant written out: a number, a string, a list or tuple of them."""
    if isinstance(node, (gast.List, gast.Tuple)):
        return all(_literal(e) for e in node.elts)
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, (gast.USub, gast.UAdd)):
        return _literal(node.operand)
    return isinstance(node, gast.Constant)


def _name(id_, ctx=None):
    return gast.Name(id=id_, ctx=ctx or gast.Load(), annotation=None, type_comment=None)
