"""Attribute stores: which ones run as plain side effects, which are refused.

Normalize writes ``obj.attr = v`` as a call of ``store_attribute`` and
``obj.attr op= v`` as ``old = obj.attr`` then ``update_attribute``:

    ctx.calls += 1      ->  calls = ctx.calls
                            update_attribute(ctx, 'calls', calls, 'Add', 1)

A store whose object and value carry no gradient (neither is varied: not
derived from a differentiated input) is a side effect of the primal, run
once, where Python runs it; the adjoint and the tangent code never run it
again.  A store that would carry a gradient is refused: the attribute is not
followed as a variable, so a later read of it (here, in a callee, or after
the call) would see a value with no gradient attached, and an object that
holds differentiated values (``p.w`` of a differentiated ``p``) would have its
reads differentiated as if the store had not happened.  The same holds for
``setattr(obj, "attr", v)`` written out.

>>> import numpy as np, pullback as pb
>>> from pullback.testing import function_from_source, normal_form
>>> from pullback.backend.codegen import unparse
>>> loss = function_from_source('''
... def loss(x, log):
...     log.calls += 1
...     log.last = x.shape
...     return np.sum(x * x)
... ''')
>>> print(unparse(normal_form(loss).tree))
def loss(x, log):
    calls = log.calls
    update_attribute(log, 'calls', calls, 'Add', 1)
    shape = x.shape
    store_attribute(log, 'last', shape)
    x_x = x * x
    out = np.sum(x_x)
    return out
>>> class Log:
...     calls = 0
>>> log = Log()
>>> pb.grad(loss)(np.array([3.0]), log), log.calls, log.last
(array([6.]), 1, (1,))
"""
from __future__ import annotations

import builtins
import types

import gast

from .. import runtime

__all__ = ["check"]

_HINT = ("pullback does not follow a differentiated value through an attribute. Keep the "
         "value in a plain local name (or a tuple, list or dict) and pass it on or return "
         "it; attribute stores of values that carry no gradient (counters, flags, shapes) "
         "are fine.")


def check(normal, parsed, varied) -> None:
    """Raise on the first attribute store of ``normal`` that carries a gradient."""
    errors = []
    local = {n.id for n in gast.walk(normal.tree)
             if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)} | set(normal.params)
    for stmt in gast.walk(normal.tree):
        if not (isinstance(stmt, gast.Expr) and isinstance(stmt.value, gast.Call)):
            continue
        store = _store(stmt.value, parsed, local)
        if store is None:
            continue
        obj, attr, values = store
        what = f"the attribute `{_text(obj)}.{attr}`" if attr is not None \
            else f"an attribute of `{_text(obj)}`"
        if isinstance(obj, gast.Name) and isinstance(
                _resolve(obj.id, parsed, local), types.ModuleType):
            errors.append(parsed.unsupported(
                stmt, f"a store into {what}, an attribute of a module: a module's attributes "
                      "are read as constants",
                "Pass the value as an argument, or keep it on an object of your own."))
        elif isinstance(obj, gast.Name) and obj.id in varied:
            errors.append(parsed.unsupported(
                stmt, f"a store into {what}: `{_text(obj)}` holds differentiated values, "
                      "and its reads would be differentiated as if the store had not happened",
                "Build a new value and bind it to a plain local name (`y = y.reshape(3, 1)`, "
                "`p = Params(w, 0.0)`) instead of changing this object."))
        elif any(isinstance(v, gast.Name) and v.id in varied for v in values):
            errors.append(parsed.unsupported(
                stmt, f"a store of a differentiated value into {what}", _HINT))
    if errors:
        from ..normalize.normalize import _all_of
        raise _all_of(errors)


def _store(call, parsed, local):
    """(object, attribute name or None, values stored) of a store, else None."""
    func = call.func
    if not isinstance(func, gast.Name):
        return None
    target = _resolve(func.id, parsed, local)
    if target is runtime.store_attribute and len(call.args) == 3:
        return call.args[0], _constant(call.args[1]), [call.args[2]]
    if target is runtime.update_attribute and len(call.args) == 5:
        return call.args[0], _constant(call.args[1]), [call.args[2], call.args[4]]
    if target is builtins.setattr:
        args = list(call.args) + [k.value for k in call.keywords]
        if args and any(isinstance(a, gast.Starred) for a in args):
            return args[0], None, args
        if len(args) >= 3:
            return args[0], _constant(args[1]), args[2:]
    return None


def _resolve(name, parsed, local):
    if name in parsed.closure:
        try:
            return parsed.closure[name].cell_contents
        except (ValueError, AttributeError):
            return None
    if name in parsed.globals:
        return parsed.globals[name]
    if name in local:
        return None
    return getattr(builtins, name, None)


def _constant(node):
    return node.value if isinstance(node, gast.Constant) and isinstance(node.value, str) \
        else None


def _text(node):
    if isinstance(node, gast.Name):
        return node.id
    if isinstance(node, gast.Attribute):
        return f"{_text(node.value)}.{node.attr}"
    return "..."
