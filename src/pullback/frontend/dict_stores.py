"""Dicts the function builds and changes, followed as new dicts.

A name bound only to new dicts (``{}``, a display, a dict comprehension,
``dict(...)``, ``d.copy()`` of a dict) that nothing else holds while it
changes is the only way to reach its dict, so a store into it may as well
make a new dict: ``d[k] = v`` becomes ``d = dict_set(d, k, v)``, whose
derivative is the rule of ``rules.dicts`` (the stored value gets the new
dict's entry, the value it replaced zero).  ``d[k] += v`` (any operator),
``d.update(q)``, ``d |= q`` and ``d.setdefault(k, v)`` likewise.  Also,
wherever they appear: ``{**p, "b": v}``, ``dict(p, b=v)`` and ``p | q`` of a
dict are ``dict_merge(...)``, a new dict whose entries' cotangents go back to
the part each came from; ``for k in d`` over such a dict runs over
``d.keys()``, and a loop ``for k in xs`` whose body reads ``xs[k]`` over
``loop_keys(xs)`` (a dict's keys; checked when it runs)::

    def f(params):                           def f(params):
        new = {}                                 new = {}
        for k in sorted(params):      ->         for k in sorted(params):
            new[k] = params[k] * 2.0                 new = dict_set(new, k, params[k] * 2.0)
        return new["a"] * new["b"]               return new["a"] * new["b"]

Python's semantics are kept exactly because the dict has no other name while
stores into it run: a use that may keep it (``e = d``, ``f(d)``, ``xs.append(d)``,
``obj.d = d``, a live view ``d.values()`` held in a name) must come after every
store that can run (a ``return d`` always does), and a loop over the dict
itself (``for k, v in d.items()``) may store only into its own key (Python's
live view then reads the same values).  A dict that breaks a condition, an
argument, a global, and ``del d[k]``, ``d.pop(k)`` are left as they are:
``analyses.item_stores`` refuses a differentiated value stored into them,
with the reason found here.  ``d[k] += v`` on an item that is an array (which
Python changes in place) is refused when it runs.

>>> from pullback.testing import function_from_source
>>> from pullback.backend.codegen import unparse
>>> from pullback.frontend.parse import parse
>>> from pullback.ir.naming import Namer
>>> f = function_from_source('''
... def f(p, v):
...     d = {**p, "b": v}
...     for k in d:
...         d[k] *= 2.0
...     return d
... ''')
>>> parsed = parse(f)
>>> follow_dict_stores(parsed.tree, Namer.for_tree(parsed.tree, ()), parsed)
>>> print(unparse(parsed.tree).strip())
def f(p, v):
    d = dict_merge(p, {'b': v})
    for k in d.keys():
        dict_item = d[k]
        item_rebinds(dict_item, k, 'd')
        d = dict_set(d, k, dict_item * 2.0)
    return d
"""
from __future__ import annotations

import builtins
import types

import gast

from ..ir.build import assign_at, name as _name
from ..runtime import control
from .dict_displays import Displays
from .dict_targets import (copy_node, item_target, iterates, loop_key, own_walk as _own_walk,
                           simple, store_target)
from .dict_in_place import in_place_dicts, read_in_place
from .dict_unpacking import split_dict_unpacking

__all__ = ["follow_dict_stores"]

_NESTED = (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ClassDef)
_LOOPS = (gast.For, gast.While, gast.AsyncFor)
# builtins that read a dict (or a view of it) once and keep nothing of it
_SNAPSHOT = {"list", "tuple", "sorted", "sum", "len", "min", "max", "set", "dict", "any",
             "all", "frozenset", "str", "repr", "print", "isinstance", "id", "bool"}
_LAZY = {"zip", "enumerate", "reversed", "iter", "map", "filter"}
_VIEWS = ("keys", "values", "items")
_READS = ("get", "copy") + _VIEWS


def follow_dict_stores(tree, namer, parsed):
    """Rewrite the FunctionDef ``tree`` in place (see the module docstring)."""
    split_dict_unpacking(tree)
    _Rewrite(tree, namer, parsed).run()


