"""``out=`` into an array the function made: a write into that array.

``np.add(a, b, out=buf)`` computes ``np.add(a, b)`` and writes it into
``buf`` (broadcast to its shape, cast to its dtype), then returns ``buf``.
Where ``buf`` is a local array the function created (every binding of the
name is ``buf = np.zeros(...)``, ``np.empty_like(x)``, ``np.array(x)``,
``x.copy()``...), the call is written as that write (a ufunc's output given
by position, ``np.add(a, b, buf)``, too), which the mutation
machinery follows (``analyses.mutation``: the adjoint reads the written
value's gradient out of ``buf``'s and zeroes it there)::

    buf = np.zeros(3)                         buf = np.zeros(3)
    np.add(a, b, out=buf)            ->       buf[...] = np.add(a, b)
    y = np.multiply(buf, a, out=buf)          buf[...] = np.multiply(buf, a)
                                              y = buf

(each value first checked as NumPy checks what ``out=`` takes:
``check_out``, so that a complex value into a real array, or a float one
into an integer array, raises NumPy's error rather than being cast).

``out=`` may also be a new array (``out=np.zeros_like(a)``: bound to a name
first) and the call an array's method (``m.sum(axis=0, out=buf)``: checked
when it runs to be an array's, ``check_array_method``).  A ufunc's
``where=mask`` writes the selected places only: each operand, broadcast to
``buf``'s shape, is read there, so the ufunc runs (and is differentiated)
only where NumPy runs it, and the safe-division idiom ``np.divide(a, b,
out=np.zeros_like(a), where=b != 0)`` computes no 0/0 and has no NaN in its
gradient (zero where masked)::

    r = np.divide(a, b, out=np.zeros_like(a), where=b != 0)
        ->  out = np.zeros_like(a); mask = where_mask(b != 0, out, 'np.divide')
            value = np.divide(broadcast_to(a, out.shape)[mask],
                              broadcast_to(b, out.shape)[mask])
            out[mask] = value; r = out

The call must be a statement of its own, the value of an assignment or of a
``return``, or inside one whose other calls are NumPy's (``y = c *
np.divide(..., out=...)``: it runs first, bound to a name); ``where=``
without ``out=`` (uninitialized memory where the mask is False), ``out=``
into an argument, into a name bound otherwise (a view,
an alias, a loop variable), with ``where=`` of a reduction or a method, or
into several arrays, is refused naming the line, and so is ``out=`` of a
function that is not NumPy's (a user function's ``out`` parameter is left
alone).

>>> from pullback.testing import function_from_source
>>> from pullback.backend.codegen import unparse
>>> from pullback.frontend.parse import parse
>>> from pullback.ir.naming import Namer
>>> f = function_from_source('''
... def f(a, b):
...     buf = np.empty_like(a)
...     y = np.add(a, b, out=buf)
...     return np.dot(y, b, out=None)
... ''')
>>> parsed = parse(f)
>>> write_out_arguments(parsed.tree, Namer.for_tree(parsed.tree, ()), parsed)
>>> print(unparse(parsed.tree).strip())
def f(a, b):
    buf = np.empty_like(a)
    np_add_value = np.add(a, b)
    check_out(np_add_value, buf, 'np.add', False)
    buf[...] = np_add_value
    y = buf
    return np.dot(y, b)
"""
from __future__ import annotations

import gast
import numpy as np

from ..analyses.callable_facts import dotted
from ..ir.build import closure_name as _helper
from ..ir.walk import replace_node, scope_nodes
from ..rules.registry import nondifferentiable
from ..runtime.objects import check_array_method, check_out, where_mask
from ..runtime.origin import module_name
from .properties import static_value

__all__ = ["write_out_arguments"]

# NumPy's functions that return a new array the function owns
_FRESH = frozenset({
    "zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like", "full_like",
    "array", "copy", "eye", "identity", "arange", "linspace", "tile"})
