"""Objects of the user's own classes built inside a differentiated function.

``Dense(W, b)`` of a class whose ``__init__`` only stores values into
attributes of ``self`` is differentiated as a call of that ``__init__``
rewritten into a function that returns the new object: each
``self.attr = value`` becomes a local name, and the object is built from them
at the end (``new_object``, a construction like a dataclass's: the object's
cotangent is a dict of its attributes' cotangents, and each attribute's goes
back to the value stored).  The class's methods (``model(x)``,
``layer.forward(x)``) are calls of user functions with ``self`` an argument
that carries a gradient (``driver/dispatch``)::

    class Dense:                               def Dense_init(W, b, act=None):
        def __init__(self, W, b, act=None):        self_W = W
            self.W = W                      ->      self_b = b
            self.b = b                              self_act = act
            self.act = act                          return new_object(W=self_W, b=self_b,
                                                                      act=self_act)

Stores inside a branch or a loop become stores into the attribute's local; an
attribute stored only on some paths starts as ``NOT_STORED`` and is left off
the object where the path taken did not store it (as Python leaves it).
``super().__init__(...)`` (single inheritance) and ``Base.__init__(self, ...)``
call the base class's function, rewritten the same way, and take the
attributes it stored::

    class Scaled(Layer):                        def Scaled_init(w, scale=2.0):
        def __init__(self, w, scale=2.0):          self_Layer = Layer_init(w * scale)
            super().__init__(w * scale)    ->      self_w = self_Layer.w
            if scale > 1.0:                        self_scale = self_w
                self.scale = self.w                ...

``self.W, self.b = W, b`` is split into one store per attribute (through
fresh names first where the values read ``self``, so a swap keeps Python's
meaning); ``self.log_softmax(z)`` of a staticmethod reads the class's.  A
class called through a value known only when the call runs (``cls(...)`` in
a classmethod, ``Model(**params)`` spread by ``star_call``) goes to the same
rewritten ``__init__`` (``analyses.callable_facts.called_class``, from ``callees._unwrap``)::

    class Norm:                                 def Norm_init(z, s):
        def __init__(self, z, s):                   self_p = Norm_.log_softmax(z)
            self.p = self.log_softmax(z)   ->      self_s = s
            self.s, self.t = s, 2 * s               self_t = 2 * s
                                                    return new_object(p=self_p, ...)

An ``__init__`` that uses ``self`` otherwise (calls a method, passes ``self``
on, runs the base's ``__init__`` inside a block, ``super()`` with several
bases), or a class with its own ``__new__``, ``__setattr__``, a metaclass (but
``abc.ABCMeta``: ``class Model(abc.ABC)`` is followed) or a property among the
stored names, is refused naming the class (``__slots__`` are stored as
attributes are).
A property read is a call of its getter where the class is known
(``frontend.properties``), else refused when the adjoint runs.

>>> import numpy as np, pullback as pb
>>> from pullback.testing import function_from_source
>>> from pullback.backend.codegen import unparse
>>> from pullback.frontend.parse import parse
>>> Dense = function_from_source('''
... def make():
...     class Dense:
...         def __init__(self, W, b):
...             self.W = W
...             self.b = b * 1.0
...         def __call__(self, x):
...             return x @ self.W + self.b
...     return Dense
... ''', {"__name__": "example"})()
>>> print(unparse(parse(fields_function(Dense)).tree))
def Dense_init(W, b):
    self_W = W
    self_b = b * 1.0
    return new_object(W=self_W, b=self_b)
>>> loss = function_from_source('''
... def loss(W, b, x):
...     return np.sum(Dense(W, b)(x))
... ''', {"Dense": Dense})
>>> pb.grad(loss, argnums=(0, 1))(np.ones((2, 1)), 0.5, np.array([[1.0, 2.0]]))
(array([[1.],
       [2.]]), 1.0)
"""
from __future__ import annotations

import inspect
import types
import weakref

import gast

from ..errors import NonDifferentiableError, PullbackError
from ..runtime.objects import plain_metaclass
from .followed import Followed
from .init_bases import base_class as _base_class, check_descriptor as _check_descriptor

__all__ = ["followed", "why_not_followed", "fields_function", "rewrite_init", "ObjectMaker",
           "NOT_STORED"]

_made = weakref.WeakKeyDictionary()      # class -> its fields function


