"""Which class's ``__init__`` a call in an ``__init__`` runs, and which stores
into ``self`` are not plain stores: what ``frontend.instances`` needs to
rewrite an ``__init__`` into the function that returns the new object (split
from it).

``super().__init__(...)`` (single inheritance: the next class of the MRO
after the method's own that defines ``__init__``) and ``Base.__init__(self,
...)`` (``Base`` a class of the MRO) name the base whose ``__init__`` runs;
anything else is a sentence saying why it cannot be told::

>>> import gast
>>> from pullback.testing import function_from_source
>>> from pullback.frontend.parse import parse
>>> A, B = function_from_source('''
... def make():
...     class A:
...         def __init__(self, w):
...             self.w = w
...     class B(A):
...         def __init__(self, w):
...             super().__init__(w)
...             A.__init__(self, w)
...     return A, B
... ''', {"__name__": "example"})()
>>> parsed = parse(B.__init__)
>>> first, second = (s.value for s in parsed.tree.body)
>>> base_class(B, parsed.tree, first, "self", parsed) is A
True
>>> base_class(B, parsed.tree, second, "self", parsed) is A
True
"""
from __future__ import annotations

import types

import gast

from .properties import static_value

__all__ = ["base_class", "check_descriptor"]


def base_class(cls, tree, call, me, parsed):
    """The class whose __init__ ``call`` runs: ``super().__init__(...)`` or
    ``Base.__init__(self, ...)``; None for another call; a sentence where it
    cannot be told."""
    func = call.func
    if isinstance(func.value, gast.Call) and isinstance(func.value.func, gast.Name) \
            and func.value.func.id == "super":
        if func.value.args:
            return "__init__ calls `super(...)` with arguments"
        init = cls.__init__
        cells = dict(zip(init.__code__.co_freevars, init.__closure__ or ()))
        home = cells.get("__class__")
        home = home.cell_contents if home is not None else None
        mro = cls.__mro__
        if home not in mro:
            return "__init__ calls `super()` where its class is not known"
        if any(len(c.__bases__) > 1 for c in mro):
            return "__init__ calls `super()` in a class with several bases"
        for c in mro[mro.index(home) + 1:]:
            if "__init__" in vars(c):
                return c
        return object
    if isinstance(func.value, gast.Name) and call.args and isinstance(call.args[0], gast.Name) \
            and call.args[0].id == me:
        value = static_value(func.value, parsed)
        if isinstance(value, type) and value in cls.__mro__ and value is not cls:
            return value if "__init__" in vars(value) or value is object else next(
                (c for c in value.__mro__ if "__init__" in vars(c)), object)
        return f"`{func.value.id}.__init__(self, ...)` runs the __init__ of a class that " \
               f"is not a base of {cls.__name__}"
    return None


def check_descriptor(cls, attr, node, refuse):
    """Refuse (``refuse(node, why)``) a store into ``attr`` where ``cls`` has a
    property or another data descriptor of that name (a slot is stored as one)."""
    for c in cls.__mro__:
        d = vars(c).get(attr)
        if d is not None and hasattr(type(d), "__set__") \
                and not isinstance(d, types.MemberDescriptorType):   # (a slot: stored as one)
            refuse(node, f"`{attr}` is a property (or another descriptor) of the class")
