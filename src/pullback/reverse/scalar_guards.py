"""Scalar guards: in scalar code (a function given Python floats), the
runtime helpers a scalar's gradient passes through (``project``,
``zeros_like``, ``meta``) are skipped when the values are Python floats,
tested in the generated code rather than inside a call.

A recursion of Python floats or a loop of calls runs these helpers on every
call of every user function, and for Python floats each is the identity or
the constant ``0.0``: ``project(g, x)`` is ``g`` when ``g`` and ``x`` are
floats, ``zeros_like(x)`` is ``0.0`` and ``meta(x)`` is ``x`` when ``x`` is,
and ``join_grads(g, x, y)`` (``x + y`` of values that may be lists) is
``(g, g)`` when all three are.
A call costs some 650 instructions more than the test.  A parameter given a
Python float (``Kind.python``) needs no test; any other value that may be a
scalar (not an array, a container or a range, by its kind) is tested, and
the helper runs whenever the test fails, so the result is the helper's in
every case.  A function given no Python float is left as it is::

    return (out, (meta(err), t))               (a, t: Python floats)
    ...
    return (project(a_bar, a), zeros_like(t))
->
    return (out, (err if type(err) is float else meta(err), t))
    ...
    return (a_bar if type(a_bar) is float else project(a_bar, a), 0.0)

>>> import gast
>>> from pullback import runtime
>>> from pullback.analyses.kinds import Kind, Shape
>>> from pullback.backend.codegen import unparse
>>> fn = gast.parse('''
... def f_adjoint(residuals, out_bar):
...     a, err = residuals
...     return (project(out_bar, a), zeros_like(err))
... ''').body[0]
>>> helpers = {"project": runtime.project, "zeros_like": runtime.zeros_like}
>>> kinds = {"a": Kind(Shape.SCALAR, False, 0, "float64", python=True)}
>>> print(unparse(guard_function(fn, helpers, kinds, "type", "float")).strip())
def f_adjoint(residuals, out_bar):
    a, err = residuals
    return (out_bar if type(out_bar) is float else project(out_bar, a), 0.0 if type(err) is float else zeros_like(err))
"""
from __future__ import annotations

import gast

from .. import runtime
from ..analyses.kinds import Shape

__all__ = ["guard_function", "guard_derived"]

_NOT_SCALAR = (Shape.ARRAY, Shape.CONTAINER, Shape.RANGE)
_GUARDED = (runtime.project, runtime.zeros_like, runtime.meta, runtime.join_grads)


def guard_derived(derived, kinds) -> None:
    """``guard_function`` on a ``Derived`` primal and adjoint, with the names
    its helpers have there; binds ``type`` and ``float`` as helpers unless the
    code already reads them as the builtins (``builtin_name``)."""
    if not any(k.python for k in kinds.values()):
        return          # no Python float given: not scalar code
    names = {}
    for fn in _GUARDED:
        for k, v in derived.helpers.items():
            if v is fn:
                names[k] = fn
    if not names:
        return
    bound = {want: builtin_name(derived, want, value)
             for want, value in (("type", type), ("float", float))}
    loaded = _loaded_names(derived)
    # a parameter's kind holds for the parameter itself, never reassigned
    params = {a.id for a in derived.primal.args.args} - {
        n.id for n in gast.walk(derived.primal)
        if isinstance(n, gast.Name) and isinstance(n.ctx, (gast.Store, gast.Del))}
    kinds = {k: v for k, v in kinds.items() if k in params or not v.python}
    changed = False
    for fn in (derived.primal, derived.adjoint):
        changed |= _guard(fn, names, kinds, bound["type"], bound["float"])
    if changed:
        for want, value in (("type", type), ("float", float)):
            if bound[want] != want or want not in loaded:
                derived.helpers.setdefault(bound[want], value)


def _loaded_names(derived):
    return {n.id for f in (derived.primal, derived.adjoint) for n in gast.walk(f)
            if isinstance(n, gast.Name)}