class ObjectMaker:
    """``new_object(**attributes)``: an object of ``cls`` whose attributes are
    set in order, as its ``__init__``'s ``self.attr = value`` set them."""

    def __init__(self, cls):
        self.cls = cls

    def __call__(self, **attributes):
        obj = object.__new__(self.cls)
        for k, v in attributes.items():
            if v is not NOT_STORED:
                object.__setattr__(obj, k, v)
        return obj


def plain_class(cls):
    """Why objects of the user's class ``cls`` cannot be followed (a
    sentence), or None when its ``__init__`` is one to rewrite."""
    if not plain_metaclass(cls):
        return (f"its metaclass {type(cls).__name__} may change how its objects are made "
                f"(pullback knows type and abc.ABCMeta)")
    if cls.__new__ is not object.__new__:
        return "it defines __new__"
    if cls.__setattr__ is not object.__setattr__:
        return "it defines __setattr__"
    init = cls.__init__
    if not isinstance(init, types.FunctionType):
        return "its __init__ is not a Python function"
    return None


_refused = weakref.WeakKeyDictionary()   # class -> why its objects are not followed


def followed(cls):
    """The fields function of ``cls`` when its ``__init__`` can be rewritten
    (checked once per class), else None (``why_not_followed`` says why)."""
    if cls in _refused:
        return None
    why = plain_class(cls)
    fn = fields_function(cls) if why is None else None
    if fn is not None:
        from .parse import parse       # (parse calls back through __pullback_rewrite__)
        try:
            parse(fn)
        except PullbackError as err:
            loc = err.location
            why = err.message.split("; here ", 1)[-1].rstrip(".") + (
                f" (line {loc.lineno} of {loc.filename})" if loc is not None else "")
            fn = None
    if fn is None:
        _refused[cls] = why or "its source is not available"
    return fn


def why_not_followed(cls):
    try:
        return _refused.get(cls)
    except TypeError:
        return None


def fields_function(cls):
    """The function that builds an object of ``cls`` from ``__init__``'s
    arguments (``__init__``'s own code, rewritten when it is parsed:
    ``rewrite_init``), or None for a class whose objects cannot be followed."""
    fn = _made.get(cls)
    if fn is not None:
        return fn
    if plain_class(cls) is not None:
        return None
    init = cls.__init__
    fn = types.FunctionType(init.__code__, init.__globals__, f"{cls.__name__}_init",
                            init.__defaults__, init.__closure__)
    fn.__kwdefaults__ = init.__kwdefaults__
    fn.__qualname__ = f"{cls.__qualname__}.__init__"
    fn.__module__ = init.__module__
    sig = inspect.signature(init)
    fn.__signature__ = sig.replace(parameters=list(sig.parameters.values())[1:])
    fn.__pullback_rewrite__ = lambda tree, parsed: rewrite_init(tree, parsed, cls)
    _made[cls] = fn
    return fn


