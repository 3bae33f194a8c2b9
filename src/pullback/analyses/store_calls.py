"""Calls that may store into an object holding differentiated values, refused
when the function is transformed (split from ``analyses.attributes``).

A call whose result is unused runs as plain Python: whatever it stores into
an object would go unseen, and the reads of the object after it would be
differentiated as if it had not run.  Refused here: a call of a user
function that stores into an attribute of an argument holding
differentiated values, or stores a differentiated argument into an
attribute (``callee_stores``, also through the functions it calls:
``frontend.attribute_stores``); and a statement ``obj.meth(...)`` on such an
object that ``frontend.method_state`` could not follow (``method_stores``,
saying why not)::

    def keep(log, v):               UnsupportedSyntaxError: pullback cannot
        log.last = v        ->      differentiate this call of `keep`: it
    keep(log, x)                    stores the value of its parameter `v` ...

>>> import numpy as np, pullback as pb
>>> from pullback.testing import function_from_source
>>> keep = function_from_source('''
... def keep(log, v):
...     log.last = v
... ''')
>>> f = function_from_source('''
... def f(x, log):
...     keep(log, x)
...     return np.sum(x)
... ''', {"keep": keep})
>>> class Log:
...     pass
>>> pb.grad(f)(np.ones(2), Log())
Traceback (most recent call last):
...
pullback.errors.UnsupportedSyntaxError: pullback cannot differentiate this call of `keep`: it stores the value of its parameter `v` into the attribute `log.last`, ...
"""
from __future__ import annotations

import builtins
import inspect
import types

import gast

from ..errors import UnsupportedSyntaxError
from ..frontend.self_changes import _may_change, changes_self
from .object_classes import class_of, only_binding, resolve_name, string_constant

__all__ = ["ATTRIBUTE_HINT", "called_function", "callee_stores", "method_stores"]

#: the hint of a refused store: what to write instead
ATTRIBUTE_HINT = ("pullback does not follow a differentiated value through an attribute. Keep "
                  "the value in a plain local name (or a tuple, list or dict) and pass it on or "
                  "return it; attribute stores of values that carry no gradient (counters, "
                  "flags, shapes) are fine.")


def called_function(stmt, ops):
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


def callee_stores(stmt, call, fn, bound, parsed, varied, useful):
    """The refusal of a call whose callee stores an attribute into an argument
    that holds differentiated values: run as plain Python (its result unused
    by the output) the store would go unseen, the reads after it
    differentiated as if it had not happened, and the caller's object changed."""
    from ..frontend.held_writes import varied_refusal
    from ..frontend.attribute_stores import attribute_stores, stored_values
    held = varied_refusal(fn, bound, varied, parsed, call)      # `hh(p)`: `p.w[0] = v`
    if held is not None:
        return [held]
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
                parsed.location(call), ATTRIBUTE_HINT)]
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