# an array's methods that take `out=`
_OUT_METHODS = frozenset({
    "sum", "prod", "mean", "std", "var", "max", "min", "cumsum", "cumprod", "clip", "round",
    "dot", "trace", "ptp"})


def write_out_arguments(fn: gast.FunctionDef, namer, parsed) -> None:
    """Rewrite, in the FunctionDef ``fn`` (in place), NumPy calls with ``out=``
    into writes into the array (module docstring)."""
    for n in scope_nodes(fn):
        if isinstance(n, gast.Call) and isinstance(static_value(n.func, parsed), np.ufunc) \
                and {k.arg for k in n.keywords} & {"where", "out"} == {"where"} \
                and len(n.args) <= static_value(n.func, parsed).nin:
            raise parsed.unsupported(
                n, "`where=` without `out=`, which leaves the places the mask leaves out "
                   "as they were in new, uninitialized memory",
                f"Give the values those places keep: `{dotted(n.func)}(..., "
                "out=np.zeros_like(x), where=mask)`.")
    if not [n for n in scope_nodes(fn) if isinstance(n, gast.Call) and (
            any(k.arg == "out" for k in n.keywords) or _positional_out(n, parsed))]:
        return
    fresh = _fresh_arrays(fn, parsed)

    def block(stmts):
        out = []
        for stmt in stmts:
            for field in ("body", "orelse", "finalbody"):
                if isinstance(getattr(stmt, field, None), list):
                    setattr(stmt, field, block(getattr(stmt, field)))
            for h in getattr(stmt, "handlers", None) or []:
                h.body = block(h.body)
            out.extend(_statement(stmt, fresh, namer, parsed))
        return out
    fn.body = block(fn.body)


