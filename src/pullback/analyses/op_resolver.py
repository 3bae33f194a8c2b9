"""The op of each normal-form statement: which rule, primitive, function or
structural operation differentiates it (``analyses.ops.Op``).

A write into an array is SETITEM, ``xs.append(v)`` of a local list APPEND,
a name, a display or an unpacking COPY, PACK or UNPACK; an operator, an
attribute or a call is matched to its rule (its arguments bound to the
rule's parameters), a user function, a ``custom_vjp``, a structure's
constructor, or, where the callee is known only when it runs, DYNAMIC (the
runtime dispatcher).  Callees are looked up as Python would at the time of
the transform; a call that changes its argument in place is refused.

>>> from pullback.testing import function_from_source, analyses
>>> f = function_from_source('''
... def f(x, y):
...     z = x * y
...     w = np.r_[z, 1:3]
...     return w
... ''')
>>> normal, ops, *_ = analyses(f)
>>> [(ops[id(s)].kind, ops[id(s)].label, ops[id(s)].operands) for s in normal.tree.body[:2]]
[('rule', '`x * y`', (('x', 'x'), ('y', 'y'))), ('rule', 'np.r_[...]', (('items', 'z'),))]
"""
from __future__ import annotations

import builtins
import functools
import inspect
import operator
import types
from typing import TYPE_CHECKING

import gast
import numpy as np

from .. import rules as _rules  # noqa: F401  (registers every rule)
from .. import runtime
from ..errors import NoRuleError, PullbackError, UnsupportedSyntaxError
from ..rules.registry import is_nondifferentiable, lookup
from ..runtime.opaque import is_library_code
from .callable_facts import (dispatches, dotted, is_library, is_mutating_function, is_star_call,
                             is_variadic, is_wrapper, static_value, structure_fields)
from .operator_objects import method_self, refuse_overloaded
from .ops import Op, OpKind, all_statements
from .call_refusals import (MUTATING_METHODS, refuse_mutating_method, refuse_out,
                            refuse_unseen_effects)
from .r_ranges import r_ranges

if TYPE_CHECKING:     # (not loaded by `import pullback`)
    from ..frontend.parse import Parsed
    from ..normalize.normalize import Normal

__all__ = ["resolve", "OpResolver"]

_BINOPS = {
    gast.Add: operator.add, gast.Sub: operator.sub, gast.Mult: operator.mul,
    gast.Div: operator.truediv, gast.FloorDiv: operator.floordiv, gast.Mod: operator.mod,
    gast.Pow: operator.pow, gast.MatMult: operator.matmul,
}
_UNARY = {gast.USub: operator.neg, gast.UAdd: operator.pos}
_WRITE_SYMBOL = {"set": "=", "add": "+=", "sub": "-=", "add_at": "(np.add.at)"}


def resolve(normal: Normal, parsed: Parsed) -> dict[int, Op]:
    """Map ``id(stmt)`` to its ``Op`` for every statement of ``normal.tree``."""
    locals_ = set(normal.params) | {
        n.id for n in gast.walk(normal.tree)
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
    r = OpResolver(parsed, locals_)
    r.objects = {**method_self(parsed.fn, parsed.tree), **_user_objects(normal, r)}
    return {id(s): r.stmt(s) for s in all_statements(normal.tree.body)}


def _user_objects(normal, r):
    """The locals bound only to new objects of one of the user's classes
    (``b = Buffer(w)``), each with its class: there ``b.fill(v)`` is that
    class's method, not ndarray's in-place ``.fill``."""
    found, other, direct = {}, set(normal.params), set()
    for node in gast.walk(normal.tree):
        if not (isinstance(node, gast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], gast.Name)):
            continue
        direct.add(id(node.targets[0]))
        name, value, cls = node.targets[0].id, node.value, None
        if isinstance(value, gast.Call) and isinstance(value.func, gast.Name) \
                and r.is_static(value.func):
            try:
                cls = r.lookup_static(value.func)
            except PullbackError:
                cls = None
        if isinstance(cls, type) and not is_library(cls) and found.get(name, cls) is cls:
            found[name] = cls
        else:
            other.add(name)
    other.update(n.id for n in gast.walk(normal.tree) if isinstance(n, gast.Name)
                 and isinstance(n.ctx, gast.Store) and id(n) not in direct)
    return {k: v for k, v in found.items() if k not in other}


