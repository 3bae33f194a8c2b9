"""Fold negations: in the adjoint, a negated gradient that is only added
into a buffer is subtracted instead, ``x - g`` being ``x + (-g)`` bit for
bit.  The adjoint of ``d = a[1:] - a[:-1]`` hands ``-d_bar`` to the second
slice; in a loop that negation is an array made and dropped per iteration.

    t_bar = -d_bar                          a_bar = owned_zeros(a)
    a_bar = owned_zeros(a)            ->    index_sub(a_bar, slice(None, -1), d_bar)
    index_add(a_bar, slice(None, -1), t_bar)      (a_bar[:-1] -= d_bar when exact)

Only where ``t_bar`` is read nowhere else and nothing between the two
statements stores ``d_bar`` or calls anything but a zero buffer's maker
(so ``d_bar`` still holds the value negated).

>>> import gast
>>> from pullback.backend.codegen import unparse
>>> fn = gast.parse('''
... def f_adjoint(d_bar, a):
...     t_bar = -d_bar
...     a_bar = owned_zeros(a)
...     a_bar[:-1] += t_bar
...     return a_bar
... ''').body[0]
>>> print(unparse(fold_negations(fn, {"owned_zeros"}, "index_sub")))
def f_adjoint(d_bar, a):
    a_bar = owned_zeros(a)
    a_bar[:-1] -= d_bar
    return a_bar
"""
from __future__ import annotations

import gast

__all__ = ["fold_negations"]

_LOOKAHEAD = 4      # statements between the negation and its add (linear time)


def fold_negations(fn: gast.FunctionDef, makers, index_sub, index_add="index_add"):
    """Rewrite the adjoint ``fn`` in place and return it.  ``makers``: the
    names of the helpers that make a zero buffer (calls that change nothing);
    ``index_sub``/``index_add``: the helpers' names in the generated code."""
    loads = {}
    for node in gast.walk(fn):
        if isinstance(node, gast.Name) and not isinstance(node.ctx, gast.Store):
            loads[node.id] = loads.get(node.id, 0) + 1
    _block(fn.body, loads, set(makers), index_sub, index_add)
    return fn


def _negation(stmt):
    """``t = -g`` between plain names: (t, g), else None."""
    if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 \
            and isinstance(stmt.targets[0], gast.Name) and isinstance(stmt.value, gast.UnaryOp) \
            and isinstance(stmt.value.op, gast.USub) and isinstance(stmt.value.operand, gast.Name):
        return stmt.targets[0].id, stmt.value.operand.id
    return None


def _harmless(stmt, names, makers):
    """Changes neither ``names`` nor any object: an assignment to another
    name of an expression whose only calls make zero buffers."""
    if not (isinstance(stmt, gast.Assign) and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], gast.Name) and stmt.targets[0].id not in names):
        return False
    for node in gast.walk(stmt.value):
        if isinstance(node, gast.Call) and not (isinstance(node.func, gast.Name)
                                                and node.func.id in makers):
            return False
        if isinstance(node, (gast.NamedExpr, gast.Lambda, gast.Yield, gast.Await)):
            return False
    return True


def _block(stmts, loads, makers, index_sub, index_add):
    for stmt in stmts:
        for field in ("body", "orelse"):
            if isinstance(getattr(stmt, field, None), list):
                _block(getattr(stmt, field), loads, makers, index_sub, index_add)
    dead = set()
    for i, stmt in enumerate(stmts):
        neg = _negation(stmt)
        if neg is None or loads.get(neg[0], 0) != 1 or neg[0] == neg[1]:
            continue
        t, g = neg
        for j in range(i + 1, min(i + 1 + _LOOKAHEAD, len(stmts))):
            use = stmts[j]
            if _adds(use, t, index_add):
                if isinstance(use, gast.AugAssign):
                    use.op, use.value = gast.Sub(), gast.Name(g, gast.Load(), None, None)
                else:
                    use.value.func = gast.Name(index_sub, gast.Load(), None, None)
                    use.value.args[2] = gast.Name(g, gast.Load(), None, None)
                dead.add(i)
                break
            if not _harmless(use, {t, g}, makers):
                break
    stmts[:] = [s for i, s in enumerate(stmts) if i not in dead]


def _adds(stmt, t, index_add):
    """``buf[index] += t`` or ``index_add(buf, index, t)``, ``t`` read only there
    (not in ``buf`` or ``index``)."""
    if isinstance(stmt, gast.AugAssign) and isinstance(stmt.op, gast.Add) \
            and isinstance(stmt.target, gast.Subscript) and isinstance(stmt.value, gast.Name) \
            and stmt.value.id == t:
        return not any(isinstance(n, gast.Name) and n.id == t for n in gast.walk(stmt.target))
    if isinstance(stmt, gast.Expr) and isinstance(stmt.value, gast.Call) \
            and isinstance(stmt.value.func, gast.Name) and stmt.value.func.id == index_add \
            and len(stmt.value.args) == 3 and not stmt.value.keywords \
            and isinstance(stmt.value.args[2], gast.Name) and stmt.value.args[2].id == t:
        return not any(isinstance(n, gast.Name) and n.id == t
                       for a in stmt.value.args[:2] for n in gast.walk(a))
    return False


def fold_derived(derived) -> None:
    """``fold_negations`` on a ``Derived`` adjoint, with the names its helpers
    have there; binds ``index_sub`` when a fold needs it."""
    from .. import runtime
    names = {id(v): k for k, v in derived.helpers.items()}
    makers = {names[id(f)] for f in (runtime.owned_zeros, runtime.zeros_like,
                                     runtime.zeros_shaped) if id(f) in names}
    index_add = names.get(id(runtime.index_add))
    taken = {n.id for f in (derived.primal, derived.adjoint) for n in gast.walk(f)
             if isinstance(n, gast.Name)} | set(derived.helpers)
    index_sub = names.get(id(runtime.index_sub))
    if index_sub is None:
        index_sub, k = "index_sub", 0
        while index_sub in taken:
            k += 1
            index_sub = f"index_sub_{k}"
    fold_negations(derived.adjoint, makers, index_sub, index_add or "\0")
    if any(isinstance(n, gast.Name) and n.id == index_sub for n in gast.walk(derived.adjoint)):
        derived.helpers[index_sub] = runtime.index_sub