def _statement(stmt, fresh, namer, parsed):
    """``stmt`` with its ``out=`` calls written as writes (a list)."""
    calls = [n for n in _own_expressions(stmt) if isinstance(n, gast.Call)
             and any(k.arg == "out" for k in n.keywords)]
    if not calls or isinstance(stmt, (gast.FunctionDef, gast.ClassDef)):
        return [stmt]
    for call in calls:
        method = _array_method(call.func, parsed)
        if not _numpys(call.func, parsed) and method is None:
            continue            # (a user function's `out` parameter; others: op_resolver)
        k = next(k for k in call.keywords if k.arg == "out")
        if isinstance(k.value, gast.Constant) and k.value.value is None:
            call.keywords.remove(k)     # `out=None`, the default
            continue
        before = []
        if _makes_array(k.value, parsed) or _makes_array(getattr(k.value, "elts", [None])[0],
                                                         parsed):
            # `out=np.zeros_like(a)`: a new array, bound to a name of its own
            made = k.value.elts[0] if isinstance(k.value, gast.Tuple) else k.value
            k.value = _name(namer.fresh(f"{dotted(call.func, '_')}_out"), gast.Load())
            before.append(gast.Assign(targets=[_name(k.value.id, gast.Store())], value=made,
                                      type_comment=None))
            fresh.add(k.value.id)
        buf = _target(k.value)
        if buf is None or buf in fresh.held:
            continue    # (`out=self.x`, `out=(a, b)`, `h = self.hist` then `out=h`: refused
            #              by later passes, naming the attribute: analyses.attributes)
        if buf not in fresh:
            params = {a.id for a in parsed.tree.args.args + parsed.tree.args.kwonlyargs}
            what = f"`{buf}`, an argument of the function (the caller's array)" \
                if buf in params else f"`{buf}`, a name not bound only to new arrays (a view " \
                                      "or an alias of another array, a loop variable...)"
            raise parsed.unsupported(
                call, f"`out=` into {what}: pullback writes only into an array the function "
                      "created itself (`buf = np.zeros(...)`, `buf = x.copy()`)",
                f"Assign the result to a name instead (`y = {dotted(call.func)}(...)` without "
                "`out=`), or create the array in the function (`buf = np.empty_like(a)`) and "
                "pass that.")
        where = next((w for w in call.keywords if w.arg == "where"), None)
        if where is not None and not isinstance(static_value(call.func, parsed), np.ufunc):
            raise parsed.unsupported(
                call, "`out=` with `where=` of a reduction or a method, which writes into part "
                      "of the array only",
                f"Write the selection: `{buf} = np.where(mask, {dotted(call.func)}(...), {buf})`.")
        if (call is not getattr(stmt, "value", None) or isinstance(stmt, gast.AugAssign)) \
                and _may_hoist(stmt, call, parsed):
            # `y = c * np.divide(a, b, out=..., where=...)`: the call first, by a name of
            # its own (the rest of the statement calls only NumPy: nothing it does
            # can see the order change)
            value = namer.fresh(f"{dotted(call.func, '_')}_result")
            hoisted = gast.Assign(targets=[_name(value, gast.Store())], value=call,
                                  type_comment=None)
            replace_node(stmt, call, _name(value, gast.Load()))
            for n in (m for t in before + [hoisted] for m in gast.walk(t)):
                if getattr(n, "lineno", None) is None:
                    gast.copy_location(n, call)
            return before + _statement(hoisted, fresh, namer, parsed) \
                + _statement(stmt, fresh, namer, parsed)
        if call is not getattr(stmt, "value", None) or not isinstance(
                stmt, (gast.Expr, gast.Assign, gast.Return)):
            raise parsed.unsupported(
                call, "`out=` inside a larger expression",
                f"Make the call a statement of its own (`{dotted(call.func)}(..., out={buf})`), "
                f"then use `{buf}`.")
        call.keywords.remove(k)
        if method is not None:      # `x.sum(axis=0, out=buf)`: checked to be an array's
            receiver = _hoisted(call.func.value, "receiver", namer, before, call)
            call.func.value = receiver
            before.append(_checked(namer, parsed, check_array_method,
                                   [receiver, gast.Constant(call.func.attr, None)]))
        index = gast.Constant(Ellipsis, None)
        if where is not None:
            index = _selected(call, where, buf, namer, parsed, before)
        # the value, NumPy's casting check (a complex value into a real array, a float
        # one into an integer array: the error NumPy raises), then the write
        value = namer.fresh(f"{dotted(call.func, '_')}_value")
        exact = static_value(call.func, parsed) is np.dot
        new = before + [
            gast.Assign(targets=[_name(value, gast.Store())], value=call, type_comment=None),
            _checked(namer, parsed, check_out, [
                _name(value, gast.Load()), _name(buf, gast.Load()),
                gast.Constant(dotted(call.func), None), gast.Constant(exact, None)]),
            gast.Assign(targets=[gast.Subscript(
                value=_name(buf, gast.Load()), slice=index,
                ctx=gast.Store())], value=_name(value, gast.Load()), type_comment=None)]
        if not isinstance(stmt, gast.Expr):
            stmt.value = _name(buf, gast.Load())
            new.append(stmt)
        for s in new:
            for n in gast.walk(s):
                if getattr(n, "lineno", None) is None:
                    gast.copy_location(n, call)
        return new
    return [stmt]


def _may_hoist(stmt, call, parsed):
    """Whether ``call``, inside the statement ``stmt``, may run before the rest
    of it: ``stmt`` an assignment, ``return`` or expression, ``call`` not under
    a condition, a loop or a lambda in it, and its other calls NumPy's."""
    if not isinstance(stmt, (gast.Expr, gast.Assign, gast.AugAssign, gast.Return)):
        return False
    inside = {id(n) for n in gast.walk(call)}
    for n in gast.walk(stmt):
        if isinstance(n, (gast.IfExp, gast.BoolOp, gast.Lambda, gast.comprehension,
                          gast.NamedExpr)) and id(call) in {id(m) for m in gast.walk(n)}:
            return False
        if isinstance(n, gast.Call) and id(n) not in inside and not _numpys(n.func, parsed):
            return False
    return True


