"""Normalize: one operation per statement, every name assigned once.

The normal form (checked by ``check``; tests run it over every example)::

    stmt   := Name = rhs                  one operation, one target
            | Name, Name, ... = atom      unpacking a value
            | return atom
            | rhs                         a call kept for its effect (print)
            | assert atom
    rhs    := atom | atom OP atom | UOP atom | atom CMP atom | atom and/or atom
            | callee(atom, ..., key=atom) | atom.attr | atom.method(atom, ...)
            | atom[index] | (atom, ...) | [atom, ...] | {atom: atom, ...} | f-string
    index  := atom | atom?:atom?:atom? | (index, ...)
    atom   := Name | Constant | static
    static := a dotted path rooted at a global or closure name (np.pi, np.exp)

Within the straight-line code handled here every local name is assigned
exactly once: a re-assignment gets a new version (``y`` then ``y_1``), so the
reverse pass may read any primal value after the primal has finished.
Temporaries are named after what they hold; the value returned is ``out``.
Each statement keeps the line number of the source statement it came from.

>>> print(show('''
... def f(x, w):
...     y = np.tanh(x @ w)
...     y = y * 2.0
...     return np.sum(y * y)
... '''))
def f(x, w):
    xw = x @ w
    y = np.tanh(xw)
    y_1 = y * 2.0
    y_1_y_1 = y_1 * y_1
    out = np.sum(y_1_y_1)
    return out
"""
from __future__ import annotations

import dataclasses

import gast

from .naming import Namer, describe

__all__ = ["Normal", "normalize", "check", "is_atom", "is_static"]


@dataclasses.dataclass
class Normal:
    """A function in normal form and what normalizing it recorded."""

    tree: gast.FunctionDef
    params: list            # parameter names, in order
    returned: gast.expr     # the atom the function returns
    augmented: list         # (stmt, old name) of each `y op= v` desugared
    namer: Namer


def normalize(parsed, namer=None):
    """Bring ``parsed.tree`` to the normal form; raise on what it cannot hold."""
    namer = namer or Namer.for_tree(parsed.tree, parsed.globals.keys())
    return _Normalizer(parsed, namer).run()


def is_static(node, local_names):
    """A dotted path rooted at a non-local name (np.exp, math.pi, helper)."""
    while isinstance(node, gast.Attribute):
        node = node.value
    return isinstance(node, gast.Name) and node.id not in local_names


def is_atom(node, local_names=()):
    return isinstance(node, (gast.Name, gast.Constant)) or (
        isinstance(node, gast.Attribute) and is_static(node, local_names))