def builtin_name(derived, want, value):
    """The name the generated code of ``derived`` reaches the builtin
    ``value`` (named ``want``) by: a helper bound to it, else ``want`` itself
    where the code reads it without binding it (``HelperNames.helper`` names
    an unshadowed builtin so) or does not use the name, else a fresh name
    (the caller binds it as a helper)."""
    for k, v in derived.helpers.items():
        if v is value:
            return k
    names, stored = set(), set()
    for f in (derived.primal, derived.adjoint):
        stored |= {a.id for a in f.args.args}
        for n in gast.walk(f):
            if isinstance(n, gast.Name):
                names.add(n.id)
                if not isinstance(n.ctx, gast.Load):
                    stored.add(n.id)
    if want not in stored and want not in derived.helpers:
        return want
    taken = names | set(derived.helpers)
    name, k = want, 0
    while name in taken:
        k += 1
        name = f"{want}_{k}"
    return name


def guard_function(fn, helpers, kinds, type_name, float_name):
    """Rewrite the calls of ``helpers`` (name -> runtime function) in ``fn``
    in place and return it; ``kinds``: name -> Kind (a name of array kind is
    left alone)."""
    names = {k: v for k, v in helpers.items() if v in _GUARDED}
    _guard(fn, names, kinds, type_name, float_name)
    return fn


def _guard(fn, names, kinds, type_name, float_name):
    changed = [False]

    def python(node):
        kind = kinds.get(node.id) if isinstance(node, gast.Name) else None
        return kind is not None and kind.python

    def maybe_scalar(node):
        if not isinstance(node, gast.Name):
            return False
        kind = kinds.get(node.id)
        return kind is None or kind.shape not in _NOT_SCALAR

    def is_float(node):
        return gast.Compare(left=gast.Call(func=gast.Name(type_name, gast.Load(), None, None),
                                           args=[gast.Name(node.id, gast.Load(), None, None)],
                                           keywords=[]),
                            ops=[gast.Is()],
                            comparators=[gast.Name(float_name, gast.Load(), None, None)])

    def rewrite(call):
        if not (isinstance(call, gast.Call) and isinstance(call.func, gast.Name)
                and call.func.id in names):
            return None
        fn_ = names[call.func.id]
        args = call.args
        if fn_ is runtime.project:
            if len(args) != 2 or any(k.arg != "copy" for k in call.keywords) \
                    or not (maybe_scalar(args[1]) and isinstance(args[0], gast.Name)):
                return None
            test = is_float(args[0]) if python(args[1]) else \
                gast.BoolOp(op=gast.And(), values=[is_float(args[0]), is_float(args[1])])
            body = gast.Name(args[0].id, gast.Load(), None, None)
        elif fn_ is runtime.join_grads:
            # `x + y` of values that may be lists: two floats take its first test
            if len(args) != 3 or call.keywords or not all(
                    isinstance(a, gast.Name) and maybe_scalar(a) for a in args):
                return None
            test = gast.BoolOp(op=gast.And(), values=[is_float(a) for a in args])
            body = gast.Tuple(elts=[gast.Name(args[0].id, gast.Load(), None, None)
                                    for _ in range(2)], ctx=gast.Load())
        elif len(args) != 1 or call.keywords or not maybe_scalar(args[0]):
            return None
        elif fn_ is runtime.zeros_like:
            test, body = is_float(args[0]), gast.Constant(0.0, None)
        else:       # meta
            test, body = is_float(args[0]), gast.Name(args[0].id, gast.Load(), None, None)
        if fn_ in (runtime.zeros_like, runtime.meta) and python(args[0]):
            changed[0] = True
            return body          # a Python float given as the parameter itself
        changed[0] = True
        return gast.IfExp(test=test, body=body, orelse=call)

    class Rewriter(gast.NodeTransformer):
        def visit_Call(self, node):
            self.generic_visit(node)
            new = rewrite(node)
            return node if new is None else new

        def visit_IfExp(self, node):
            # `x.shape if type(x) is ndarray else meta(x)` (a tape entry of an
            # array): already a test of its own
            if isinstance(node.test, gast.Compare) and isinstance(node.test.left, gast.Call) \
                    and isinstance(node.test.left.func, gast.Name) \
                    and node.test.left.func.id == type_name:
                return node
            self.generic_visit(node)
            return node

    Rewriter().visit(fn)
    return changed[0]
