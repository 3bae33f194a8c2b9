"""Writes into arguments: the function works on its own copy, and a call of
a function that writes into its argument hands the new value back.

NumPy semantics: ``x[0] = v`` or ``x -= v`` on a parameter changes the
caller's array.  pullback differentiates a function as a function of the
values its arguments have on entry, and never changes the caller's arrays
itself (a transform may run the function several times: ``jacfwd`` once per
input element), so a parameter written into is copied on entry
(``x = copy_argument(x)``).  Inside a differentiated function, a call of a user
function that writes into its argument (``step(state)``, an ODE solver
updating its state in place) changes the caller's array: the call goes to the
callee's *variant*, which returns the result and the argument's new value,
and the new value is assigned back, as an in-place update
(``updates.check_updates`` proves that no other name holds the array;
the calls are ``writing_calls``', the attribute reads by constant name it
rewrites first ``attribute_reads``')::

>>> from pullback.testing import function_from_source
>>> from pullback.backend.codegen import unparse
>>> from pullback.analyses.kinds import ARRAY
>>> step = function_from_source('''
... def step(s, dt):
...     s[0] += dt * s[1]
... ''')
>>> f = function_from_source('''
... def f(x):
...     for i in range(3):
...         step(x, 0.1)
...     return x[0]
... ''', {"step": step})
>>> print(unparse(rewritten(f, {"x": ARRAY})).strip())
def f(x):
    x = copy_argument(x)
    for i in range(3):
        step_result, x_new = step_writes(x, 0.1)
        x = x_new
    return x[0]
"""
from __future__ import annotations

import gast
import numpy as np

from ..analyses import kinds as kinds_
from ..ir.build import assign_located, closure_name as _helper, located, name as _name
from .attribute_reads import attribute_reads
from .held_writes import guard_held_writes
from .list_items import split_lists
from .properties import follow_properties
from .view_writes import write_views
from .writing_calls import WritingCalls
from .function_scans import _front, walk as _walk
from .written import (ITEM as _ITEM, _apart, _number_argument, _result_apart, scan as _scan,
                      variant, written_params)

__all__ = ["follow_writes", "written_params", "variant", "rewritten"]

# -- the pass ---------------------------------------------------------------------------

def follow_writes(tree, namer, parsed, param_kinds, marker=None):
    """Rewrite ``tree`` (after ``structure``): calls of functions that write
    into their arguments go to their variants; the function's own parameters
    written into are copied on entry; a variant's returns add the new values.
    Lists written into by item are first given one name per item
    (``list_items``), so that those writes are followed as names are, and
    property reads of objects of a known class become calls of their getters
    (``properties``), and writes through a view in a loop or a branch are
    spelled out (``view_writes``); writes into arrays that objects and
    containers hold are checked before they run (``held_writes``)."""
    attribute_reads(tree, namer, parsed)
    split_lists(tree, namer, parsed)
    follow_properties(tree, namer, parsed, param_kinds)
    write_views(tree, namer, parsed)
    guard_held_writes(tree, namer, parsed)
    locals_ = {a.id for a in tree.args.args} | {
        n.id for n in gast.walk(tree) if isinstance(n, gast.Name)
        and isinstance(n.ctx, gast.Store)}
    own = _scan(tree, parsed)         # before the calls go to variants
    calls = WritingCalls(namer, parsed, locals_, tree)
    calls.param_kinds = param_kinds
    calls.rewrite(tree)
    if marker is not None:
        _variant_returns(tree, namer, parsed, marker[1], param_kinds, own)
    _copy_on_entry(tree, namer, parsed, param_kinds, own)


def _copy_on_entry(tree, namer, parsed, param_kinds, own):
    # an array, or (written into by index) a value that can only be one
    # (a dict is of no known shape: the caller's own, changed as Python changes
    # it where the stores carry no gradient, analyses/item_stores.py)
    maybe = (kinds_.Shape.ARRAY, kinds_.Shape.NUMBER, None)
    arrays = [p for p, how in own.items()
              if getattr(param_kinds.get(p), "shape", None) is kinds_.Shape.ARRAY
              or (how == _ITEM and getattr(param_kinds.get(p), "shape", None) in maybe)]
    if not arrays:
        return
    pre = []
    copier = _helper(namer, parsed, "copy_argument", np.copy)
    for p in arrays:
        pre.append(assign_located(_name(p, True), gast.Call(func=_name(copier), args=[_name(p)],
                                                    keywords=[]), tree.body[0]))
    others = [p for p in param_kinds if p in {a.id for a in tree.args.args}
              and getattr(param_kinds[p], "shape", None) is kinds_.Shape.ARRAY]
    if len(others) > 1:
        apart = _helper(namer, parsed, "arguments_apart", _apart)
        pairs = [a for p in others for a in (gast.Constant(p, None), _name(p))]
        check = gast.Expr(value=gast.Call(func=_name(apart), args=pairs, keywords=[]))
        pre.insert(0, located(check, tree.body[0]))
    tree.body[:0] = pre


def _variant_returns(tree, namer, parsed, written, param_kinds, own):
    """The variant's returns: ``return (v, p1, p2)``; a parameter that holds a
    number (updated by rebinding) comes back as it came in."""
    entry = {}
    for p in written:
        shape = getattr(param_kinds.get(p), "shape", None)
        if shape is kinds_.Shape.ARRAY:
            continue
        if own.get(p) == _ITEM:
            continue            # a list written into: the mutation check refuses it
        entry[p] = namer.fresh(f"{p}_entry")
    pre = [assign_located(_name(e, True), _name(p), tree.body[0]) for p, e in entry.items()]
    if entry:
        scalar = _helper(namer, parsed, "number_argument", _number_argument)
        for p in entry:
            pre.append(located(gast.Expr(value=gast.Call(
                func=_name(scalar), args=[_name(p), gast.Constant(p, None)], keywords=[])),
                tree.body[0]))
    last = tree.body[-1] if tree.body else None
    if isinstance(last, gast.Return) and last.value is not None:
        # the result must not share memory with an array written into: the
        # caller would not know the two are one
        result = namer.fresh("result")
        apart = _helper(namer, parsed, "result_apart", _result_apart)
        tree.body[-1:] = [assign_located(_name(result, True), last.value, last), located(gast.Expr(
            value=gast.Call(func=_name(apart), args=[_name(result)] + [
                a for p in written for a in (gast.Constant(p, None), _name(p))],
                keywords=[])), last), last]
        last.value = _name(result)
    for node in list(_walk(tree.body)):
        if isinstance(node, gast.Return):
            value = node.value or gast.Constant(None, None)
            node.value = gast.copy_location(gast.Tuple(
                elts=[value] + [_name(entry.get(p, p)) for p in written], ctx=gast.Load()),
                value if hasattr(value, "lineno") else node)
    if not tree.body or not isinstance(tree.body[-1], gast.Return):
        tree.body.append(located(gast.Return(value=gast.Tuple(
            elts=[gast.Constant(None, None)] + [_name(entry.get(p, p)) for p in written],
            ctx=gast.Load())), tree.body[-1] if tree.body else tree))
    tree.body[:0] = pre


def rewritten(fn, param_kinds):
    """``fn``'s tree after this pass (for the docstring and tests)."""
    parsed, namer = _front(fn, structured=True)
    follow_writes(parsed.tree, namer, parsed, param_kinds)
    return parsed.tree
