"""Methods that store into ``self``: objects as state, followed as values.

An object of the user's class built in the differentiated function
(``s = Sim(x)``), or ``self`` inside a method followed this way, is a value
whose cotangent is the dict of its attributes' (``frontend.instances``).  A
method that changes it (``self.x = self.x + dt * self.v``, ``self.n += 1``,
or a call of another such method on ``self``) is differentiated as its
*state function*: the method's own code, rewritten so that each store makes
a new object (``runtime.objects.with_attribute``, a shallow copy with one
attribute set; its last argument, the object again, builds the zero tangent
of an object that carries none, in forward mode) and every return hands back the object with the result.  The
caller rebinds its name to the object that comes back, so the reads after
the call see what Python's would, and the old object, which the tape may
hold, is never changed::

    class Sim:                                def step_state(self, dt):
        def step(self, dt):                       a = self.force()
            a = self.force()          ->          self = with_attribute(self, 'v', self.v + dt * a, self)
            self.v = self.v + dt * a              rebinds(self.n, 'self.n', '+')
            self.n += 1                           self = with_attribute(self, 'n', self.n + 1, self)
                                                  return (self, None)
    def loss(x):                              def loss(x):
        s = Sim(x)                                s = Sim(x)
        for _ in range(100):          ->          for _ in range(100):
            s.step(0.1)                               s, step_result = Sim_step(s, 0.1)
        return np.sum(s.x)                        return np.sum(s.x)

``self.n += 1`` is exact where Python rebinds (a number, a tuple); on an
array or a list, which Python changes in place, it is refused when it runs
(``rebinds``).  What is followed is checked first, and refused naming the
line otherwise: the object's class must be known (``s`` bound only by
``s = Cls(...)``, a class without its own ``__new__``, ``__setattr__``,
``__slots__`` or metaclass), and ``s`` must be its only name: passed to a
function, put in a container, copied to another name, returned, or the
receiver of a method that returns or hands on ``self``, it could be seen
through another name after the call, which would not see the change.  A
method returning ``self`` (``final = s.run(10)``) gives the object a second
name, which is followed as long as neither name is changed again.  Inside a
state function, a write into what an attribute holds (``self.x[0] = v``,
``self.hist.append(v)``), a ``del``, ``super()`` or ``self`` used otherwise
is refused.  Objects met one at a time in a loop over what a user function
returns, where it returns only a list written out of constructions
(``for layer in build(params): h = layer(h)``, ``state_calls.fresh_objects``),
have the loop's name as their one name: a call on it goes to the state
function of the object's class, picked when the call runs.  The calls are
rewritten by ``frontend.state_calls``.  Each state function runs as plain
Python where nothing in the call carries a gradient (``Followed``: the same
rewritten code, compiled without derivatives).

>>> import numpy as np, pullback as pb
>>> from pullback.testing import function_from_source
>>> from pullback.backend.codegen import unparse
>>> from pullback.frontend.parse import parse
>>> Sim = function_from_source('''
... def make():
...     class Sim:
...         def __init__(self, x):
...             self.x = x
...             self.n = 0
...         def step(self, dt):
...             self.x = self.x * (1 + dt)
...             self.n += 1
...     return Sim
... ''', {"__name__": "example"})()
>>> print(unparse(parse(state_function(Sim, "step").function).tree))
def Sim_step(self, dt):
    self = with_attribute(self, 'x', self.x * (1 + dt), self)
    rebinds(self.n, 'self.n', '+')
    self = with_attribute(self, 'n', self.n + 1, self)
    return (self, None)
>>> loss = function_from_source('''
... def loss(x):
...     s = Sim(x)
...     for _ in range(3):
...         s.step(0.5)
...     return np.sum(s.x) * s.n
... ''', {"Sim": Sim})
>>> pb.grad(loss)(np.array([1.0, 2.0]))        # 1.5 ** 3 * 3
array([10.125, 10.125])
"""
from __future__ import annotations

import inspect
import types
import weakref

import gast

from ..errors import NonDifferentiableError
from .dict_attributes import attribute_dict_store, item_attribute
from .followed import Followed
from .self_changes import (_CHANGING, _escape, _may_change, _own_nodes,  # noqa: F401
                           _source_tree, changes_self, returns_self)

__all__ = ["state_function", "rewrite_state", "changes_self", "state_class",
           "why_not_state"]


# -- what a state function is -------------------------------------------------------

_states = weakref.WeakKeyDictionary()     # class -> {method name: Followed}
# the pass rewriting the calls in a state function's plain code too:
# state_calls.follow_state_calls, installed when that module is imported
# (it imports this one)
_follow = [None]


