"""Objects another function built, met one at a time in a loop: followed
through the state function of each object's class, picked when the call runs.

``for layer in build(params): h = layer(h)``, where ``build`` returns only
lists or tuples written out of constructions (``fresh_objects``: each item a
new object that only the list holds), is rewritten so that the loop's name,
the one name of each object, is rebound to the changed object that the
state function of its class (``state_of``, ``method_state``) returns::

    for layer in build(params):         for layer in build(params):
        h = layer(h)             ->         layer_call = state_of(layer, '__call__')
                                            layer, call_result = layer_call(layer, h)
                                            h = call_result

(``frontend.state_calls`` runs this first; split from it.)

>>> from pullback.testing import function_from_source
>>> Lin = function_from_source('''
... def make():
...     class Lin:
...         def __init__(self, w):
...             self.w = w
...     return Lin
... ''', {"__name__": "example"})()
>>> build = function_from_source('''
... def build(p):
...     return [Lin(p[0]), Lin(p[1])]
... ''', {"Lin": Lin})
>>> shared = function_from_source('''
... def shared(p):
...     layer = Lin(p[0])
...     return [layer, layer]
... ''', {"Lin": Lin})
>>> fresh_objects(build), fresh_objects(shared)
(True, False)
"""
from __future__ import annotations

import ast
import inspect
import types

import gast

from ..errors import NonDifferentiableError
from ..ir.build import closure_name as _helper
from ..rules.registry import nondifferentiable
from ..runtime.objects import plain_metaclass
from ..runtime.origin import module_name
from .method_state import (_load, _located, _own_nodes, _source_tree, _store, state_function,
                           why_not_state)

__all__ = ["fresh_objects", "state_of", "follow_fresh_loops"]


def _plain(cls):
    """A user class whose objects ``with_attribute`` copies exactly: no
    metaclass other than ``abc.ABCMeta``, ``__new__``, ``__setattr__`` or ``__slots__``
    (``abc.ABC``'s empty ones aside)."""
    return isinstance(cls, type) and plain_metaclass(cls) and cls.__new__ is object.__new__ \
        and cls.__setattr__ is object.__setattr__ and cls.__dictoffset__ \
        and not any(vars(c).get("__slots__", ()) != () for c in cls.__mro__) \
        and not issubclass(cls, BaseException) \
        and module_name(cls).split(".")[0] not in (
            "builtins", "numpy", "pullback", "jax", "scipy")


def _resolve(name, parsed):
    cell = parsed.closure.get(name)
    if cell is not None:
        try:
            return cell.cell_contents
        except ValueError:
            return None
    return parsed.globals.get(name)


def _statement_of(node, parents):
    while node is not None and not isinstance(node, gast.stmt):
        node = parents.get(node)
    return node


def fresh_objects(fn):
    """Whether the user function ``fn`` returns only lists or tuples written
    out of constructions, ``[Linear(W1, b1), BatchNorm(g, b), Tanh()]``, of
    classes whose ``__init__`` is followed (or is ``object``'s): each item
    is a new object that nothing but the list holds, and no two are one."""
    tree = _source_tree(fn) if isinstance(fn, types.FunctionType) else None
    if tree is None or isinstance(tree, ast.AsyncFunctionDef):
        return False
    from .instances import followed
    returns = [n for n in _own_nodes(tree) if isinstance(n, ast.Return)]
    if not returns or any(isinstance(n, (ast.Yield, ast.YieldFrom, ast.NamedExpr))
                          for n in _own_nodes(tree)):
        return False
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    for r in returns:
        if not isinstance(r.value, (ast.List, ast.Tuple)) or not r.value.elts:
            return False
        for e in r.value.elts:
            if not (isinstance(e, ast.Call) and isinstance(e.func, ast.Name)):
                return False
            cls = fn.__globals__.get(e.func.id)
            if e.func.id in cells:
                try:
                    cls = cells[e.func.id].cell_contents
                except ValueError:
                    return False
            if not _plain(cls) or (cls.__init__ is not object.__init__
                                   and followed(cls) is None):
                return False
    return True


def state_of(obj, name):
    """The state function of ``type(obj)``'s method ``name`` (runs when the
    call does, for an object met in a loop over ``fresh_objects``): refused,
    with the reason, where it cannot be followed."""
    cls = type(obj)
    method = inspect.getattr_static(cls, name, None)
    why = None if _plain(cls) and isinstance(method, types.FunctionType) else \
        f"`{cls.__name__}.{name}` is not a method written in Python of a plain class"
    if why is None:
        why = why_not_state(cls, name)
    if why is not None:
        raise NonDifferentiableError(
            f"pullback cannot differentiate this call of `{name}` on an object of "
            f"{cls.__name__}: {why}.",
            hint="Make the method return the new values instead of changing `self`.")
    return state_function(cls, name)


