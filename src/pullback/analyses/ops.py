"""Ops: what each normal-form statement computes, resolved once.

Each right-hand side is matched to what will differentiate it: a registered
rule (with the call's arguments bound to the rule's parameters), a
non-differentiable primitive, a user function (its own primal/adjoint pair),
a ``custom_vjp`` function, or one of the structural operations (copy, pack a
tuple, unpack one).  Callees are looked up in the function's closure, its
globals and the builtins, as Python would at the time of the transform.

>>> from pullback.testing import function_from_source, analyses
>>> f = function_from_source('''
... def f(x, y):
...     e = np.exp(x)
...     s = x.shape
...     t = (e, y)
...     return t
... ''')
>>> normal, ops, *_ = analyses(f)
>>> [(ops[id(s)].kind, ops[id(s)].label) for s in normal.tree.body[:3]]
[('rule', 'np.exp'), ('nondiff', '.shape'), ('pack', '')]
"""
from __future__ import annotations

import builtins
import dataclasses
import enum
import functools
import inspect
import operator
import types
from typing import TYPE_CHECKING

import gast
import numpy as np

from .. import rules as _rules  # noqa: F401  (registers every rule)
from .. import runtime
from ..errors import NoRuleError, NonDifferentiableError, PullbackError, UnsupportedSyntaxError
from ..ir.walk import all_statements
from ..rules.registry import WRITES_INTO, Rule, is_nondifferentiable, lookup
from ..runtime.opaque import is_library_code

if TYPE_CHECKING:     # (not loaded by `import pullback`)
    from ..frontend.parse import Parsed
    from ..normalize.normalize import Normal

__all__ = ["Op", "OpKind", "resolve", "all_statements", "settle_attributes"]

_BINOPS = {
    gast.Add: operator.add, gast.Sub: operator.sub, gast.Mult: operator.mul,
    gast.Div: operator.truediv, gast.FloorDiv: operator.floordiv, gast.Mod: operator.mod,
    gast.Pow: operator.pow, gast.MatMult: operator.matmul,
}
_UNARY = {gast.USub: operator.neg, gast.UAdd: operator.pos}
_WRITE_SYMBOL = {"set": "=", "add": "+=", "sub": "-=", "add_at": "(np.add.at)"}


class OpKind(str, enum.Enum):
    """What differentiates a statement.  A ``str`` whose value is the kind's
    name, so that ``op.kind == "rule"`` still holds."""
    RULE = "rule"            # a registered rule
    NONDIFF = "nondiff"      # a primitive without a derivative (``x.shape``)
    USER = "user"            # a user function: its own primal/adjoint pair
    CUSTOM = "custom"        # a ``custom_vjp`` function or a lowered kernel
    DYNAMIC = "dynamic"      # a callee known only at run time
    COPY = "copy"            # ``y = x``
    PACK = "pack"            # ``t = (a, b)``, ``d = {"k": a}``
    CONSTRUCT = "construct"  # ``P(w, b=b)`` of a namedtuple or a plain dataclass
    UNPACK = "unpack"        # ``a, b = t``
    FIELD = "field"          # ``p.w`` of a structure
    OPAQUE = "opaque"        # nothing known: refused if a gradient reaches it
    SETITEM = "setitem"      # ``y[i] = v``, ``y[i] += v``, ``np.add.at``
    APPEND = "append"        # ``xs.append(v)``
    MAPPED = "mapped"        # an ``np.vectorize`` call fused into a kernel

    __str__, __repr__ = str.__str__, str.__repr__     # prints as its string, as before


