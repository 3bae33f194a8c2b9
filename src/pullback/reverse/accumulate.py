"""Accumulate: the state of every gradient variable, and the code that adds
a contribution to it, in place where that is proven safe.

Each primal name has one gradient variable (``x_bar``) in one of three
states at each point of the adjoint (DESIGN.md, "Ownership"):

- **zero**: nothing accumulated yet; no code, no allocation.  The next
  contribution *binds* the variable.
- **owned**: a buffer this adjoint allocated that nothing else refers to.
- **shared**: anything else (an incoming cotangent, a view, a value handed to
  two names by ``a + b``), or unknown.

Adding into *owned* may be done in place; into *shared* it is done out of
place, and the result is owned.  An indexed contribution (the adjoint of
``y = x[i]``) is added in place into an owned dense buffer, ``x_bar[i] += g``,
so a loop over ``x[i]`` costs O(1) per access; the buffer is made owned once,
before the loop.  With ``inplace=False`` every addition is out of place
(tests compare the two paths bitwise).

>>> import numpy as np, pullback as pb
>>> from pullback.testing import function_from_source
>>> f = function_from_source('''
... def f(x):
...     s = 0.0
...     for i in range(3):
...         s = s + x[i] * x[i]
...     return s
... ''')
>>> print(pb.source(f, np.ones(3)).split("def f_adjoint")[1])
(residuals, out_bar):
    x, range_1, trips = residuals
    # line 3: for i in range(3):
    x_bar = owned_zeros(x)
    s_1_bar = out_bar
    for i in reversed(range_1[:trips]):
        x_item = x[i]
        x_item_1 = x[i]
        x_item_bar = s_1_bar * x_item_1
        x_item_1_bar = s_1_bar * x_item
        x_bar[i] += x_item_1_bar
        x_bar[i] += x_item_bar
    return (project(x_bar, x),)
"""
from __future__ import annotations

import dataclasses
import enum

import gast

from .. import runtime
from ..ir.build import assign as _assign, call as _call, name as _name

__all__ = ["Gradients", "GradState", "ZERO", "OWNED", "SHARED"]


class GradState(str, enum.Enum):
    """The state of a gradient variable (above); a ``str`` whose value is the
    state's name."""
    ZERO = "zero"          # nothing accumulated: the next contribution binds it
    OWNED = "owned"        # a buffer only this adjoint holds: added to in place
    SHARED = "shared"      # anything else, or unknown: added to out of place

    __str__, __repr__ = str.__str__, str.__repr__     # prints as its string, as before


ZERO, OWNED, SHARED = GradState.ZERO, GradState.OWNED, GradState.SHARED