def follow_fresh_loops(tree, namer, parsed):
    """``for layer in build(params): h = layer(h)`` where ``build`` returns
    new objects only (``fresh_objects``): the loop's name is the one name of
    each object, so a call that changes it goes to the state function of its
    class, picked when the call runs (``state_of``), and the name is rebound
    to the changed object::

        for layer in build(params):         for layer in build(params):
            h = layer(h)             ->         layer_call = state_of(layer, '__call__')
                                                layer, call_result = layer_call(layer, h)
                                                h = call_result
    """
    stores, binding = {}, {}
    for n in gast.walk(tree):
        if isinstance(n, gast.Name) and isinstance(n.ctx, (gast.Store, gast.Del, gast.Param)):
            stores[n.id] = stores.get(n.id, 0) + 1
        if isinstance(n, gast.Assign) and len(n.targets) == 1 \
                and isinstance(n.targets[0], gast.Name):
            binding[n.targets[0].id] = n.value
    loops = []
    for n in gast.walk(tree):
        if not isinstance(n, gast.For) or not isinstance(n.target, gast.Name):
            continue
        if isinstance(n.iter, gast.Call) and isinstance(n.iter.func, gast.Name) \
                and n.iter.func.id != "range":
            loops.append((n, n.target.id, n.iter.func.id))     # for layer in build(p)
            continue
        # desugar's form: `seq = build(p)`, `for i in range(len(seq)): layer = seq[i]`
        it = n.iter
        if not (isinstance(it, gast.Call) or isinstance(it, gast.Name)):
            continue
        it = binding.get(it.id) if isinstance(it, gast.Name) and stores.get(it.id) == 1 else it
        if not (isinstance(it, gast.Call) and isinstance(it.func, gast.Name)
                and it.func.id == "range" and len(it.args) == 1
                and isinstance(it.args[0], gast.Call) and isinstance(it.args[0].func, gast.Name)
                and it.args[0].func.id == "len" and len(it.args[0].args) == 1
                and isinstance(it.args[0].args[0], gast.Name)):
            continue
        seq = it.args[0].args[0].id
        first = n.body[0] if n.body else None
        made = binding.get(seq)
        if not (isinstance(first, gast.Assign) and len(first.targets) == 1
                and isinstance(first.targets[0], gast.Name)
                and isinstance(first.value, gast.Subscript)
                and isinstance(first.value.value, gast.Name) and first.value.value.id == seq
                and isinstance(first.value.slice, gast.Name)
                and first.value.slice.id == n.target.id
                and stores.get(seq) == 1 and isinstance(made, gast.Call)
                and isinstance(made.func, gast.Name)):
            continue
        # the list is read nowhere else: `indexable(seq)`, `len(seq)` and this item
        reads = [r for r in gast.walk(tree) if isinstance(r, gast.Name) and r.id == seq
                 and isinstance(r.ctx, gast.Load)]
        if len(reads) > 3:
            continue
        loops.append((n, first.targets[0].id, made.func.id))
    for loop, name, maker in loops:
        fn = _resolve(maker, parsed)
        if stores.get(name) != 1 or stores.get(maker) or not fresh_objects(fn):
            continue
        inside = {id(n) for s in loop.body for n in gast.walk(s)}
        uses = [n for n in gast.walk(tree) if isinstance(n, gast.Name) and n.id == name
                and isinstance(n.ctx, gast.Load)]
        if any(id(u) not in inside for u in uses):
            continue            # read after the loop: left as it is
        parents = {}
        for node in gast.walk(loop):
            for child in gast.iter_child_nodes(node):
                parents[child] = node
        calls = {}
        ok = True
        for u in uses:
            parent = parents.get(u)
            stmt = _statement_of(u, parents)
            if isinstance(parent, gast.Call) and parent.func is u:
                method, call = "__call__", parent
            elif isinstance(parent, gast.Attribute) and isinstance(parent.ctx, gast.Load) \
                    and isinstance(parents.get(parent), gast.Call) \
                    and parents[parent].func is parent:
                method, call = parent.attr, parents[parent]
            elif isinstance(parent, gast.Attribute) and isinstance(parent.ctx, gast.Load):
                continue        # a read: `layer.W`
            else:
                ok = False
                break
            if not (isinstance(stmt, (gast.Expr, gast.Assign, gast.Return))
                    and stmt.value is call) or any(
                    isinstance(a, gast.Starred) for a in call.args) or any(
                    k.arg is None for k in call.keywords) or any(
                    isinstance(n, gast.Name) and n.id == name for a in call.args
                    + [k.value for k in call.keywords] for n in gast.walk(a)):
                ok = False
                break
            calls[id(stmt)] = (method, call)
        if not ok or not calls:
            continue
        getter = _helper(namer, parsed, "state_of", state_of)

        def block(body):
            out = []
            for stmt in body:
                entry = calls.get(id(stmt))
                if entry is None:
                    for field in ("body", "orelse", "finalbody"):
                        if isinstance(getattr(stmt, field, None), list):
                            setattr(stmt, field, block(getattr(stmt, field)))
                    out.append(stmt)
                    continue
                method, call = entry
                fn_name = namer.fresh(f"{name}_{method.strip('_')}")
                result = namer.fresh(f"{method.strip('_')}_result")
                out.append(_located(gast.Assign(targets=[_store(fn_name)], value=gast.Call(
                    func=_load(getter), args=[_load(name), gast.Constant(method, None)],
                    keywords=[]), type_comment=None), stmt))
                out.append(_located(gast.Assign(
                    targets=[gast.Tuple(elts=[_store(name), _store(result)], ctx=gast.Store())],
                    value=gast.Call(func=_load(fn_name), args=[_load(name)] + list(call.args),
                                    keywords=list(call.keywords)), type_comment=None), stmt))
                if isinstance(stmt, gast.Assign):
                    out.append(_located(gast.Assign(targets=stmt.targets, value=_load(result),
                                                    type_comment=None), stmt))
                elif isinstance(stmt, gast.Return):
                    out.append(_located(gast.Return(value=_load(result)), stmt))
            return out
        loop.body = block(loop.body)


nondifferentiable(state_of)