def state_function(cls, name):
    """The ``Followed`` state function of method ``name`` of ``cls``:
    ``(self, *args) -> (new self, result)``."""
    table = _states.setdefault(cls, {})
    made = table.get(name)
    if made is not None:
        return made
    method = inspect.getattr_static(cls, name)
    fn = types.FunctionType(method.__code__, method.__globals__, f"{cls.__name__}_{name}",
                            method.__defaults__, method.__closure__)
    fn.__kwdefaults__ = method.__kwdefaults__
    fn.__qualname__ = method.__qualname__
    fn.__module__ = method.__module__
    fn.__signature__ = inspect.signature(method)
    fn.__pullback_state_of__ = cls
    fn.__pullback_rewrite__ = lambda tree, parsed: rewrite_state(tree, parsed, cls, name)
    made = table[name] = Followed(fn, _follow[0])
    return made


_reasons = weakref.WeakKeyDictionary()    # class -> {method name: why not, or None}


def why_not_state(cls, name):
    """Why method ``name`` of ``cls`` cannot be followed as a state function
    (the refusal of its rewrite, with its line), or None: checked once."""
    table = _reasons.setdefault(cls, {})
    if name in table:
        return table[name]
    from ..errors import PullbackError
    from .parse import parse
    why = None
    try:
        parse(state_function(cls, name).function)
    except PullbackError as err:
        loc = err.location
        text = (getattr(loc, "line", None) or "").strip() if loc is not None else ""
        why = err.message.split("; here ", 1)[-1].rstrip(".") + (
            f" (line {loc.lineno} of {loc.filename}{f': `{text}`' if text else ''})"
            if loc is not None else "")
    table[name] = why
    return why


def _descriptor(cls, attr):
    """Whether ``attr`` is a property (or another data descriptor) of ``cls``:
    a store into it runs code, not a plain store."""
    for c in cls.__mro__:
        d = vars(c).get(attr)
        if d is not None and hasattr(type(d), "__set__"):
            return True
    return False


def state_class(fn):
    """The class whose state function ``fn`` is, or None."""
    return getattr(fn, "__pullback_state_of__", None)


# -- the state function of one method -------------------------------------------------

def _load(n):
    return gast.Name(id=n, ctx=gast.Load(), annotation=None, type_comment=None)


def _store(n):
    return gast.Name(id=n, ctx=gast.Store(), annotation=None, type_comment=None)


def _located(node, where):
    for n in gast.walk(node):
        if getattr(n, "lineno", None) is None:
            gast.copy_location(n, where)
    return node


_SYMBOLS = {gast.Add: "+", gast.Sub: "-", gast.Mult: "*", gast.Div: "/", gast.FloorDiv: "//",
            gast.Mod: "%", gast.Pow: "**", gast.MatMult: "@", gast.BitOr: "|",
            gast.BitAnd: "&", gast.BitXor: "^", gast.LShift: "<<", gast.RShift: ">>"}


def _stores_to_values(stmt, me, fresh, helper, located):
    """The statements that replace a store into an attribute of ``me``
    (``me.a = v``, ``me.a += v``, ``me.a, x = v, w``), or None for another
    statement."""
    def is_me_attr(t):
        return isinstance(t, gast.Attribute) and isinstance(t.value, gast.Name) \
            and t.value.id == me

    def put(attr, value):
        return located(gast.Assign(targets=[_store(me)], value=gast.Call(
            func=_load(helper("with_attribute")), args=[_load(me), gast.Constant(attr, None),
                                                       value, _load(me)], keywords=[]),
            type_comment=None), stmt)

    if isinstance(stmt, gast.AugAssign) and is_me_attr(stmt.target):
        attr, symbol = stmt.target.attr, _SYMBOLS.get(type(stmt.op), "?")
        read = gast.Attribute(value=_load(me), attr=attr, ctx=gast.Load())
        check = located(gast.Expr(value=gast.Call(
            func=_load(helper("rebinds")), args=[read, gast.Constant(f"{me}.{attr}", None),
                                                gast.Constant(symbol, None)],
            keywords=[])), stmt)
        value = gast.BinOp(left=gast.Attribute(value=_load(me), attr=attr, ctx=gast.Load()),
                           op=stmt.op, right=stmt.value)
        return [check, put(attr, located(value, stmt))]
    if isinstance(stmt, gast.AnnAssign) and is_me_attr(stmt.target):
        if stmt.value is None:
            return []
        return [put(stmt.target.attr, stmt.value)]
    if not isinstance(stmt, gast.Assign):
        return None
    targets = stmt.targets
    if not any(is_me_attr(t) or (isinstance(t, (gast.Tuple, gast.List))
                                 and any(is_me_attr(e) for e in t.elts)) for t in targets):
        return None
    out = []
    if len(targets) == 1 and is_me_attr(targets[0]):
        return [put(targets[0].attr, stmt.value)]
    # several targets, or a tuple of them: the value first, then each target
    # from left to right, as Python assigns them
    value = fresh("value")
    out.append(located(gast.Assign(targets=[_store(value)], value=stmt.value,
                                   type_comment=None), stmt))
    for t in targets:
        if is_me_attr(t):
            out.append(put(t.attr, _load(value)))
        elif isinstance(t, (gast.Tuple, gast.List)) and any(is_me_attr(e) for e in t.elts):
            if any(isinstance(e, gast.Starred) or not (is_me_attr(e) or isinstance(e, gast.Name))
                   for e in t.elts):
                return "a starred or nested target beside an attribute of `self`"
            names = [fresh(f"{e.attr}_value") if is_me_attr(e) else e.id for e in t.elts]
            out.append(located(gast.Assign(targets=[gast.Tuple(
                elts=[_store(n) for n in names], ctx=gast.Store())], value=_load(value),
                type_comment=None), stmt))
            for e, n in zip(t.elts, names):
                if is_me_attr(e):
                    out.append(put(e.attr, _load(n)))
        else:
            out.append(located(gast.Assign(targets=[t], value=_load(value),
                                           type_comment=None), stmt))
    return out