def method_stores(stmt, normal, parsed, varied, binds, ops=None):
    """The refusal of a statement ``obj.meth(...)`` (or ``getattr(obj,
    "meth")()``) whose result is unused, on an object holding differentiated
    values: such a call runs as plain Python, so whatever it changes in
    ``obj`` (``self.x = ...``, ``self.x[0] = ...``, ``self.hist.append(...)``)
    would go unseen, and the reads of ``obj`` after it would be differentiated
    as if it had not run (was a silent wrong gradient: ``s = S(x); s.step();
    np.sum(s.x)`` gave ones where ``2x`` is right).  A method of a user class
    (the one ``obj`` is built from here, ``obj = Cls(...)``, or for ``self``
    the method's own) is refused whatever it does; where the class is not
    known here, a name that is no array or container method is refused too."""
    if isinstance(stmt, gast.Assign) and isinstance(stmt.value, gast.Call) \
            and isinstance(stmt.value.func, gast.Attribute) \
            and isinstance(stmt.value.func.value, gast.Name) \
            and stmt.value.func.value.id in getattr(parsed, "state_refusals", {}) \
            and stmt.value.func.value.id in varied:
        # `y = c and s.step()`: a method changing `s` whose call
        # frontend.method_state could not follow (its reason, below)
        cls = class_of(stmt.value.func.value.id, normal, parsed, binds)
        if cls is None or not changes_self(cls, stmt.value.func.attr):
            return []
    elif not (isinstance(stmt, gast.Expr) and isinstance(stmt.value, gast.Call)):
        return []
    func = stmt.value.func
    if isinstance(func, gast.Name) and func.id in varied:
        bind = only_binding(func.id, binds)
        value = bind.value if bind is not None else None
        if isinstance(value, gast.Call) and isinstance(value.func, gast.Name) \
                and resolve_name(value.func.id, parsed, set()) is builtins.getattr \
                and value.args and isinstance(value.args[0], gast.Name):
            obj, meth = value.args[0].id, string_constant(value.args[1]) if len(value.args) > 1 \
                else None
        elif isinstance(value, gast.Attribute) and isinstance(value.value, gast.Name):
            obj, meth = value.value.id, value.attr
        else:
            return []
        if obj not in varied:
            return []
        meth = meth or "..."
    elif isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name) and (
            func.value.id in varied or (  # (or given one: `acc.add(x)` stores it)
                any(isinstance(a, gast.Name) and a.id in varied for a in stmt.value.args)
                and class_of(func.value.id, normal, parsed, binds) is not None)):
        obj, meth = func.value.id, func.attr
    else:
        return []
    from ..frontend.call_guards import param_store as _param_store
    from ..frontend.function_scans import _known_method
    cls = class_of(obj, normal, parsed, binds)
    what = ""
    if cls is None:
        if obj in normal.params or _known_method(meth):
            return []       # an argument: `no_attribute_store` checks it when it runs
        from .opaque_calls import defer_method_call
        if defer_method_call(stmt, normal, parsed, varied, ops and ops.get(id(stmt))):
            return []       # a library method is checked when it runs, others refused there
    else:
        method = inspect.getattr_static(cls, meth, None)
        if isinstance(method, (staticmethod, classmethod)):
            return []
        if isinstance(method, types.FunctionType):
            params = list(inspect.signature(method, follow_wrapped=False).parameters)
            if not params or not _may_change(cls, method, params[0], set()):
                return []
            found = _param_store(cls, method, params[0], set())
            if found is not None:
                attr, where = found
                target = f"the attribute `{obj}.{attr}`" if attr is not None \
                    else f"an attribute of `{obj}`"
                via = "" if where is method else f" (in `{where.__name__}`, which it calls)"
                what = f" It stores into {target}{via}."
    refusal = getattr(parsed, "state_refusals", {}).get(obj)
    if refusal is not None and cls is not None:
        # (frontend.method_state follows such a call where it can: say why not)
        node, why = refusal
        line = getattr(node, "lineno", None)
        return [UnsupportedSyntaxError(
            f"pullback cannot differentiate this call of `{meth}`, which changes `{obj}` "
            f"(an object holding differentiated values).{what} pullback follows such a call "
            f"by rebinding `{obj}` to the changed object, which is exact only where nothing "
            f"else can reach the object; here {why}"
            f"{f' (line {line})' if line is not None else ''}, and what reaches it there "
            "would not see the change.",
            parsed.location(stmt),
            f"Keep the object under the one name `{obj}` in this function: read its "
            f"attributes (`{obj}.x`) rather than passing, storing or returning it, or make "
            f"`{meth}` return the new values and bind them.")]
    cls_name = cls.__name__ if cls is not None else "object"
    name = "obj" if obj == "self" else obj
    shown = obj if obj in (parsed.location(stmt).line or "") else "the object"
    return [UnsupportedSyntaxError(
        f"pullback cannot differentiate this call of `{meth}`: its result is unused, "
        f"so it runs as plain Python, and {shown if shown == 'the object' else f'`{obj}`'} "
        "holds differentiated values: whatever the "
        "call changes in it would go unseen, and the reads of it after the call would be "
        f"differentiated as if the call had not run.{what}", parsed.location(stmt),
        f"Make `{meth}` return a new {cls_name} (or the new "
        f"values) instead of changing `self`, and bind it: `{name} = {name}.{meth}(...)`; "
        "a method called for its result (`e = s.energy()`) is differentiated.")]
