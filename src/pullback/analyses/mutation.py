"""Mutation: which arrays the function writes into, and whether pullback can
follow it exactly.

A write (``y[i] = v``, ``y[idx] += v``, ``np.add.at(y, idx, v)``) changes
the object, so every name that shares it sees the change.  pullback follows
writes into arrays the function itself allocated and shares with nothing
else; the names a loop or a branch gives one variable (``y``, ``y_1``) are
one object.  Reading a slice of such an array (a view) is fine as long as
the view is used up before the next write.  An in-place update ``y += v``
(``updates.check_updates``) is followed where no other name can hold ``y`` when it
runs.  Anything else is refused at transform time, with the line, rather
than differentiated wrongly::

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
from ..ir.walk import own_nodes
from ..frontend.parse import Parsed
from ..frontend.written import argument_written
from ..normalize.normalize import Normal
from ..rules.registry import FRESH, VIEWS   # declared beside each rule: facts(...)
from .kinds import Kind, Shape
from .ops import Op, OpKind, all_statements
from .order import may_run_between, only_after

__all__ = ["mutated_arrays", "check", "versions", "copy_ids", "used_up_before",
           "packed_to_be_copied", "VIEWS"]

def mutated_arrays(normal, ops):
    """Every name written into, with the names whose object normalize's
    copies (loop-carried and merged) carry to one written into: a name a
    merge only reads from a written one is a later binding, which a write
    that came before cannot reach (`b[0] = v` then, in a branch, `b = m[2]`)."""
    written = {op.mutates for op in ops.values()
               if op.kind is OpKind.SETITEM and not op.effect}
    return _carried_into(written, _renames(normal))


def _carried_into(names, pairs):
    """``names`` and every name a chain of copies (``pairs``: target,
    source) carries into one of them."""
    return _along_copies(names, pairs, forward=False)


def _along_copies(names, pairs, forward):
    """``names`` closed under the copies ``pairs`` (target, source): their
    targets (``forward``) or their sources."""
    group = set(names)
    changed = bool(group)
    while changed:
        changed = False
        for target, source in pairs:
            old, new = (source, target) if forward else (target, source)
            if old in group and new not in group:
                group.add(new)
                changed = True
    return group


def _renames(normal):
    pairs = []
    for s in all_statements(normal.tree.body):
        if id(s) in normal.renames:
            pairs.append((s.targets[0].id, s.value.id))
    return pairs


def _closure(names, pairs):
    group = set(names)
    changed = True
    while changed:
        changed = False
        for a, b in pairs:
            if (a in group) != (b in group):
                group |= {a, b}
                changed = True
    return group


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
            raise UnsupportedSyntaxError(
                f"`{targets[0]}` is a view of another array, written into where pullback "
                "cannot place the change (inside a loop or a branch, or through a view it "
                f"does not follow), so `{targets[0]}` may share memory with another array.",
                parsed.location(s), "Write into the array itself (`y[1 + i] = ...` for "
                "`v = y[1:]`), outside the loop, or make a new array to write into "
                "(x.copy()).")
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


def versions(normal, name):
    """``name`` and the names normalize's copies join it to (one variable)."""
    return _closure({name}, _renames(normal))


def copy_ids(normal):
    """The ids of the copies normalize added where loops and branches join."""
    return {id(s) for s in all_statements(normal.tree.body) if id(s) in normal.renames}


