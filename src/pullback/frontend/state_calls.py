"""The calls of methods that change their object, rewritten into calls of
their state functions (``method_state``): the caller's name is rebound to
the changed object, where that name is the object's only one.

Objects whose class is known when transforming (``s = Sim(x)``, ``self`` in
a state function) are followed where every use of the name is an attribute
read, a store into an attribute, or a method call; anything else (another
name, a container, a call given the object, a return) leaves the object as
it was, and the reason is kept for ``analyses.attributes``'s refusal of a
call that changes it.  A call inside an expression runs first, on a line of
its own, where Python runs it exactly once and nothing else in the statement
reads the object::

    s = Sim(x)                              s = Sim(x)
    s.step(0.1)                    ->       s, step_result = Sim_step(s, 0.1)
    y = s.energy() + s.kick(2.0)            s, kick_result = Sim_kick(s, 2.0)
    s.t = 0.0                               y = s.energy() + kick_result
                                            s = with_attribute(s, 't', 0.0, s)

Objects met one at a time in a loop over what a user function returns, where
it returns only lists written out of constructions (``fresh_objects``), are
followed through the state function of the object's class, picked when the
call runs (``state_of``, ``frontend.fresh_loops``).

>>> import pullback as pb
>>> from pullback.testing import function_from_source
>>> from pullback.front import Transform, FRONT
>>> from pullback.backend.codegen import unparse
>>> Sim = function_from_source(\'\'\'
... def make():
...     class Sim:
...         def __init__(self, x):
...             self.x = x
...         def kick(self, k):
...             self.x = self.x + k
...             return k
...     return Sim
... \'\'\', {"__name__": "example"})()
>>> f = function_from_source(\'\'\'
... def f(x):
...     s = Sim(x)
...     y = 2.0 * s.kick(x)
...     return s.x * y
... \'\'\', {"Sim": Sim})
>>> t = Transform(f)
>>> for step in FRONT[:[s.__name__ for s in FRONT].index('follow_state') + 1]:
...     step(t)
>>> print(unparse(t.parsed.tree).strip())
def f(x):
    s = Sim(x)
    s, kick_result = Sim_kick(s, x)
    y = 2.0 * kick_result
    return s.x * y
>>> pb.grad(f)(1.5)         # (x + x) * 2x
12.0
"""
from __future__ import annotations

import inspect
import types

import gast

from ..errors import UnsupportedSyntaxError
from ..ir.build import closure_name as _helper
from . import method_state
from .fresh_loops import (_plain, _resolve, _statement_of, fresh_objects, state_of,
                          follow_fresh_loops as _follow_fresh_loops)
from .dict_attributes import attribute_dict_store, item_attribute, whole_read, why_not_owned
from .method_state import (_load, _located, _state_call_of,
                           _store, _stores_to_values, changes_self, returns_self,
                           state_class, state_function, why_not_state, _descriptor, _escape)

__all__ = ["follow_state_calls", "known_objects", "fresh_objects", "state_of"]


# -- objects whose class is known ---------------------------------------------------------

def known_objects(tree, parsed):
    """Local name -> class for the objects whose class is known: names bound
    only by ``name = Cls(...)`` of one class the function names, and
    ``self`` of a state function."""
    binds = {}
    params = {a.id for a in tree.args.args + tree.args.kwonlyargs}
    for n in gast.walk(tree):
        if isinstance(n, gast.Name) and isinstance(n.ctx, (gast.Store, gast.Del)):
            binds.setdefault(n.id, []).append(n)
    values = {}
    for n in gast.walk(tree):
        if isinstance(n, gast.Assign) and len(n.targets) == 1 \
                and isinstance(n.targets[0], gast.Name):
            values.setdefault(n.targets[0].id, []).append(n.value)
    out = {}
    for name, vs in values.items():
        if name in params or len(vs) != len(binds.get(name, ())):
            continue
        classes = set()
        for v in vs:
            cls = _resolve(v.func.id, parsed) if isinstance(v, gast.Call) \
                and isinstance(v.func, gast.Name) and v.func.id not in binds \
                and v.func.id not in params else None
            classes.add(cls if _plain(cls) else None)
        if len(classes) == 1 and None not in classes:
            out[name] = classes.pop()
    owner = state_class(parsed.fn)
    if owner is not None and tree.args.args:
        out[tree.args.args[0].id] = owner
    return out


