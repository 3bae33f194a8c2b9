"""``global`` counters and flags: a function that declares ``global calls``
and stores ``calls += 1`` changes its module's ``calls`` once per call, as
Python does.

The name's reads and stores become reads and stores of the module's
namespace (the function's module, or its ``__globals__`` where no module
holds them, reached through a closure variable), statements of the primal that the adjoint never runs again::

    def f(x):                                def f(x):
        global calls                             set_global(module, 'calls',
        calls += 1                       ->          global_value(module, 'calls') + 1)
        return np.sin(x) * scale                 return np.sin(x) * scale

The values stored must be made of constants and such globals only
(``calls += 1``, ``mode = "eval"``, ``n = n * 2``): a global carries no
gradient, so a store of a value computed from the function's own values
(``global last; last = x * 2``) is refused, naming the line, and so is a
``global`` name bound otherwise (a loop variable, ``del``, ``with ... as``).

>>> from pullback import testing, backend, frontend, ir
>>> import pullback.frontend.parse, pullback.ir.naming, pullback.backend.codegen
>>> parsed = frontend.parse.parse(testing.function_from_source('''
... def f(x):
...     global calls
...     calls += 1
...     return x * calls
... ''', {"calls": 0}))
>>> follow_globals(parsed.tree, ir.naming.Namer.for_tree(parsed.tree, ()), parsed)
>>> print(backend.codegen.unparse(parsed.tree).strip())
def f(x):
    set_global(module_globals, 'calls', global_value(module_globals, 'calls') + 1)
    return x * global_value(module_globals, 'calls')
"""
from __future__ import annotations

import sys

import gast

from ..ir.build import closure_name, located, name as _name
from ..ir.walk import scope_nodes
from ..rules.registry import nondifferentiable
from ..runtime.objects import global_value, set_global

__all__ = ["follow_globals"]


def follow_globals(fn: gast.FunctionDef, namer, parsed) -> None:
    """Rewrite, in the FunctionDef ``fn`` (in place), the names its own
    ``global`` statements declare (module docstring)."""
    declared = [n for n in scope_nodes(fn) if isinstance(n, gast.Global)]
    names = {v for g in declared for v in g.names}
    if not names:
        return
    checked = set()
    for node in scope_nodes(fn):
        if isinstance(node, (gast.Assign, gast.AugAssign)):
            targets = node.targets if isinstance(node, gast.Assign) else [node.target]
            if any(isinstance(t, gast.Name) and t.id in names for t in targets):
                _check_store(node, targets, names, parsed)
                checked.add(id(targets[0]))
        elif isinstance(node, gast.Name) and node.id in names and id(node) not in checked \
                and not isinstance(node.ctx, gast.Load):
            raise parsed.unsupported(
                node, f"the global `{node.id}` bound other than by `{node.id} = value`",
                f"Bind `{node.id}` by an assignment of a constant, or keep the value in a "
                "local name.")
    space = parsed.fn.__globals__
    home = sys.modules.get(space.get("__name__"))
    if home is not None and getattr(home, "__dict__", None) is space:
        space = home            # (the module itself: an ahead-of-time artifact imports it)
    module = closure_name(namer, parsed, "module_globals", space)
    read = closure_name(namer, parsed, "global_value", global_value)
    store = closure_name(namer, parsed, "set_global", set_global)
    _Rewrite(names, module, read, store).generic_visit(fn)


def _check_store(node, targets, names, parsed):
    if len(targets) != 1 or not isinstance(targets[0], gast.Name):
        raise parsed.unsupported(
            node, "a store into a global name together with other names",
            "Store the global on a line of its own: `calls = calls + 1`.")
    for n in gast.walk(node.value):
        if isinstance(n, gast.Name) and n.id not in names or isinstance(
                n, (gast.Call, gast.Attribute, gast.Subscript, gast.Lambda)):
            raise parsed.unsupported(
                node, f"a store into the global `{targets[0].id}` of a value computed from "
                      "the function's values: pullback follows a global counter or flag "
                      "(`calls += 1`), which carries no gradient",
                "Return the value instead (`return y, x * 2`), or keep it in a local name.")


class _Rewrite(gast.NodeTransformer):
    def __init__(self, names, module, read, store):
        self.names, self.module, self.read, self.store = names, module, read, store

    def value(self, name):
        return gast.Call(func=_name(self.read), args=[
            _name(self.module), gast.Constant(name, None)], keywords=[])

    def stored(self, node, name, value):
        call = gast.Call(func=_name(self.store), args=[
            _name(self.module), gast.Constant(name, None), value], keywords=[])
        return located(gast.Expr(value=call), node)

    def visit_Global(self, node):
        return None

    def visit_Name(self, node):
        if isinstance(node.ctx, gast.Load) and node.id in self.names:
            return gast.copy_location(self.value(node.id), node)
        return node

    def visit_Assign(self, node):
        target = node.targets[0]
        node.value = self.visit(node.value)
        if isinstance(target, gast.Name) and target.id in self.names:
            return self.stored(node, target.id, node.value)
        node.targets = [self.visit(t) for t in node.targets]
        return node

    def visit_AugAssign(self, node):
        node.value = self.visit(node.value)
        if isinstance(node.target, gast.Name) and node.target.id in self.names:
            value = gast.BinOp(left=self.value(node.target.id), op=node.op, right=node.value)
            return self.stored(node, node.target.id, value)
        node.target = self.visit(node.target)
        return node

    def visit_FunctionDef(self, node):
        return node         # (a nested function reads the module's names itself)

    def visit_Lambda(self, node):
        return node

    def visit_ClassDef(self, node):
        return node


nondifferentiable(global_value)
nondifferentiable(set_global)