@dataclasses.dataclass
class Op:
    kind: OpKind
    label: str = ""
    rule: Rule | None = None
    primitive: object = None
    bound: dict[str, object] = dataclasses.field(default_factory=dict)   # param -> atom
    operands: tuple[tuple[object, str], ...] = ()   # (param, name) pairs that carry a gradient
    node: gast.AST | None = None    # the right-hand side, for error messages
    mutates: str | None = None      # the local list an `append` adds to
    effect: bool = False            # a store that carries no gradient (analyses/item_stores)

    def __post_init__(self):
        self.kind = OpKind(self.kind)    # (a string names the same kind)

    def names(self):
        """Names a gradient could flow to, including those a rule takes as
        static (so that a varied ``axis`` or ``base`` is caught, not dropped)."""
        names = {n for _, n in self.operands}
        callee = self.bound.get("callee") if self.kind is OpKind.DYNAMIC else None
        if isinstance(callee, gast.Name):
            names.add(callee.id)      # a function value derived from the inputs
        if self.rule is not None:
            for p in self.bound:
                names.update(self.static_names(p))
        return names

    def static_names(self, param):
        """The names bound to ``param`` (one, or a rule's ``*args``).  Names
        inside an index (``x[i, j]``) are not among them: an array's index
        carries no gradient (a float index is an error)."""
        v = self.bound[param]
        return [a.id for a in (v if isinstance(v, tuple) else (v,))
                if isinstance(a, gast.Name)]


def resolve(normal: Normal, parsed: Parsed) -> dict[int, Op]:
    """Map ``id(stmt)`` to its ``Op`` for every statement of ``normal.tree``."""
    locals_ = set(normal.params) | {
        n.id for n in gast.walk(normal.tree)
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
    r = _Resolver(parsed, locals_)
    r.objects = _user_objects(normal, r)
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


class _UNKNOWN_KIND:
    is_number = False


def settle_attributes(tree, ops, kinds):
    """``s.T``, ``s.size``, ``s.real`` whose receiver the kinds do not prove
    a number (an array or a scalar): a FIELD op marked ``bound["array"]``,
    decided when it runs (``runtime.attribute_cotangent``,
    ``attribute_tangent``): an array's rule, or the field of a namedtuple,
    dataclass or object that happens to bear an ndarray attribute's name.
    A method call ``m.sum()`` on such a receiver becomes a DYNAMIC op: the
    runtime dispatcher calls the object's own method, or the array's rule.
    Returns whether an op changed (the kinds are then inferred again).

    Before: ``t = s.T`` -> rule ``ndarray.T`` whatever ``s`` is; after, where
    ``s = make(x)`` is of unknown kind: ``Op(FIELD, operands=(("T", "s"),),
    bound={"array": "ndarray.T"})``."""
    changed = False
    for stmt in all_statements(tree.body):
        op = ops.get(id(stmt))
        node = op.node if op is not None else None
        if op is not None and op.kind in (OpKind.RULE, OpKind.NONDIFF) \
                and isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) \
                and isinstance(node.func.value, gast.Name) \
                and op.primitive == f"ndarray.{node.func.attr}" \
                and not (kinds.get(node.func.value.id) or _UNKNOWN_KIND).is_number:
            # `m.sum()` of an object not proven an array: its own method, or the
            # array's, as the runtime dispatcher finds when the call runs
            receiver = node.func.value
            operands = [(i, a.id) for i, a in enumerate(node.args) if isinstance(a, gast.Name)]
            operands += [(k.arg, k.value.id) for k in node.keywords
                         if isinstance(k.value, gast.Name)]
            ops[id(stmt)] = Op(OpKind.DYNAMIC, label=op.label, node=node,
                               bound={"callee": node.func, "receiver": receiver},
                               operands=tuple(operands + [(-1, receiver.id)]))
            changed = True
            continue
        if op is None or op.kind not in (OpKind.RULE, OpKind.NONDIFF) \
                or not isinstance(node, gast.Attribute) or not isinstance(node.value, gast.Name) \
                or op.primitive != f"ndarray.{node.attr}":
            continue
        kind = kinds.get(node.value.id)
        if kind is not None and kind.is_number:
            continue
        ops[id(stmt)] = Op(OpKind.FIELD, label=op.label, node=node,
                           operands=((node.attr, node.value.id),),
                           bound={"array": op.primitive})
        changed = True
    return changed


