"""Shape guards: in a loop's adjoint, an ``unbroadcast_to`` whose cotangent
already has the shape the tape kept (the common case, a loop's carried
arrays) is skipped by a test in the generated code rather than inside a call.

The FPU chain's step runs four ``unbroadcast_to(g, s)`` (``s`` the shape the
tape kept of an array read only for its shape), each a call that returns
``g`` itself whenever ``g`` is an array of that shape.  The test is the
helper's own first test, written out; the helper runs whenever it fails, so
the result is the helper's in every case (and for a tape entry that is not a
shape, a ``meta``, the test fails)::

    x_1_bar = unbroadcast_to(x_1_bar, x_1)
->
    x_1_bar = x_1_bar if type(x_1_bar) is ndarray and x_1_bar.shape == x_1 \
        else unbroadcast_to(x_1_bar, x_1)

Only where both arguments are names.  Straight-line code keeps its plain
``unbroadcast(g, x)``: each runs once, beside array work.

>>> import gast
>>> from pullback import runtime
>>> from pullback.backend.codegen import unparse
>>> fn = gast.parse('''
... def f_adjoint(g, s):
...     return unbroadcast_to(g, s)
... ''').body[0]
>>> helpers = {"unbroadcast_to": runtime.unbroadcast_to}
>>> print(unparse(guard_function(fn, helpers, {}, "type", "ndarray")).strip())
def f_adjoint(g, s):
    return g if type(g) is ndarray and g.shape == s else unbroadcast_to(g, s)
"""
from __future__ import annotations

import gast
import numpy as np

from .. import runtime
from .scalar_guards import _loaded_names, builtin_name

__all__ = ["guard_function", "guard_derived"]


def guard_derived(derived, kinds) -> None:
    """``guard_function`` on a ``Derived`` adjoint, with the names its
    helpers have there; binds ``type`` and ``ndarray`` under names of their
    own where they are not bound yet."""
    helpers = {k: v for k, v in derived.helpers.items() if v is runtime.unbroadcast_to}
    if not helpers:
        return
    bound = {want: builtin_name(derived, want, value)
             for want, value in (("type", type), ("ndarray", np.ndarray))}
    loaded = _loaded_names(derived)
    if _guard(derived.adjoint, helpers, kinds, bound["type"], bound["ndarray"]):
        for want, value in (("type", type), ("ndarray", np.ndarray)):
            if bound[want] != want or want not in loaded:
                derived.helpers.setdefault(bound[want], value)


def guard_function(fn, helpers, kinds, type_name, ndarray_name):
    """Rewrite the calls of ``helpers`` (name -> runtime function) in ``fn``
    in place and return it (``kinds``: name -> Kind, unused)."""
    _guard(fn, {k: v for k, v in helpers.items() if v is runtime.unbroadcast_to},
           kinds, type_name, ndarray_name)
    return fn


def _guard(fn, helpers, kinds, type_name, ndarray_name):
    changed = [False]

    def load(name):
        return gast.Name(name, gast.Load(), None, None)

    def is_array(name):
        return gast.Compare(left=gast.Call(func=load(type_name), args=[load(name)], keywords=[]),
                            ops=[gast.Is()], comparators=[load(ndarray_name)])

    def shape(name):
        return gast.Attribute(value=load(name), attr="shape", ctx=gast.Load())

    def rewrite(call):
        if not (isinstance(call, gast.Call) and isinstance(call.func, gast.Name)
                and call.func.id in helpers and len(call.args) == 2 and not call.keywords
                and all(isinstance(a, gast.Name) for a in call.args)):
            return None
        g, x = call.args[0].id, call.args[1].id
        tests = [is_array(g), gast.Compare(left=shape(g), ops=[gast.Eq()], comparators=[load(x)])]
        changed[0] = True
        return gast.IfExp(test=gast.BoolOp(op=gast.And(), values=tests), body=load(g),
                          orelse=call)

    class Rewriter(gast.NodeTransformer):
        def visit_Call(self, node):
            self.generic_visit(node)
            new = rewrite(node)
            return node if new is None else new

    Rewriter().visit(fn)
    return changed[0]
