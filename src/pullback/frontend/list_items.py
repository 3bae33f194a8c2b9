"""Lists written into by item, made into one name per item.

A list built by one display at the top of the function (``state = [q, p]``)
and used only through constant indices (``state[1]``, ``state[-1]``), by
``len(state)``, in ``for`` loops over ``range`` of a known length or over the
list itself, and in ``return state``, holds references: ``state[1] -= v`` on
an array changes that array in place (so ``p`` changes too), on a number it
rebinds the item.  Giving each item a name of its own keeps exactly those
semantics, which the passes after this one follow for names (updates,
aliases, writes into arguments): ``state_1 = p`` then ``state_1 -= v`` is an
update of an array ``p`` also names.  Loops whose body indexes such a list
with the loop variable are unrolled first (at most ``MAX_TRIPS`` trips; no
``break``, ``continue``, ``return`` or nested function in the body)::

    def f(a, b, x):                        def f(a, b, x):
        params = [a, b]                        params_0 = a
        g = [2.0 * a, 3.0 * b]                 params_1 = b
        for i in range(len(params)):  ->       g_0 = 2.0 * a
            params[i] -= 0.1 * g[i]            g_1 = 3.0 * b
        return np.sum(params[1] * x)           i = 0
                                               params_0 -= 0.1 * g_0
                                               i = 1
                                               params_1 -= 0.1 * g_1
                                               return np.sum(params_1 * x)

A list used any other way (passed to a function, appended to, indexed by a
value known only when it runs, built in a loop or a branch) is left as it is:
``analyses.item_stores`` refuses a differentiated value stored into it.

>>> from pullback.testing import function_from_source
>>> from pullback.backend.codegen import unparse
>>> from pullback.frontend.parse import parse
>>> from pullback.ir.naming import Namer
>>> f = function_from_source('''
... def f(q, p):
...     state = [q, p]
...     state[1] -= 0.1 * state[0]
...     return state
... ''')
>>> parsed = parse(f)
>>> split_lists(parsed.tree, Namer.for_tree(parsed.tree, ()), parsed)
>>> print(unparse(parsed.tree).strip())
def f(q, p):
    state_0 = q
    state_1 = p
    state_1 -= 0.1 * state_0
    return [state_0, state_1]
"""
from __future__ import annotations

import copy

import gast

from ..ir.walk import scope_nodes

__all__ = ["split_lists", "MAX_TRIPS"]

MAX_TRIPS = 64

_NESTED = (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ClassDef)
_EXITS = (gast.Break, gast.Continue, gast.Return, gast.Yield, gast.YieldFrom, gast.Global,
          gast.Nonlocal, gast.Try)


def split_lists(tree, namer, parsed=None):
    """Rewrite the FunctionDef ``tree`` in place (see the module docstring)."""
    displays = _candidates(tree)
    if not displays:
        return
    tree.body = _unroll_all(tree.body, displays)
    checked = _checks(parsed)
    for name in [n for n in displays if not _only_indexed(tree, n, displays[n][1], checked)]:
        del displays[name]
    if not displays:
        return
    names = {n: [namer.fresh(f"{n}_{k}") for k in range(len(items))]
             for n, (_, items) in displays.items()}
    _Split(displays, names, checked).visit(tree)
    body = []
    for stmt in tree.body:
        hit = next((n for n, (s, _) in displays.items() if s is stmt), None)
        if hit is None:
            body.append(stmt)
            continue
        for target, value in zip(names[hit], displays[hit][1]):
            body.append(gast.copy_location(gast.Assign(
                targets=[_name(target, gast.Store())], value=value, type_comment=None), stmt))
    tree.body = body


# -- which lists -------------------------------------------------------------------------