class _Resolver:
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
                items = _r_ranges(self, node, items)      # `np.r_[x, 1:4]`: 1:4 is a range
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

    def call(self, node):
        kwargs = {k.arg: k.value for k in node.keywords}
        func = node.func
        if "out" in kwargs:
            raise UnsupportedSyntaxError(
                f"pullback cannot differentiate `out=`, which writes the result of "
                f"{dotted(func)} into an existing array.", self.parsed.location(node),
                "Assign the result to a name instead: `y = np.sin(x)`, not "
                "`np.sin(x, out=y)`.")
        if isinstance(func, gast.Attribute) and not self.is_static(func):
            own = isinstance(func.value, gast.Name) and isinstance(inspect.getattr_static(
                self.objects.get(func.value.id), func.attr, None), types.FunctionType)
            if func.attr in _MUTATING_METHODS and not own:
                obj = dotted(func.value)
                raise UnsupportedSyntaxError(
                    f"pullback cannot differentiate `.{func.attr}()`, which changes `{obj}` "
                    f"in place (an array's `.{func.attr}()`; a method `{func.attr}` of your "
                    f"own class, where the class of `{obj}` is not known when the function "
                    "is transformed, would change the object, which pullback does not "
                    "follow either).", self.parsed.location(node),
                    f"Compute a new value instead of changing `{obj}` (for an array's "
                    f"`.fill(v)`: `y = np.full_like(y, v)`; for a method of your own "
                    f"class: make it return a new object and bind it, `{obj} = "
                    f"{obj}.with_{func.attr}(...)`).")
            key = f"ndarray.{func.attr}"
            if lookup(key) is not None or is_nondifferentiable(key) \
                    or not isinstance(func.value, gast.Name):
                return self.primitive_op(key, [func.value] + node.args, kwargs, node,
                                         f".{func.attr}()")
            # a method of an object known only when the call runs
            return self.dynamic(node, kwargs, f".{func.attr}()", receiver=func.value)
        label = dotted(func)
        if isinstance(func, gast.Name) and func.id not in self.locals \
                and _is_star_call(self.lookup_static(func)):
            return self.star(node)
        if isinstance(func, gast.Name) and func.id in self.locals:
            return self.dynamic(node, kwargs, label)      # a function value
        obj = self.lookup_static(func)
        if is_mutating_function(obj):
            raise UnsupportedSyntaxError(
                f"pullback cannot differentiate {label}, which changes its argument in place.",
                self.parsed.location(node),
                "Build the new array with indexing writes into an array the function "
                "creates (`y = x.copy(); y[idx] = v`), or with np.where.")
        from ..callees import CustomVJP
        if isinstance(obj, CustomVJP):
            return self.bind_python(obj.fun, OpKind.CUSTOM, obj, node, label)
        fields = _structure_fields(obj)
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
            if made is not None:    # Dense(W, b): its __init__, returning the object
                return self.bind_python(made, OpKind.USER, made, node, label)
        if (obj is builtins.max or obj is builtins.min) and ("key" in kwargs
                                                             or "default" in kwargs):
            self.refuse_max_by(obj.__name__, kwargs, node)
        if lookup(obj) is not None or is_nondifferentiable(obj):
            return self.primitive_op(obj, node.args, kwargs, node, label)
        if isinstance(obj, types.FunctionType) and not is_library(obj) \
                and not _is_wrapper(obj):
            if is_variadic(obj):       # *args, **kwargs: flattened per call, at run time
                return self.dynamic(node, kwargs, label, static=obj)
            return self.bind_python(obj, OpKind.USER, obj, node, label)
        if _dispatches(obj) or is_library_code(obj):
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



