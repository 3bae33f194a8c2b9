"""Mutation: which arrays the function writes into, and whether pullback can
follow it exactly.

A write (``y[i] = v``, ``y[idx] += v``, ``np.add.at(y, idx, v)``) changes
the object, so every name that shares it sees the change.  pullback follows
writes into arrays the function itself allocated and shares with nothing
else; the names a loop or a branch gives one variable (``y``, ``y_1``) are
one object.  Reading a slice of such an array (a view) is fine as long as
the view is used up before the next write.  An in-place update ``y += v``
(``updates.check_updates``) is followed where no other name can hold ``y`` when it
runs.  Which names are one variable is ``copies``'; which statements make
views, and when a view is used up, ``views``'.  Anything else is refused at
transform time, with the line, rather than differentiated wrongly::

>>> from pullback.testing import function_from_source, analyses
>>> f = function_from_source('''
... def f(x):
...     y = np.zeros(3)
...     y[0] = x
...     return np.sum(y)
... ''')
>>> normal, ops, chains, kinds, act = analyses(f)
>>> sorted(mutated_arrays(normal, ops))
['y']
"""
from __future__ import annotations

import gast
import numpy as np

from ..errors import UnsupportedSyntaxError
from .written_values import user_words
from ..frontend.parse import Parsed
from ..frontend.written import argument_written
from ..normalize.normalize import Normal
from ..rules.registry import FRESH   # declared beside each rule: facts(...)
from .copies import (_blocks, _carried_into, _copies_of, _hashable_in, _placeholder, _reads,
                     _renames, _simple, _targets, _writes, copy_ids)
from .kinds import Kind
from .ops import Op, OpKind, all_statements
from .order import may_run_between, only_after
from .view_reasons import why_not_followed
from .views import _check_views, _is_view, _may_return_its_argument

__all__ = ["mutated_arrays", "check", "packed_to_be_copied"]


def mutated_arrays(normal, ops):
    """Every name written into, with the names whose object normalize's
    copies (loop-carried and merged) carry to one written into: a name a
    merge only reads from a written one is a later binding, which a write
    that came before cannot reach (`b[0] = v` then, in a branch, `b = m[2]`)."""
    written = {op.mutates for op in ops.values()
               if op.kind is OpKind.SETITEM and not op.effect}
    return _carried_into(written, _renames(normal))


