"""Loop adjoints: the adjoint of a ``for``/``while`` loop runs its body's
adjoint once per iteration, backwards, starting every iteration in the same
gradient state.

A fixpoint finds that state: dry runs of the body's adjoint find the
gradients that live across iterations (bound when the body's adjoint ends,
carried, or updated in place); they are bound and made owned before the
loop.  The dry runs repeat until the set stops growing (it only grows, and
is bounded by the active names).

In a dry run only the gradient states matter (its code is dropped), so a
loop inside a dry run that was already built from the same state replays
that build's effect on the states instead of building its adjoint again:
each enclosing loop's dry runs would otherwise rebuild every loop inside it
(exponential in the depth of the nest)::

    for i in range(2):              for i in reversed(range_1[:trips]):
        for j in range(3):    ->        range_2, trips_1 = tape.pop()
            s = s * 0.9 + x             s_2_bar = s_1_bar
                                        for j in reversed(range_2[:trips_1]):
                                            x_bar = x_bar + s_2_bar
                                            s_2_bar = s_2_bar * 0.9
                                        s_1_bar = s_2_bar

>>> import pullback as pb
>>> from pullback.testing import function_from_source
>>> f = function_from_source('''
... def f(x):
...     s = x * 1.0
...     for i in range(2):
...         for j in range(3):
...             s = s * 0.9 + x
...     return s
... ''')
>>> print(pb.source(f, 1.0).split("def f_adjoint")[1])
(residuals, out_bar):
    x, range_1, trips, tape = residuals
    tape = list(tape)
    # line 3: for i in range(2):
    x_bar = 0.0
    s_1_bar = out_bar
    for i in reversed(range_1[:trips]):
        range_2, trips_1 = tape.pop()
        s_2_bar = s_1_bar
        for j in reversed(range_2[:trips_1]):
            x_bar = x_bar + s_2_bar
            s_2_bar = s_2_bar * 0.9
        s_1_bar = s_2_bar
    # line 2: s = x * 1.0
    x_bar = x_bar + s_1_bar
    return (x_bar if type(x_bar) is float else project(x_bar, x),)
"""
from __future__ import annotations

import dataclasses
import operator
from typing import Callable

import gast

from .accumulate import OWNED, SHARED, ZERO
from ..analyses.kinds import Shape
from ..ir.build import assign as _assign, call as _call, name as _name
from ..rules.inline import clone
from .context import ReverseContext, Block

__all__ = ["LoopAdjoint"]


@dataclasses.dataclass
class _Saved:
    """The builder's state on entry to a loop's adjoint, which a dry run of
    the body's adjoint must leave as it found it."""
    grads: tuple            # Gradients.snapshot(): (states, variables)
    taken: set              # names the namer has given out
    helpers: dict           # names generated code uses -> values
    indexed: set            # gradients that received an indexed add
    children: list          # the enclosing block's nested blocks
    parts: int              # len(parts): statements with adjoints so far


@dataclasses.dataclass
class _Effect:
    """What a loop's adjoint, built from one gradient state, changed."""
    state: dict             # the gradient states after it
    names: dict             # the gradient variables it rebound
    indexed: set            # gradients it updated in place


