"""Calls whose result carries no gradient, checked when they run.

A call given values being differentiated whose result no gradient reaches (a
statement ``lib.stash(store, v)``, ``b.apply_defaults()``, or a name the
output does not depend on) runs as plain Python, where the reverse pass does
not dispatch it.  When its callee turns out to be library code it must still
be checked to have only moved data (``runtime.opaque``): a library that
stores a differentiated value into a list, rearranges one, or writes into an
array would change what later reads see, unseen.  So such a call is written
as a checked call; a call of the user's own code runs as before::

    lib.stash(store, v)       ->    checked_call((0, 1), lib.stash, store, v)
    b.apply_defaults()        ->    checked_method_call((-1,), True, b, 'apply_defaults')

``strict`` (the object holds differentiated values and its class is not
known when the function is transformed) refuses, when it runs, a method
that is not library code, as ``analyses.attributes`` does where the class is
known.

>>> import inspect, pullback as pb
>>> from pullback.testing import function_from_source
>>> f = function_from_source('''
... def f(x):
...     b = inspect.signature(lambda u, v=2.0: u).bind(x)
...     b.apply_defaults()
...     u, v = tuple(b.arguments.values())
...     return u * v
... ''', {"inspect": inspect})
>>> pb.grad(f)(3.0)
2.0
"""
from __future__ import annotations

import gast

from ..ir.build import closure_name
from .callable_facts import static_value
from ..runtime.checked_calls import checked_call, checked_method_call

__all__ = ["defer_method_call", "defer_call"]


def _mask(pairs):
    return gast.Tuple(elts=[gast.Constant(k, None) for k in pairs], ctx=gast.Load())


def _plain(call):
    return not any(isinstance(a, gast.Starred) for a in call.args) \
        and not any(k.arg is None for k in call.keywords)


def _name(normal, parsed, base, value):
    return gast.Name(id=closure_name(normal.namer, parsed, base, value), ctx=gast.Load(),
                     annotation=None, type_comment=None)


def defer_method_call(stmt, normal, parsed, varied=(), op=None):
    """Rewrite the statement ``obj.meth(...)`` (``obj`` holding differentiated
    values, its class unknown) into a strict checked call; True if it was
    (``analyses.attributes`` then does not refuse it)."""
    if not (isinstance(stmt, gast.Expr) and isinstance(stmt.value, gast.Call)):
        return False
    call = stmt.value
    func = call.func
    if not (isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name)) \
            or not _plain(call):
        return False
    mask = [-1] + [k for k, n in (op.operands if op is not None else ())
                   if n in varied and k != -1 and isinstance(k, (int, str))]
    _rewrite(stmt, call, normal, parsed, mask, True)
    return True


def _rewrite(stmt, call, normal, parsed, mask, strict):
    func = call.func
    helper = _name(normal, parsed, "checked_method_call", checked_method_call)
    new = gast.Call(func=helper, args=[_mask(mask), gast.Constant(strict, None), func.value,
                                       gast.Constant(func.attr, None)] + list(call.args),
                    keywords=call.keywords)
    stmt.value = gast.copy_location(new, call)


def defer_call(stmt, op, normal, parsed, varied, useful):
    """Rewrite a dynamic call given differentiated values whose result no
    gradient reaches (a statement, or an assignment to names the output does
    not use) into a checked call.  The object of a method holding such values
    is left to ``defer_method_call`` (through ``analyses.attributes``)."""
    if op is None or op.kind != "dynamic" or not isinstance(stmt.value, gast.Call) \
            or not isinstance(stmt, (gast.Expr, gast.Assign)):
        return
    if isinstance(stmt, gast.Assign) and (useful is None or not all(
            isinstance(t, gast.Name) and t.id not in useful for t in stmt.targets)):
        return
    call = stmt.value
    mask = [k for k, n in op.operands if n in varied]
    func = call.func
    if isinstance(func, gast.Attribute):
        from ..frontend.function_scans import _known_method
        if -1 in mask and not _known_method(func.attr):
            return      # analyses.attributes: refused, or strict (defer_method_call)
        if isinstance(func.value, gast.Name) and useful is not None \
                and func.value.id not in useful and _known_method(func.attr):
            return      # a log (`calls.append(call)`): nothing read from it reaches the output
    if not mask or -2 in mask or not _plain(call):
        return
    if any(isinstance(k, int) and k >= len(call.args) for k in mask):
        return
    if isinstance(func, gast.Name) and (_pullback_own(static_value(func, parsed))
                                        or func.id in ("setattr", "delattr")):
        return          # star_call, attempt, nested_value; stores (analyses.attributes)
    if isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name) \
            and op.bound.get("receiver") is not None:
        _rewrite(stmt, call, normal, parsed, mask, False)
        return
    helper = _name(normal, parsed, "checked_call", checked_call)
    new = gast.Call(func=helper, args=[_mask(mask), func] + list(call.args),
                    keywords=call.keywords)
    stmt.value = gast.copy_location(new, call)


def _pullback_own(value):
    """Whether the value a call's name refers to is pullback's own."""
    module = getattr(value, "__module__", None) or ""
    return module.split(".")[0] == "pullback"