def static_value(node, parsed, undefined=None):
    """The object a (dotted) name of the user's function refers to now: a
    closure cell, a global or a builtin, then its attributes; for a name that
    is none of these, ``undefined(name, node)`` (default: None)."""
    path = []
    while isinstance(node, gast.Attribute):
        path.append(node.attr)
        node = node.value
    if not isinstance(node, gast.Name):
        return None
    name = node.id
    if name in parsed.closure:
        try:
            obj = parsed.closure[name].cell_contents
        except ValueError:
            return None
    elif name in parsed.globals:
        obj = parsed.globals[name]
    elif hasattr(builtins, name):
        obj = getattr(builtins, name)
    else:
        return undefined(name, node) if undefined else None
    for attr in reversed(path):
        obj = getattr(obj, attr, None)
    return obj

# Methods that change their array (or list) in place, and NumPy functions that
# write into an argument: pullback cannot follow them, so they are refused
# rather than differentiated as if nothing had changed.
_MUTATING_METHODS = {"sort", "fill", "put", "resize", "partition", "itemset", "setfield",
                     "setflags", "byteswap", "reverse", "extend", "insert", "pop",
                     "remove", "clear", "update", "setdefault", "popitem"}


def _structure_fields(obj):
    """The field names of a namedtuple class, or of a dataclass whose
    ``__init__`` dataclasses wrote (no ``__post_init__``, no ``InitVar``),
    else None: constructing one only stores its arguments."""
    import dataclasses
    if isinstance(obj, type) and issubclass(obj, tuple) and hasattr(obj, "_fields"):
        new = obj.__new__
        if not (isinstance(new, types.FunctionType) and new.__code__.co_filename == "<string>"
                and str(new.__globals__.get("__name__", "")).startswith("namedtuple_")):
            return None      # a __new__ of the user's own
        return tuple(obj._fields)
    if isinstance(obj, type) and dataclasses.is_dataclass(obj):
        params = getattr(obj, "__dataclass_params__", None)
        if params is None or not params.init or hasattr(obj, "__post_init__"):
            return None
        code = getattr(obj.__init__, "__code__", None)
        if code is None or code.co_filename != "<string>":
            return None      # an __init__ of the user's own
        fields = dataclasses.fields(obj)
        if any(f.init is False for f in fields):
            return None
        return tuple(f.name for f in fields)
    return None


def is_variadic(fn):
    """A function with ``*args``, ``**kwargs`` or keyword-only parameters
    (differentiated once per layout of its calls, through the dispatcher)."""
    try:
        sig = inspect.signature(fn, follow_wrapped=False)
    except (TypeError, ValueError):
        return False
    return any(p.kind not in (p.POSITIONAL_OR_KEYWORD, p.POSITIONAL_ONLY)
               for p in sig.parameters.values())


def _is_star_call(obj):
    return obj is runtime.control.star_call


def is_mutating_function(obj):
    try:
        return obj in WRITES_INTO            # declared beside the rules: facts(...)
    except TypeError:
        return False


def _is_wrapper(fn):
    """pullback's own functions (``pb.grad(f)`` and the like): not user code."""
    return (getattr(fn, "__module__", "") or "").split(".")[0] == "pullback"


def _dispatches(obj):
    """Callables the runtime dispatcher unwraps: bound methods, partials,
    instances with ``__call__``, and pullback's own transforms (which it
    refuses with a clear error until higher order is supported)."""
    if isinstance(obj, (types.MethodType, functools.partial)):
        return True
    if isinstance(obj, types.FunctionType):
        return _is_wrapper(obj)
    if isinstance(obj, (type, types.BuiltinFunctionType, np.ufunc, types.ModuleType)):
        return False
    return callable(obj) and isinstance(getattr(type(obj), "__call__", None),
                                        types.FunctionType)


def is_library(fn):
    module = getattr(fn, "__module__", "") or ""
    return module.split(".")[0] in ("numpy", "math", "builtins", "scipy", "jax") \
        or is_library_code(fn)


