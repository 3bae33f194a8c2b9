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
``frontend.attribute_stores``), refused with the caret on the call
(``analyses.store_calls``).
Calls through values and methods (``p.reset()``) are checked when they run
(``frontend.writes`` puts ``no_attribute_store`` before them): a store into a
dataclass, and a method writing into an array its object holds
(``self.w[0] = v``, ``self.w += v``, on any object), are refused there before
the call runs.

An object holding differentiated values (one built here, ``s = S(x)``, or
``self`` in its method) is differentiated as the dict of its attributes, so
what would change it or read it through code pullback does not follow is
refused when the function is transformed, naming the line; ``check`` runs
these refusals too, one walk for all: calls that may store into such an
object (a user function's stores into its arguments, a method call
``frontend.method_state`` could not follow: ``analyses.store_calls``), and
writes into what an attribute holds, property reads and a class's own
``__getitem__``/``__iter__`` (``analyses.object_reads``).  Each was a silent
wrong gradient before (the corpus' third round); ``s = s.step()`` with
``step`` returning a new object is exact.

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
from . import method_arguments
from .object_classes import bindings, class_of, resolve_name, string_constant
from .object_reads import own_item_reads, property_reads, writes_through_attributes
from .store_calls import ATTRIBUTE_HINT, called_function, callee_stores, method_stores

__all__ = ["check"]


def check(normal, parsed, varied, ops=None, useful=None) -> None:
    """Raise on the first attribute store of ``normal`` that carries a gradient,
    here or in a user function it calls (``ops``: ``analyses.ops.resolve``'s)."""
    errors = []
    local = {n.id for n in gast.walk(normal.tree)
             if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)} | set(normal.params)
    binds = bindings(normal)    # name -> the assignments binding it (one walk)
    for stmt in gast.walk(normal.tree):
        call = called_function(stmt, ops)
        if call is not None:
            errors.extend(callee_stores(stmt, *call, parsed, varied, useful))
        errors.extend(method_arguments.refusals(
            stmt, normal, parsed, varied, lambda n: class_of(n, normal, parsed, binds)))
        errors.extend(method_stores(stmt, normal, parsed, varied, binds, ops))
        if ops is not None:         # a library call is checked when it runs (opaque_calls)
            from .opaque_calls import defer_call
            defer_call(stmt, ops.get(id(stmt)), normal, parsed, varied, useful)
        errors.extend(property_reads(stmt, normal, parsed, varied, binds))
        errors.extend(own_item_reads(stmt, normal, parsed, varied, binds))
        if not (isinstance(stmt, gast.Expr) and isinstance(stmt.value, gast.Call)):
            continue
        store = _store(stmt.value, parsed, local)
        if store is None:
            continue
        obj, attr, values = store
        what = f"the attribute `{_text(obj)}.{attr}`" if attr is not None \
            else f"an attribute of `{_text(obj)}`"
        if isinstance(obj, gast.Name) and isinstance(
                resolve_name(obj.id, parsed, local), types.ModuleType):
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
                stmt, f"a store of a differentiated value into {what}", ATTRIBUTE_HINT))
    errors.extend(writes_through_attributes(normal, parsed, varied))
    if errors:
        from ..normalize.normalize import _all_of
        raise _all_of(errors)


def _store(call, parsed, local):
    """(object, attribute name or None, values stored) of a store, else None."""
    func = call.func
    if not isinstance(func, gast.Name):
        return None
    target = resolve_name(func.id, parsed, local)
    if target is runtime.store_attribute and len(call.args) == 3:
        return call.args[0], string_constant(call.args[1]), [call.args[2]]
    if target is runtime.update_attribute and len(call.args) == 5:
        return call.args[0], string_constant(call.args[1]), [call.args[2], call.args[4]]
    if target is builtins.setattr:
        args = list(call.args) + [k.value for k in call.keywords]
        if args and any(isinstance(a, gast.Starred) for a in args):
            return args[0], None, args
        if len(args) >= 3:
            return args[0], string_constant(args[1]), args[2:]
    return None


def _text(node):
    if isinstance(node, gast.Name):
        return node.id
    if isinstance(node, gast.Attribute):
        return f"{_text(node.value)}.{node.attr}"
    return "..."
