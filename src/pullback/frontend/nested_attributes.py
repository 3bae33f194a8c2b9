"""Attributes of a nested function read in the function that defines it.

``frontend.closures`` lifts nested functions into functions of their own,
whose code has another name, file and parameters; so a read of
``inner.__code__`` (or ``__name__``, ``__qualname__``, ``__module__``,
``__doc__``) is replaced by what Python gives: the code object that the
user's own function holds for ``inner`` (among its constants, found by name
and line, its ``co_filename`` the user's file), or the name, qualified name,
module or docstring it has.  These are constants of the definition: Python
gives the same object each time the ``def`` runs.  Other attributes
(``__defaults__``, ``__closure__``, ``__dict__``...) are values of one run of
the ``def`` and stay refused::

    def outer(x):                               def outer(x):
        def inner(y):                               inner_code = <inner's code object>
            return y * 2.0              ->          if inner_code.co_filename == __file__:
        if inner.__code__.co_filename == __file__:      return inner_lifted(x) * x
            return inner(x) * x                     return x
        return x

>>> from pullback.testing import function_from_source
>>> import pullback as pb
>>> outer = function_from_source('''
... def outer(x):
...     def inner(y):
...         "Twice."
...         return y * 2.0
...     if inner.__code__.co_name == inner.__name__ == "inner" and inner.__doc__:
...         return inner(x) * x
...     return x
... ''')
>>> pb.grad(outer)(3.0)                        # d/dx 2 x**2
12.0
"""
from __future__ import annotations

import types

import gast

from ..ir.build import closure_name as _helper, name as _name

__all__ = ["nested_attribute", "original_code"]

_CONSTANT = ("__name__", "__qualname__", "__module__", "__doc__")


def nested_attribute(lifter, node, nested):
    """The expression that replaces ``node``, a read ``inner.attr`` of the
    nested function ``inner`` (``nested``, its ``closures._Nested``): a
    constant, or a closure name holding the code object; refused for any
    other attribute, or where the code object cannot be found."""
    parsed, name = lifter.parsed, node.value.id
    code = original_code(parsed, nested.origin)
    if node.attr not in _CONSTANT + ("__code__",) or code is None:
        what = f"`{name}.{node.attr}`"
        raise parsed.unsupported(
            node, f"the attribute {what} of the nested function `{name}`: pullback lifts "
                  "nested functions, and gives only what the `def` fixes (`__code__`, "
                  "`__name__`, `__qualname__`, `__module__`, `__doc__`)" + (
                      f", from the code Python made for `{name}`, which it cannot find"
                      if code is None else
                      f"; `{node.attr}` is made anew each time the `def` runs"),
            f"Read {what} outside the function being differentiated, or define `{name}` at "
            "module level.")
    if node.attr == "__code__":
        held = _helper(lifter.namer, parsed, f"{name}_code", code)
        return gast.copy_location(_name(held), node)
    value = {"__name__": code.co_name,
             "__qualname__": getattr(code, "co_qualname", code.co_name),
             "__module__": parsed.globals.get("__name__"),
             "__doc__": _docstring(nested.origin)}[node.attr]
    return gast.copy_location(gast.Constant(value, None), node)


def original_code(parsed, origin):
    """The code object Python made for the nested ``def`` (or lambda) ``origin``
    of the function ``parsed`` (one lifted from the user's keeps the user's
    code as ``__pullback_code__``): among the function's own constants, the
    one with its name and first line, else the one with its name (a lifted
    function's source is written anew: its lines moved), else the one with
    its name and line at any depth; None where there is not exactly one."""
    if origin is None:
        return None
    top = getattr(parsed.fn, "__pullback_code__", None) if hasattr(
        parsed.fn, "__pullback_code__") else getattr(parsed.fn, "__code__", None)
    if not isinstance(top, types.CodeType) or top.co_filename.startswith("<pullback:"):
        return None         # (a lifted function pullback wrote: its constants are not the user's)
    want = "<lambda>" if getattr(origin, "pullback_lambda", False) else origin.name
    own = [c for c in top.co_consts if isinstance(c, types.CodeType) and c.co_name == want]
    deep, todo = [], [top]
    while todo:
        code = todo.pop()
        inner = [c for c in code.co_consts if isinstance(c, types.CodeType)]
        deep += [c for c in inner if c.co_name == want]
        todo += inner
    for found in ([c for c in own if c.co_firstlineno == origin.lineno], own,
                  [c for c in deep if c.co_firstlineno == origin.lineno]):
        if len(found) == 1:
            return found[0]
    return None


def _docstring(origin):
    if getattr(origin, "pullback_lambda", False) or not origin.body:
        return None
    first = origin.body[0]
    if isinstance(first, gast.Expr) and isinstance(first.value, gast.Constant) \
            and isinstance(first.value.value, str):
        return first.value.value
    return None
