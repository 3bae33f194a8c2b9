"""Expressions for normalize: each sub-expression becomes an atom (a name,
a constant, or a static dotted path), computed by a statement of its own and
named after what it holds.  Conditional expressions and ``and``/``or`` whose
operands compute something become branches, so Python's short circuit (and
which operand's gradient flows) is kept.

>>> from pullback.normalize.normalize import show
>>> print(show('''
... def f(x, c):
...     y = np.sin(x * 2.0) if c > 0 else x
...     return y
... '''))
def f(x, c):
    cond = c > 0
    if cond:
        x_2 = x * 2.0
        choice = np.sin(x_2)
    else:
        choice = x
    y = choice
    return y
"""
from __future__ import annotations

import inspect
import keyword
import re
import types

import gast

from ..ir.build import name as _name
from ..ir.grammar import is_atom, is_static
from ..ir.naming import _clean, describe

__all__ = ["Expressions"]


class Expressions:
    """Mixed into the normalizer (which provides emit, env, namer, ...)."""

    def atom(self, node):
        value = self.rhs(node)
        if is_atom(value, self.locals) and not self.object_state(value):
            return value
        name = self.local(self.fresh(describe(value)))
        self.emit(gast.Assign(targets=[_name(name, gast.Store())], value=value,
                              type_comment=None), node)
        return _name(name)

    def object_state(self, node):
        """Whether a static path reads data held by an object (``cfg.scale``,
        not ``np.pi`` or a method): it is read into a name of its own, so the
        adjoint sees the value the primal read even if an attribute store (here
        or in a callee) changes the object in between."""
        if not isinstance(node, gast.Attribute):
            return False
        path = []
        while isinstance(node, gast.Attribute):
            path.append(node.attr)
            node = node.value
        if not isinstance(node, gast.Name):
            return False
        if node.id in self.parsed.closure:
            try:
                value = self.parsed.closure[node.id].cell_contents
            except ValueError:
                return False
        elif node.id in self.parsed.globals:
            value = self.parsed.globals[node.id]
        else:
            return False
        held = False
        for attr in reversed(path):
            if isinstance(value, types.ModuleType):
                value = getattr(value, attr, None)
            else:
                held = True       # not run: a property is read where the code reads it
                value = inspect.getattr_static(value, attr, None)
        return held and not callable(value) and not isinstance(
            value, (types.ModuleType, staticmethod, classmethod))

    def stored_callee(self, func):
        """Whether the static path ``func`` goes through an attribute the
        function stores into."""
        stored = getattr(self, "stored_attributes", set())
        if not isinstance(func, gast.Attribute):
            return False
        while isinstance(func, gast.Attribute):
            if stored is None or func.attr in stored:
                return True
            func = func.value
        return False

    def fresh(self, base):
        """``self.fresh(base)``, the same name, without trying again every
        suffix given out before: ``Namer.fresh`` tries ``base``, ``base_1``,
        ``base_2``... in turn, so a base used n times costs n tries each time
        (quadratic in a long function).  The set of taken names only grows
        while normalize runs, so each base's first free suffix only moves up;
        the hints are dropped if the set is replaced."""
        taken = self.namer.taken
        hints = getattr(self, "_fresh_hints", None)
        if hints is None or hints[0] is not taken:
            hints = self._fresh_hints = (taken, {})
        base = _clean(base)
        k = hints[1].get(base, 0)
        name = base if k == 0 else f"{base}_{k}"
        while name in taken or keyword.iskeyword(name):
            k += 1
            name = f"{base}_{k}"
        taken.add(name)
        hints[1][base] = k + 1
        return name

    def version(self, name):
        """``self.namer.version(name)``: a new SSA name, ``y`` -> ``y_1``."""
        return self.fresh(re.sub(r"_\d+$", "", name) or name)

    def local(self, name):
        """Record a name this pass introduced as local (so `t.T` is not static)."""
        self.locals.add(name)
        return name

    def load(self, node):
        if node.id in self.locals:
            if node.id not in self.env:
                raise self.parsed.unsupported(
                    node, f"a read of `{node.id}` before it is assigned",
                    f"Assign `{node.id}` before using it.")
            return gast.copy_location(_name(self.env[node.id]), node)
        return node

    def rhs(self, node):
        kind = type(node).__name__
        handler = getattr(self, f"expr_{kind}", None)
        if handler is None:
            raise self.parsed.unsupported(node, _DESCRIBE.get(kind, f"a `{kind}` expression"),
                                          _HINTS.get(kind, _HINT_DEFAULT))
        return gast.copy_location(handler(node), node)

    def expr_Name(self, node):
        return self.load(node)

    def expr_Constant(self, node):
        return node

    def expr_Attribute(self, node):
        if is_static(node, self.locals):
            return node
        return gast.Attribute(value=self.atom(node.value), attr=node.attr, ctx=gast.Load())

    def expr_BinOp(self, node):
        return gast.BinOp(left=self.atom(node.left), op=node.op, right=self.atom(node.right))

    def expr_UnaryOp(self, node):
        operand = node.operand
        if isinstance(node.op, gast.USub) and isinstance(operand, gast.Constant) \
                and isinstance(operand.value, (int, float, complex)) \
                and not isinstance(operand.value, bool):
            return gast.Constant(value=-operand.value, kind=None)
        return gast.UnaryOp(op=node.op, operand=self.atom(operand))

    def expr_Compare(self, node):
        left = self.atom(node.left)
        rights = [self.atom(c) for c in node.comparators]
        if len(rights) == 1:
            return gast.Compare(left=left, ops=node.ops, comparators=rights)
        parts, lhs = [], left
        for op, rhs in zip(node.ops, rights):
            cmp = gast.copy_location(gast.Compare(left=lhs, ops=[op], comparators=[rhs]), node)
            parts.append(self.atom_of(cmp, "cond"))
            lhs = rhs
        return gast.BoolOp(op=gast.And(), values=parts)

    def expr_BoolOp(self, node):
        if all(_is_boolean(v) for v in node.values) and not any(
                isinstance(n, gast.Call) for v in node.values[1:] for n in gast.walk(v)):
            return gast.BoolOp(op=node.op, values=[self.atom(v) for v in node.values])
        # `a and b` is one of its operands (whose gradient must flow), or a
        # later operand calls something: keep Python's short circuit
        tmp = self.local(self.fresh("cond"))
        inner = None
        for v in reversed(node.values[1:]):
            body = [_assign_user(tmp, v, node)] + ([inner] if inner is not None else [])
            test = _name(tmp) if isinstance(node.op, gast.And) else \
                gast.UnaryOp(op=gast.Not(), operand=_name(tmp))
            inner = gast.copy_location(gast.If(test=test, body=body, orelse=[]), node)
        self.stmt(_assign_user(tmp, node.values[0], node))
        self.stmt_If(inner)
        return _name(self.env.pop(tmp))   # a temporary: later merges need not carry it

    def expr_Call(self, node):
        func = node.func
        if is_static(func, self.locals) and self.stored_callee(func):
            # `ops.act(x)` where the function stores into `.act`: the callee is
            # the one the attribute holds when the call runs (a dynamic call)
            callee = self.atom_of(func, func.attr)
        elif is_static(func, self.locals):
            callee = func
        elif isinstance(func, gast.Attribute):
            callee = gast.Attribute(value=self.atom(func.value), attr=func.attr,
                                    ctx=gast.Load())
        else:
            callee = self.atom(func)
        if any(isinstance(a, gast.Starred) for a in node.args) \
                or any(k.arg is None for k in node.keywords):
            return self.star_call(node, func, callee)
        args = [self.atom(a) for a in node.args]
        keywords = [gast.keyword(arg=k.arg, value=self.atom(k.value)) for k in node.keywords]
        return gast.Call(func=callee, args=args, keywords=keywords)

    def star_call(self, node, func, callee):
        """``f(a, *xs, k=v, **d)`` -> ``star_call("p*d", None, f, a, xs, d, k=v)``
        (``runtime.control.star_call``): every argument an atom, spread when
        the call runs; a method call ``obj.m(*xs)`` passes ``obj`` and ``"m"``."""
        how, items = [], []
        for a in node.args:
            if isinstance(a, gast.Starred):
                how.append("*")
                items.append(self.atom(a.value))
            else:
                how.append("p")
                items.append(self.atom(a))
        keywords = []
        for k in node.keywords:
            if k.arg is None:
                how.append("d")
                items.append(self.atom(k.value))
            else:
                keywords.append(gast.keyword(arg=k.arg, value=self.atom(k.value)))
        method = None
        if isinstance(callee, gast.Attribute) and not is_static(func, self.locals):
            method, callee = callee.attr, callee.value
        elif not is_atom(callee, self.locals):
            callee = self.atom(callee)
        helper = getattr(self, "_star_call_name", None)
        if helper is None:
            import types
            from ..runtime import control
            helper = self._star_call_name = self.fresh("star_call")
            self.parsed.closure[helper] = types.CellType(control.star_call)
        return gast.Call(func=_name(helper), args=[gast.Constant("".join(how), None),
                                                    gast.Constant(method, None), callee] + items,
                         keywords=keywords)

    def expr_Subscript(self, node):
        return gast.Subscript(value=self.atom(node.value), slice=self.index(node.slice),
                              ctx=gast.Load())

    def index(self, node):
        if isinstance(node, gast.Slice):
            return gast.Slice(*(None if p is None else self.atom(p)
                                for p in (node.lower, node.upper, node.step)))
        if isinstance(node, gast.Tuple):
            return gast.Tuple(elts=[self.index(e) for e in node.elts], ctx=gast.Load())
        return self.atom(node)

    def expr_Tuple(self, node):
        return gast.Tuple(elts=[self.atom(e) for e in self._elts(node)], ctx=gast.Load())

    def expr_List(self, node):
        return gast.List(elts=[self.atom(e) for e in self._elts(node)], ctx=gast.Load())

    def expr_Dict(self, node):
        if any(k is None for k in node.keys):
            raise self.parsed.unsupported(node, "`**` unpacking in a dict literal",
                                          "List the entries one by one.")
        return gast.Dict(keys=[self.atom(k) for k in node.keys],
                         values=[self.atom(v) for v in node.values])

    def expr_JoinedStr(self, node):
        for n in gast.walk(node):
            if isinstance(n, gast.FormattedValue):
                n.value = self.atom(n.value)
        return node

    def _elts(self, node):
        for e in node.elts:
            if isinstance(e, gast.Starred):
                raise self.parsed.unsupported(e, "a starred element",
                                              "List the elements one by one.")
        return node.elts

    def atom_of(self, value, base):
        name = self.local(self.fresh(base))
        self.emit(gast.Assign(targets=[_name(name, gast.Store())], value=value,
                              type_comment=None), value)
        return _name(name)

    def expr_IfExp(self, node):
        tmp = self.local(self.fresh("choice"))
        stmt = gast.If(test=node.test, body=[_assign_user(tmp, node.body, node)],
                       orelse=[_assign_user(tmp, node.orelse, node)])
        self.stmt_If(gast.copy_location(stmt, node))
        return _name(self.env.pop(tmp))   # a temporary: later merges need not carry it



