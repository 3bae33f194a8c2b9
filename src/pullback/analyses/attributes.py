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
(``frontend.writes`` puts ``no_attribute_store`` before them): a store into a
dataclass, and a method writing into an array its object holds
(``self.w[0] = v``, ``self.w += v``, on any object), are refused there before
the call runs.

An object holding differentiated values (one built here, ``s = S(x)``, or
``self`` in its method) is differentiated as the dict of its attributes, so
what would change it or read it through code pullback does not follow is
refused here too, naming the line: a statement ``s.step()`` whose method may
change ``self`` and which ``frontend.method_state`` could not follow (the
object has another name, is in a list, is passed on: the reason and its line
are in the message; followed, the call is a call of the method's state
function and never reaches this check), a write into what an attribute holds
(``s.x[0] = v``, ``s.hist.append(v)``), a property read (``c.area``) and
``s[i]``/``for v in s`` on a class with its own ``__getitem__``/
``__iter__``.  Each was a silent wrong gradient before (the corpus' third
round); ``s = s.step()`` with ``step`` returning a new object is exact.

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
import functools
import inspect
import types

import gast

from .. import runtime
from . import method_arguments
from ..errors import UnsupportedSyntaxError
from ..runtime.origin import module_name
from ..frontend.followed import Followed
from ..frontend.method_state import _CHANGING, _may_change, changes_self, state_class

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
    binds = {}                  # name -> the assignments binding it (one walk)
    for n in gast.walk(normal.tree):
        if isinstance(n, gast.Assign):
            for t in n.targets:
                if isinstance(t, gast.Name):
                    binds.setdefault(t.id, []).append(n)
    for stmt in gast.walk(normal.tree):
        call = _called(stmt, ops)
        if call is not None:
            errors.extend(_callee_stores(stmt, *call, parsed, varied, useful))
        errors.extend(method_arguments.refusals(
            stmt, normal, parsed, varied, lambda n: _class_of(n, normal, parsed, binds)))
        errors.extend(_method_stores(stmt, normal, parsed, varied, binds, ops))
        if ops is not None:         # a library call is checked when it runs (opaque_calls)
            from .opaque_calls import defer_call
            defer_call(stmt, ops.get(id(stmt)), normal, parsed, varied, useful)
        errors.extend(_property_reads(stmt, normal, parsed, varied, binds))
        errors.extend(_own_item_reads(stmt, normal, parsed, varied, binds))
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
    errors.extend(_writes_through_attributes(normal, parsed, varied))
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
    from ..frontend.held_writes import varied_refusal
    from ..frontend.written import attribute_stores, stored_values
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


def _method_stores(stmt, normal, parsed, varied, binds, ops=None):
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
        cls = _class_of(stmt.value.func.value.id, normal, parsed, binds)
        if cls is None or not changes_self(cls, stmt.value.func.attr):
            return []
    elif not (isinstance(stmt, gast.Expr) and isinstance(stmt.value, gast.Call)):
        return []
    func = stmt.value.func
    if isinstance(func, gast.Name) and func.id in varied:
        bind = _only_binding(func.id, binds)
        value = bind.value if bind is not None else None
        if isinstance(value, gast.Call) and isinstance(value.func, gast.Name) \
                and _resolve(value.func.id, parsed, set()) is builtins.getattr \
                and value.args and isinstance(value.args[0], gast.Name):
            obj, meth = value.args[0].id, _constant(value.args[1]) if len(value.args) > 1 \
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
                and _class_of(func.value.id, normal, parsed, binds) is not None)):
        obj, meth = func.value.id, func.attr
    else:
        return []
    from ..frontend.call_guards import param_store as _param_store
    from ..frontend.written import _known_method
    cls = _class_of(obj, normal, parsed, binds)
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


