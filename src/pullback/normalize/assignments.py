"""Normalize's assignments: each target bound to an atom, in Python's order.

A name gets a new version; a tuple target is unpacked into fresh names (a
starred one, ``a, *rest = xs``, into items and a list after a length check);
``y[i] = v`` keeps ``y``'s name (the object is changed, not rebound);
``obj.attr = v`` and ``obj.attr op= v`` become calls of ``store_attribute``
and ``update_attribute``; ``y op= v`` is recorded as an in-place update
(``Normal.augmented``).  A mixin of ``normalize._Normalizer``::

>>> from pullback.normalize.normalize import show
>>> print(show('''
... def f(x, xs):
...     a, *rest = xs
...     y = x
...     y *= a
...     x.w = y
...     return y
... '''))
def f(x, xs):
    size = len(xs)
    enough = size >= 1
    assert enough, 'not enough values to unpack (expected at least 1)'
    item = xs[0]
    a = item
    rest_1 = xs[1:]
    rest = list(rest_1)
    y = x
    y_1 = y * a
    store_attribute(x, 'w', y_1)
    return y_1
"""
from __future__ import annotations

import copy

import gast

from ..ir.build import name as _name
from ..ir.naming import describe

__all__ = ["Assignments"]


class Assignments:
    """The assignment statements of ``normalize._Normalizer``."""

    def stmt_Assign(self, node):
        targets = node.targets
        if getattr(node, "updates", None) is not None:
            # `x = x_new` after a call that wrote into x (frontend.writes): an
            # in-place update, checked as `x += v` is
            old = self.load(targets[0])
            stmt = self.bind(targets[0].id, self.rhs(node.value), node)
            self.augmented.append((stmt, old.id, node.updates))
            return
        if len(targets) == 1 and isinstance(targets[0], gast.Name):
            self.bind(targets[0].id, self.rhs(node.value), node)
            return
        if len(targets) == 1 and isinstance(targets[0], (gast.Tuple, gast.List)) \
                and isinstance(node.value, (gast.Tuple, gast.List)) \
                and len(node.value.elts) == len(targets[0].elts) \
                and not any(isinstance(e, gast.Starred) for e in node.value.elts):
            # a, b = b, a: evaluate every right-hand side before binding any
            values = [self.atom(v) for v in node.value.elts]
            for target, value in zip(targets[0].elts, values):
                self.assign_target(target, value, node)
            return
        value = self.atom(node.value)
        for target in targets:
            self.assign_target(target, value, node)

    def stmt_AnnAssign(self, node):
        if node.value is None:
            return
        self.stmt_Assign(gast.copy_location(
            gast.Assign(targets=[node.target], value=node.value, type_comment=None), node))

    def assign_target(self, target, value, origin):
        if isinstance(target, gast.Name):
            self.bind(target.id, value, origin)
        elif isinstance(target, (gast.Tuple, gast.List)):
            if any(isinstance(e, gast.Starred) for e in target.elts):
                self.starred_unpack(target, value, origin)
                return
            parts = []
            for elt in target.elts:
                if isinstance(elt, gast.Name):
                    parts.append((elt, None))
                else:
                    parts.append((elt, self.local(self.fresh("part"))))
            new = [self.new_version(e.id) if tmp is None else tmp for e, tmp in parts]
            self.emit(gast.Assign(
                targets=[gast.Tuple(elts=[gast.Name(id=n, ctx=gast.Store(), annotation=None,
                                                    type_comment=None) for n in new],
                                    ctx=gast.Store())],
                value=value, type_comment=None), origin)
            for (elt, tmp), n in zip(parts, new):
                if tmp is None:
                    self.env[elt.id] = n
                else:
                    self.assign_target(elt, _name(n), origin)
        elif isinstance(target, gast.Subscript):
            self.emit(gast.Assign(targets=[self.write_target(target)], value=value,
                                  type_comment=None), origin)
        elif isinstance(target, gast.Attribute) and value is not None:
            # obj.attr = v: a call that stores it, in Python's order (v, then obj);
            # analyses/attributes.py refuses a store that carries a gradient
            obj = self.atom(target.value)
            self.emit(gast.Expr(value=gast.Call(
                func=_name(self.runtime_helper("store_attribute")),
                args=[obj, gast.Constant(target.attr, None), value], keywords=[])), origin)
        else:
            raise self.parsed.unsupported(
                target, f"assignment to {type(target).__name__.lower()}",
                "Assign to a plain local name.")

    def starred_unpack(self, target, value, origin):
        """``a, *rest, z = xs``: ``a = xs[0]``, ``z = xs[-1]``, and
        ``rest = list(xs[1:-1])`` (a list, as in Python), after checking that
        ``xs`` has enough items."""
        elts = target.elts
        k = next(i for i, e in enumerate(elts) if isinstance(e, gast.Starred))
        if sum(isinstance(e, gast.Starred) for e in elts) > 1:
            raise self.parsed.unsupported(target, "two starred names in one assignment",
                                          "Use one starred name.")
        m = len(elts) - k - 1
        if not isinstance(value, gast.Name):
            value = self.atom_of(value, "unpacked")
        size = self.atom_of(gast.Call(func=_name("len"), args=[_name(value.id)], keywords=[]),
                            "size")
        enough = self.atom_of(gast.Compare(left=size, ops=[gast.GtE()],
                                           comparators=[gast.Constant(len(elts) - 1, None)]),
                              "enough")
        self.emit(gast.Assert(test=enough, msg=gast.Constant(
            f"not enough values to unpack (expected at least {len(elts) - 1})", None)), origin)
        for i, e in enumerate(elts):
            if i == k:
                continue
            index = gast.Constant(i if i < k else i - len(elts), None)
            item = self.atom_of(gast.Subscript(value=_name(value.id), slice=index,
                                               ctx=gast.Load()),
                                "item")
            self.assign_target(e, item, origin)
        part = self.atom_of(gast.Subscript(value=_name(value.id), slice=gast.Slice(
            gast.Constant(k, None), gast.Constant(-m, None) if m else None, None),
            ctx=gast.Load()), "rest")
        self.assign_target(elts[k].value, gast.Call(func=_name("list"), args=[part],
                                                    keywords=[]), origin)

    def write_target(self, target):
        """``y[index]`` as the target of a write: ``y`` keeps its name (the
        object is changed, not rebound)."""
        if not (isinstance(target.value, gast.Name) and target.value.id in self.locals):
            # `CALLS["n"] += 1`, `ctx.calls[-1]["k"] = v`: a global, a captured value
            # or an object's item, bound to a local name first (Python reads it
            # before the index); analyses/item_stores.py lets the stores that
            # carry no gradient run and refuses the others
            obj = self.atom_of(self.rhs(target.value), describe(target.value))
            return gast.Subscript(value=obj, slice=self.index(target.slice), ctx=gast.Store())
        return gast.Subscript(value=self.load(target.value), slice=self.index(target.slice),
                              ctx=gast.Store())

    def stmt_AugAssign(self, node):
        if isinstance(node.target, gast.Attribute):
            # obj.attr op= v, as Python runs it: obj, then obj.attr read, then v,
            # then the in-place operator (an array attribute is changed in place)
            # and the result stored back
            target = node.target
            obj = self.atom(target.value)
            old = self.atom_of(gast.Attribute(value=obj, attr=target.attr, ctx=gast.Load()),
                               target.attr)
            value = self.atom(node.value)
            self.emit(gast.Expr(value=gast.Call(
                func=_name(self.runtime_helper("update_attribute")),
                args=[obj, gast.Constant(target.attr, None), old,
                      gast.Constant(type(node.op).__name__, None), value],
                keywords=[])), node)
            return
        if isinstance(node.target, gast.Subscript) and not isinstance(node.op, (gast.Add,
                                                                                gast.Sub)):
            # y[i] *= v is y[i] = y[i] * v, the index taken once: NumPy reads y[i] (a
            # number, a copy, or a view that the in-place operator changes), and
            # stores the result back into the same elements, as the assignment does
            target = self.write_target(node.target)
            old = self.atom_of(gast.copy_location(gast.Subscript(
                value=_name(target.value.id), slice=copy.deepcopy(target.slice),
                ctx=gast.Load()), node), f"{target.value.id}_item")
            value = self.atom(node.value)
            new = self.atom_of(gast.copy_location(gast.BinOp(left=old, op=node.op,
                                                             right=value), node),
                               f"{target.value.id}_item_new")
            self.emit(gast.Assign(targets=[target], value=new, type_comment=None), node)
            return
        if isinstance(node.target, gast.Subscript):
            value = self.atom(node.value)
            self.emit(gast.AugAssign(target=self.write_target(node.target), op=node.op,
                                     value=value), node)
            return
        if not isinstance(node.target, gast.Name):
            self.assign_target(node.target, None, node)  # raises
        old = self.load(node.target)
        rhs = gast.BinOp(left=old, op=node.op, right=self.atom(node.value))
        gast.copy_location(rhs, node)
        stmt = self.bind(node.target.id, rhs, node)
        self.augmented.append((stmt, old.id, node))