def _candidates(tree):
    """name -> (its display statement, the display's items): lists bound once,
    by a display at the top level of the body, and written into by item."""
    params = {a.id for a in tree.args.args + tree.args.posonlyargs + tree.args.kwonlyargs}
    params |= {a.id for a in (tree.args.vararg, tree.args.kwarg) if a is not None}
    stores, nested, declared = {}, set(), set()
    for n in scope_nodes(tree):
        if isinstance(n, gast.Name) and isinstance(n.ctx, (gast.Store, gast.Del)):
            stores[n.id] = stores.get(n.id, 0) + 1
        elif isinstance(n, (gast.Global, gast.Nonlocal)):
            declared.update(n.names)
        elif isinstance(n, _NESTED) and n is not tree:
            nested.update(m.id for m in gast.walk(n) if isinstance(m, gast.Name))
    out = {}
    for stmt in tree.body:
        if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 \
                and isinstance(stmt.targets[0], gast.Name) \
                and isinstance(stmt.value, gast.List) \
                and not any(isinstance(e, gast.Starred) for e in stmt.value.elts):
            name = stmt.targets[0].id
            if stores.get(name) == 1 and name not in params | nested | declared \
                    and len(stmt.value.elts) <= MAX_TRIPS:
                out[name] = (stmt, list(stmt.value.elts))
    written = set()
    for n in scope_nodes(tree):
        if isinstance(n, gast.Subscript) and isinstance(n.ctx, gast.Store):
            root = n
            while isinstance(root, gast.Subscript):
                root = root.value
            if isinstance(root, gast.Name):
                written.add(root.id)
    return {n: v for n, v in out.items() if n in written}


def _checks(parsed):
    """The names that call ``runtime.indexable`` (desugar writes
    ``indexable(xs)`` before a loop over ``xs``; a list display always is)."""
    from ..runtime import indexable
    out = set()
    for name, cell in (getattr(parsed, "closure", None) or {}).items():
        try:
            if cell.cell_contents is indexable:
                out.add(name)
        except ValueError:
            pass
    return out


def _is_check(stmt, names, checked):
    return isinstance(stmt, gast.Expr) and isinstance(stmt.value, gast.Call) \
        and isinstance(stmt.value.func, gast.Name) and stmt.value.func.id in checked \
        and len(stmt.value.args) == 1 and isinstance(stmt.value.args[0], gast.Name) \
        and stmt.value.args[0].id in names


def _only_indexed(tree, name, items, checked):
    """Whether every use of ``name`` (but its display) is ``name[k]`` with a
    constant ``k``, ``len(name)``, ``return name`` or desugar's
    ``indexable(name)``."""
    parents = {}
    for n in scope_nodes(tree):
        for c in gast.iter_child_nodes(n):
            parents[c] = n
    for n in scope_nodes(tree):
        if not (isinstance(n, gast.Name) and n.id == name) or isinstance(n.ctx, gast.Store):
            continue
        up = parents.get(n)
        if isinstance(up, gast.Subscript) and up.value is n \
                and _index(up.slice, len(items)) is not None:
            continue
        if isinstance(up, gast.Call) and isinstance(up.func, gast.Name) \
                and up.func.id == "len" and up.args == [n] and not up.keywords:
            continue
        if isinstance(up, gast.Return) and up.value is n:
            continue
        if isinstance(up, gast.Call) and _is_check(parents.get(up), {name}, checked):
            continue
        return False
    return True


def _index(node, n):
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub) \
            and isinstance(node.operand, gast.Constant):
        node = gast.Constant(-node.operand.value, None)
    if isinstance(node, gast.Constant) and type(node.value) is int and -n <= node.value < n:
        return node.value % n
    return None


# -- unrolling loops ---------------------------------------------------------------------

def _unroll_all(stmts, displays):
    out = []
    for stmt in stmts:
        if isinstance(stmt, gast.For):
            copies = _unrolled(stmt, displays)
            if copies is not None:
                out.extend(_unroll_all(copies, displays))
                continue
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], gast.stmt) \
                    and not isinstance(stmt, _NESTED):
                setattr(stmt, field, _unroll_all(inner, displays))
        out.append(stmt)
    return out


