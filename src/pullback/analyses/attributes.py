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
``setattr(obj, "attr", v)`` written out, and for a call of a user function
that stores into an attribute of an argument holding differentiated values
(``h(p)`` with ``h`` doing ``p.b = 0.0``, also through the functions it calls:
``frontend.written.attribute_stores``), refused with the caret on the call.
Calls through values and methods (``p.reset()``) are checked when they run
(``frontend.writes`` puts ``no_attribute_store`` before them).

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
import inspect
import types

import gast

from .. import runtime
from ..errors import UnsupportedSyntaxError

__all__ = ["check"]

_HINT = ("pullback does not follow a differentiated value through an attribute. Keep the "
         "value in a plain local name (or a tuple, list or dict) and pass it on or return "
         "it; attribute stores of values that carry no gradient (counters, flags, shapes) "
         "are fine.")


def check(normal, parsed, varied, ops=None, useful=None) -> None:
    """Raise on the first attribute store of ``normal`` that carries a gradient,
    here or in a user function it calls (``ops``: ``analyses.ops.resolve``'s)."""
    errors = []
    local = {n.id for n in gast.walk(normal.tree)
             if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)} | set(normal.params)
    for stmt in gast.walk(normal.tree):
        call = _called(stmt, ops)
        if call is not None:
            errors.extend(_callee_stores(stmt, *call, parsed, varied, useful))
        errors.extend(_method_stores(stmt, normal, parsed, varied))
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


def _called(stmt, ops):
    """(call node, user function, {param: argument}) of a statement that
    calls a user function by name, else None."""
    if ops is None or not isinstance(stmt, (gast.Expr, gast.Assign)) \
            or not isinstance(stmt.value, gast.Call):
        return None
    op = ops.get(id(stmt))
    if op is None or op.kind != "user":
        return None
    fn = op.primitive
    if isinstance(fn, types.MethodType):    # `COUNTER.bump(x)`: its object is not an argument
        fn = fn.__func__
    if not isinstance(fn, types.FunctionType):
        return None
    return stmt.value, fn, op.bound


def _callee_stores(stmt, call, fn, bound, parsed, varied, useful):
    """The refusal of a call whose callee stores an attribute into an argument
    that holds differentiated values: run as plain Python (its result unused
    by the output) the store would go unseen, the reads after it
    differentiated as if it had not happened, and the caller's object changed."""
    from ..frontend.written import attribute_stores, stored_values
    stores = attribute_stores(fn)
    for param, (target, where) in stored_values(fn).items():
        arg = bound.get(param)
        args = arg if isinstance(arg, tuple) else (arg,)
        if any(isinstance(a, gast.Name) and a.id in varied for a in args):
            via = "" if where is fn else f" (in `{where.__name__}`, which it calls)"
            return [UnsupportedSyntaxError(
                f"pullback cannot differentiate this call of `{fn.__name__}`: it stores the "
                f"value of its parameter `{param}` into the attribute `{target}`{via}, and "
                f"here `{param}` carries a gradient, which would not follow it there.",
                parsed.location(call), _HINT)]
    for param, arg in bound.items():
        args = arg if isinstance(arg, tuple) else (arg,)
        if param not in stores or not any(
                isinstance(a, gast.Name) and a.id in varied for a in args):
            continue
        attr, where, called = stores[param]
        name = next(a.id for a in args if isinstance(a, gast.Name) and a.id in varied)
        if called:
            # `q.reset()` in the callee: differentiated, it is checked when it
            # runs (its own transform guards the call); run as plain Python, not
            if isinstance(stmt, gast.Assign) and useful is not None and all(
                    isinstance(t, gast.Name) and t.id in varied and t.id in useful
                    for t in stmt.targets):
                continue
            via = "" if where is fn else f" (in `{where.__name__}`, which it calls)"
            return [UnsupportedSyntaxError(
                f"pullback cannot differentiate this call of `{fn.__name__}`: it calls "
                f"`{param}.{called[0]}()` on its parameter `{param}`{via}, a method that may "
                f"store into it, and the argument `{name}` holds differentiated values; "
                f"`{fn.__name__}` runs here as plain Python (its result carries no "
                "gradient), where such a store would go unseen.", parsed.location(call),
                f"Make `{called[0]}` and `{fn.__name__}` return a new object instead of "
                f"changing their argument (`dataclasses.replace({param}, ...)`), or call "
                f"`{name}.{called[0]}()` here, where pullback checks it.")]
        what = f"the attribute `{attr}`" if attr is not None else "an attribute"
        via = "" if where is fn else f" (in `{where.__name__}`, which it calls)"
        example = f"dataclasses.replace({param}, {attr}=...)" if attr is not None \
            else f"dataclasses.replace({param}, ...)"
        return [UnsupportedSyntaxError(
            f"pullback cannot differentiate this call of `{fn.__name__}`: it stores into "
            f"{what} of its parameter `{param}`{via}, and the argument `{name}` holds "
            f"differentiated values, so the reads of `{name}` after the call would be "
            "differentiated as if the store had not happened.", parsed.location(call),
            f"Make `{fn.__name__}` return a new object instead of changing its argument, "
            f"e.g. `return {example}`, and use it: `{name} = {fn.__name__}(...)`.")]
    return []