class OpResolver:
    objects = {}

    def __init__(self, parsed, locals_):
        self.parsed = parsed
        self.locals = locals_

    def stmt(self, stmt):
        if isinstance(stmt, gast.Assign) and isinstance(stmt.targets[0], gast.Subscript):
            return self.write(stmt.targets[0], stmt.value, "set", stmt)
        if isinstance(stmt, gast.AugAssign):
            mode = {gast.Add: "add", gast.Sub: "sub"}.get(type(stmt.op))
            if mode is None:
                raise UnsupportedSyntaxError(
                    "pullback cannot differentiate this in-place update of array elements.",
                    self.parsed.location(stmt), "Use `+=` or `-=`, or write it as a plain "
                    "assignment: `y[i] = y[i] * v`.")
            return self.write(stmt.target, stmt.value, mode, stmt)
        if isinstance(stmt, gast.Assign):
            if not isinstance(stmt.targets[0], gast.Name):
                return self.names_op(OpKind.UNPACK, [stmt.value], stmt.value)
            return self.rhs(stmt.value)
        if isinstance(stmt, gast.Expr):
            call = stmt.value
            if isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute) \
                    and call.func.attr == "append" and isinstance(call.func.value, gast.Name) \
                    and call.func.value.id in self.locals and len(call.args) == 1 \
                    and not call.keywords:
                op = self.names_op(OpKind.APPEND, call.args, call)
                op.mutates, op.label = call.func.value.id, f"{call.func.value.id}.append"
                return op
            if isinstance(call, gast.Call) and len(call.args) == 3 and not call.keywords \
                    and self.is_static(call.func) and self.lookup_static(call.func) == np.add.at \
                    and isinstance(call.args[0], gast.Name) and call.args[0].id in self.locals:
                target = gast.Subscript(value=call.args[0], slice=call.args[1], ctx=gast.Store())
                return self.write(target, call.args[2], "add_at", stmt)
            return self.rhs(stmt.value)
        return Op(OpKind.NONDIFF, node=stmt)

    def write(self, target, value, mode, stmt):
        """``y[index] = v`` (or ``+=``, ``*=``, ``np.add.at``): ``y`` changes."""
        y = target.value.id
        op = Op(OpKind.SETITEM, label=f"{y}[...] {_WRITE_SYMBOL[mode]}", node=stmt, mutates=y,
                bound={"index": target.slice, "value": value, "mode": mode})
        op.operands = tuple(("value", value.id) for _ in [0]
                            if isinstance(value, gast.Name)) + (("array", y),)
        return op

    def rhs(self, node):
        if isinstance(node, gast.Name):
            return self.names_op(OpKind.COPY, [node], node)
        if isinstance(node, gast.Constant) or (
                isinstance(node, gast.Attribute) and node.value is not None
                and self.is_static(node)):
            return Op(OpKind.NONDIFF, node=node)
        if isinstance(node, (gast.Tuple, gast.List)):
            return self.names_op(OpKind.PACK, node.elts, node)
        if isinstance(node, gast.Dict):
            op = self.names_op(OpKind.PACK, node.values, node)
            op.operands = tuple((node.keys[i], n) for i, n in op.operands)
            return op
        refuse_overloaded(node, self.objects, self.parsed)     # `a * b` of the user's class
        if isinstance(node, gast.BinOp):
            return self.primitive_op(_BINOPS.get(type(node.op)), [node.left, node.right], {},
                                     node, _op_symbol(node))
        if isinstance(node, gast.UnaryOp):
            prim = _UNARY.get(type(node.op))
            if prim is None:
                return Op(OpKind.NONDIFF, node=node)
            return self.primitive_op(prim, [node.operand], {}, node, _op_symbol(node))
        if isinstance(node, (gast.Compare, gast.BoolOp, gast.JoinedStr)):
            return Op(OpKind.NONDIFF, node=node)
        if isinstance(node, gast.Attribute):
            key = f"ndarray.{node.attr}"
            if isinstance(node.value, gast.Name) and (
                    (lookup(key) is None and not is_nondifferentiable(key))
                    or callable(getattr(np.ndarray, node.attr, None))):
                # a field of a namedtuple or dataclass (an array has no such attribute,
                # or has a method of that name, which this reads without calling it)
                return Op(OpKind.FIELD, label=f".{node.attr}", node=node,
                          operands=((node.attr, node.value.id),))
            # `x.T`, `x.shape`: the array's rule; `settle_attributes` turns it into a
            # field read decided at run time when the kinds do not prove `x` a number
            return self.primitive_op(key, [node.value], {}, node, f".{node.attr}")
        if isinstance(node, gast.Subscript) and self.is_static(node.value) \
                and any(self.lookup_static(node.value) is j for j in (np.r_, np.c_)):
            items = node.slice.elts if isinstance(node.slice, gast.Tuple) else [node.slice]
            if self.lookup_static(node.value) is np.r_:
                items = r_ranges(self, node, items)      # `np.r_[x, 1:4]`: 1:4 is a range
            if all(isinstance(e, gast.Name) or getattr(e, "r_range", False) or (isinstance(
                    e, gast.Constant) and isinstance(e.value, (int, float))) for e in items):
                # `np.r_[x, 1.0]`: arrays and numbers joined, as runtime.r_items does
                prim = runtime.r_items if self.lookup_static(node.value) is np.r_ \
                    else runtime.c_items
                return self.primitive_op(prim, items, {}, node, f"{dotted(node.value)}[...]")
        if isinstance(node, gast.Subscript) and self.is_static(node.value) and not isinstance(
                self.lookup_static(node.value), (np.ndarray, np.generic, list, tuple, dict)):
            # `np.r_[x, 1.0]`: an object whose indexing computes from what it is given
            return Op(OpKind.OPAQUE, label=f"{dotted(node.value)}[...]", node=node,
                      primitive=self.lookup_static(node.value), operands=tuple(
                          (None, n.id) for n in gast.walk(node.slice)
                          if isinstance(n, gast.Name) and n.id in self.locals))
        if isinstance(node, gast.Subscript):
            return self.primitive_op(operator.getitem, [node.value, node.slice], {}, node,
                                     "indexing")
        if isinstance(node, gast.Call):
            return self.call(node)
        return Op(OpKind.OPAQUE, node=node)

    def users_function(self, func):
        """``func`` names a function of the user's own (where ``out=`` is a
        parameter like any other: a variable a nested function captures)."""
        try:
            obj = self.lookup_static(func) if self.is_static(func) else None
        except PullbackError:
            return False
        return isinstance(obj, types.FunctionType) and not is_library(obj)

    def call(self, node):
        kwargs = {k.arg: k.value for k in node.keywords}
        func = node.func
        if "out" in kwargs and not self.users_function(func):
            raise refuse_out(func, node, self.parsed)
        if isinstance(func, gast.Attribute) and not self.is_static(func):
            own = isinstance(func.value, gast.Name) and isinstance(inspect.getattr_static(
                self.objects.get(func.value.id), func.attr, None), types.FunctionType)
            if func.attr in MUTATING_METHODS and not own:
                raise refuse_mutating_method(func, node, self.parsed)
            key = f"ndarray.{func.attr}"
            if lookup(key) is not None or is_nondifferentiable(key) \
                    or not isinstance(func.value, gast.Name):
                return self.primitive_op(key, [func.value] + node.args, kwargs, node,
                                         f".{func.attr}()")
            # a method of an object known only when the call runs
            return self.dynamic(node, kwargs, f".{func.attr}()", receiver=func.value)
        label = dotted(func)
        if isinstance(func, gast.Name) and func.id not in self.locals \
                and is_star_call(self.lookup_static(func)):
            return self.star(node)
        if isinstance(func, gast.Name) and func.id in self.locals:
            return self.dynamic(node, kwargs, label)      # a function value
        obj = self.lookup_static(func)
        refuse_unseen_effects(obj, label, node, self.parsed)
        from ..custom_rules import CustomVJP
        if isinstance(obj, CustomVJP):
            return self.bind_python(obj.fun, OpKind.CUSTOM, obj, node, label)
        fields = structure_fields(obj)
        if fields is not None:
            return self.construct(obj, fields, node, kwargs, label)
        from ..frontend.instances import ObjectMaker, followed
        from ..frontend.followed import Followed
        if isinstance(obj, Followed):    # a state function, an __init__ rewritten
            return self.bind_python(obj.function, OpKind.USER, obj.function, node, label)
        if isinstance(obj, ObjectMaker):        # the end of a rewritten __init__
            return Op(OpKind.CONSTRUCT, label=obj.cls.__name__, primitive=obj, node=node,
                      operands=tuple((k, a.id) for k, a in kwargs.items()
                                     if isinstance(a, gast.Name) and a.id in self.locals))
        if obj is functools.partial:     # a function value holding its arguments
            return self.dynamic(node, kwargs, label, static=obj)
        if isinstance(obj, type) and not is_library(obj) and lookup(obj) is None \
                and not is_nondifferentiable(obj) and not issubclass(obj, BaseException) \
                and any(isinstance(a, gast.Name) and a.id in self.locals
                        for a in node.args + list(kwargs.values())):
            made = followed(obj)
            if made is not None and is_variadic(made):    # Sequential(*layers): as below
                return self.dynamic(node, kwargs, label, static=obj)
            if made is not None:    # Dense(W, b): its __init__, returning the object
                return self.bind_python(made, OpKind.USER, made, node, label)
        if (obj is builtins.max or obj is builtins.min) and ("key" in kwargs
                                                             or "default" in kwargs):
            self.refuse_max_by(obj.__name__, kwargs, node)
        if lookup(obj) is not None or is_nondifferentiable(obj):
            return self.primitive_op(obj, node.args, kwargs, node, label)
        if isinstance(obj, types.FunctionType) and not is_library(obj) \
                and not is_wrapper(obj):
            if is_variadic(obj):       # *args, **kwargs: flattened per call, at run time
                return self.dynamic(node, kwargs, label, static=obj)
            return self.bind_python(obj, OpKind.USER, obj, node, label)
        if dispatches(obj) or is_library_code(obj):
            # library code: run, then checked to have only moved data (runtime.opaque)
            return self.dynamic(node, kwargs, label, static=obj)
        return Op(OpKind.OPAQUE, label=label, primitive=obj, node=node,
                  operands=tuple((None, a.id) for a in node.args + list(kwargs.values())
                                 if isinstance(a, gast.Name)))

    def refuse_max_by(self, name, kwargs, node):
        """``max(parts, key=score)`` / ``min(xs, default=0.0)``: pullback's
        rule for the builtin compares the items themselves."""
        arg = "key" if "key" in kwargs else "default"
        pick = "argmax" if name == "max" else "argmin"
        items = dotted(node.args[0]) if len(node.args) == 1 else "items"
        raise UnsupportedSyntaxError(
            f"pullback cannot differentiate `{name}(..., {arg}=...)`: its rule for {name} "
            f"compares the items themselves, {'not their keys' if arg == 'key' else 'and '}"
            f"{'' if arg == 'key' else 'takes no default for an empty sequence'}.",
            self.parsed.location(node),
            f"Pick the item by its index: `i = int(np.{pick}([score(p) for p in {items}])); "
            f"best = {items}[i]`" if arg == "key" else
            f"Test for the empty case first: `{name}({items}) if len({items}) else v`.")

    def star(self, node):
        """``star_call(how, method, f, a, xs, k=v)``: a call with starred
        arguments (normalize's ``star_call``), spread when it runs; a dynamic
        call whose operands are keyed by position among ``star_call``'s own
        arguments (2: the object a method is called on)."""
        method, callee = node.args[1].value, node.args[2]
        items = node.args[3:]
        label = (dotted(callee) + (f".{method}" if method else "")) + "(*...)"
        static = None
        if method is None and self.is_static(callee):
            static = self.lookup_static(callee)
            if is_mutating_function(static):
                raise UnsupportedSyntaxError(
                    f"pullback cannot differentiate {dotted(callee)}, which changes its "
                    "argument in place.", self.parsed.location(node),
                    "Build the new array with indexing writes into an array the function "
                    "creates (`y = x.copy(); y[idx] = v`), or with np.where.")
            if is_nondifferentiable(static):
                return Op(OpKind.NONDIFF, label=label, primitive=static, node=node)
        operands = [(i + 3, a.id) for i, a in enumerate(items) if isinstance(a, gast.Name)]
        operands += [(k.arg, k.value.id) for k in node.keywords
                     if isinstance(k.value, gast.Name)]
        if method is not None and isinstance(callee, gast.Name) and callee.id in self.locals:
            operands.append((2, callee.id))
        return Op(OpKind.DYNAMIC, label=label, primitive=static, node=node,
                  bound={"callee": callee if method is None else node.func, "receiver": None},
                  operands=tuple(operands))

    def construct(self, cls, fields, node, kwargs, label):
        """``P(w, b=b)`` for a namedtuple or a dataclass whose ``__init__`` only
        stores its fields: packs the values, keyed by field name."""
        try:
            bound = inspect.signature(cls).bind(*node.args, **kwargs)
        except TypeError as err:
            raise UnsupportedSyntaxError(f"The call to {label} does not match its "
                                         f"signature: {err}.", self.parsed.location(node),
                                         "Pass the fields its definition names.") from None
        op = Op(OpKind.CONSTRUCT, label=label, primitive=cls, node=node,
                operands=tuple((f, a.id) for f, a in bound.arguments.items()
                               if isinstance(a, gast.Name) and a.id in self.locals))
        return op

    def primitive_op(self, prim, args, kwargs, node, label):
        if is_nondifferentiable(prim):
            return Op(OpKind.NONDIFF, label=label, primitive=prim, node=node)
        rule = lookup(prim)
        if rule is None:
            return Op(OpKind.OPAQUE, label=label, primitive=prim, node=node,
                      operands=tuple((None, a.id) for a in list(args) + list(kwargs.values())
                                     if isinstance(a, gast.Name)))
        try:
            bound = rule.bind(args, kwargs).arguments
        except TypeError as err:
            raise UnsupportedSyntaxError(
                f"The call to {label} does not match its differentiation rule: {err}.",
                self.parsed.location(node),
                f"Call {label} with the arguments NumPy documents "
                f"({', '.join(rule.params)}).") from None
        operands = []
        for p in rule.diff:
            v = bound.get(p)
            vs = v if isinstance(v, tuple) else (v,)
            operands.extend((p, a.id) for a in vs if isinstance(a, gast.Name))
        return Op(OpKind.RULE, label=label, rule=rule, primitive=prim, bound=bound,
                  operands=tuple(operands), node=node)

    def bind_python(self, fn, kind, obj, node, label):
        try:
            bound = inspect.signature(fn, follow_wrapped=False).bind(*node.args,
                                               **{k.arg: k.value for k in node.keywords})
        except TypeError as err:
            raise UnsupportedSyntaxError(f"The call to {label} does not match its "
                                         f"signature: {err}.", self.parsed.location(node),
                                         "Pass the arguments its definition names.") from None
        operands = tuple((p, a.id) for p, a in bound.arguments.items()
                         if isinstance(a, gast.Name))
        packed = [a.id for v in bound.arguments.values() if isinstance(v, (tuple, dict))
                  for a in (v.values() if isinstance(v, dict) else v)
                  if isinstance(a, gast.Name) and a.id in self.locals]
        if packed:
            # values gathered by *args / **kwargs: no parameter of the callee
            # names them, so they would silently get no gradient
            return Op(OpKind.OPAQUE, label=label, primitive=obj, node=node,
                      operands=tuple((None, n) for n in packed))
        return Op(kind, label=label, primitive=obj, bound=dict(bound.arguments),
                  operands=operands, node=node)

    def dynamic(self, node, kwargs, label, receiver=None, static=None):
        """A call whose callee is a value known only when it runs (a parameter,
        an alias, a partial, a bound method, ``obj.method``): the primal hands
        it to the runtime dispatcher (``pullback.driver.dispatch``), which picks its
        derivative.  Operands are keyed by call position, keyword name, -1
        for the receiver of a method call, or -2 for a local callee (an object
        of the user's class built from differentiated values carries gradient)."""
        operands = [(i, a.id) for i, a in enumerate(node.args) if isinstance(a, gast.Name)]
        operands += [(k, a.id) for k, a in kwargs.items() if isinstance(a, gast.Name)]
        if receiver is not None:
            operands.append((-1, receiver.id))
        elif isinstance(node.func, gast.Name) and node.func.id in self.locals:
            operands.append((-2, node.func.id))    # the callee: `model(x)` of an object
        return Op(OpKind.DYNAMIC, label=label, primitive=static, node=node,
                  bound={"callee": node.func, "receiver": receiver},
                  operands=tuple(operands))

    def names_op(self, kind, atoms, node):
        return Op(kind, node=node, operands=tuple(
            (i, a.id) for i, a in enumerate(atoms) if isinstance(a, gast.Name)
            and a.id in self.locals))

    def is_static(self, node):
        while isinstance(node, gast.Attribute):
            node = node.value
        return isinstance(node, gast.Name) and node.id not in self.locals

    def lookup_static(self, node):
        def undefined(name, where):
            raise NoRuleError(f"The name `{name}` is not defined.", self.parsed.location(where),
                              f"Define or import `{name}` before calling the function.")
        return static_value(node, self.parsed, undefined)



def _op_symbol(node):
    from ..backend.codegen import unparse
    return f"`{unparse(node)}`"