def _assign_user(name, value, origin):
    stmt = gast.Assign(targets=[_name(name, gast.Store())], value=value, type_comment=None)
    return gast.copy_location(stmt, origin)


def _is_boolean(node):
    """Syntactically a bool: comparisons, `not`, and `and`/`or` of those."""
    if isinstance(node, gast.Compare) or (isinstance(node, gast.UnaryOp)
                                          and isinstance(node.op, gast.Not)):
        return True
    if isinstance(node, gast.Constant):
        return isinstance(node.value, bool)
    if isinstance(node, gast.BoolOp):
        return all(_is_boolean(v) for v in node.values)
    return False



_HINT_DEFAULT = "Rewrite it with assignments, arithmetic and calls."
_DESCRIBE = {
    "Try": "a `try` statement", "With": "a `with` statement", "Raise": "a `raise` statement",
    "FunctionDef": "a nested function definition", "ClassDef": "a class definition",
    "Lambda": "a `lambda` inside the function", "Global": "a `global` statement",
    "Nonlocal": "a `nonlocal` statement", "Delete": "a `del` statement",
    "Yield": "`yield`", "YieldFrom": "`yield from`", "Await": "`await`",
    "ListComp": "a list comprehension", "GeneratorExp": "a generator expression",
    "DictComp": "a dict comprehension", "SetComp": "a set comprehension",
    "NamedExpr": "an assignment expression (`:=`)", "Starred": "a starred expression",
    "Import": "an `import` inside the function", "ImportFrom": "an `import` inside the function",
"Set": "a set literal", "Match": "a `match` statement",
    "AsyncFor": "an `async for` loop", "AsyncWith": "an `async with` statement",
}
_HINTS = {
    "ListComp": "Use a NumPy operation on the whole array instead.",
    "GeneratorExp": "Use a NumPy operation on the whole array instead.",
    "Try": "Move the error handling outside the differentiated function.",
    "With": "Move the context manager outside the differentiated function.",
    "Raise": "Check inputs before calling the differentiated function.",
    "Import": "Import at module level.", "ImportFrom": "Import at module level.",
    "Global": "Pass the value in as an argument and return the new value.",
    "Delete": "Leave the name bound, or assign a new value to it.",
    "FunctionDef": "Define the helper at module level and call it.",
    "Lambda": "Define the helper at module level and call it.",
    "ClassDef": "Define the class at module level.",
}