def _checked(namer, parsed, helper, args):
    """``helper(*args)`` as a statement (a check that raises NumPy's error)."""
    fn = _helper(namer, parsed, helper.__name__, helper)
    return gast.Expr(value=gast.Call(func=_name(fn, gast.Load()), args=args, keywords=[]))


def _hoisted(node, what, namer, before, call):
    """A name for the value of ``node``, bound by a statement added to ``before``
    (a name stays itself)."""
    if isinstance(node, gast.Name):
        return _name(node.id, gast.Load())
    new = namer.fresh(f"{dotted(call.func, '_')}_{what}")
    before.append(gast.Assign(targets=[_name(new, gast.Store())], value=node, type_comment=None))
    return _name(new, gast.Load())


def _selected(call, where, buf, namer, parsed, before):
    """``ufunc(a, b, where=mask, out=buf)``: each operand is read, broadcast to
    ``buf``'s shape, at the selected places only, so that the ufunc runs (and
    is differentiated) where NumPy runs it and nowhere else
    (``np.divide(a, b, out=np.zeros_like(a), where=b != 0)`` then has no 0/0,
    and its gradient no NaN); the index of the write into ``buf`` is returned.
    Python's order: the operands, then ``where=``, then ``out=``, each once."""
    call.keywords.remove(where)
    operands = [_hoisted(a, "operand", namer, before, call) for a in call.args]
    mask = _hoisted(where.value, "where", namer, before, call)
    # (`out=np.zeros_like(a)` was bound before the operands: a new array, made from
    # values the operands do not change)
    mask_name = namer.fresh(f"{dotted(call.func, '_')}_mask")
    before.append(gast.Assign(targets=[_name(mask_name, gast.Store())], value=gast.Call(
        func=_name(_helper(namer, parsed, "where_mask", where_mask), gast.Load()),
        args=[mask, _name(buf, gast.Load()), gast.Constant(dotted(call.func), None)],
        keywords=[]), type_comment=None))
    broadcast = _helper(namer, parsed, "broadcast_to", np.broadcast_to)
    call.args = [a if isinstance(a, gast.Constant) else gast.Subscript(
        value=gast.Call(func=_name(broadcast, gast.Load()), args=[
            a, gast.Attribute(value=_name(buf, gast.Load()), attr="shape", ctx=gast.Load())],
            keywords=[]), slice=_name(mask_name, gast.Load()), ctx=gast.Load())
        for a in operands]
    return _name(mask_name, gast.Load())


def _array_method(func, parsed):
    """``x.sum`` of ``x.sum(axis=0, out=buf)``: a method of an array taking
    ``out=`` (checked when it runs to be an array's); else None."""
    if isinstance(func, gast.Attribute) and func.attr in _OUT_METHODS \
            and static_value(func, parsed) is None \
            and not isinstance(static_value(func.value, parsed), type):
        return func.attr
    return None


def _positional_out(call, parsed):
    """``np.add(a, b, buf)``: a ufunc's output given by position, moved to
    ``out=`` (the call changed); whether it was."""
    ufunc = static_value(call.func, parsed)
    if not isinstance(ufunc, np.ufunc) or ufunc.nout != 1 or len(call.args) != ufunc.nin + 1 \
            or any(isinstance(a, gast.Starred) for a in call.args):
        return False
    call.keywords.append(gast.keyword(arg="out", value=call.args.pop()))
    return True


def _own_expressions(stmt):
    """The nodes of ``stmt`` itself: not its nested blocks' statements, not
    nested functions, lambdas or classes."""
    fields = [v for f, v in gast.iter_fields(stmt)
              if f not in ("body", "orelse", "finalbody", "handlers")]
    for v in fields:
        for item in (v if isinstance(v, list) else [v]):
            if isinstance(item, gast.AST):
                yield from (n for n in scope_nodes(item)
                            if not isinstance(n, (gast.Lambda, gast.FunctionDef)))