def rewrite_init(tree, parsed, cls):
    """Rewrite the ``__init__`` FunctionDef ``tree`` in place into the function
    that returns the new object (see the module docstring)."""
    name = cls.__name__

    def refuse(node, why):
        raise NonDifferentiableError(
            f"pullback follows an object of your class {name} built from values being "
            f"differentiated when its __init__ only stores values into attributes of self "
            f"(`self.w = w`); here {why}.", parsed.location(node),
            f"Compute the values first and store each with `self.attr = value` at the top "
            f"level of __init__, or make {name} a dataclass, or create the object outside "
            f"and pass the values being differentiated to its methods as arguments.")

    args = tree.args
    if not args.args:
        refuse(tree, "__init__ takes no `self`")
    me = args.args[0].id
    args.args = args.args[1:]
    taken = {n.id for n in gast.walk(tree) if isinstance(n, gast.Name)}
    locals_, order = {}, []
    unset = [None]              # the name of the "not stored on this path" marker
    own = [None]                # the name the class itself goes by (its staticmethods)

    def fresh(base):
        v = base
        while v in taken or v in parsed.globals or v in parsed.closure:
            v += "_"
        taken.add(v)
        return v

    def local(attr):
        if attr not in locals_:
            locals_[attr] = fresh(f"{me}_{attr}")
            order.append(attr)
        return locals_[attr]

    def is_self_attr(node):
        return isinstance(node, gast.Attribute) and isinstance(node.value, gast.Name) \
            and node.value.id == me

    def load(n):
        return gast.Name(id=n, ctx=gast.Load(), annotation=None, type_comment=None)

    def store(n):
        return gast.Name(id=n, ctx=gast.Store(), annotation=None, type_comment=None)

    class Reads(gast.NodeTransformer):
        def visit_Attribute(self, node):
            if is_self_attr(node) and isinstance(node.ctx, gast.Load):
                if node.attr not in locals_ and isinstance(
                        inspect.getattr_static(cls, node.attr, None),
                        (staticmethod, classmethod)):
                    # `self.log_softmax(z)` of a staticmethod: the class's
                    if own[0] is None:
                        own[0] = fresh(name)
                        parsed.closure[own[0]] = types.CellType(cls)
                    return gast.copy_location(gast.Attribute(
                        value=gast.copy_location(load(own[0]), node), attr=node.attr,
                        ctx=gast.Load()), node)
                if node.attr not in locals_:
                    refuse(node, f"`{me}.{node.attr}` is read before __init__ stores it")
                return gast.copy_location(load(locals_[node.attr]), node)
            return self.generic_visit(node)

        def visit_Name(self, node):
            if node.id == me:
                refuse(node, f"`{me}` is used otherwise than to store or read an attribute")
            return node

    def base_init(stmt):
        """``super().__init__(...)`` (or ``Base.__init__(self, ...)``): the
        statements that run the base class's __init__, rewritten the same way,
        and take the attributes it stores."""
        call = stmt.value
        base = _base_class(cls, tree, call, me, parsed)
        if base is None:
            return None
        if isinstance(base, str):
            refuse(stmt, base)
        if base is object:
            if call.args or call.keywords:
                refuse(stmt, "`super().__init__` is object's and is given arguments")
            return []
        fn = followed(base)
        if fn is None:
            refuse(stmt, f"the base class {base.__name__}'s __init__ is not followed: "
                         f"{why_not_followed(base)}")
        made = fresh(f"{me}_{base.__name__}")
        helper = fresh(f"{base.__name__}_init")
        # (where no argument carries a gradient the call runs as plain Python:
        # the rewritten code, compiled without derivatives, not __init__'s own)
        parsed.closure[helper] = types.CellType(Followed(fn))
        args = [a for a in call.args]
        if isinstance(call.func.value, gast.Name):      # Base.__init__(self, ...)
            args = args[1:]
        out = [gast.Assign(targets=[store(made)], value=gast.Call(
            func=load(helper), args=[Reads().visit(a) for a in args],
            keywords=[gast.keyword(arg=k.arg, value=Reads().visit(k.value))
                      for k in call.keywords]), type_comment=None)]
        for attr in _stored.get(base, ()):
            out.append(gast.Assign(targets=[store(local(attr))], value=gast.Attribute(
                value=load(made), attr=attr, ctx=gast.Load()), type_comment=None))
        for o in out:
            for n in gast.walk(o):
                gast.copy_location(n, stmt)
        return out

    def split(stmt):
        """``self.W, self.b = W, b``: one store per attribute, through fresh
        names where a value reads ``self`` (``self.a, self.b = self.b, self.a``
        swaps, as Python does); None for another statement."""
        if not (isinstance(stmt, gast.Assign) and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], (gast.Tuple, gast.List))
                and isinstance(stmt.value, (gast.Tuple, gast.List))):
            return None
        targets, values = stmt.targets[0].elts, stmt.value.elts
        if len(targets) != len(values) or not any(is_self_attr(t) for t in targets) \
                or any(isinstance(e, gast.Starred) for e in targets + values) \
                or not all(is_self_attr(t) or isinstance(t, gast.Name) for t in targets):
            return None
        reads = any(isinstance(n, gast.Name) and n.id in ({me} | {
            t.id for t in targets if isinstance(t, gast.Name)})
            for v in values for n in gast.walk(v))
        out = []
        if reads:
            names = [fresh("value") for _ in values]
            out = [gast.Assign(targets=[store(n)], value=Reads().visit(v), type_comment=None)
                   for n, v in zip(names, values)]
            values = [load(n) for n in names]
        for t, v in zip(targets, values):
            out.append(gast.Assign(targets=[t], value=v, type_comment=None))
        for o in out:
            for n in gast.walk(o):
                if not hasattr(n, "lineno") or n.lineno is None:
                    gast.copy_location(n, stmt)
        return out

    def block(stmts, top):
        body = []
        pending = list(stmts)
        while pending:
            stmt = pending.pop(0)
            parts = split(stmt)
            if parts is not None:
                pending[:0] = parts
                continue
            if top and isinstance(stmt, gast.Expr) and isinstance(stmt.value, gast.Constant) \
                    and isinstance(stmt.value.value, str):
                continue       # the docstring
            if top and isinstance(stmt, gast.Return) and stmt.value is None \
                    and stmt is tree.body[-1]:
                continue
            if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 \
                    and is_self_attr(stmt.targets[0]):
                stmt.value = Reads().visit(stmt.value)
                target = stmt.targets[0]
                _check_descriptor(cls, target.attr, target, refuse)
                if not top and target.attr not in locals_:
                    unset[0] = unset[0] or fresh("not_stored")
                local(target.attr)
                stmt.targets = [gast.copy_location(store(locals_[target.attr]), target)]
                body.append(stmt)
                continue
            if isinstance(stmt, gast.AugAssign) and is_self_attr(stmt.target):
                if stmt.target.attr not in locals_:
                    refuse(stmt, f"`{me}.{stmt.target.attr}` is updated before __init__ "
                                 "stores it")
                stmt.value = Reads().visit(stmt.value)
                stmt.target = gast.copy_location(store(locals_[stmt.target.attr]),
                                                 stmt.target)
                body.append(stmt)
                continue
            if isinstance(stmt, gast.Expr) and isinstance(stmt.value, gast.Call) \
                    and isinstance(stmt.value.func, gast.Attribute) \
                    and stmt.value.func.attr == "__init__":
                inlined = base_init(stmt)
                if inlined is not None:
                    if not top:
                        refuse(stmt, "the base class's __init__ runs inside a block (a "
                                     "branch or a loop)")
                    body.extend(inlined)
                    continue
            if isinstance(stmt, (gast.If, gast.For, gast.While)):
                # stores in a branch or a loop: the attribute's local, which a
                # path that does not store it leaves unset (then not set on the object)
                for field in ("test", "iter", "target"):
                    if getattr(stmt, field, None) is not None:
                        setattr(stmt, field, Reads().visit(getattr(stmt, field)))
                stmt.body = block(stmt.body, False)
                stmt.orelse = block(stmt.orelse, False)
                body.append(stmt)
                continue
            for node in gast.walk(stmt):
                if isinstance(node, gast.Name) and node.id == me:
                    if isinstance(stmt, (gast.With, gast.Try)):
                        refuse(node, f"`{me}` is used inside a `with` or `try` block")
                    refuse(node, f"`{me}` is used otherwise than to store an attribute")
            body.append(Reads().visit(stmt))
        return body

    for node in gast.walk(tree):
        if isinstance(node, gast.Name) and node.id == "__class__":
            refuse(node, "__init__ reads `__class__`")
    body = block(tree.body, True)
    maker = fresh("new_object")
    parsed.closure[maker] = types.CellType(ObjectMaker(cls))
    pre = []
    if unset[0] is not None:
        # an attribute stored only on some paths: marked unset on entry, and
        # left off the object where the path taken did not store it
        parsed.closure[unset[0]] = types.CellType(NOT_STORED)
        first = tree.body[0]
        for attr in order:
            pre.append(gast.copy_location(gast.Assign(
                targets=[store(locals_[attr])], value=load(unset[0]), type_comment=None), first))
            for n in gast.walk(pre[-1]):
                gast.copy_location(n, first)
    ret = gast.Return(value=gast.Call(
        func=load(maker), args=[], keywords=[gast.keyword(arg=a, value=load(locals_[a]))
                                             for a in order]))
    last = tree.body[-1]
    for n in gast.walk(ret):
        gast.copy_location(n, last)
    tree.body = pre + body + [ret]
    tree.name = f"{name}_init"
    _stored[cls] = tuple(order)
    return tree


_stored = weakref.WeakKeyDictionary()   # class -> the attributes its __init__ stores


class _NotStored:
    """An attribute's value on a path of __init__ that does not store it."""

    def __repr__(self):
        return "NOT_STORED"


NOT_STORED = _NotStored()