class _Normalizer:
    def __init__(self, parsed, namer):
        self.parsed = parsed
        self.namer = namer
        fn = parsed.tree
        self.params = [a.id for a in fn.args.args]
        self._check_signature(fn)
        self.locals = set(self.params) | {
            n.id for n in gast.walk(fn) if isinstance(n, gast.Name)
            and isinstance(n.ctx, (gast.Store, gast.Del))}
        self.env = {p: p for p in self.params}
        self.out = []
        self.augmented = []
        self.returned = None
        self.lineno = fn.lineno

    def run(self):
        fn = self.parsed.tree
        body = fn.body
        for stmt in body:
            if self.returned is not None:
                break  # code after return never runs
            self.lineno = stmt.lineno
            self.stmt(stmt)
        if self.returned is None:
            self.returned = gast.Constant(value=None, kind=None)
            self.emit(gast.Return(value=self.returned))
        tree = gast.FunctionDef(name=fn.name, args=fn.args, body=self.out,
                                decorator_list=[], returns=None, type_comment=None,
                                type_params=[])
        gast.copy_location(tree, fn)
        return Normal(tree, self.params, self.returned, self.augmented, self.namer)

    # -- statements ---------------------------------------------------------

    def emit(self, stmt, origin=None):
        gast.copy_location(stmt, origin) if origin is not None else None
        stmt.lineno = self.lineno
        self.out.append(stmt)
        return stmt

    def stmt(self, node):
        kind = type(node).__name__
        handler = getattr(self, f"stmt_{kind}", None)
        if handler is None:
            raise self.parsed.unsupported(node, _DESCRIBE.get(kind, f"a `{kind}` statement"),
                                          _HINTS.get(kind, _HINT_DEFAULT))
        handler(node)

    def stmt_Assign(self, node):
        targets = node.targets
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
                raise self.parsed.unsupported(target, "starred unpacking",
                                              "Unpack into a fixed number of names.")
            parts = []
            for elt in target.elts:
                if isinstance(elt, gast.Name):
                    parts.append((elt, None))
                else:
                    parts.append((elt, self.local(self.namer.fresh("part"))))
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
            raise self.parsed.unsupported(
                target, "assignment into an array element or slice",
                "Build a new array instead (np.where, np.concatenate), or keep the "
                "update outside the differentiated function.")
        else:
            raise self.parsed.unsupported(
                target, f"assignment to {type(target).__name__.lower()}",
                "Assign to a plain local name.")

    def stmt_AugAssign(self, node):
        if not isinstance(node.target, gast.Name):
            self.assign_target(node.target, None, node)  # raises
        old = self.load(node.target)
        rhs = gast.BinOp(left=old, op=node.op, right=self.atom(node.value))
        gast.copy_location(rhs, node)
        stmt = self.bind(node.target.id, rhs, node)
        self.augmented.append((stmt, old.id, node))

    def stmt_Return(self, node):
        if node.value is None:
            value = gast.Constant(value=None, kind=None)
        else:
            value = self.rhs(node.value)
            if not is_atom(value, self.locals):
                name = self.local(self.namer.fresh("out"))
                self.emit(gast.Assign(targets=[_name(name, gast.Store())], value=value,
                                      type_comment=None), node)
                value = _name(name)
        self.returned = value
        self.emit(gast.Return(value=value), node)

    def stmt_Expr(self, node):
        if isinstance(node.value, gast.Constant):
            return  # a docstring or a bare constant
        self.emit(gast.Expr(value=self.rhs(node.value)), node)

    def stmt_Pass(self, node):
        pass

    def stmt_Assert(self, node):
        self.emit(gast.Assert(test=self.atom(node.test),
                              msg=None if node.msg is None else self.atom(node.msg)), node)

    def bind(self, name, rhs, origin):
        new = self.new_version(name)
        stmt = self.emit(gast.Assign(targets=[_name(new, gast.Store())], value=rhs,
                                     type_comment=None), origin)
        self.env[name] = new
        return stmt

    def new_version(self, name):
        if name in self.env:
            return self.local(self.namer.version(name))
        self.namer.reserve(name)
        return name

    # -- expressions --------------------------------------------------------

    def atom(self, node):
        value = self.rhs(node)
        if is_atom(value, self.locals):
            return value
        name = self.local(self.namer.fresh(describe(value)))
        self.emit(gast.Assign(targets=[_name(name, gast.Store())], value=value,
                              type_comment=None), node)
        return _name(name)

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
        return gast.BoolOp(op=node.op, values=[self.atom(v) for v in node.values])

    def expr_Call(self, node):
        func = node.func
        if is_static(func, self.locals):
            callee = func
        elif isinstance(func, gast.Attribute):
            callee = gast.Attribute(value=self.atom(func.value), attr=func.attr,
                                    ctx=gast.Load())
        else:
            callee = self.atom(func)
        args = []
        for a in node.args:
            if isinstance(a, gast.Starred):
                raise self.parsed.unsupported(a, "a starred argument `*args`",
                                              "Pass the arguments one by one.")
            args.append(self.atom(a))
        keywords = []
        for k in node.keywords:
            if k.arg is None:
                raise self.parsed.unsupported(k.value, "a `**kwargs` argument",
                                              "Pass keyword arguments by name.")
            keywords.append(gast.keyword(arg=k.arg, value=self.atom(k.value)))
        return gast.Call(func=callee, args=args, keywords=keywords)

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
        name = self.local(self.namer.fresh(base))
        self.emit(gast.Assign(targets=[_name(name, gast.Store())], value=value,
                              type_comment=None), value)
        return _name(name)

    def _check_signature(self, fn):
        a = fn.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs:
            raise self.parsed.unsupported(
                fn, "a function with *args, **kwargs, keyword-only or positional-only "
                    "parameters", "Give the function plain positional parameters.")