def used_up_before(normal, view_stmt, stmt, ops=None, kinds=None):
    """Whether the view that ``view_stmt`` binds cannot show a change made to
    its array at ``stmt``: it is read only between it and ``stmt`` (later in
    the same block, or nested in a later statement of it), or ``stmt`` comes
    first, or lies outside the view's block, and the view is read only in the
    rest of its block."""
    if not (isinstance(view_stmt, gast.Assign) and isinstance(view_stmt.targets[0], gast.Name)):
        return False
    copies = {id(s) for s in all_statements(normal.tree.body) if id(s) in normal.renames}
    names = _copies_of(view_stmt.targets[0].id, _renames(normal))
    if ops is not None:     # what shows the view: views and copies of it
        names = _derived(normal.tree.body, ops, kinds, names)
    for block in _blocks(normal.tree.body):
        i = next((k for k, t in enumerate(block) if t is view_stmt), None)
        if i is None:
            continue
        # where `stmt` is in this block (itself, or inside one of its statements)
        j = next((k for k, t in enumerate(block)
                  if any(u is stmt for u in all_statements([t]))), None)
        if j == i:
            return False
        # a view used up before the update, or taken after it (or in a block
        # the update is not in: another branch, a loop body) and used up in the
        # rest of its block (a loop's next update comes after that)
        span = block[i + 1:j] if j is not None and i < j else block[i + 1:]
        inside = {id(t) for t in all_statements(span)}
        return not any(_reads(t, names, copies) and id(t) not in inside
                       for t in _simple(normal.tree.body))
    return False


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


def _blocks(stmts):
    yield stmts
    for s in stmts:
        for field in ("body", "orelse"):
            if getattr(s, field, None):
                yield from _blocks(getattr(s, field))


def _hashable_in(prim, group):
    try:
        return prim in group
    except TypeError:
        return False


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


def _targets(stmt):
    if isinstance(stmt, gast.Assign):
        t = stmt.targets[0]
        if isinstance(t, gast.Name):
            return [t.id]
        if isinstance(t, gast.Tuple):
            return [e.id for e in t.elts]
    if isinstance(stmt, gast.For):
        return [stmt.target.id]
    return []


def _allocates(op, stmt):
    if isinstance(stmt.value, (gast.BinOp, gast.UnaryOp)):
        return True
    if op.kind not in (OpKind.RULE, OpKind.NONDIFF):
        return False
    prim = op.primitive
    return (isinstance(prim, np.ufunc) or prim in FRESH) and not _may_return_its_argument(op)


def _is_view(op, stmt, kinds=None):
    """Whether ``stmt`` makes a view: a reshape, a transpose, a basic slice,
    or integers that leave axes (``m[0]`` of a matrix is its first row).  An
    index of integers whose array's rank is not known counts as a view."""
    if op.kind is not OpKind.RULE:
        return False
    if op.primitive in VIEWS or _may_return_its_argument(op):
        return True
    import operator
    if op.primitive is operator.getitem:
        index = op.bound.get("b")
        items = index.elts if isinstance(index, gast.Tuple) else [index]
        if kinds is not None and any(
                isinstance(i, gast.Name) and getattr(kinds.get(i.id), "shape", None) is Shape.ARRAY
                for i in items):
            return False    # an integer array or a mask anywhere in the index: NumPy copies
        if any(isinstance(i, gast.Slice) or (isinstance(i, gast.Constant)
                                             and i.value in (None, Ellipsis))
               for i in items):
            return True
        if kinds is None:
            return False
        base = op.bound.get("a")
        k = kinds.get(base.id) if isinstance(base, gast.Name) else None
        rank = k.ndim if k is not None and k.shape is Shape.ARRAY else None
        return rank is None or rank > len(items)
    return False


def _check_views(stmts, ops, group, parsed, root, pairs, copies, kinds):
    """A view of a written array must be used up before the next write.  The
    copies normalize adds where branches and loops merge are not uses: the
    names they bind stand for the view too."""
    for i, s in enumerate(stmts):
        for field in ("body", "orelse"):
            if getattr(s, field, None):
                _check_views(getattr(s, field), ops, group, parsed, root, pairs, copies,
                             kinds)
        op = ops.get(id(s))
        if op is None or not _is_view(op, s, kinds) or not any(n in group for n in op.names()):
            continue
        view = s.targets[0].id
        # the view, and what shows it: views of it and plain copies of those
        # (`w = view[1:]`, `z = view`), which a write changes as well
        names = _derived(root, ops, kinds, _copies_of(view, pairs))
        # only writes into the array viewed (any of its versions) can change the
        # view: the arrays written into are the function's own, each allocated
        # apart, so a write into another one cannot reach it
        base = _closure({n for n in op.names() if n in group}, pairs) & group
        later = stmts[i + 1:]
        uses = [j for j, t in enumerate(later) if _reads(t, names, copies)]
        last = uses[-1] if uses else -1
        inside = {id(t) for t in all_statements(later)}
        # read outside its block (after a loop, say), where a write may have
        # come in between
        writers = [t for t in _simple(root) if _writes(t, ops, base)]
        escapes = any(_reads(t, names, copies) and id(t) not in inside
                      and any(may_run_between(root, w, s, t) for w in writers)
                      for t in _simple(root))
        span = later[:last + 1]
        if span and getattr(ops.get(id(span[-1])), "kind", None) is OpKind.SETITEM:
            span = span[:-1]    # `y[1:] = v`: a write reads its value before it writes
        writes = [j for j, t in enumerate(span) if _writes(t, ops, base)]
        if writes or escapes:
            raise UnsupportedSyntaxError(
                f"`{view}` is a view of an array the function writes into, and it is read "
                "after a write, where NumPy would show it the new values.",
                parsed.location(s), "Take a copy of the slice (`.copy()`) before writing, "
                "or read it again after the write.")