def rewrite_state(tree, parsed, cls, name):
    """Rewrite the method FunctionDef ``tree`` in place into its state function
    (module docstring): stores into ``self`` rebind ``self`` to a new object,
    returns hand back ``(self, result)``."""
    where = f"{cls.__name__}.{name}"

    def refuse(node, why, hint=None):
        raise NonDifferentiableError(
            f"pullback follows a method that changes its object (`{where}`, called here on "
            f"an object holding differentiated values) when it only stores values into "
            f"attributes of self (`self.x = ...`, `self.n += 1`) and calls such methods "
            f"on self; here {why}.", parsed.location(node),
            hint or f"Build the new value in a local name and store it whole "
                    f"(`x = self.x.copy(); x[0] = v; self.x = x`, `self.hist = self.hist + "
                    f"[v]`), or make `{name}` return the new values and store them in the "
                    f"caller.")

    if not tree.args.args:
        refuse(tree, "the method takes no `self`")
    me = tree.args.args[0].id
    taken = {n.id for n in gast.walk(tree) if isinstance(n, gast.Name)}

    def fresh(base):
        v = base
        while v in taken or v in parsed.globals or v in parsed.closure:
            v += "_"
        taken.add(v)
        return v

    helpers = {}

    def helper(kind):
        if kind not in helpers:
            from ..runtime import objects
            helpers[kind] = fresh(kind)
            parsed.closure[helpers[kind]] = types.CellType(getattr(objects, kind))
        return helpers[kind]

    for node in gast.walk(tree):
        if isinstance(node, (gast.Yield, gast.YieldFrom)):
            refuse(node, "the method is a generator")
        if isinstance(node, gast.Call) and isinstance(node.func, gast.Name) \
                and node.func.id == "super":
            refuse(node, "it calls `super()`", "Call the base class's method by name "
                                                "(`Base.step(self, dt)` is refused too): "
                                                "move its code into this method.")
        if isinstance(node, (gast.Lambda, gast.FunctionDef)) and node is not tree and any(
                isinstance(n, gast.Name) and n.id == me for n in gast.walk(node)):
            refuse(node, f"a nested function uses `{me}`")
        if isinstance(node, gast.Delete) and any(_root(t) == me for t in node.targets):
            refuse(node, f"it deletes from `{me}`")
        targets = node.targets if isinstance(node, gast.Assign) else \
            [node.target] if isinstance(node, (gast.AugAssign, gast.AnnAssign)) else \
            [node.target] if isinstance(node, gast.For) else []
        for t in targets:
            for e in (t.elts if isinstance(t, (gast.Tuple, gast.List)) else [t]):
                if isinstance(e, gast.Starred):
                    e = e.value
                if isinstance(e, gast.Subscript) and _root(e) == me \
                        and item_attribute(e, me) is None:
                    refuse(node, f"it writes into what an attribute of `{me}` holds")
                if isinstance(e, gast.Attribute) and _root(e) == me \
                        and not isinstance(e.value, gast.Name):
                    refuse(node, f"it stores into an attribute of what `{me}` holds")
                if isinstance(e, gast.Name) and e.id == me:
                    refuse(node, f"it rebinds `{me}`")
                if isinstance(e, gast.Attribute) and isinstance(node, gast.For):
                    refuse(node, f"a loop stores into `{_text(e)}`")
        if isinstance(node, gast.Call):
            func = node.func
            if isinstance(func, gast.Attribute) and func.attr in _CHANGING \
                    and _root(func.value) == me and not isinstance(func.value, gast.Name):
                refuse(node, f"`{_text(func)}(...)` changes what an attribute of `{me}` holds")
            if isinstance(func, gast.Attribute) and func.attr == "at" and node.args \
                    and _root(node.args[0]) == me:
                refuse(node, f"`{_text(func)}` writes into what an attribute of `{me}` holds")
            if any(k.arg == "out" and _root(k.value) == me for k in node.keywords):
                refuse(node, f"`out=` writes into what an attribute of `{me}` holds")
    # local names holding what an attribute holds (`h = self.hist`), written into
    held = {}
    for node in gast.walk(tree):
        if isinstance(node, gast.Assign) and _root(node.value) == me \
                and isinstance(node.value, (gast.Attribute, gast.Subscript)):
            for t in node.targets:
                if isinstance(t, gast.Name):
                    held[t.id] = _text(node.value)
    for node in gast.walk(tree):
        written = None
        if isinstance(node, (gast.Assign, gast.AugAssign)):
            for t in (node.targets if isinstance(node, gast.Assign) else [node.target]):
                if isinstance(t, gast.Subscript) and _root(t) in held:
                    written = _root(t)
            if isinstance(node, gast.AugAssign) and isinstance(node.target, gast.Name) \
                    and node.target.id in held:
                refuse(node, f"`{node.target.id} {_SYMBOLS.get(type(node.op), '?')}= ...` may "
                             f"change `{held[node.target.id]}` in place")
        elif isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute):
            if node.func.attr in _CHANGING and _root(node.func.value) in held:
                written = _root(node.func.value)
        if written is not None:
            refuse(node, f"it writes into `{written}`, which holds `{held[written]}`")

    for node in gast.walk(tree):
        if isinstance(node, gast.Attribute) and isinstance(node.ctx, gast.Store) \
                and isinstance(node.value, gast.Name) and node.value.id == me \
                and _descriptor(cls, node.attr):
            refuse(node, f"`{node.attr}` is a property (or another descriptor) of the class, "
                         "whose store runs code")

    def named(base, obj):
        if base not in helpers:
            helpers[base] = fresh(base)
            parsed.closure[helpers[base]] = types.CellType(obj)
        return helpers[base]

    def returns(body):
        out = []
        for stmt in body:
            if isinstance(stmt, (gast.FunctionDef, gast.ClassDef)):
                out.append(stmt)        # (a nested function's returns are its own)
                continue
            parts = attribute_dict_store(stmt, me, cls, fresh, named, _located, refuse) \
                or _stores_to_values(stmt, me, fresh, helper, _located)
            if isinstance(parts, str):
                refuse(stmt, parts)
            if parts is not None:
                out.extend(parts)
                continue
            if isinstance(stmt, gast.Return):
                value = stmt.value if stmt.value is not None else gast.Constant(None, None)
                pre = []
                if _state_call_of(value, me, cls) is not None:
                    # `return self.run(n)`: the call first, on a line of its own
                    tmp = fresh(f"{value.func.attr}_result")
                    pre.append(_located(gast.Assign(targets=[_store(tmp)], value=value,
                                                    type_comment=None), stmt))
                    value = _load(tmp)
                ret = gast.Return(value=gast.Tuple(elts=[_load(me), value], ctx=gast.Load()))
                ret.pullback_state_return = True
                out.extend(pre + [_located(ret, stmt)])
                continue
            for field in ("body", "orelse", "finalbody"):
                if isinstance(getattr(stmt, field, None), list):
                    setattr(stmt, field, returns(getattr(stmt, field)))
            for h in getattr(stmt, "handlers", None) or ():
                h.body = returns(h.body)
            out.append(stmt)
        return out

    tree.body = returns(tree.body)
    if not tree.body or not isinstance(tree.body[-1], gast.Return):
        ret = gast.Return(value=gast.Tuple(elts=[_load(me), gast.Constant(None, None)],
                                           ctx=gast.Load()))
        ret.pullback_state_return = True
        tree.body.append(_located(ret, tree.body[-1] if tree.body else tree))
    tree.name = f"{cls.__name__}_{name}"
    tree.decorator_list = []
    return tree


def _root(node):
    while isinstance(node, (gast.Attribute, gast.Subscript, gast.Starred)):
        node = node.value
    return node.id if isinstance(node, gast.Name) else None


def _text(node):
    if isinstance(node, gast.Name):
        return node.id
    if isinstance(node, gast.Attribute):
        return f"{_text(node.value)}.{node.attr}"
    if isinstance(node, gast.Subscript):
        return f"{_text(node.value)}[...]"
    return "..."


def _state_call_of(value, name, cls):
    """The method name of ``name.m(...)`` when ``m`` changes its object."""
    if isinstance(value, gast.Call) and isinstance(value.func, gast.Attribute) \
            and isinstance(value.func.value, gast.Name) and value.func.value.id == name \
            and not any(isinstance(a, gast.Starred) for a in value.args) \
            and not any(k.arg is None for k in value.keywords) \
            and changes_self(cls, value.func.attr):
        return value.func.attr
    return None
