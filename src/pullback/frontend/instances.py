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

An ``__init__`` that uses ``self`` otherwise (calls a method, passes ``self``
on, ``super().__init__``, stores inside a branch or a loop), or a class with
its own ``__new__``, ``__setattr__``, ``__slots__``, a metaclass or a
property among the stored names, is refused naming the class.

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

__all__ = ["followed", "why_not_followed", "fields_function", "rewrite_init", "ObjectMaker"]

_made = weakref.WeakKeyDictionary()      # class -> its fields function


class ObjectMaker:
    """``new_object(**attributes)``: an object of ``cls`` whose attributes are
    set in order, as its ``__init__``'s ``self.attr = value`` set them."""

    def __init__(self, cls):
        self.cls = cls

    def __call__(self, **attributes):
        obj = object.__new__(self.cls)
        for k, v in attributes.items():
            object.__setattr__(obj, k, v)
        return obj


def plain_class(cls):
    """Why objects of the user's class ``cls`` cannot be followed (a
    sentence), or None when its ``__init__`` is one to rewrite."""
    if type(cls) is not type:
        return "it has a metaclass"
    if cls.__new__ is not object.__new__:
        return "it defines __new__"
    if cls.__setattr__ is not object.__setattr__:
        return "it defines __setattr__"
    if any("__slots__" in vars(c) for c in cls.__mro__):
        return "it defines __slots__"
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

    for node in gast.walk(tree):
        if isinstance(node, gast.Name) and node.id in ("super", "__class__"):
            refuse(node, "__init__ calls `super()` (the base class's __init__ would run on "
                         "an object pullback does not follow)")
    args = tree.args
    if not args.args:
        refuse(tree, "__init__ takes no `self`")
    me = args.args[0].id
    args.args = args.args[1:]
    taken = {n.id for n in gast.walk(tree) if isinstance(n, gast.Name)}
    locals_, order = {}, []

    def local(attr):
        if attr not in locals_:
            v = f"{me}_{attr}"
            while v in taken:
                v += "_"
            taken.add(v)
            locals_[attr] = v
            order.append(attr)
        return locals_[attr]

    def is_self_attr(node):
        return isinstance(node, gast.Attribute) and isinstance(node.value, gast.Name) \
            and node.value.id == me

    class Reads(gast.NodeTransformer):
        def visit_Attribute(self, node):
            if is_self_attr(node) and isinstance(node.ctx, gast.Load):
                if node.attr not in locals_:
                    refuse(node, f"`{me}.{node.attr}` is read before __init__ stores it")
                return gast.copy_location(gast.Name(id=locals_[node.attr], ctx=gast.Load(),
                                                    annotation=None, type_comment=None), node)
            return self.generic_visit(node)

        def visit_Name(self, node):
            if node.id == me:
                refuse(node, f"`{me}` is used otherwise than to store or read an attribute")
            return node

    body = []
    for stmt in tree.body:
        if isinstance(stmt, gast.Expr) and isinstance(stmt.value, gast.Constant) \
                and isinstance(stmt.value.value, str):
            continue       # the docstring
        if isinstance(stmt, gast.Return) and stmt.value is None and stmt is tree.body[-1]:
            continue
        if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 \
                and is_self_attr(stmt.targets[0]):
            stmt.value = Reads().visit(stmt.value)
            target = stmt.targets[0]
            _check_descriptor(cls, target.attr, target, refuse)
            stmt.targets = [gast.copy_location(gast.Name(
                id=local(target.attr), ctx=gast.Store(), annotation=None, type_comment=None),
                target)]
            body.append(stmt)
            continue
        if isinstance(stmt, gast.AugAssign) and is_self_attr(stmt.target):
            if stmt.target.attr not in locals_:
                refuse(stmt, f"`{me}.{stmt.target.attr}` is updated before __init__ stores it")
            stmt.value = Reads().visit(stmt.value)
            stmt.target = gast.copy_location(gast.Name(
                id=locals_[stmt.target.attr], ctx=gast.Store(), annotation=None,
                type_comment=None), stmt.target)
            body.append(stmt)
            continue
        for node in gast.walk(stmt):
            if isinstance(node, gast.Name) and node.id == me:
                if isinstance(stmt, (gast.If, gast.For, gast.While, gast.With, gast.Try)):
                    refuse(node, f"`{me}` is used inside a block (a branch or a loop)")
                refuse(node, f"`{me}` is used otherwise than to store an attribute")
        body.append(Reads().visit(stmt))
    maker = "new_object"
    while maker in taken or maker in parsed.globals:
        maker += "_"
    parsed.closure[maker] = types.CellType(ObjectMaker(cls))
    ret = gast.Return(value=gast.Call(
        func=gast.Name(id=maker, ctx=gast.Load(), annotation=None, type_comment=None),
        args=[], keywords=[gast.keyword(arg=a, value=gast.Name(
            id=locals_[a], ctx=gast.Load(), annotation=None, type_comment=None))
            for a in order]))
    last = tree.body[-1]
    gast.copy_location(ret, last)
    gast.copy_location(ret.value, last)
    tree.body = body + [ret]
    tree.name = f"{name}_init"
    return tree


def _check_descriptor(cls, attr, node, refuse):
    for c in cls.__mro__:
        d = vars(c).get(attr)
        if d is not None and hasattr(type(d), "__set__"):
            refuse(node, f"`{attr}` is a property (or another descriptor) of the class")