def follow_state_calls(tree, namer, parsed):
    """Rewrite, in the FunctionDef ``tree``, calls of methods that change their
    object on objects whose class is known into calls of their state
    functions, and stores into the attributes of those objects into new
    objects (module docstring).  Objects that cannot be followed are left
    as they are, with the reason kept for ``analyses.attributes``'s
    refusal (``parsed.state_refusals``)."""
    known = known_objects(tree, parsed)
    _follow_fresh_loops(tree, namer, parsed)
    if not known:
        return
    parents = {}
    for node in gast.walk(tree):
        for child in gast.iter_child_nodes(node):
            parents[child] = node
    refusals = getattr(parsed, "state_refusals", None)
    if refusals is None:
        refusals = parsed.state_refusals = {}
    followed = getattr(parsed, "state_objects", None)
    if followed is None:
        followed = parsed.state_objects = {}
    for name, cls in known.items():
        plan = _plan(tree, parsed, parents, name, cls)
        if isinstance(plan, tuple):
            node, why = plan
            refusals[name] = (node, why)
            continue
        if plan:
            _rewrite(tree, namer, parsed, name, cls, plan)
            followed[name] = cls


def _is_with_attribute(name, parsed):
    from ..runtime.objects import with_attribute
    cell = parsed.closure.get(name)
    try:
        return cell is not None and cell.cell_contents is with_attribute
    except ValueError:
        return False


def _plan(tree, parsed, parents, name, cls):
    """The statements to rewrite for the object ``name`` of class ``cls``: a
    list of (statement, kind, method), empty where nothing changes it; or
    (node, why) where it changes and cannot be followed."""
    plan, others, aliases = [], [], {}
    changing = False            # a call of a method changing the object, followed or not
    me = state_class(parsed.fn) is cls and tree.args.args and tree.args.args[0].id == name
    for node in gast.walk(tree):
        if not (isinstance(node, gast.Name) and node.id == name):
            continue
        parent = parents.get(node)
        if isinstance(node.ctx, (gast.Store, gast.Del, gast.Param)):
            continue
        stmt = _statement_of(node, parents)
        if isinstance(parent, gast.Attribute) and parent.value is node:
            if isinstance(parent.ctx, gast.Store):
                if isinstance(inspect.getattr_static(cls, parent.attr, None),
                              (types.FunctionType, staticmethod, classmethod)):
                    others.append((node, f"`{name}.{parent.attr} = ...` hides the method "
                                         f"`{cls.__name__}.{parent.attr}`"))
                    continue
                if _descriptor(cls, parent.attr):
                    others.append((node, f"`{parent.attr}` is a property (or another "
                                         f"descriptor) of {cls.__name__}, whose store runs "
                                         "code"))
                    continue
                if isinstance(stmt, (gast.Assign, gast.AugAssign, gast.AnnAssign)) \
                        and (parent in getattr(stmt, "targets", ()) or parent is getattr(
                            stmt, "target", None) or any(
                            parent in getattr(t, "elts", ()) for t in getattr(
                                stmt, "targets", ()))):
                    plan.append((stmt, "store", parent.attr))
                    continue
                others.append((node, f"`{name}.{parent.attr}` is stored in a way pullback "
                                     "does not follow"))
                continue
            call = parents.get(parent)
            if isinstance(call, gast.Call) and call.func is parent:
                method = inspect.getattr_static(cls, parent.attr, None)
                if isinstance(method, (staticmethod, classmethod)) or not isinstance(
                        method, types.FunctionType):
                    continue
                if changes_self(cls, parent.attr):
                    changing = True
                    why = why_not_state(cls, parent.attr)
                    if why is not None:
                        others.append((call, f"`{cls.__name__}.{parent.attr}` cannot be "
                                             f"followed: {why}"))
                        continue
                    if _state_call_of(call, name, cls) is None:
                        others.append((call, f"`{name}.{parent.attr}(...)` is called with "
                                             "starred arguments"))
                        continue
                    if isinstance(stmt, gast.Expr) and stmt.value is call:
                        plan.append((stmt, "call", parent.attr))
                    elif isinstance(stmt, gast.Assign) and stmt.value is call:
                        plan.append((stmt, "call", parent.attr))
                        if returns_self(cls, parent.attr):
                            if len(stmt.targets) != 1 or not isinstance(stmt.targets[0],
                                                                        gast.Name):
                                others.append((stmt, f"`{parent.attr}` returns `self`, bound "
                                                     "here to more than one name"))
                            else:
                                aliases.setdefault(stmt.targets[0].id, []).append(stmt)
                    elif isinstance(stmt, gast.Return) and stmt.value is call:
                        plan.append((stmt, "call", parent.attr))
                    else:
                        why = _hoistable(stmt, call, name, parents)
                        if why is None:
                            plan.append((stmt, "hoist", parent.attr))
                        else:
                            others.append((call, f"`{name}.{parent.attr}(...)`, which changes "
                                                 f"`{name}`, is called {why}"))
                    continue
                why = _escape(cls, method, set())
                if why is not None:
                    others.append((call, why))
                continue
            if not me and item_attribute(_store_target_of(stmt), name) == parent.attr \
                    and why_not_owned(cls, parent.attr) is None:
                plan.append((stmt, "item", parent.attr))    # `s.m[k] = v`: a new dict
                continue
            why = None if me else whole_read(cls, parent, parents)     # (`self.m` of a
            # state function: its stores read it whole, `dict_set(self.m, k, v)`)
            if why is not None:
                others.append((node, why))
            continue            # a read: `s.x`
        if me and isinstance(parent, gast.Tuple) and isinstance(parents.get(parent), gast.Return) \
                and getattr(parents.get(parent), "pullback_state_return", False) \
                and (parent.elts[0] is node or True):
            continue
        if isinstance(parent, gast.Call) and isinstance(parent.func, gast.Name) \
                and parent.func.id in ("isinstance", "type") and parent.args \
                and parent.args[0] is node:
            continue
        if isinstance(parent, gast.Call) and isinstance(parent.func, gast.Name) \
                and _is_with_attribute(parent.func.id, parsed) \
                and node in (parent.args[0], parent.args[-1]):
            continue        # a store rewritten already (the state function's own)
        what = "is returned" if isinstance(parent, gast.Return) else \
            "is passed to a function" if isinstance(parent, gast.Call) else \
            "is put in a container" if isinstance(parent, (gast.List, gast.Tuple, gast.Set,
                                                           gast.Dict)) else \
            "is bound to another name" if isinstance(parent, (gast.Assign, gast.NamedExpr)) \
            else "is used otherwise than through its attributes"
        others.append((node, f"`{name}` {what}"))
    if not plan and not changing:
        return []
    if others:
        return others[0]
    # a method returning `self` gives the object a second name: followed while
    # neither is changed again
    for alias, stmts in aliases.items():
        if alias == name:
            continue
        changing = [s for s, kind, _ in plan if s not in stmts]
        if changing:
            return (changing[0], f"`{alias}` is another name of `{name}` (`{alias} = "
                                 f"{name}.{stmts[0].value.func.attr}(...)` returns `self`), "
                                 f"which would not see this change")
        alias_plan = _plan(tree, parsed, parents, alias, cls) if alias not in (
            a.id for a in tree.args.args) else []
        if isinstance(alias_plan, tuple):
            return alias_plan
        if alias_plan:
            return (alias_plan[0][0], f"`{alias}` is another name of `{name}` (`{alias} = "
                                      f"{name}.{stmts[0].value.func.attr}(...)` returns "
                                      f"`self`), so changing it would not change `{name}`")
    return plan