def _derived(root, ops, kinds, names):
    """``names`` and every name bound to a view or a plain copy of one of
    them (`w = v[1:]`, `u = v.T`, `z = v`, a loop's row of v), to a fixpoint:
    each shows the memory ``names`` show."""
    edges = _derivations(root, ops, kinds)
    out, work = set(names), list(names)
    while work:
        for t in edges.get(work.pop(), ()):
            if t not in out:
                out.add(t)
                work.append(t)
    return out


_last_derivations = (None, None, None, None)    # ops, root, kinds, edges: one transform's


def _derivations(root, ops, kinds):
    """name -> the names bound to a view or a plain copy of it (one pass over
    the function, kept while the same transform asks; one tuple, read and
    replaced whole, so transforms in other threads never mix)."""
    global _last_derivations
    last = _last_derivations
    if last[0] is ops and last[1] is root and last[2] is kinds:
        return last[3]
    edges = {}
    for s in all_statements(root):
        op = ops.get(id(s))
        if op is None or not (op.kind == "copy" or _is_view_op(op, kinds)):
            continue
        for n in op.names():
            edges.setdefault(n, set()).update(_targets(s))
    _last_derivations = (ops, root, kinds, edges)
    return edges


def _copies_of(view, pairs):
    """``view`` and the names normalize's merge copies give it."""
    return _along_copies({view}, pairs, forward=True)


def _reads(stmt, names, copies):
    """Whether ``stmt`` (or a statement inside it) reads one of ``names``,
    other than in normalize's merge copies (``copies``: their ids)."""
    for s in all_statements([stmt]):
        if id(s) in copies:
            continue
        if any(isinstance(n, gast.Name) and n.id in names and isinstance(n.ctx, gast.Load)
               for n in own_nodes(s)):
            return True
    return False


def _writes(stmt, ops, group):
    for s in all_statements([stmt]):
        op = ops.get(id(s))
        if op is not None and op.kind is OpKind.SETITEM and op.mutates in group:
            return True
    return False


def _simple(stmts):
    """Statements that are not blocks (so a read is attributed to one place)."""
    return [s for s in all_statements(stmts) if not isinstance(s, (gast.If, gast.For,
                                                                  gast.While))]


def _placeholder(stmt):
    """`y = None`, which normalize puts before a loop that defines y."""
    return isinstance(stmt, gast.Assign) and isinstance(stmt.value, gast.Constant) \
        and stmt.value.value is None


def _is_view_op(op, kinds):
    """Whether ``op``, of whatever kind, makes a view (``_is_view`` asks it
    of a rule's statement)."""
    if getattr(op.primitive, "__name__", "") == "getitem":
        return _is_view(op, None, kinds)     # `y[0]` of a vector is a number, not a view
    return _hashable_in(op.primitive, VIEWS) or _may_return_its_argument(op)


def _may_return_its_argument(op):
    """``np.array(y, copy=False)``, ``y.astype(t, copy=False)``: without a
    copy asked for, NumPy hands back ``y`` itself where it can."""
    copy = op.bound.get("copy", True)
    return "copy" in op.bound and not (isinstance(copy, gast.Constant) and copy.value is True)