def check(normal: Normal, ops: dict[int, Op], parsed: Parsed,
          kinds: dict[str, Kind] | None = None) -> set[str]:
    """Raise ``UnsupportedSyntaxError`` for a write pullback cannot follow
    (``kinds``: the names' kinds, which tell a row of a matrix from a number)."""
    group = mutated_arrays(normal, ops)
    if not group:
        return group
    renames = {id(s) for s in all_statements(normal.tree.body) if id(s) in normal.renames}
    for p in normal.params:
        if p in group:
            stmt = _first_write(normal, ops, group)
            raise argument_written(parsed, p, stmt, (kinds or {}).get(p))
    for s in all_statements(normal.tree.body):
        op = ops.get(id(s))
        if op is None or id(s) in renames:
            continue
        targets = _targets(s)
        if _placeholder(s):
            continue        # `y = None`, a placeholder for a name a loop defines
        if any(t in group for t in targets) and not _allocates(op, s) \
                and _is_view(op, s, kinds) and len(targets) == 1:
            why, hint = why_not_followed(normal.tree.body, s, targets[0])   # view_reasons
            raise UnsupportedSyntaxError(f"`{targets[0]}` is a view of another array and may "
                                         "share memory with it; pullback cannot follow a write "
                                         f"through it here: {why}.", parsed.location(s), hint)
        if any(t in group for t in targets) and not _allocates(op, s) \
                and op.kind is OpKind.PACK and len(targets) == 1 \
                and isinstance(getattr(s, "value", None), (gast.List, gast.Tuple)):
            # `state = [q, p]; state[1] -= dt * f`: a list's element written into
            what = "tuple" if isinstance(s.value, gast.Tuple) else "list"
            write = _first_write_into(normal, ops, targets[0])
            where = ""
            if write is not None:
                loc = parsed.location(write)
                where = f" (line {loc.lineno}: `{(loc.line or '').strip()}`)"
            raise UnsupportedSyntaxError(
                f"`{targets[0]}` is a {what}, and it is written into by element{where}: "
                f"pullback follows writes into arrays, not into the elements of a {what}: "
                f"it does not track which array each element of a {what} holds after a "
                "write (nor, for `-=` and the like, the array changed in place there).",
                parsed.location(s), "Keep the arrays in names of their own (`q = q0.copy()`, "
                "`p = p0.copy()`, then `p -= ...`), or build a new list each time "
                f"(`{targets[0]} = [{targets[0]}[0], {targets[0]}[1] - ...]`).")
        if any(t in group for t in targets) and not _allocates(op, s):
            shown, held = _user_expression(targets[0], s, parsed)
            shown, what = user_words(normal, shown, parsed.location(s).line)
            if what in ("defaultdict", "Counter", "OrderedDict"):
                raise UnsupportedSyntaxError(
                    f"pullback does not follow stores into a {what} (`{shown}`): it follows "
                    "stores into the dicts the function makes with `{}` or `dict(...)`.",
                    parsed.location(s), f"Use a plain dict: `{shown} = {{}}`, then "
                    f"`{shown}[k] = {shown}.get(k, 0.0) + v`.")
            raise UnsupportedSyntaxError(
                f"pullback can follow writes only into {what}s the function creates itself, "
                + (f"and `{shown}` may share memory with another array" if what == "array" else
                   f"and `{shown}` may be a {what} that another name holds too (the caller's)")
                + (" (it is what an object's attribute holds: the caller's array, for "
                   "an argument)." if held else "."),
                parsed.location(s), (f"Write into a copy: `w = {shown}.copy()`, then into "
                                     "`w`, and use `w` after." if held else
                                     "Make a new array to write into (np.zeros(n), "
                                     "np.empty_like(x), or x.copy())." if what == "array" else
                                     f"Make a new {what} to write into: `{shown} = "
                                     f"{what}({shown})` first (a copy of the caller's)."))
        if op.kind in (OpKind.SETITEM, OpKind.NONDIFF):
            continue
        shared = [n for _, n in op.operands if n in group]
        if not shared or variant_reads(op, group):
            continue
        if op.kind is OpKind.PACK and _only_copied(s, targets, normal, ops):
            continue        # `np.stack([y, b])`: the list lives only to be copied
        if op.kind is OpKind.PACK and _returned_after_writes(normal, ops, group, s, targets):
            continue        # `return (r, y)`: no write comes after
        if op.kind is OpKind.COPY and not _written_while_read(normal, ops, group, s, targets[0]):
            continue        # `seq = b` after the last write into b (a loop's sequence)
        if op.kind in (OpKind.COPY, OpKind.PACK, OpKind.CONSTRUCT, OpKind.APPEND, OpKind.USER,
                       OpKind.CUSTOM, OpKind.DYNAMIC, OpKind.OPAQUE, OpKind.UNPACK):
            raise UnsupportedSyntaxError(
                f"`{shared[0]}` is written into, and here another name comes to share it, "
                "so pullback could not follow the writes.", parsed.location(s),
                f"Pass or store a copy: `{shared[0]}.copy()`.")
    _check_views(normal.tree.body, ops, group, parsed, normal.tree.body, _renames(normal),
                 renames, kinds)
    return group


def _user_expression(name, stmt, parsed):
    """``(text, held)``: the user's expression for ``name`` bound by ``stmt``
    where normalize made the name (``w_1 = p.w`` of ``np.add.at(p.w, i, v)``:
    ``p.w``), and whether it reads what an object's attribute holds."""
    import re
    value = getattr(stmt, "value", None)
    held = isinstance(value, (gast.Attribute, gast.Subscript)) and any(
        isinstance(n, gast.Attribute) for n in gast.walk(value))
    loc = parsed.location(stmt)
    line = loc.line or ""
    if held and not re.search(rf"\b{re.escape(name)}\b", line):
        # the source the statement came from, as the caret underlines it
        if loc.end_col_offset is not None and loc.end_lineno in (None, loc.lineno) \
                and loc.end_col_offset > loc.col_offset:
            return line[loc.col_offset:loc.end_col_offset], held
    return name, held


def packed_to_be_copied(normal, ops, stmt):
    """Whether ``stmt`` packs a list or tuple that the next statement copies
    into a new array and nothing else reads (``np.stack([y, b])``): the
    list holds the arrays for no longer than that."""
    return ops[id(stmt)].kind is OpKind.PACK and _only_copied(stmt, _targets(stmt), normal, ops)