def _store_target_of(stmt):
    """The one target of an assignment or augmented assignment, else None."""
    if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1:
        return stmt.targets[0]
    return stmt.target if isinstance(stmt, gast.AugAssign) else None


def _hoistable(stmt, call, name, parents):
    """Why the call ``call`` (of a method changing ``name``) inside the
    statement ``stmt`` cannot run just before it, or None: it can where
    Python runs it exactly once, and nothing else in the statement reads
    ``name`` (what runs before it could not see the change, nor after it
    miss it)."""
    if not isinstance(stmt, (gast.Assign, gast.Expr, gast.Return, gast.AugAssign, gast.If)):
        return "inside a statement that may run it more than once or not at all"
    top = stmt.test if isinstance(stmt, gast.If) else stmt.value
    node = parents.get(call)
    while node is not None and node is not stmt:
        if isinstance(node, (gast.BoolOp, gast.IfExp, gast.Lambda, gast.ListComp,
                             gast.SetComp, gast.DictComp, gast.GeneratorExp, gast.Dict)):
            return "inside an expression that may run it more than once or not at all"
        node = parents.get(node)
    if node is None or not _within(call, top, parents):
        return "where pullback cannot tell when it runs"
    reads = [n for n in gast.walk(stmt) if isinstance(n, gast.Name) and n.id == name]
    receivers = [n for n in gast.walk(top) if isinstance(n, gast.Call)
                 and isinstance(n.func, gast.Attribute) and isinstance(n.func.value, gast.Name)
                 and n.func.value.id == name]
    if len(reads) != len(receivers) or any(
            isinstance(a, gast.Name) and a.id == name
            for c in receivers for a in gast.walk(c) if a is not c.func.value):
        return "beside another use of it in the same statement"
    return None


