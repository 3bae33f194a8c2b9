"""Super calls: ``super().name(...)`` in a method becomes a call of the base
class's function with the object an explicit argument.

``super()`` reads the method's first parameter and its class implicitly;
written as a call with no arguments it would look constant, and the
gradient of ``self`` reaching the base's method would be lost.  Written
out, ``self`` is an argument the analyses see::

    class TanhLinear(Linear):                 def forward(self, x):
        def forward(self, x):          ->        fn = super_function(TanhLinear, self, 'forward')
            return np.tanh(super().forward(x))  return np.tanh(fn(self, x))

(the call is written in place: ``super_function(...)(self, x)``).
``super(Cls, obj).name(...)`` with ``obj`` a name is rewritten alike.
``super().__init__(...)`` is left to ``frontend.instances``; any other use of
``super`` (``s = super()``, ``super().attr``, in a method whose first
parameter is assigned) is refused naming the line.

>>> from pullback.testing import function_from_source
>>> from pullback.backend.codegen import unparse
>>> from pullback.frontend.parse import parse
>>> from pullback.ir.naming import Namer
>>> B = function_from_source('''
... def make():
...     class A:
...         def f(self, x):
...             return x * self.w
...     class B(A):
...         def f(self, x):
...             return np.tanh(super().f(x))
...     return B
... ''')()
>>> parsed = parse(B.f)
>>> write_super_calls(parsed.tree, Namer.for_tree(parsed.tree, ()), parsed)
>>> print(unparse(parsed.tree).strip())
def f(self, x):
    return np.tanh(super_function(B, self, 'f')(self, x))
"""
from __future__ import annotations

import types

import gast

from ..ir.grammar import assigned_names
from ..rules.registry import nondifferentiable
from ..runtime.super_calls import super_function

__all__ = ["write_super_calls"]


def write_super_calls(fn: gast.FunctionDef, namer, parsed) -> None:
    """Rewrite the super calls of ``fn`` (a gast FunctionDef) in place."""
    uses = [n for n in gast.walk(fn) if isinstance(n, gast.Name) and n.id == "super"
            and isinstance(n.ctx, gast.Load)]
    if not uses or _shadowed(parsed):
        return
    calls = {id(n.func.value.func): n for n in gast.walk(fn) if _super_method_call(n)}
    names = {}
    for use in uses:
        call = calls.get(id(use))
        if call is None:
            if _is_init_call(fn, use):
                continue
            raise parsed.unsupported(use, "this use of `super`", "Call the base class's method "
                                     "by name: `Base.method(self, ...)`.")
        cls, obj = _class_and_object(fn, call.func.value, parsed)
        if names.get("super_function") is None:
            names["super_function"] = _bind(namer, parsed, "super_function", super_function)
        if not isinstance(cls, gast.AST):
            cls = gast.Name(_bind(namer, parsed, cls.__name__, cls), gast.Load(), None, None)
        callee = gast.Call(func=gast.Name(names["super_function"], gast.Load(), None, None),
                           args=[cls, gast.Name(obj, gast.Load(), None, None),
                                 gast.Constant(call.func.attr, None)], keywords=[])
        call.func = gast.copy_location(callee, call.func)
        call.args = [gast.Name(obj, gast.Load(), None, None)] + call.args
        for node in gast.walk(call.func):
            gast.copy_location(node, call)


def _shadowed(parsed):
    """``super`` is not the builtin here (a global or a closure's name)."""
    return "super" in parsed.closure or "super" in parsed.globals


def _super_method_call(node):
    """``super(...).name(...)``."""
    return isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) \
        and isinstance(node.func.value, gast.Call) \
        and isinstance(node.func.value.func, gast.Name) and node.func.value.func.id == "super" \
        and node.func.attr != "__init__"


def _is_init_call(fn, use):
    """``super().__init__(...)`` or another ``super(...).__init__`` (frontend.instances')."""
    for node in gast.walk(fn):
        if isinstance(node, gast.Attribute) and node.attr == "__init__" \
                and isinstance(node.value, gast.Call) and node.value.func is use:
            return True
    return False


def _class_and_object(fn, sup, parsed):
    """The class (a value, or the node written) and the object's name of
    ``super()`` / ``super(Cls, obj)``."""
    if len(sup.args) == 2 and not sup.keywords and isinstance(sup.args[1], gast.Name):
        return sup.args[0], sup.args[1].id
    cell = parsed.closure.get("__class__")
    params = fn.args.posonlyargs + fn.args.args
    if sup.args or sup.keywords or cell is None or not params:
        raise parsed.unsupported(sup, "`super(...)` here", "Call the base class's method by "
                                 "name: `Base.method(self, ...)`.")
    first = params[0].id
    if first in assigned_names(fn.body):
        raise parsed.unsupported(sup, f"`super()` in a method that assigns `{first}`",
                                 "Call the base class's method by name: "
                                 f"`Base.method({first}, ...)`.")
    return cell.cell_contents, first


def _bind(namer, parsed, hint, value):
    """A fresh name the function's code reads ``value`` by."""
    name = namer.fresh(hint)
    parsed.closure[name] = types.CellType(value)
    return name


nondifferentiable(super_function)
