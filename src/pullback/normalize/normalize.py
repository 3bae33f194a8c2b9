"""Normalize: one operation per statement, every name assigned once.

The grammar it guarantees is stated and checked in ``grammar.py``: each
statement does one operation on atoms (names, constants, static dotted
paths); ``if``, ``for`` over a range and ``while`` keep their blocks.  A
re-assignment gets a new version (``y`` then ``y_1``); a variable a loop
changes gets a loop-carried name copied in before the loop and back at the
end of its body, and one a branch changes a merged name copied at the end of
each branch.  So every value the reverse pass reads was computed by exactly
one statement per execution of its block.  Temporaries are named after what
they hold; the value returned is ``out``.  Each statement keeps the line
number of the source statement it came from.

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

from ..frontend.parse import Parsed
from ..ir.build import name as _name
from ..ir.grammar import assigned_names, check, is_atom, is_static  # noqa: F401  (re-exported)
from ..errors import UnsupportedSyntaxError
from ..ir.naming import Namer
from .assignments import Assignments
from .control_flow import ControlFlow
from .expressions import Expressions, _DESCRIBE, _HINTS, _HINT_DEFAULT

__all__ = ["Normal", "normalize", "check", "is_atom", "is_static"]


@dataclasses.dataclass
class Normal:
    """A function in normal form and what normalizing it recorded."""

    tree: gast.FunctionDef
    params: list[str]       # parameter names, in order
    returned: gast.expr     # the atom the function returns
    augmented: list[tuple[gast.stmt, str, gast.AST]]   # (stmt, old name, node) of each `y op= v`
    namer: Namer
    carried: dict[int, set[str]] = dataclasses.field(default_factory=dict)  # id(loop) -> names
    renames: set[int] = dataclasses.field(default_factory=set)    # id(copy) normalize added

    @property
    def carried_names(self):
        return {n for names in self.carried.values() for n in names}


def normalize(parsed: Parsed, namer: Namer | None = None) -> Normal:
    """Bring ``parsed.tree`` to the normal form; raise on what it cannot hold."""
    namer = namer or Namer.for_tree(parsed.tree, parsed.globals.keys())
    return _Normalizer(parsed, namer).run()


class _Normalizer(Assignments, ControlFlow, Expressions):
    """Normalize one function: the statements here, assignments
    (``assignments``), control flow (``control_flow``) and expressions
    (``expressions``) in the mixins."""

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
        self.stored_attributes = _stored_attributes(fn)
        self.out = []
        self.augmented = []
        self.carried = {}
        self.renames = set()         # id of each copy normalize adds (carried, merged)
        self.maybe_unbound = set()   # names a branch or a loop may leave unassigned
        self.preinit = set()         # ... that a loop copies in: bound to None first
        self.returned = None
        self.lineno = fn.lineno

    def run(self):
        fn = self.parsed.tree
        body = fn.body
        self.errors = []
        try:
            self.statements(body)
        except Exception:
            if not self.errors:
                raise
            # a consequence of what could not be normalized: report that
        if self.errors:
            raise _all_of(self.errors)
        if self.returned is None:
            self.returned = gast.Constant(value=None, kind=None)
            self.emit(gast.Return(value=self.returned))
        for name in sorted(self.preinit):
            init = gast.Assign(targets=[_name(name, gast.Store())],
                               value=gast.Constant(value=None, kind=None), type_comment=None)
            init.lineno = fn.lineno
            self.out.insert(0, init)
        tree = gast.FunctionDef(name=fn.name, args=fn.args, body=self.out,
                                decorator_list=[], returns=None, type_comment=None,
                                type_params=[])
        gast.copy_location(tree, fn)
        return Normal(tree, self.params, self.returned, self.augmented, self.namer,
                      self.carried, self.renames)

    # -- statements ---------------------------------------------------------

    def emit(self, stmt, origin=None):
        gast.copy_location(stmt, origin) if origin is not None else None
        stmt.lineno = self.lineno
        self.out.append(stmt)
        return stmt

    def statements(self, stmts):
        for stmt in stmts:
            if self.returned is not None:
                break  # code after return never runs
            self.lineno = getattr(stmt, "lineno", None) or self.lineno
            self.stmt(stmt)

    def block(self, stmts):
        """Normalize a nested block; return its statements (self.env is left as
        at the block's end)."""
        saved, self.out = self.out, []
        lineno = self.lineno
        self.statements(stmts)
        out, self.out = self.out, saved
        self.lineno = lineno
        return out

    def stmt(self, node):
        kind = type(node).__name__
        handler = getattr(self, f"stmt_{kind}", None)
        try:
            if handler is None:
                raise self.parsed.unsupported(node, _DESCRIBE.get(kind, f"a `{kind}` statement"),
                                              _HINTS.get(kind, _HINT_DEFAULT))
            handler(node)
        except UnsupportedSyntaxError as err:
            # go on to find the function's other unsupported constructs, so that one
            # error lists them all; what the statement assigns counts as assigned
            if getattr(self, "errors", None) is None:
                raise
            if not any(e.lineno == err.lineno and e.message == err.message
                       for e in self.errors):
                self.errors.append(err)
            for name in assigned_names([node]):
                self.env.setdefault(name, name)
                self.locals.add(name)

    def runtime_helper(self, fn_name):
        """A name the code can call ``pullback.runtime.<fn_name>`` by (a closure cell)."""
        import types
        from .. import runtime
        names = self.__dict__.setdefault("_runtime_names", {})
        if fn_name not in names:
            names[fn_name] = self.namer.fresh(fn_name)
            self.parsed.closure[names[fn_name]] = types.CellType(getattr(runtime, fn_name))
        return names[fn_name]

    def stmt_Return(self, node):
        if node.value is None:
            value = gast.Constant(value=None, kind=None)
        else:
            value = self.rhs(node.value)
            if not is_atom(value, self.locals):
                name = self.local(self.fresh("out"))
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

    def stmt_Raise(self, node):
        """``raise E(...)``: the primal raises it; no adjoint runs after a raise."""
        if node.exc is None:
            raise self.parsed.unsupported(node, "a bare `raise` (outside an `except`)",
                                          "Raise an exception: `raise ValueError(...)`.")
        self.emit(gast.Raise(exc=self.atom(node.exc),
                             cause=None if node.cause is None else self.atom(node.cause)),
                  node)

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
            return self.local(self.version(name))
        self.namer.reserve(name)
        return name

    def _check_signature(self, fn):
        a = fn.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs:
            raise self.parsed.unsupported(
                fn, "a function with *args, **kwargs, keyword-only or positional-only "
                    "parameters", "Give the function plain positional parameters.")


def _stored_attributes(fn):
    """The attribute names the function stores into (``obj.act = ...``,
    ``setattr(obj, "act", ...)``); ``None`` for a ``setattr`` whose name is
    not a constant (any attribute)."""
    out = set()
    for n in gast.walk(fn):
        if isinstance(n, gast.Attribute) and isinstance(n.ctx, gast.Store):
            out.add(n.attr)
        elif isinstance(n, gast.Call) and isinstance(n.func, gast.Name) \
                and n.func.id == "setattr":
            name = n.args[1] if len(n.args) > 1 else None
            if not (isinstance(name, gast.Constant) and isinstance(name.value, str)):
                return None
            out.add(name.value)
    return out


def _all_of(errors):
    """One error for every unsupported construct of a function: the first
    one's, with the others listed after its hint."""
    first = errors[0]
    if len(errors) == 1:
        return first
    more = [f"The function has {len(errors) - 1} more construct"
            f"{'s' if len(errors) > 2 else ''} to change:"]
    for err in errors[1:]:
        where = err.location.render() if err.location is not None else ""
        more.append(f"- {err.message}\n{where}\n  {err.hint or ''}".rstrip())
    hint = (first.hint + "\n" if first.hint else "") + "\n".join(more)
    return type(first)(first.message, first.location, hint)


def show(source):
    """Normalize a function given as source text and return the printed result
    (for docstrings and tests)."""
    import textwrap
    import types
    from ..frontend.parse import Parsed
    from ..backend import codegen
    tree = gast.parse(textwrap.dedent(source)).body[0]
    parsed = Parsed(types.FunctionType(compile("0", "<show>", "eval"), {}), tree,
                    "<show>", {"np": None}, {})
    return codegen.unparse(normalize(parsed).tree)