def _property_reads(stmt, normal, parsed, varied, binds):
    """The refusal of ``v = obj.attr`` where ``attr`` is a property (or
    another data descriptor) of the class of an object holding differentiated
    values: the read is differentiated as a read of a stored attribute, so
    the gradient of what the property computes was dropped (was a silent
    wrong gradient: ``c = Circle(r); np.sum(c.area)`` gave zeros)."""
    if not (isinstance(stmt, gast.Assign) and isinstance(stmt.value, gast.Attribute)
            and isinstance(stmt.value.value, gast.Name) and stmt.value.value.id in varied):
        return []
    obj, attr = stmt.value.value.id, stmt.value.attr
    cls = _class_of(obj, normal, parsed, binds)
    found = inspect.getattr_static(cls, attr, None) if cls is not None else None
    # (a property with a setter that `__init__` stores into: instances refuses the class)
    if not (isinstance(found, functools.cached_property)
            or (isinstance(found, property) and found.fset is None)):
        return []
    if obj not in (parsed.location(stmt).line or ""):
        obj = "..."                 # a name normalize made (`Circle(r).area`)
    return [UnsupportedSyntaxError(
        f"pullback cannot differentiate the read of `{obj}.{attr}`: `{attr}` is a property of "
        f"`{cls.__name__}`, computed by code pullback does not follow through an attribute "
        "read, so the gradient of what it computes would be lost.", parsed.location(stmt),
        f"Make `{attr}` a method and call it (`{obj}.{attr}()`): a method's result is "
        "differentiated.")]


def _own_item_reads(stmt, normal, parsed, varied, binds):
    """The refusal of ``v = obj[i]`` and ``for v in obj`` where ``obj``, holding
    differentiated values, is of a user class with its own ``__getitem__`` or
    ``__iter__``: the read was differentiated as a namedtuple's (``obj[0]``
    as its first attribute), a silent wrong gradient (``Pair(a, b)[0]``
    returning ``b`` gave ``a`` the gradient) or an IndexError."""
    if isinstance(stmt, gast.Assign) and isinstance(stmt.value, gast.Subscript):
        node, dunder = stmt.value.value, ("__getitem__",)
    elif isinstance(stmt, gast.For):
        node, dunder = stmt.iter, ("__iter__", "__getitem__")
    else:
        return []
    if not (isinstance(node, gast.Name) and node.id in varied):
        return []
    cls = _class_of(node.id, normal, parsed, binds)
    if cls is None or issubclass(cls, (tuple, list, dict)) or not any(
            isinstance(inspect.getattr_static(cls, d, None), types.FunctionType)
            for d in dunder):
        return []
    obj = node.id if node.id in (parsed.location(stmt).line or "") else "..."
    how = "indexing" if isinstance(stmt, gast.Assign) else "iterating over"
    return [UnsupportedSyntaxError(
        f"pullback cannot differentiate {how} `{obj}`: `{cls.__name__}` defines its own "
        f"`{dunder[0]}`, which pullback does not follow (it would read the object's "
        "attributes in order, as a namedtuple's).", parsed.location(stmt),
        "Index or walk the attribute that holds the items (`obj.layers[i]`, "
        "`for layer in obj.layers`), or call a method that returns the item.")]


def _writes_through_attributes(normal, parsed, varied):
    """The refusals of writes into a value read from an attribute of an object
    holding differentiated values (``s.x[0] = 5.0``, ``s.x[1] += v``,
    ``s.hist.append(v)``, ``np.add.at(s.x, i, v)``, here or in a method on
    ``self``): the attribute is not followed as a variable, so the reads of
    it after the write were differentiated as if it had not happened (was a
    silent wrong gradient: ``s.hist.append(3 * x)`` then
    ``np.sum(s.hist[0] ** 2)`` gave zeros, ``s.x[0] = 5.0`` kept the gradient
    of the overwritten element)."""
    held = {}
    for node in gast.walk(normal.tree):
        if isinstance(node, gast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], gast.Name) \
                and isinstance(node.value, gast.Attribute) \
                and isinstance(node.value.value, gast.Name) and node.value.value.id in varied:
            held[node.targets[0].id] = f"{node.value.value.id}.{node.value.attr}"
    if not held:
        return []

    def root(node):
        while isinstance(node, (gast.Attribute, gast.Subscript, gast.Starred)):
            node = node.value
        return node.id if isinstance(node, gast.Name) else None
    errors = []
    for stmt in gast.walk(normal.tree):
        name = None
        if isinstance(stmt, (gast.Assign, gast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, gast.Assign) else [stmt.target]
            name = next((root(t) for t in targets if isinstance(t, gast.Subscript)
                         and root(t) in held), None)
        if name is None and isinstance(stmt, (gast.Expr, gast.Assign)) \
                and isinstance(stmt.value, gast.Call):
            call = stmt.value
            func = call.func
            if isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name) \
                    and func.value.id in held and func.attr in _CHANGING:
                name = func.value.id
            elif isinstance(func, gast.Attribute) and func.attr == "at" and call.args \
                    and isinstance(call.args[0], gast.Name) and call.args[0].id in held:
                name = call.args[0].id
            else:
                name = next((k.value.id for k in call.keywords if k.arg == "out"
                             and isinstance(k.value, gast.Name) and k.value.id in held), None)
        if name is None:
            continue
        attr = held[name]
        obj = attr.split(".")[0]
        shown = attr if attr in (parsed.location(stmt).line or "") else f"an attribute of `{obj}`"
        shown = f"`{shown}`" if shown == attr else shown
        errors.append(UnsupportedSyntaxError(
            f"pullback cannot differentiate this write into {shown}: `{obj}` holds "
            "differentiated values, and an attribute is not followed as a variable, so the "
            "reads of it after the write would be differentiated as if it had not happened.",
            parsed.location(stmt),
            "Build the new value in a local name (`x = s.x.copy(); x[0] = v`, "
            "`hist = s.hist + [v]`) and use it, or make a new object with it."))
    return errors