def _unrolled(loop, displays):
    """The statements of ``loop`` unrolled, or None where it is not to be."""
    if loop.orelse or not isinstance(loop.target, gast.Name):
        return None
    var = loop.target.id
    trips = _trips(loop.iter, displays)
    if trips is None:
        return None
    over_list = isinstance(loop.iter, gast.Name)
    body_nodes = [n for s in loop.body for n in gast.walk(s)]
    if any(isinstance(n, _EXITS + _NESTED) for n in body_nodes):
        return None
    if any(isinstance(n, gast.Name) and n.id == var and not isinstance(n.ctx, gast.Load)
           for n in body_nodes):
        return None
    uses = over_list or any(
        isinstance(n, gast.Subscript) and isinstance(n.value, gast.Name)
        and n.value.id in displays and isinstance(n.slice, gast.Name) and n.slice.id == var
        for n in body_nodes)
    if not uses or len(trips) > MAX_TRIPS:
        return None
    out = []
    for k, value in enumerate(trips):
        if over_list:       # `for layer in layers`: the item as it is when the trip starts
            bound = gast.Subscript(value=_name(loop.iter.id, gast.Load()),
                                   slice=gast.Constant(k, None), ctx=gast.Load())
        else:
            bound = gast.Constant(value, None)
        out.append(_located(gast.Assign(targets=[_name(var, gast.Store())], value=bound,
                                        type_comment=None), loop))
        for s in copy.deepcopy(loop.body):
            if not over_list:
                _Constant(var, value).visit(s)
            out.append(s)
    return out


def _trips(node, displays):
    """The values a ``for`` over ``node`` takes, where they are known now."""
    if isinstance(node, gast.Name) and node.id in displays:
        return list(range(len(displays[node.id][1])))
    if not (isinstance(node, gast.Call) and isinstance(node.func, gast.Name)
            and node.func.id == "range" and not node.keywords and 1 <= len(node.args) <= 3):
        return None
    bounds = []
    for a in node.args:
        if isinstance(a, gast.Constant) and type(a.value) is int:
            bounds.append(a.value)
        elif isinstance(a, gast.Call) and isinstance(a.func, gast.Name) \
                and a.func.id == "len" and len(a.args) == 1 and not a.keywords \
                and isinstance(a.args[0], gast.Name) and a.args[0].id in displays:
            bounds.append(len(displays[a.args[0].id][1]))
        else:
            return None
    if len(bounds) == 3 and bounds[2] == 0:
        return None
    return list(range(*bounds))


class _Constant(gast.NodeTransformer):
    def __init__(self, var, value):
        self.var, self.value = var, value

    def visit_Name(self, node):
        if node.id == self.var and isinstance(node.ctx, gast.Load):
            return gast.copy_location(gast.Constant(self.value, None), node)
        return node


# -- the rewrite -------------------------------------------------------------------------

class _Split(gast.NodeTransformer):
    def __init__(self, displays, names, checked):
        self.displays, self.names, self.checked = displays, names, checked

    def visit_Expr(self, node):
        if _is_check(node, self.names, self.checked):
            return None         # `indexable(xs)`: a list, as its display made it
        return self.generic_visit(node)

    def visit_Subscript(self, node):
        if isinstance(node.value, gast.Name) and node.value.id in self.names:
            names = self.names[node.value.id]
            k = _index(node.slice, len(names))
            return gast.copy_location(_name(names[k], node.ctx), node)
        return self.generic_visit(node)

    def visit_Call(self, node):
        if isinstance(node.func, gast.Name) and node.func.id == "len" and len(node.args) == 1 \
                and isinstance(node.args[0], gast.Name) and node.args[0].id in self.names:
            return gast.copy_location(gast.Constant(len(self.names[node.args[0].id]), None),
                                      node)
        return self.generic_visit(node)

    def visit_Return(self, node):
        if isinstance(node.value, gast.Name) and node.value.id in self.names:
            node.value = gast.copy_location(gast.List(
                elts=[_name(n, gast.Load()) for n in self.names[node.value.id]],
                ctx=gast.Load()), node.value)
            return node
        return self.generic_visit(node)

    # (a list named inside a nested function is no candidate: nothing to skip)


def _name(id_, ctx):
    return gast.Name(id=id_, ctx=ctx, annotation=None, type_comment=None)


def _located(node, at):
    gast.copy_location(node, at)
    for n in gast.walk(node):
        gast.copy_location(n, at)
    return node