@dataclasses.dataclass
class Gradients:
    """Gradient variables, their states, and the accumulations that change them."""

    namer: object
    kinds: dict
    helper: object             # (name, value) -> the name generated code uses
    inplace: bool = True
    # (expr, name) -> whether ``expr`` is an array of exactly ``name``'s shape
    # (``zeros_like(name)``, ``unbroadcast(g, name)``); None: never known
    shaped_like: object = None
    # name -> whether ``name_bar += g`` equals ``name_bar = name_bar + g`` bit
    # for bit once the buffer has ``name``'s shape: an array whose gradients
    # are all float64 (none wider, none complex)
    whole_in_place: object = None

    def __post_init__(self):
        self.stable = {}       # primal name -> its gradient variable, `x_bar`
        self.names = {}        # primal name -> the variable holding it now
        self.state = {}        # primal name -> ZERO | OWNED | SHARED
        self.exact = set()     # names whose buffer has exactly the primal's shape
        # owned names whose value may be immutable (a callee's gradient of a
        # namedtuple, a sum of two): made updatable before an indexed add
        self.frozen = set()

    # -- states ----------------------------------------------------------------

    def var(self, name):
        if name not in self.names:
            self.names[name] = self.stable_var(name)
        return self.names[name]

    def stable_var(self, name):
        if name not in self.stable:
            self.stable[name] = self.namer.fresh(f"{name}_bar")
        return self.stable[name]

    def stabilize(self, names):
        """Before a loop: gradients that live across iterations must be in
        their own variables (not, say, in ``out_bar``)."""
        out = []
        for name in names:
            if self.bound(name) and self.var(name) != self.stable_var(name):
                out.append(_assign(self.stable_var(name), _name(self.var(name))))
                self.names[name] = self.stable_var(name)
        return out

    def bound(self, name):
        return self.state.get(name, ZERO) != ZERO

    def seed(self, name, var):
        """``name``'s gradient arrives from outside, as ``var`` (never written)."""
        self.names[name] = var
        self.state[name] = SHARED
        self.exact.discard(name)

    def consume(self, name):
        """The adjoint of ``name``'s definition has run: earlier values of the
        name (a loop-carried one) start from zero again."""
        self.state[name] = ZERO
        self.names[name] = self.stable_var(name)
        self.exact.discard(name)

    def snapshot(self):
        return dict(self.state), dict(self.names), set(self.exact), set(self.frozen)

    def restore(self, snap):
        self.state, self.names, self.exact = dict(snap[0]), dict(snap[1]), set(snap[2])
        self.frozen = set(snap[3])

    def merge(self, a, b, zero_for):
        """States after an ``if`` whose branches ended in snapshots ``a`` and
        ``b``; returns the statements each branch must append so both agree."""
        (sa_all, na, ea, fa), (sb_all, nb, eb, fb) = a, b
        ea, eb = set(ea), set(eb)
        plain_zero = zero_for

        def zero_for(name):
            # the zero a branch binds counts as owned: a container's must be one
            # that indexed accumulation can update (a tuple's zeros_like is a tuple)
            kind = self.kinds.get(name)
            if kind is not None and kind.is_number:
                return plain_zero(name)
            return _call(self.helper("owned_zeros", runtime.owned_zeros), _name(name))
        fix_a, fix_b, merged, names = [], [], {}, {}
        for name in sorted(set(sa_all) | set(sb_all)):
            sa, sb = sa_all.get(name, ZERO), sb_all.get(name, ZERO)
            va, vb = na.get(name), nb.get(name)
            if sa == ZERO and sb != ZERO:
                fix_a.append(_assign(self.stable_var(name), zero_for(name)))
                sa, va = OWNED, self.stable_var(name)
                self._note_shape(ea, name, fix_a[-1].value)
            elif sb == ZERO and sa != ZERO:
                fix_b.append(_assign(self.stable_var(name), zero_for(name)))
                sb, vb = OWNED, self.stable_var(name)
                self._note_shape(eb, name, fix_b[-1].value)
            if sa != ZERO and va != vb:
                for fix, v in ((fix_a, va), (fix_b, vb)):
                    if v != self.stable_var(name):
                        fix.append(_assign(self.stable_var(name), _name(v)))
                va = self.stable_var(name)
            merged[name] = ZERO if sa == sb == ZERO else (
                OWNED if sa == sb == OWNED else SHARED)
            names[name] = va or self.stable_var(name)
        return (merged, names, ea & eb, set(fa) | set(fb)), fix_a, fix_b

    def _note_shape(self, exact, name, expr, shaped=False):
        """Record in ``exact`` whether the buffer ``expr`` now bound for
        ``name`` has exactly the primal's shape (``shaped``: known so)."""
        if self.shaped_like is not None and (shaped or self.shaped_like(expr, name)) \
                and self.whole_in_place(name):
            exact.add(name)
        else:
            exact.discard(name)

    def materialize(self, name, zero_for):
        """Bind a zero gradient for ``name`` (shaped like the primal value)."""
        self.state[name] = OWNED
        self.frozen.discard(name)
        zero = zero_for(name)
        self._note_shape(self.exact, name, zero)
        return _assign(self.var(name), zero)

    def make_owned(self, name, zero_for):
        """Statements that make ``name``'s gradient an owned dense buffer."""
        state = self.state.get(name, ZERO)
        self.state[name] = OWNED
        if state == ZERO:
            self.frozen.discard(name)
            zero = zero_for(name)
            self._note_shape(self.exact, name, zero)
            return [_assign(self.var(name), zero)]
        if state == OWNED and name in self.frozen:
            self.frozen.discard(name)
            return [_assign(self.var(name), _call(self.helper(
                "updatable", runtime.updatable), _name(self.var(name))))]
        if state == SHARED:
            self.frozen.discard(name)
            # a list's: a list (a reduction's rule, `np.sum(items)`, gives it an array)
            listed = getattr(self.kinds.get(name), "shape", None) == "container"
            helper = "owned_items" if listed else "owned_copy"
            copy = _call(self.helper(helper, getattr(runtime, helper)), _name(self.var(name)))
            return [_assign(self.var(name), copy)]
        return []

    # -- accumulation ------------------------------------------------------------

    def add(self, out, name, expr, fresh, alias_of=None, shaped=False):
        """Add ``expr`` to ``name``'s gradient.  ``fresh``: ``expr`` is a new
        object nothing else holds; ``alias_of``: the gradient variable's primal
        whose buffer ``expr`` is (so that one becomes shared too); ``shaped``:
        ``expr`` has exactly ``name``'s shape (an operand's contribution where
        nothing broadcasts, ``ctx.same_shape``)."""
        if alias_of is not None and self.state.get(alias_of) == OWNED:
            self.state[alias_of] = SHARED
        var = self.var(name)
        kind = self.kinds.get(name)
        self.frozen.discard(name)
        if kind is None or not kind.is_number:
            self.frozen.add(name)
        if not self.bound(name):
            self.state[name] = OWNED if fresh else SHARED
            self._note_shape(self.exact, name, expr, shaped)
            out.append(_assign(var, expr))
            return
        if kind is not None and kind.is_number:
            if self.inplace and self.state[name] == OWNED and name in self.exact \
                    and self.whole_in_place is not None and self.whole_in_place(name):
                # the whole buffer in place: it is this adjoint's own and has the
                # primal's shape and dtype, so no contribution can widen it
                target = _name(var, True)
                out.append(gast.AugAssign(target=target, op=gast.Add(), value=expr))
                return
            total = gast.BinOp(left=_name(var), op=gast.Add(), right=expr)
            # the sum has the primal's shape if either side has (neither is larger)
            if name not in self.exact:
                self._note_shape(self.exact, name, expr, shaped)
        elif self.inplace and self.state[name] == OWNED and kind is not None \
                and kind.shape == "container":
            # an owned dict: the contribution's entries added into it, not a copy
            total = _call(self.helper("add_into", runtime.add_into), _name(var), expr)
        else:
            total = _call(self.helper("add_cotangents", runtime.add_cotangents), _name(var), expr)
            self.exact.discard(name)
        self.state[name] = OWNED
        out.append(_assign(var, total))

    def add_indexed(self, out, name, index, g, zero_for, simple, written=None):
        """Add ``g`` at ``index`` of ``name``'s gradient (the adjoint of
        ``y = name[index]``).  ``simple``: a basic index into a real array and
        a real ``g``, so ``x_bar[i] += g`` is exact; ``written``: the index as
        the user wrote it (``x_bar[1:] += g``, no ``slice(1, None)`` call)."""
        var = self.var(name)
        if not self.inplace:
            contribution = _call(self.helper("unindex", runtime.unindex), g,
                                 _name(name), index)
            self.add(out, name, contribution, fresh=True)
            return
        out.extend(self.make_owned(name, zero_for))
        if simple:
            target = gast.Subscript(value=_name(var), slice=written if written is not None
                                    else index, ctx=gast.Store())
            out.append(gast.AugAssign(target=target, op=gast.Add(), value=g))
        else:
            add_at = self.helper("index_add", runtime.index_add)
            out.append(gast.Expr(value=_call(add_at, _name(var), index, g)))