def _only_binding(name, binds):
    found = binds.get(name, [])
    return found[0] if len(found) == 1 else None


def _class_of(name, normal, parsed, binds):
    """The user class of the object ``name`` holds: built in this function
    by ``name = Cls(...)`` (its only binding), or ``self`` of a method; or
    an object followed through the methods that change it
    (``frontend.method_state``), whose names normalize rebinds."""
    followed = _followed_classes(normal, parsed)
    if name in followed:
        return followed[name]
    binds = binds.get(name, [])
    if len(binds) == 1 and isinstance(binds[0].value, gast.Call) \
            and isinstance(binds[0].value.func, gast.Name):
        cls = _resolve(binds[0].value.func.id, parsed, set())
        if isinstance(cls, type) and module_name(cls) == "builtins":
            return None
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


def _followed_classes(normal, parsed):
    """Name -> class for the names of the normal form that hold an object
    ``frontend.method_state`` follows: bound from ``Cls(...)``, from the
    object a state function returns, from ``with_attribute`` or from another
    such name (normalize's copies in loops), and from nothing else."""
    from ..runtime.objects import with_attribute
    if not getattr(parsed, "state_objects", None) and state_class(parsed.fn) is None:
        return {}
    memo = getattr(normal, "_followed_classes", None)
    if memo is not None:
        return memo
    sources = {}
    for n in gast.walk(normal.tree):
        if isinstance(n, gast.Assign):
            for t in n.targets:
                if isinstance(t, gast.Name):
                    sources.setdefault(t.id, []).append((n.value, None))
                elif isinstance(t, gast.Tuple):
                    for i, e in enumerate(t.elts):
                        if isinstance(e, gast.Name):
                            sources.setdefault(e.id, []).append((n.value, i))
        elif isinstance(n, (gast.For, gast.AugAssign)):
            target = n.target
            for e in gast.walk(target):
                if isinstance(e, gast.Name):
                    sources.setdefault(e.id, []).append((None, None))
    owner = state_class(parsed.fn)
    params = list(normal.params)
    known = {params[0]: owner} if owner is not None and params else {}

    def source_class(value, index):
        if isinstance(value, gast.Name) and index is None:
            return known.get(value.id)
        if not isinstance(value, gast.Call) or not isinstance(value.func, gast.Name):
            return None
        fn = _resolve(value.func.id, parsed, set())
        if isinstance(fn, Followed) and index == 0 and state_class(fn.function) is not None:
            return state_class(fn.function)
        if fn is with_attribute and index is None and value.args \
                and isinstance(value.args[0], gast.Name):
            return known.get(value.args[0].id)
        if index is None and isinstance(fn, type) \
                and fn in getattr(parsed, "state_objects", {}).values():
            return fn
        return None
    changed = True
    while changed:          # optimistic: what one source says, ...
        changed = False
        for name, srcs in sources.items():
            if name not in known:
                found = {source_class(v, i) for v, i in srcs} - {None}
                if len(found) == 1:
                    known[name] = found.pop()
                    changed = True
    changed = True
    while changed:          # ... kept where every source agrees
        changed = False
        for name in list(known):
            if owner is not None and name == params[0] and name not in sources:
                continue
            if any(source_class(v, i) is not known[name]
                   for v, i in sources.get(name, [(None, None)])):
                del known[name]
                changed = True
    normal._followed_classes = known
    return known


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