def _method_stores(stmt, normal, parsed, varied):
    """The refusal of a statement ``obj.meth(...)`` (its result unused, so it
    runs as plain Python) on an object holding differentiated values whose
    method stores into an attribute of its ``self`` (``self.x = self.x * dt``),
    directly or through the methods it calls: the reads of ``obj`` after it
    would be differentiated as if the store had not happened (was a silent
    wrong gradient: ``s = S(x); s.step(); np.sum(s.x)`` gave ones).  The
    class is the one ``obj`` is built from in this function (``obj = S(x)``)
    or, for ``self``, the method's own; an object whose class pullback cannot
    tell here (an argument, a factory's result) is left to the checks made
    when the call runs."""
    if not (isinstance(stmt, gast.Expr) and isinstance(stmt.value, gast.Call)):
        return []
    func = stmt.value.func
    if not (isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name)
            and func.value.id in varied):
        return []
    obj, meth = func.value.id, func.attr
    cls = _class_of(obj, normal, parsed)
    if cls is None:
        return []
    from ..frontend.written import _param_store
    method = inspect.getattr_static(cls, meth, None)
    if not isinstance(method, types.FunctionType):
        return []
    params = list(inspect.signature(method, follow_wrapped=False).parameters)
    found = _param_store(cls, method, params[0], set()) if params else None
    if found is None:
        return []
    attr, where = found
    what = f"the attribute `{obj}.{attr}`" if attr is not None else f"an attribute of `{obj}`"
    via = "" if where is method else f" (in `{where.__name__}`, which it calls)"
    return [UnsupportedSyntaxError(
        f"pullback cannot differentiate this call of `{obj}.{meth}()`: its result is unused, "
        f"so it runs as plain Python, and it stores into {what}{via}, while `{obj}` holds "
        "differentiated values: the reads of it after the call would be differentiated as "
        "if the store had not happened.", parsed.location(stmt),
        f"Make `{meth}` return a new `{cls.__name__}` instead of changing `self`, and bind "
        f"it: `{'obj' if obj == 'self' else obj} = {'obj' if obj == 'self' else obj}"
        f".{meth}(...)`.")]


def _class_of(name, normal, parsed):
    """The user class of the object ``name`` holds: built in this function
    by ``name = Cls(...)`` (its only binding), or ``self`` of a method."""
    binds = [n for n in gast.walk(normal.tree) if isinstance(n, gast.Assign)
             and any(isinstance(t, gast.Name) and t.id == name for t in n.targets)]
    if len(binds) == 1 and isinstance(binds[0].value, gast.Call) \
            and isinstance(binds[0].value.func, gast.Name):
        cls = _resolve(binds[0].value.func.id, parsed, set())
        return cls if isinstance(cls, type) and not issubclass(cls, BaseException) else None
    params = list(normal.params)
    if not binds and params and name == params[0]:
        qual = getattr(parsed.fn, "__qualname__", "").split(".")
        if len(qual) >= 2 and qual[-2] != "<locals>":
            cls = parsed.fn.__globals__.get(qual[-2])
            if isinstance(cls, type) and isinstance(
                    inspect.getattr_static(cls, parsed.fn.__name__, None), types.FunctionType):
                return cls
    return None


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