def dotted(node, sep=".", default="a call"):
    """``np.linalg.norm`` for that attribute chain (joined by ``sep``)."""
    parts = []
    while isinstance(node, gast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, gast.Name):
        parts.append(node.id)
    return sep.join(reversed(parts)) or default


def _op_symbol(node):
    from ..backend.codegen import unparse
    return f"`{unparse(node)}`"


def called_class(cls):
    """The fields function standing for a call of the user's class ``cls``
    known only when the call runs (``cls(...)`` in a classmethod,
    ``Model(**params)``, spread by ``star_call``); None for anything that is
    not a class of the user's; refused, naming the class and why, where its
    objects cannot be followed."""
    if not isinstance(cls, type) or issubclass(cls, BaseException):
        return None
    if is_library(cls) or lookup(cls) is not None or is_nondifferentiable(cls) \
            or _structure_fields(cls) is not None:
        return None
    from ..frontend.instances import followed, why_not_followed
    fn = followed(cls)
    if fn is None:
        raise NonDifferentiableError(
            f"pullback cannot yet send gradients through an object of your class "
            f"{cls.__name__} built here from values being differentiated: "
            f"{why_not_followed(cls)}.",
            hint=f"Store each value with `self.attr = value` at the top level of "
                 f"{cls.__name__}.__init__, or create the object outside and pass it in as "
                 f"an argument, or pass those values to its methods as arguments.")
    return fn


def _install():
    from .. import callees
    callees.class_calls = called_class     # (callees cannot import this module: a cycle)


_install()


def _r_ranges(resolver, node, items):
    """The items of ``np.r_[...]`` with each slice of integer bounds (``1:n``,
    ``::-1`` refused: no stop) written as the ``range`` NumPy makes of it, so
    that the rule sees its length; string directives, complex steps
    (``np.linspace``) and float bounds are refused, naming what to write."""
    where = resolver.parsed.location(node)
    out = []
    for e in items:
        if isinstance(e, gast.Constant) and isinstance(e.value, str):
            raise UnsupportedSyntaxError(
                f"pullback cannot differentiate np.r_ with the string directive {e.value!r}.",
                where, "Join the arrays with np.concatenate (axis=...), np.stack or "
                "np.column_stack instead.")
        if not isinstance(e, gast.Slice):
            out.append(e)
            continue
        parts = [e.lower, e.upper, e.step]
        for p in parts:
            if isinstance(p, gast.Constant) and isinstance(p.value, complex):
                raise UnsupportedSyntaxError(
                    "pullback cannot differentiate np.r_ with a complex step (`a:b:kj`, k "
                    "points as np.linspace).", where,
                    "Write np.linspace(a, b, k) for that item.")
            if p is not None and not isinstance(p, gast.Name) and not (
                    isinstance(p, gast.Constant) and type(p.value) is int):
                raise UnsupportedSyntaxError(
                    "pullback follows slices in np.r_[...] whose start, stop and step are "
                    "integers or names.", where, "Write np.arange(start, stop, step) for "
                    "that item.")
        if e.upper is None or static_value(gast.Name(id="range", ctx=gast.Load(),
                                                     annotation=None, type_comment=None),
                                           resolver.parsed) is not range:
            raise UnsupportedSyntaxError(
                "pullback follows slices in np.r_[...] with a stop (`1:n`).", where,
                "Write np.arange(start, stop, step) for that item.")
        call = gast.Call(func=gast.Name(id="range", ctx=gast.Load(), annotation=None,
                                        type_comment=None),
                         args=[e.lower or gast.Constant(0, None), e.upper,
                               e.step or gast.Constant(1, None)], keywords=[])
        call.r_range = True       # (np.r_ makes the same integers of it: NumPy's semantics)
        out.append(gast.copy_location(call, e))
    if isinstance(node.slice, gast.Tuple):
        node.slice.elts = out
    else:
        node.slice = out[0]
    return out