def _within(node, top, parents):
    while node is not None:
        if node is top:
            return True
        node = parents.get(node)
    return False


def _in_order(node):
    """The nodes of an expression in the order Python evaluates them (the
    operands of a call, then the call)."""
    for child in gast.iter_child_nodes(node):
        yield from _in_order(child)
    yield node


def _rewrite(tree, namer, parsed, name, cls, plan):
    by_stmt = {id(s): (s, kind, attr) for s, kind, attr in plan}

    def helper(kind):
        from ..runtime import objects
        return _helper(namer, parsed, kind, getattr(objects, kind))

    def block(body):
        out = []
        for stmt in body:
            entry = by_stmt.get(id(stmt))
            if entry is None:
                for field in ("body", "orelse", "finalbody"):
                    if isinstance(getattr(stmt, field, None), list):
                        setattr(stmt, field, block(getattr(stmt, field)))
                for h in getattr(stmt, "handlers", None) or ():
                    h.body = block(h.body)
                out.append(stmt)
                continue
            _, kind, attr = entry
            if kind == "hoist":
                # `y = s.step(dt) + 1.0`: the call first, on a line of its own
                top = stmt.test if isinstance(stmt, gast.If) else stmt.value
                calls = [c for c in _in_order(top) if isinstance(c, gast.Call)
                         and isinstance(c.func, gast.Attribute)
                         and isinstance(c.func.value, gast.Name) and c.func.value.id == name
                         and changes_self(cls, c.func.attr)]
                temps = {}
                for c in calls:
                    result = namer.fresh(f"{c.func.attr}_result")
                    temps[id(c)] = result
                    callee = _helper(namer, parsed, f"{cls.__name__}_{c.func.attr}",
                                     state_function(cls, c.func.attr))
                    out.append(_located(gast.Assign(
                        targets=[gast.Tuple(elts=[_store(name), _store(result)],
                                            ctx=gast.Store())],
                        value=gast.Call(func=_load(callee), args=[_load(name)] + list(c.args),
                                        keywords=list(c.keywords)), type_comment=None), stmt))

                class Swap(gast.NodeTransformer):
                    def visit_Call(self, node):
                        if id(node) in temps:
                            return gast.copy_location(_load(temps[id(node)]), node)
                        return self.generic_visit(node)
                if isinstance(stmt, gast.If):
                    stmt.test = Swap().visit(stmt.test)
                    stmt.body = block(stmt.body)
                    stmt.orelse = block(stmt.orelse)
                else:
                    stmt.value = Swap().visit(stmt.value)
                out.append(stmt)
                continue
            if kind == "item":
                def refuse(node, why):
                    raise UnsupportedSyntaxError(
                        f"pullback cannot differentiate this store into `{name}`: {why}.",
                        parsed.location(node), f"Store a new dict whole (`{name}.{attr} = "
                        f"{{**{name}.{attr}, k: v}}`), or change it in a method of "
                        f"{cls.__name__}.")
                out.extend(attribute_dict_store(
                    stmt, name, cls, namer.fresh,
                    lambda base, obj: _helper(namer, parsed, base, obj), _located, refuse))
                continue
            if kind == "store":
                parts = _stores_to_values(stmt, name, namer.fresh, helper, _located)
                if isinstance(parts, str):
                    raise UnsupportedSyntaxError(
                        f"pullback cannot differentiate this store into `{name}`: {parts}.",
                        parsed.location(stmt), "Store each attribute on a line of its own.")
                out.extend(parts)
                continue
            call = stmt.value
            fn = state_function(cls, attr)
            callee = _helper(namer, parsed, f"{cls.__name__}_{attr}", fn)
            result = namer.fresh(f"{attr}_result")
            new = gast.Assign(targets=[gast.Tuple(elts=[_store(name), _store(result)],
                                                  ctx=gast.Store())],
                              value=gast.Call(func=_load(callee),
                                              args=[_load(name)] + list(call.args),
                                              keywords=list(call.keywords)),
                              type_comment=None)
            out.append(_located(new, stmt))
            if isinstance(stmt, gast.Assign):
                out.append(_located(gast.Assign(targets=stmt.targets, value=_load(result),
                                                type_comment=None), stmt))
            elif isinstance(stmt, gast.Return):
                ret = gast.Return(value=_load(result))
                if getattr(stmt, "pullback_state_return", False):
                    ret.pullback_state_return = True
                out.append(_located(ret, stmt))
        return out

    tree.body = block(tree.body)


method_state._follow[0] = follow_state_calls
