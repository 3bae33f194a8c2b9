"""Methods given differentiated values that change an object holding none.

``o = Buf(3); o.add(0, x[0])`` with ``add`` doing ``self.data[i] += x``: the
call's result is unused and ``o`` holds no differentiated value, so the call
runs as plain Python, where ``x[0]`` goes into ``o.data`` with no gradient;
the reads of ``o`` after it were differentiated as constants (a silent zero
gradient).  Such a call is refused when the function is transformed, naming
the line and the change the method makes; a method that changes nothing
(``o.log(x)``), or one called for its result, is not concerned::

    o = Buf(3)                  UnsupportedSyntaxError: pullback cannot
    o.add(0, x[0])      ->      differentiate this call of `Buf.add`: it is
    return o.total()            given a differentiated value and changes `o`
                                (`self.data[i] += x`) ...

>>> import numpy as np, pullback as pb
>>> class Buf:
...     def __init__(self, n):
...         self.data = np.zeros(n)
...     def add(self, i, x):
...         self.data[i] += x
>>> def f(x):
...     o = Buf(2)
...     o.add(0, x[0])
...     return np.sum(o.data)
>>> pb.grad(f)(np.ones(2))
Traceback (most recent call last):
...
pullback.errors.UnsupportedSyntaxError: pullback cannot differentiate this call of `Buf.add`: ...
"""
from __future__ import annotations

import inspect
import types

import gast

from ..errors import UnsupportedSyntaxError

__all__ = ["refusals"]


def refusals(stmt, normal, parsed, varied, class_of):
    """The refusal of ``obj.meth(...)``, a statement, where ``obj`` (of the
    user's class ``class_of(obj)``) holds no differentiated value, an argument
    does, and the method may change ``obj`` (module docstring)."""
    if not (isinstance(stmt, gast.Expr) and isinstance(stmt.value, gast.Call)):
        return []
    call = stmt.value
    func = call.func
    if not (isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name)) \
            or func.value.id in varied:
        return []
    given = [a for a in list(call.args) + [k.value for k in call.keywords]
             if isinstance(a, gast.Name) and a.id in varied]
    if not given:
        return []
    obj, meth = func.value.id, func.attr
    cls = class_of(obj)
    method = inspect.getattr_static(cls, meth, None) if cls is not None else None
    if not isinstance(method, types.FunctionType):
        return []
    params = list(inspect.signature(method, follow_wrapped=False).parameters)
    from ..frontend.method_state import _may_change
    if not params or not _may_change(cls, method, params[0], set()):
        return []
    change, attr = _change(cls, method, params[0])
    attr = attr or "data"
    return [UnsupportedSyntaxError(
        f"pullback cannot differentiate this call of `{cls.__name__}.{meth}`: it is given a "
        f"differentiated value and changes `{obj}`{change}, an object that holds none; its "
        "result unused, the call runs as plain Python, so what it puts into "
        f"`{obj}` would carry no gradient, and the reads of `{obj}` after it would be "
        "differentiated as constants.", parsed.location(stmt),
        f"Make `{meth}` return the new values (`{attr} = self.{attr}.copy(); {attr}[i] += x; "
        f"return {attr}`) and bind them, or give the values to `{cls.__name__}(...)` when "
        f"building `{obj}`.")]


def _change(cls, method, self_name):
    """`` (`self.data[i] += x`)`` and ``data``: the first change the method
    makes to its object that the guards find (a write into an array it holds,
    or a store), and the attribute it changes."""
    from ..frontend.call_guards import param_store, self_array_writes
    writes = self_array_writes(cls, method, self_name, set())
    if writes:
        return f" (`{writes[0][1]}`)", writes[0][0][0]
    found = param_store(cls, method, self_name, set())
    if found is not None and found[0] is not None:
        return f" (it stores `self.{found[0]}`)", found[0]
    return "", None
