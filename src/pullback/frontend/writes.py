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
(``updates.check_updates`` proves that no other name holds the array)::

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

import copy
import types

import gast
import numpy as np

from ..analyses import kinds as kinds_
from ..errors import UnsupportedSyntaxError
from ..ir.build import name as _name
from .written import (ITEM as _ITEM, MIXED as _MIXED, _apart, _front, _no_writer,
                      _number_argument, _result_apart, bound_arguments as _bound, scan as _scan,
                      static_callee as _static_callee, variant, walk as _walk, written_params)

__all__ = ["follow_writes", "written_params", "variant", "rewritten"]


# -- the pass ---------------------------------------------------------------------------

def follow_writes(tree, namer, parsed, param_kinds, marker=None):
    """Rewrite ``tree`` (after ``structure``): calls of functions that write
    into their arguments go to their variants; the function's own parameters
    written into are copied on entry; a variant's returns add the new values."""
    locals_ = {a.id for a in tree.args.args} | {
        n.id for n in gast.walk(tree) if isinstance(n, gast.Name)
        and isinstance(n.ctx, gast.Store)}
    own = _scan(tree, parsed)         # before the calls go to variants
    _Calls(namer, parsed, locals_).rewrite(tree)
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
        pre.append(_assign(_name(p, True), gast.Call(func=_name(copier), args=[_name(p)],
                                                    keywords=[]), tree.body[0]))
    others = [p for p in param_kinds if p in {a.id for a in tree.args.args}
              and getattr(param_kinds[p], "shape", None) is kinds_.Shape.ARRAY]
    if len(others) > 1:
        apart = _helper(namer, parsed, "arguments_apart", _apart)
        pairs = [a for p in others for a in (gast.Constant(p, None), _name(p))]
        check = gast.Expr(value=gast.Call(func=_name(apart), args=pairs, keywords=[]))
        pre.insert(0, _located(check, tree.body[0]))
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
    pre = [_assign(_name(e, True), _name(p), tree.body[0]) for p, e in entry.items()]
    if entry:
        scalar = _helper(namer, parsed, "number_argument", _number_argument)
        for p in entry:
            pre.append(_located(gast.Expr(value=gast.Call(
                func=_name(scalar), args=[_name(p), gast.Constant(p, None)], keywords=[])),
                tree.body[0]))
    last = tree.body[-1] if tree.body else None
    if isinstance(last, gast.Return) and last.value is not None:
        # the result must not share memory with an array written into: the
        # caller would not know the two are one
        result = namer.fresh("result")
        apart = _helper(namer, parsed, "result_apart", _result_apart)
        tree.body[-1:] = [_assign(_name(result, True), last.value, last), _located(gast.Expr(
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
        tree.body.append(_located(gast.Return(value=gast.Tuple(
            elts=[gast.Constant(None, None)] + [_name(entry.get(p, p)) for p in written],
            ctx=gast.Load())), tree.body[-1] if tree.body else tree))
    tree.body[:0] = pre


class _Calls:
    """Calls of functions that write into their arguments, to their variants."""

    def __init__(self, namer, parsed, locals_):
        self.namer, self.parsed, self.locals = namer, parsed, locals_

    def rewrite(self, tree):
        tree.body = self.block(tree.body)

    def block(self, stmts):
        out = []
        for s in stmts:
            for field in ("body", "orelse", "finalbody"):
                if getattr(s, field, None) and not isinstance(s, (gast.FunctionDef,
                                                                   gast.ClassDef)):
                    setattr(s, field, self.block(getattr(s, field)))
            if isinstance(s, gast.Try):
                for h in s.handlers:
                    h.body = self.block(h.body)
            out.extend(self.stmt(s))
        return out

    def writing_calls(self, node):
        """(call, callee, {param: how}) for each call in ``node`` (a statement
        or an expression) of a function that writes into a parameter it binds."""
        found = []
        roots = [node] if not isinstance(node, (gast.If, gast.While, gast.For)) else \
            [getattr(node, "test", None) or node.iter]
        for root in roots:
            for n in _walk([root]):
                if isinstance(n, gast.Call):
                    callee = _static_callee(n.func, self.parsed, self.locals)
                    if callee is None:
                        continue
                    written = written_params(callee)
                    bound = _bound(callee, n)
                    if any(p in bound for p in written):
                        found.append((n, callee, written))
        return found

    def stmt(self, s):
        calls = self.writing_calls(s)
        if not calls:
            return self.guard(s) + [s]
        if isinstance(s, (gast.If, gast.While, gast.For)):
            raise self.refuse(calls[0][0], calls[0][1], "in the test or the sequence of a "
                              "loop or a branch", "Call it in a statement of its own before.")
        pre = []
        for call, callee, written in calls:
            pre.extend(self.hoist(s, call, callee, written))
        if isinstance(s, gast.Expr) and isinstance(s.value, gast.Constant):
            return pre          # the call was the whole statement
        return pre + [s]

    def guard(self, s):
        """``no_writer(fn)`` before ``fn(a)``, a call of a value whose result
        is unused: a callee that writes into its arguments is refused when
        it runs (a call whose result is used goes to the dispatcher, which
        refuses it there)."""
        if not (isinstance(s, gast.Expr) and isinstance(s.value, gast.Call)):
            return []
        func = s.value.func
        base = func.value if isinstance(func, gast.Attribute) else func
        if not (isinstance(base, gast.Name) and base.id in self.locals):
            return []
        helper = _helper(self.namer, self.parsed, "no_writer", _no_writer)
        return [_located(gast.Expr(value=gast.Call(func=_name(helper), args=[
            copy.deepcopy(func)], keywords=[])), s)]

    def refuse(self, call, callee, where, hint):
        return UnsupportedSyntaxError(
            f"`{callee.__name__}` writes into its argument, and pullback follows that only "
            f"for a call that is a statement or an assignment of its own, not {where}.",
            self.parsed.location(call), hint)

    def hoist(self, s, call, callee, written):
        """Statements for ``call`` before ``s``, which then reads its result."""
        if any(call is n for c in _walk([s]) if isinstance(
                c, (gast.ListComp, gast.GeneratorExp, gast.SetComp, gast.DictComp,
                    gast.IfExp, gast.BoolOp)) for n in _walk([c])):
            raise self.refuse(call, callee, "inside a comprehension or a conditional "
                              "expression", "Write the loop out with a `for` statement.")
        bound = _bound(callee, call)
        names = []
        for p in written:
            if p not in bound:
                raise UnsupportedSyntaxError(
                    f"`{callee.__name__}` writes into its parameter `{p}`, which this call "
                    "leaves to its default, an object shared by every call.",
                    self.parsed.location(call), f"Pass `{p}` explicitly.")
            arg = bound[p]
            if written[p] == _MIXED:
                raise UnsupportedSyntaxError(
                    f"`{callee.__name__}` writes into its argument `{p}` and also assigns "
                    f"`{p}` a new value, so which array a write reaches depends on the path "
                    "taken; pullback does not follow that.", self.parsed.location(call),
                    f"In `{callee.__name__}`, copy first (`{p} = {p}.copy()`) and return "
                    f"the new `{p}`, or only write into it.")
            if not (isinstance(arg, gast.Name) and arg.id in self.locals):
                raise UnsupportedSyntaxError(
                    f"`{callee.__name__}` writes into its argument `{p}`, and here `{p}` is "
                    "not a variable of this function, so pullback cannot follow the change.",
                    self.parsed.location(call),
                    f"Assign the value to a variable first and pass that (`{p}_value = "
                    f"...; {callee.__name__}({p}_value)`), or pass a copy if the change "
                    "should not be seen.")
            names.append(arg.id)
        others = [n.id for n in gast.walk(s) if isinstance(n, gast.Name)
                  and isinstance(n.ctx, gast.Load) and n.id in names
                  and not any(n is m for m in gast.walk(call))]
        if others and not (isinstance(s, (gast.Expr, gast.Assign, gast.Return))
                           and s.value is call):
            raise self.refuse(call, callee, f"inside an expression that also reads `{others[0]}`",
                              "Call it in a statement of its own.")
        fn_name = _helper(self.namer, self.parsed, f"{callee.__name__}_writes", variant(callee))
        result = self.namer.fresh(f"{callee.__name__}_result")
        news = [self.namer.fresh(f"{n}_new") for n in names]
        new_call = gast.Call(func=_name(fn_name), args=call.args, keywords=call.keywords)
        out = [_assign(gast.Tuple(elts=[_name(result, True)] + [_name(n, True) for n in news],
                                  ctx=gast.Store()), gast.copy_location(new_call, call), s)]
        for n, new, p in zip(names, news, written):
            back = _assign(_name(n, True), _name(new), s)
            origin = gast.copy_location(gast.AugAssign(target=_name(n, True), op=gast.Add(),
                                                       value=_name(new)), call)
            origin.end_lineno, origin.end_col_offset = call.end_lineno, call.end_col_offset
            origin.written_by = (callee.__name__, p)
            back.updates = origin
            out.append(back)
        if isinstance(s, gast.Expr) and s.value is call:
            s.value = gast.Constant(None, None)     # a bare constant: normalize drops it
        else:
            _replace(s, call, _name(result))
        return out


def _replace(root, old, new):
    for node in gast.walk(root):
        for field, value in gast.iter_fields(node):
            if value is old:
                setattr(node, field, new)
            elif isinstance(value, list):
                for i, v in enumerate(value):
                    if v is old:
                        value[i] = new


def _helper(namer, parsed, base, obj):
    for k, cell in parsed.closure.items():
        try:
            if cell.cell_contents is obj:
                return k
        except ValueError:
            continue
    name = namer.fresh(base)
    parsed.closure[name] = types.CellType(obj)
    return name


def _assign(target, value, where):
    return _located(gast.Assign(targets=[target], value=value, type_comment=None), where)


def _located(stmt, where):
    for node in gast.walk(stmt):
        if not hasattr(node, "lineno") or getattr(node, "lineno", None) is None:
            gast.copy_location(node, where)
    return stmt


def rewritten(fn, param_kinds):
    """``fn``'s tree after this pass (for the docstring and tests)."""
    parsed, namer = _front(fn, structured=True)
    follow_writes(parsed.tree, namer, parsed, param_kinds)
    return parsed.tree