def _written_while_read(normal, ops, group, stmt, name):
    """Whether a write into ``group`` can run after ``stmt`` binds ``name``
    and before a read of it (or of the copies normalize makes of it)."""
    root = normal.tree.body
    names = _copies_of(name, _renames(normal))
    writers = [t for t in _simple(root) if _writes(t, ops, group)
               and not _rebound_between(root, ops, stmt, t)]
    copies = copy_ids(normal)
    return any(_reads(t, names, copies) and may_run_between(root, w, stmt, t)
               for t in _simple(root) for w in writers)


def _rebound_between(root, ops, stmt, w):
    """Whether every path from ``stmt`` to the write ``w`` binds the name ``w``
    writes into to a new array first: ``w`` and ``stmt`` in one block, ``stmt``
    after ``w``, and a statement of the block before ``w`` allocating that
    name (the loop comes back through it).  Then ``w`` cannot reach the object
    ``stmt`` binds (``x_new = x - lr * g; x_new[x_new < 0] = 0.0; x = x_new``)."""
    op = ops.get(id(w))
    if op is None or op.kind is not OpKind.SETITEM:
        return False
    for block in _blocks(root):
        ids = [id(s) for s in block]
        if id(w) not in ids or id(stmt) not in ids or ids.index(id(stmt)) < ids.index(id(w)):
            continue
        return any(isinstance(s, gast.Assign) and _targets(s) == [op.mutates]
                   and ops.get(id(s)) is not None and _allocates(ops[id(s)], s)
                   for s in block[:ids.index(id(w))])
    return False


def variant_reads(op, names):
    """Whether ``op`` calls a variant (``frontend.writes``) and passes it
    ``names`` only where it takes its own copy (the arguments written into)."""
    marker = getattr(op.primitive, "__pullback_variant__", None)
    if op.kind is not OpKind.USER or marker is None:
        return False
    return not any(n in names for p, n in op.operands if p not in marker[1])


def _returned_after_writes(normal, ops, group, stmt, targets):
    """Whether ``stmt`` binds the value the function returns, outside any
    block, after every write into ``group`` (a variant's ``return (r, y)``)."""
    returned = normal.returned
    if not (len(targets) == 1 and isinstance(returned, gast.Name)
            and returned.id == targets[0] and any(t is stmt for t in normal.tree.body)):
        return False
    root = normal.tree.body
    return all(only_after(root, w, stmt) for w in _simple(root) if _writes(w, ops, group))


def _only_copied(stmt, targets, normal, ops):
    """Whether the list or tuple ``stmt`` builds is read once, by the next
    statement, a call that copies its elements into a new array (as in
    ``np.stack([y, b])``), so that no write can come in between."""
    if len(targets) != 1:
        return False
    readers = [s for s in _simple(normal.tree.body) if _reads(s, {targets[0]}, ())]
    if len(readers) != 1:
        return False
    op = ops.get(id(readers[0]))
    if op is None or op.kind is not OpKind.RULE or not _hashable_in(op.primitive, FRESH):
        return False
    return any(a is stmt and b is readers[0]
               for block in _blocks(normal.tree.body) for a, b in zip(block, block[1:]))


def _first_write_into(normal, ops, name):
    """The first statement that writes into ``name`` (or a copy of it)."""
    names = _copies_of(name, _renames(normal))
    return next((s for s in all_statements(normal.tree.body)
                 if ops.get(id(s)) is not None and ops[id(s)].kind is OpKind.SETITEM
                 and getattr(ops[id(s)], "mutates", None) in names), None)


def _first_write(normal, ops, group):
    for s in all_statements(normal.tree.body):
        op = ops.get(id(s))
        if op is not None and op.kind is OpKind.SETITEM and op.mutates in group \
                and not op.effect:
            return s
    return normal.tree


def _allocates(op, stmt):
    if isinstance(stmt.value, (gast.BinOp, gast.UnaryOp)):
        return True
    if op.kind not in (OpKind.RULE, OpKind.NONDIFF):
        return False
    prim = op.primitive
    return (isinstance(prim, np.ufunc) or prim in FRESH) and not _may_return_its_argument(op)