class LoopAdjoint:
    """``adjoint_loop`` and what it needs: the context ``self.ctx``
    (``context.ReverseContext``) and ``self.adjoint_block``, the reverse
    pass's walk that builds a block's adjoint (a loop body's, here)."""

    def __init__(self, ctx: ReverseContext, adjoint_block: Callable[[Block], list]):
        self.ctx = ctx
        self.adjoint_block = adjoint_block

    def adjoint_loop(self, stmt, block):
        grads = self.ctx.grads
        key = (id(stmt), frozenset(grads.state.items()), frozenset(self.ctx.indexed))
        effect = self.ctx.loop_effects.get(key) if self.ctx.dry else None
        if effect is not None:
            # in a dry run only the gradient states matter (its code is
            # dropped): the effect of a loop already built from this state
            grads.state = dict(effect.state)
            grads.names.update(effect.names)
            self.ctx.indexed |= effect.indexed
            return []
        self.ctx.loop_builds += 1
        names, indexed = dict(grads.names), set(self.ctx.indexed)
        stmts = self._build_loop(stmt, block, self._save(block))
        self.ctx.loop_effects[key] = _Effect(
            dict(grads.state), {n: v for n, v in grads.names.items() if names.get(n) != v},
            self.ctx.indexed - indexed)
        return stmts

    def _save(self, block):
        return _Saved(self.ctx.grads.snapshot(), set(self.ctx.namer.taken), dict(self.ctx.helpers),
                      set(self.ctx.indexed), list(block.children), len(self.ctx.parts))

    def _restore(self, saved, block):
        self.ctx.grads.restore(saved.grads)
        self.ctx.namer.taken = set(saved.taken) | self.ctx.kept_names
        self.ctx.helpers = dict(saved.helpers)
        self.ctx.indexed = set(saved.indexed)
        block.children[:] = list(saved.children)
        del self.ctx.parts[saved.parts:]

    def _live_across(self, stmt, block, saved, touched, target):
        """Dry runs of the body's adjoint, each entered with ``touched`` bound,
        until the gradients live across iterations are all in ``touched``;
        returns them and the names the body assigns."""
        carried = self.ctx.normal.carried.get(id(stmt), ())
        active = len(self.ctx.active)
        for _ in range(active + 2):      # each round adds a name, or stops
            for n in touched:
                if not self.ctx.grads.bound(n):
                    self.ctx.grads.state[n] = OWNED      # as it will be at entry
            body = self._new_block(stmt, block, target)
            self.ctx.dry += 1
            try:
                self.adjoint_block(body)
            finally:
                self.ctx.dry -= 1
            indexed = self.ctx.indexed - saved.indexed
            # live across iterations: bound when the body's adjoint ends (this
            # includes a name the body assigns only sometimes), carried, or
            # updated in place
            found = {n for n, st in self.ctx.grads.state.items() if st != ZERO}
            found |= {n for n in carried if n in self.ctx.active} | (indexed - body.assigned)
            # and a name the body defines whose gradient is bound on entry (it is
            # read after the loop): each iteration's definition consumes it
            found |= {n for n in body.assigned if saved.grads[0].get(n, ZERO) != ZERO}
            self._restore(saved, block)
            if found <= touched:
                return touched, indexed, body.assigned
            touched = touched | found
        raise AssertionError(f"loop at line {stmt.lineno}: the gradients live across "
                             f"iterations did not settle in {active + 2} rounds")

    def _new_block(self, stmt, block, target):
        return self.ctx.new_block(stmt.body, "loop", block, target)

    def _build_loop(self, stmt, block, saved):
        carried = self.ctx.normal.carried.get(id(stmt), ())
        target = [stmt.target.id] if isinstance(stmt, gast.For) else []
        touched = {n for n in carried if n in self.ctx.active}
        touched, indexed, body_assigned = self._live_across(stmt, block, saved, touched,
                                                            target)
        pre, fresh = [], []
        for n in sorted(touched):
            if n in indexed:
                if self.ctx.grads.state.get(n, ZERO) == ZERO:
                    fresh.append(n)         # a zero buffer, made here
                pre.extend(self.ctx.grads.make_owned(n, self.ctx.zero_buffer))
            elif not self.ctx.grads.bound(n):
                pre.append(self.ctx.grads.materialize(n, self.zero_for))
        pre.extend(self.ctx.grads.stabilize(sorted(touched)))
        # a gradient bound on entry that the body consumes (the cotangent of a
        # name the body defines, read after the loop) restarts from zero: only
        # the last iteration's definition reaches what comes after the loop
        restart = sorted(set(carried) | {n for n in touched if n in body_assigned})
        # a buffer the body restarts is not known to have the primal's shape
        # when the next iteration begins (see ``Gradients.exact``)
        self.ctx.grads.exact -= set(restart)
        entry = self.ctx.grads.snapshot()
        zero_like = self.restart_shapes(stmt, [n for n in restart if n not in carried])
        mark = len(self.ctx.parts)
        rounds = 0
        while True:
            body = self._new_block(stmt, block, target)
            body.adjoint = self.adjoint_block(body)
            for n in restart:
                if n in self.ctx.active and not self.ctx.grads.bound(n):
                    body.adjoint.append(self.ctx.grads.materialize(n, zero_like))
            weaker = [n for n in touched if entry[0].get(n) == OWNED and (
                self.ctx.grads.state.get(n) != OWNED or (n in self.ctx.grads.frozen
                                                         and n not in entry[3]))
                      ] if rounds == 0 else []
            # every iteration must begin as the first did: a buffer whose shape
            # is known on entry but not when the body's adjoint ends is not
            # known on entry either
            lost = {n for n in entry[2] - self.ctx.grads.exact if n in touched}
            if not weaker and not lost:
                break
            # the body leaves a buffer shared: start every iteration shared
            rounds += 1
            del self.ctx.parts[mark:]
            self.ctx.grads.restore(entry)
            for n in weaker:
                self.ctx.grads.state[n] = SHARED
            self.ctx.grads.exact -= lost
            entry = (entry[0], entry[1], set(self.ctx.grads.exact), entry[3])
            block.children.remove(body)
        self.ctx.grads.exact &= entry[2]
        # a loop may run no times: after it a buffer is owned only if it was
        # on entry too (else `grad(f)` could hand out a read-only view)
        for n in touched | set(restart):
            if self.ctx.grads.state.get(n) == OWNED and entry[0].get(n, ZERO) != OWNED:
                self.ctx.grads.state[n] = SHARED
        if not body.adjoint:
            block.children.remove(body)
            return pre
        trips = self.ctx.trips[id(stmt)]
        if self.over_range(stmt):
            # the indices again, backwards: `for i in reversed(r[:trips])`
            taken = gast.Subscript(value=clone(stmt.iter), slice=gast.Slice(
                None, _name(trips), None), ctx=gast.Load())
            loop = gast.For(target=_name(stmt.target.id, True),
                            iter=_call(self.ctx.helper("reversed", reversed), taken),
                            body=body.adjoint, orelse=[], type_comment=None)
            rebuilt = self.rebuilt_items(stmt, body)
            body.adjoint[:0] = rebuilt
            body.recomputed = {stmt.target.id} | {s.targets[0].id for s in rebuilt}
            if stmt.target.id not in self.ctx.assigned_in(stmt.body):
                pre.extend(self.first_writes(stmt, body.adjoint, fresh, taken))
        else:
            loop = gast.For(target=_name("_", True),
                            iter=_call(self.ctx.helper("range", range), _name(trips)),
                            body=body.adjoint, orelse=[], type_comment=None)
        loop.lineno = stmt.lineno
        for s in pre:
            s.lineno = stmt.lineno
        return pre + [loop]

    def first_writes(self, stmt, adjoint, fresh, taken):
        """A range loop whose body reads ``x[i]`` (``i`` its index) and ``x``
        nowhere else, ``x_bar`` a zero buffer made for the loop: each iteration
        adds into an element no other iteration touches, so where the range's
        indices are distinct (``runtime.distinct_indices``, checked once) the
        add is a store, bit for bit the same (``0.0 + g`` is ``g + 0.0``)::

            p_bar = owned_zeros(p)                p_bar = owned_zeros(p)
            for i in reversed(r[:trips]):   ->    distinct = distinct_indices(r[:trips])
                p_bar[i] += ex_bar                for i in reversed(r[:trips]):
                                                      p_bar[i] = (ex_bar + 0.0 if distinct
                                                                  else p_bar[i] + ex_bar)

        Returns the statement computing the flag (none if nothing changed)."""
        index_var = stmt.target.id
        if not fresh or any(isinstance(a, (gast.For, gast.While, gast.If, gast.Try, gast.With))
                            for a in adjoint):
            return []       # (a body with nested blocks: not walked again per level)
        found = []
        variables = {self.ctx.grads.var(n) for n in fresh}
        counts = {}             # one walk for all of them
        for a in adjoint:
            for x in gast.walk(a):
                if isinstance(x, gast.Name) and x.id in variables:
                    counts[x.id] = counts.get(x.id, 0) + 1
        for n in fresh:
            var = self.ctx.grads.var(n)
            uses = counts.get(var, 0)
            at = [k for k, a in enumerate(adjoint) if isinstance(a, gast.AugAssign)
                  and isinstance(a.op, gast.Add) and isinstance(a.target, gast.Subscript)
                  and isinstance(a.target.value, gast.Name) and a.target.value.id == var
                  and isinstance(a.target.slice, gast.Name) and a.target.slice.id == index_var]
            if uses == 1 and len(at) == 1:
                found.append(at[0])
        if not found:
            return []
        flag = self.ctx.namer.fresh("distinct")
        for k in found:
            add = adjoint[k]
            old = clone(add.target)
            old.ctx = gast.Load()
            adjoint[k] = gast.Assign(targets=[add.target], value=gast.IfExp(
                test=_name(flag),
                body=gast.BinOp(left=add.value, op=gast.Add(), right=gast.Constant(0.0, None)),
                orelse=gast.BinOp(left=old, op=gast.Add(), right=clone(add.value))),
                type_comment=None)
        return [_assign(flag, _call(self.ctx.runtime("distinct_indices"), clone(taken)),
                        stmt.lineno)]

    def rebuilt_items(self, stmt, body):
        """``y = x[i]`` in a range loop's body, ``i`` its index (with constants
        and slices), ``x`` an array the loop does not assign and nothing
        writes into: the adjoint reads ``y`` again from ``x`` (which it reads
        from the residuals) rather than from the tape.  Returns those
        statements, for the start of the body's adjoint."""
        if self.ctx.written or self.ctx.normal.augmented:
            return []
        index_var = stmt.target.id
        assigned = body.assigned
        read = None
        out = []
        for s in stmt.body:
            op = self.ctx.ops.get(id(s))
            if op is None or op.kind != "rule" or op.primitive is not operator.getitem \
                    or not isinstance(s, gast.Assign) or not isinstance(s.targets[0], gast.Name):
                continue
            x, index = op.bound.get("a"), op.bound.get("b")
            y = s.targets[0].id
            if not isinstance(x, gast.Name) or x.id in assigned or len(self.ctx.definitions(x.id)) > 1 \
                    or self.ctx.kind(x.id).shape != "array" or not _loop_index(index, index_var) \
                    or y in self.ctx.normal.carried_names:
                continue
            if read is None:
                read = {n.id for a in body.adjoint for n in gast.walk(a)
                        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)}
            if y in read and sum(1 for t in _targets(stmt.body) if t == y) == 1:
                again = _assign(y, clone(s.value), s.lineno)
                out.append(again)
        return out

    def restart_shapes(self, stmt, defined):
        """The zero a loop body's adjoint restarts a gradient from, once the
        definition of its name has consumed it, must be shaped like the value
        of the iteration before (a layer loop's ``outputs`` changes shape):
        for a name the body defines but does not carry, the primal keeps that
        value at the top of the body (``n_before = n``)."""
        before = {}
        for n in defined:
            if n not in self.ctx.active:
                continue
            key = (id(stmt), n)        # once per loop, however often its adjoint is built
            if key not in self.ctx.kept_before:
                name = self.ctx.kept_before[key] = self.ctx.namer.fresh(f"{n}_before")
                self.ctx.kept_names.add(name)
                stmt.body.insert(0, _assign(name, _name(n), stmt.lineno))
                self.ctx.primal_names.add(name)
                self.ctx.bound_up_front.add(n)     # the first iteration reads it too
            before[n] = self.ctx.kept_before[key]
        return lambda name: self.zero_for(before.get(name, name))

    def over_range(self, stmt):
        """A ``for`` loop over a ``range`` held in a name."""
        return isinstance(stmt, gast.For) and isinstance(stmt.iter, gast.Name) \
            and self.ctx.kinds.get(stmt.iter.id) is not None \
            and self.ctx.kinds[stmt.iter.id].shape is Shape.RANGE

    def zero_for(self, name):
        return _call(self.ctx.runtime("zeros_like"), _name(name))


def _loop_index(node, index_var):
    """An index made of the loop's index, integer constants, ``None`` and
    slices of those: ``i``, ``(slice(None), i)``."""
    if isinstance(node, gast.Name):
        return node.id == index_var
    if isinstance(node, gast.Constant):
        return node.value is None or (isinstance(node.value, int)
                                      and not isinstance(node.value, bool))
    if isinstance(node, gast.Slice):
        return all(p is None or _loop_index(p, None) for p in (node.lower, node.upper, node.step))
    if isinstance(node, gast.Tuple):
        return all(_loop_index(e, index_var) for e in node.elts)
    return False


def _targets(stmts):
    """Every name the statements (nested blocks included) assign, repeated."""
    for s in stmts:
        for n in gast.walk(s):
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
                yield n.id