def _target(value):
    """The name ``out=`` writes into: ``buf`` or ``(buf,)``; else None."""
    if isinstance(value, gast.Tuple) and len(value.elts) == 1:
        value = value.elts[0]
    return value.id if isinstance(value, gast.Name) else None


def _numpys(func, parsed):
    """Whether the callee ``func`` is NumPy's (a ufunc, ``np.dot``,
    ``np.add.reduce``, ``scipy.special``'s ufuncs)."""
    obj = static_value(func, parsed)
    if isinstance(getattr(obj, "__self__", None), np.ufunc):
        return True
    return isinstance(obj, np.ufunc) or (
        callable(obj) and not isinstance(obj, type)
        and module_name(obj).split(".")[0] == "numpy")


def _fresh_arrays(fn, parsed):
    """The local names every binding of which makes a new array: ``buf =
    np.zeros(...)`` (and the rest of ``_FRESH``), ``buf = x.copy()``, or
    ``buf op= v`` (which keeps the array)."""
    ok, bad = set(), {a.id for a in fn.args.args + fn.args.kwonlyargs + fn.args.posonlyargs}
    bad |= {v.id for v in (fn.args.vararg, fn.args.kwarg) if v is not None}
    # (a nested function may rebind a name by `nonlocal`)
    bad |= {v for n in gast.walk(fn) if isinstance(n, (gast.Global, gast.Nonlocal))
            for v in n.names}
    for n in scope_nodes(fn):
        if isinstance(n, gast.AugAssign):
            continue
        if isinstance(n, gast.Assign) and len(n.targets) == 1 \
                and isinstance(n.targets[0], gast.Name) and _makes_array(n.value, parsed):
            ok.add(n.targets[0].id)
            continue
        for t in (n.targets if isinstance(n, gast.Assign) else
                  [n.target] if isinstance(n, (gast.For, gast.AnnAssign, gast.NamedExpr))
                  else [i.optional_vars for i in n.items] if isinstance(n, gast.With)
                  else []):
            bad.update(m.id for m in gast.walk(t) if isinstance(m, gast.Name))
        if isinstance(n, (gast.FunctionDef, gast.ClassDef)) and n is not fn:
            bad.add(n.name)
        if isinstance(n, gast.ExceptHandler) and isinstance(n.name, gast.Name):
            bad.add(n.name.id)
    fresh = _Fresh(ok - bad)
    fresh.held = {n.targets[0].id for n in scope_nodes(fn) if isinstance(n, gast.Assign)
                  and isinstance(n.targets[0], gast.Name) and _of_attribute(n.value)}
    return fresh


def _of_attribute(node):
    """``self.hist``, ``self.hist[0]``: what an attribute holds."""
    while isinstance(node, gast.Subscript):
        node = node.value
    return isinstance(node, gast.Attribute)


class _Fresh(set):
    """The names of new arrays; ``held``: names bound to an attribute or an item."""


def _makes_array(value, parsed):
    if not isinstance(value, gast.Call) or not isinstance(value.func, gast.Attribute):
        return False
    if value.func.attr == "copy" and not value.args and not value.keywords:
        return True         # `x.copy()`
    obj = static_value(value.func, parsed)
    if value.func.attr == "array" and any(
            k.arg == "copy" and not (isinstance(k.value, gast.Constant) and k.value.value is True)
            for k in value.keywords):
        return False        # `np.array(x, copy=False)` may be `x` itself
    return value.func.attr in _FRESH and getattr(np, value.func.attr, None) is obj \
        and obj is not None


def _name(id_, ctx):
    return gast.Name(id=id_, ctx=ctx, annotation=None, type_comment=None)


nondifferentiable(check_out)
nondifferentiable(where_mask)
nondifferentiable(check_array_method)
