"""``super_function``: the function ``super(cls, obj).name`` calls, found
when the call runs (``frontend.super_calls`` writes it in for ``super()``)."""
from __future__ import annotations

import types

__all__ = ["super_function"]


def super_function(cls, obj, name):
    """The plain function ``super(cls, obj).name`` binds to ``obj``: the
    first class after ``cls`` in ``obj``'s method resolution order whose body
    defines ``name``; called as ``fn(obj, ...)``.  A staticmethod, a
    classmethod, a property or a method not defined with ``def`` is refused
    (the object's gradient would have no function to flow through).

    >>> class A:
    ...     def f(self, x):
    ...         return x
    >>> class B(A):
    ...     def f(self, x):
    ...         return 2 * x
    >>> super_function(B, B(), "f") is A.f
    True
    """
    mro = obj.__mro__ if isinstance(obj, type) else type(obj).__mro__
    if cls not in mro:
        raise TypeError(f"super(type, obj): obj must be an instance or subtype of type "
                        f"({cls.__name__})")
    for klass in mro[mro.index(cls) + 1:]:
        if name in vars(klass):
            found = vars(klass)[name]
            if isinstance(found, types.FunctionType) and not isinstance(obj, type):
                return found
            from ..errors import UnsupportedSyntaxError
            raise UnsupportedSyntaxError(
                f"pullback follows `super().{name}(...)` into a method of a base class "
                f"defined with def; {klass.__name__}.{name} is a "
                f"{type(found).__name__}" + (" called on a class" if isinstance(obj, type)
                                             else "") + ".",
                hint=f"Call it by its class: `{klass.__name__}.{name}(...)`.")
    raise AttributeError(f"'super' object has no attribute '{name}'")