class _Rewrite:
    def __init__(self, tree, namer, parsed):
        self.tree, self.namer, self.parsed = tree, namer, parsed
        self.helpers = {}
        self.parents = {}
        for n in _own_walk(tree):
            for c in gast.iter_child_nodes(n):
                self.parents[c] = n

    # -- helpers the generated code calls -----------------------------------------------

    def helper(self, fn):
        if fn.__name__ not in self.helpers:
            name = self.namer.fresh(fn.__name__)
            self.parsed.closure[name] = types.CellType(fn)
            self.helpers[fn.__name__] = name
        return self.helpers[fn.__name__]

    def call(self, fn, *args):
        return gast.Call(func=_name(self.helper(fn)), args=list(args), keywords=[])

    def is_builtin(self, node, name):
        if not isinstance(node, gast.Name) or node.id != name:
            return False
        if name in self.parsed.closure or name in self.locals:
            return False
        if name in self.parsed.globals:
            return self.parsed.globals[name] is getattr(builtins, name, None)
        return hasattr(builtins, name)

    # -- the pass ---------------------------------------------------------------------

    def run(self):
        tree = self.tree
        args = tree.args
        self.params = {a.id for a in args.args + args.posonlyargs + args.kwonlyargs}
        self.params |= {a.id for a in (args.vararg, args.kwarg) if a is not None}
        self.locals = set(self.params) | {
            n.id for n in _own_walk(tree) if isinstance(n, gast.Name)
            and isinstance(n.ctx, (gast.Store, gast.Del))}
        self.nested, self.declared = set(), set()
        for n in _own_walk(tree):
            if isinstance(n, _NESTED) and n is not tree:
                self.nested.update(m.id for m in gast.walk(n) if isinstance(m, gast.Name))
            elif isinstance(n, (gast.Global, gast.Nonlocal)):
                self.declared.update(n.names)
        # statements in the order they are written, and the loops around each
        self.order, self.loops_of, self.stmt_of = {}, {}, {}
        self.number(tree.body, ())
        stores = self.stores()
        evident = self.evident = self.dict_evidence()
        own, reasons = {}, {}
        for d, found in stores.items():
            why = self.refusal(d, found, evident | set(stores))
            if why is None:
                own[d] = found
            else:
                reasons[d] = why
        # a dict made by copying a name that turned out not to be a dict
        # (`y = x.copy()`, `x` unknown) is only its own when `x` is known
        if reasons:
            self.parsed.dict_refusals = {**getattr(self.parsed, "dict_refusals", {}), **reasons}
        self.own = own
        self.in_place = in_place_dicts(self, own)
        self.replacements = {}
        for d, found in own.items():
            for stmt in found:
                self.rewrite_store(d, stmt)
        if self.replacements:
            self.splice()
        self.rewrite_loops(own)
        read_in_place(self, self.in_place)
        Displays(self).visit(tree)

    def number(self, stmts, loops):
        for s in stmts:
            self.order[id(s)] = len(self.order)
            self.loops_of[id(s)] = loops
            for n in _own_walk(s):
                self.stmt_of[id(n)] = s       # (inner statements, numbered next, take theirs)
            if isinstance(s, _NESTED):
                continue
            inner = loops + (s,) if isinstance(s, _LOOPS) else loops
            for field in ("body", "orelse", "finalbody"):
                block = getattr(s, field, None)
                if isinstance(block, list) and block and isinstance(block[0], gast.stmt):
                    self.number(block, inner)
            for h in getattr(s, "handlers", None) or ():
                self.number(h.body, inner)

    def statements(self):
        for n in _own_walk(self.tree):
            if isinstance(n, gast.stmt) and n is not self.tree:
                yield n

    def stores(self):
        """name -> the statements that store into it (``d[k] = v``,
        ``d[k] += v``, ``d.update(...)``, ``d.setdefault(...)``, ``d |= q``)."""
        out = {}
        for s in self.statements():
            d = store_target(s)
            if d is not None:
                out.setdefault(d, []).append(s)
        return out

    def dict_evidence(self):
        """Names used as only a dict can be: ``.items()``, ``.keys()``,
        ``.values()``, ``.get(...)``, ``.setdefault``, ``.update``, ``p["w"]``."""
        out = set()
        for n in _own_walk(self.tree):
            if isinstance(n, gast.Attribute) and isinstance(n.value, gast.Name) \
                    and n.attr in ("items", "keys", "values", "get", "setdefault", "update"):
                out.add(n.value.id)
            elif isinstance(n, gast.Subscript) and isinstance(n.value, gast.Name) \
                    and isinstance(n.slice, gast.Constant) and isinstance(n.slice.value, str):
                out.add(n.value.id)           # p["w"]: no array is indexed by a string
        return out

    def fresh_dict(self, value, known):
        """``value`` makes a new dict."""
        if isinstance(value, (gast.Dict, gast.DictComp)):
            return True
        if isinstance(value, gast.Call) and self.is_builtin(value.func, "dict"):
            return True
        if isinstance(value, gast.Call) and isinstance(value.func, gast.Attribute) \
                and value.func.attr == "copy" and not value.args and not value.keywords \
                and isinstance(value.func.value, gast.Name) and value.func.value.id in known:
            return True
        if isinstance(value, gast.BinOp) and isinstance(value.op, gast.BitOr):
            return any(self.fresh_dict(v, known) or (isinstance(v, gast.Name) and v.id in known)
                       for v in (value.left, value.right))
        return False

    def refusal(self, d, found, known):
        """Why the stores ``found`` into ``d`` cannot be followed as new
        dicts, or None where they can."""
        first = min(self.order[id(t)] for t in found)
        if d in self.params and not any(self.binds_fresh(b, d, known)
                                        and self.order[id(b)] < first for b in self.tree.body):
            return (f"`{d}` is an argument: pullback never changes the caller's dict; make "
                    f"the function's own copy first (`{d} = dict({d})`)")
        if d in self.declared or d not in self.locals:
            return f"`{d}` is not the function's own (a global or a captured value)"
        if d in self.nested:
            return f"`{d}` is used by a nested function or lambda"
        store_ids = {id(s) for s in found}
        for n in _own_walk(self.tree):
            if not (isinstance(n, gast.Name) and n.id == d) or isinstance(n.ctx, gast.Param):
                continue
            s = self.stmt_of.get(id(n))
            if s is None:
                continue          # (a parameter's default or annotation)
            if isinstance(n.ctx, (gast.Store, gast.Del)):
                if not (isinstance(s, gast.Assign) and len(s.targets) == 1
                        and s.targets[0] is n and self.fresh_dict(s.value, known)) \
                        and not (id(s) in store_ids and isinstance(s, gast.AugAssign)):
                    return (f"`{d}` is bound at line {getattr(s, 'lineno', '?')} to something "
                            "other than a new dict (`{}`, `dict(...)`, a dict comprehension)")
                continue
            use = self.retaining(n, s, store_ids)
            if use is None:
                continue
            later = [t for t in found if self.may_follow(t, s, d)]
            if later:
                return (f"`{d}` {use} at line {getattr(s, 'lineno', '?')}, and stored into "
                        f"after that (line {getattr(later[0], 'lineno', '?')}): what holds it "
                        "would see the change")
        for loop in self.statements():
            if isinstance(loop, gast.For) and iterates(loop.iter, d):
                key = loop_key(loop, d)
                inner = [t for t in found if loop in self.loops_of[id(t)]]
                for t in inner:
                    target = item_target(t)
                    if key is None or target is None or not isinstance(target.slice, gast.Name) \
                            or target.slice.id != key or any(
                                isinstance(m, gast.Name) and m.id == key
                                and not isinstance(m.ctx, gast.Load)
                                for b in loop.body for m in gast.walk(b)):
                        return (f"`{d}` is stored into at line {getattr(t, 'lineno', '?')} "
                                f"while a loop runs over it (line {loop.lineno}): only its "
                                "own key may be stored into there; loop over a copy of the "
                                f"keys (`for k in list({d})`) instead")
        return None

    def retaining(self, n, s, store_ids):
        """How the load ``n`` of the dict may keep it (a phrase), or None for
        a use that reads it and keeps nothing (an item, a key test, a copy)."""
        up = self.parents.get(n)
        if isinstance(s, gast.Return):
            return None                   # nothing runs after it
        if isinstance(up, gast.Subscript) and up.value is n:
            return None
        if id(s) in store_ids and isinstance(up, gast.Attribute) \
                and up.attr in ("update", "setdefault"):
            return None
        if isinstance(up, gast.AugAssign) and up.target is n:
            return None
        if isinstance(up, gast.Attribute) and up.value is n and up.attr in _READS:
            call = self.parents.get(up)
            if not (isinstance(call, gast.Call) and call.func is up):
                return f"has its method `.{up.attr}` taken as a value"
            if up.attr in ("get", "copy"):
                return None
            return None if self.consumed(call) else f"has a live `.{up.attr}()` view kept"
        if isinstance(up, gast.Compare) and n in up.comparators and all(
                isinstance(o, (gast.In, gast.NotIn)) for o in up.ops):
            return None
        if self.consumed(n):
            return None
        if isinstance(up, gast.Dict) and any(k is None and v is n
                                             for k, v in zip(up.keys, up.values)):
            return None
        if isinstance(up, gast.BinOp) and isinstance(up.op, gast.BitOr):
            return None
        if isinstance(up, gast.keyword) and up.arg is None:
            return None
        if isinstance(up, gast.Call) and n in up.args:
            return "is passed to a call"
        if isinstance(up, gast.Assign):
            return "is given another name" if all(isinstance(t, gast.Name)
                                                  for t in up.targets) else "is stored elsewhere"
        if isinstance(up, (gast.List, gast.Tuple, gast.Set, gast.Dict)):
            return "is put into a container"
        return "is held by another value"

    def consumed(self, node):
        """``node`` is read at once and not kept: a loop's sequence, or an
        argument of a builtin that reads it once (``list``, ``sorted``, ...)."""
        up = self.parents.get(node)
        if isinstance(up, gast.For) and up.iter is node:
            return True
        if isinstance(up, gast.comprehension) and up.iter is node:
            comp = self.parents.get(up)       # a generator kept in a name reads it later
            return not isinstance(comp, gast.GeneratorExp) \
                or isinstance(self.parents.get(comp), gast.Call)
        if isinstance(up, gast.Call) and node in up.args and isinstance(up.func, gast.Name):
            if any(self.is_builtin(up.func, b) for b in _SNAPSHOT):
                return True
            if any(self.is_builtin(up.func, b) for b in _LAZY):
                return self.consumed(up)
        return False

    def may_follow(self, store, use, d):
        """The statement ``store`` may run after ``use`` on the same dict:
        after it in the same trip, or on a later trip of a loop around both
        that does not first bind ``d`` to a new dict (``new = {}`` at the
        top of the loop's body)."""
        if self.order[id(store)] > self.order[id(use)]:
            return True
        inner = {id(loop) for loop in self.loops_of[id(use)]}
        for loop in self.loops_of[id(store)]:
            if id(loop) not in inner:
                continue
            top = next(t for t in loop.body if self.order[id(t)] <= self.order[id(store)]
                       and self.order[id(store)] < self.order.get(id(t), 0) + self.size(t))
            if not any(self.order[id(b)] < self.order[id(top)] and self.binds_fresh(b, d)
                       for b in loop.body):
                return True
        return False

    def size(self, stmt):
        """How many statements ``stmt`` is (with those inside it)."""
        sizes = self.__dict__.setdefault("sizes", {})
        if id(stmt) not in sizes:
            sizes[id(stmt)] = sum(1 for n in _own_walk(stmt)
                                  if isinstance(n, gast.stmt) and id(n) in self.order)
        return sizes[id(stmt)]

    def binds_fresh(self, stmt, d, known=frozenset()):
        return isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 \
            and isinstance(stmt.targets[0], gast.Name) and stmt.targets[0].id == d \
            and self.fresh_dict(stmt.value, known)

    # -- rewriting --------------------------------------------------------------------

    def rewrite_store(self, d, s):
        new = []
        store = control.dict_store if d in self.in_place else control.dict_set
        if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Subscript):
            key, value = s.targets[0].slice, s.value
            if not simple(key):
                held = self.namer.fresh("stored")
                new.append(assign_at(_name(held, True), value, s))
                value = _name(held)
            new.append(assign_at(_name(d, True), self.call(store, _name(d), key, value), s))
        elif isinstance(s, gast.AugAssign) and isinstance(s.target, gast.Subscript):
            key = s.target.slice
            if not simple(key):
                held = self.namer.fresh("key")
                new.append(assign_at(_name(held, True), key, s))
                key = _name(held)
            item = self.namer.fresh("dict_item")
            new.append(assign_at(_name(item, True), gast.Subscript(
                value=_name(d), slice=copy_node(key), ctx=gast.Load()), s))
            new.append(gast.copy_location(gast.Expr(value=self.call(
                control.item_rebinds, _name(item), copy_node(key), gast.Constant(d, None))), s))
            new.append(assign_at(_name(d, True), self.call(store, _name(d), copy_node(key),
                       gast.BinOp(left=_name(item), op=s.op, right=s.value)), s))
        elif isinstance(s, gast.AugAssign):           # d |= q
            new.append(assign_at(_name(d, True), self.call(control.dict_merge, _name(d),
                                                           s.value), s))
        else:
            call = s.value
            if call.func.attr == "update":
                parts = list(call.args)
                if call.keywords:
                    parts.append(gast.Dict(keys=[gast.Constant(k.arg, None) if k.arg else None
                                                 for k in call.keywords],
                                           values=[k.value for k in call.keywords]))
                new.append(assign_at(_name(d, True), self.call(control.dict_merge, _name(d),
                                                               *parts), s))
            else:
                key = call.args[0]
                default = call.args[1] if len(call.args) > 1 else gast.Constant(None, None)
                if not simple(key):
                    held = self.namer.fresh("key")
                    new.append(assign_at(_name(held, True), key, s))
                    key = _name(held)
                new.append(assign_at(_name(d, True), self.call(
                    control.dict_setdefault, _name(d), key, default), s))
                if isinstance(s, gast.Assign):
                    new.append(assign_at(s.targets[0], gast.Subscript(
                        value=_name(d), slice=copy_node(key), ctx=gast.Load()), s))
        self.replace(s, new)

    def replace(self, stmt, new):
        self.replacements[id(stmt)] = new

    def splice(self):
        """Put the rewritten stores in place, in one walk of the function."""
        for n in _own_walk(self.tree):
            if isinstance(n, _NESTED) and n is not self.tree:
                continue
            for field in ("body", "orelse", "finalbody"):
                block = getattr(n, field, None)
                if isinstance(block, list) and any(id(b) in self.replacements for b in block):
                    setattr(n, field, [x for b in block
                                       for x in self.replacements.get(id(b), [b])])

    def rewrite_loops(self, own):
        """``for k in d`` over an own dict runs over ``d.keys()``; ``for k in
        xs`` reading ``xs[k]`` over ``loop_keys(xs)``."""
        for loop in list(self.statements()):
            if not isinstance(loop, gast.For) or not isinstance(loop.iter, gast.Name):
                continue
            xs = loop.iter.id
            if xs in own:
                loop.iter = gast.copy_location(gast.Call(func=gast.Attribute(
                    value=_name(xs), attr="keys", ctx=gast.Load()), args=[], keywords=[]),
                    loop.iter)
                continue
            if not isinstance(loop.target, gast.Name):
                continue
            k = loop.target.id
            if any(isinstance(m, gast.Subscript) and isinstance(m.value, gast.Name)
                   and m.value.id == xs and isinstance(m.slice, gast.Name) and m.slice.id == k
                   for b in loop.body for m in _own_walk(b)):
                loop.iter = gast.copy_location(self.call(control.loop_keys, _name(xs)),
                                               loop.iter)