def _name(id_, ctx=None):
    return gast.Name(id=id_, ctx=ctx or gast.Load(), annotation=None, type_comment=None)


_HINT_DEFAULT = "Rewrite it with assignments, arithmetic and calls."
_HINT_FLOW = ("This version of pullback differentiates straight-line code; write the "
              "computation without it (np.where selects elementwise without a branch).")
_DESCRIBE = {
    "If": "an `if` statement", "For": "a `for` loop", "While": "a `while` loop",
    "IfExp": "a conditional expression (`a if c else b`)",
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
    "If": _HINT_FLOW, "For": _HINT_FLOW, "While": _HINT_FLOW, "IfExp": _HINT_FLOW,
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


# -- the grammar, checked ---------------------------------------------------

def check(normal):
    """Assert that ``normal.tree`` is in the normal form; return it."""
    fn = normal.tree
    local_names = set(normal.params) | {
        n.id for n in gast.walk(fn) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
    assigned = set(normal.params)
    atom = lambda n: is_atom(n, local_names)  # noqa: E731
    for stmt in fn.body:
        if isinstance(stmt, gast.Assign):
            assert len(stmt.targets) == 1, "one target per assignment"
            target = stmt.targets[0]
            names = [target] if isinstance(target, gast.Name) else target.elts
            if not isinstance(target, gast.Name):
                assert atom(stmt.value), "unpacking takes an atom"
            else:
                _check_rhs(stmt.value, atom)
            for n in names:
                assert isinstance(n, gast.Name), "targets are names"
                assert n.id not in assigned, f"{n.id} assigned twice"
                assigned.add(n.id)
        elif isinstance(stmt, gast.Return):
            assert atom(stmt.value), "return takes an atom"
        elif isinstance(stmt, gast.Expr):
            _check_rhs(stmt.value, atom)
        elif isinstance(stmt, gast.Assert):
            assert atom(stmt.test)
        else:
            raise AssertionError(f"unexpected statement {type(stmt).__name__}")
    return fn


def _check_rhs(node, atom):
    if atom(node):
        return
    if isinstance(node, gast.BinOp):
        assert atom(node.left) and atom(node.right), "binary operands are atoms"
    elif isinstance(node, gast.UnaryOp):
        assert atom(node.operand)
    elif isinstance(node, gast.Compare):
        assert atom(node.left) and all(map(atom, node.comparators))
    elif isinstance(node, gast.BoolOp):
        assert all(map(atom, node.values))
    elif isinstance(node, gast.Call):
        func = node.func
        assert atom(func) or (isinstance(func, gast.Attribute) and atom(func.value))
        assert all(map(atom, node.args)) and all(atom(k.value) for k in node.keywords)
    elif isinstance(node, gast.Attribute):
        assert atom(node.value)
    elif isinstance(node, gast.Subscript):
        assert atom(node.value)
        _check_index(node.slice, atom)
    elif isinstance(node, (gast.Tuple, gast.List)):
        assert all(map(atom, node.elts)), "container elements are atoms"
    elif isinstance(node, gast.Dict):
        assert all(map(atom, node.keys)) and all(map(atom, node.values))
    elif isinstance(node, gast.JoinedStr):
        pass
    else:
        raise AssertionError(f"unexpected right-hand side {type(node).__name__}")


def _check_index(node, atom):
    if isinstance(node, gast.Slice):
        assert all(p is None or atom(p) for p in (node.lower, node.upper, node.step))
    elif isinstance(node, gast.Tuple):
        for e in node.elts:
            _check_index(e, atom)
    else:
        assert atom(node)


def show(source):
    """Normalize a function given as source text and return the printed result
    (for docstrings and tests)."""
    import textwrap
    import types
    from .frontend import Parsed
    from . import codegen
    tree = gast.parse(textwrap.dedent(source)).body[0]
    parsed = Parsed(types.FunctionType(compile("0", "<show>", "eval"), {}), tree,
                    "<show>", {"np": None}, {})
    return codegen.unparse(normalize(parsed).tree)
