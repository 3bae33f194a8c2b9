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

import copy
import dataclasses

import gast

from ..frontend.parse import Parsed
from ..ir.build import name as _name
from ..ir.grammar import assigned_names, check, is_atom, is_static  # noqa: F401  (re-exported)
from ..errors import UnsupportedSyntaxError
from ..ir.naming import Namer, describe
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


class _Normalizer(Expressions):
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

    def runtime_helper(self, fn_name):
        """A name the code can call ``pullback.runtime.<fn_name>`` by (a closure cell)."""
        import types
        from .. import runtime
        names = self.__dict__.setdefault("_runtime_names", {})
        if fn_name not in names:
            names[fn_name] = self.namer.fresh(fn_name)
            self.parsed.closure[names[fn_name]] = types.CellType(getattr(runtime, fn_name))
        return names[fn_name]

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

    # -- control flow -------------------------------------------------------

    def stmt_If(self, node):
        test = self.atom(node.test)
        if len(node.body) == 1 and isinstance(node.body[0], gast.Break) and not node.orelse:
            self.emit(gast.If(test=test, body=[gast.Break()], orelse=[]), node)
            return
        before = dict(self.env)
        body = self.block(node.body)
        after_body, self.env = self.env, dict(before)
        orelse = self.block(node.orelse)
        after_else = self.env
        merged = dict(before)
        for v in sorted(set(after_body) | set(after_else)):
            a, b = after_body.get(v), after_else.get(v)
            if a == b:
                merged[v] = a
                continue
            new = self.local(self.version(v))
            for branch, src in ((body, a), (orelse, b)):
                if src is not None:
                    if src in self.maybe_unbound:
                        self.preinit.add(src)
                    branch.append(self.copy(new, src))
            if a is None or b is None or a in self.maybe_unbound or b in self.maybe_unbound:
                self.maybe_unbound.add(new)
            merged[v] = new
        self.env = merged
        self.emit(gast.If(test=test, body=body or [gast.Pass()], orelse=orelse), node)

    def stmt_For(self, node):
        if not isinstance(node.target, gast.Name):
            raise self.parsed.unsupported(node.target, "a `for` loop with this target",
                                          "Loop over one name and unpack inside the body.")
        iterable = self.atom(node.iter)
        target = node.target.id
        prev = self.env.get(target)
        carried = self.enter_loop(node.body, exclude={target})
        if prev is not None:
            # after the loop the name holds its last value in the loop, or,
            # if the loop ran no times, the one it had before: a carried name
            if prev in self.maybe_unbound:
                self.preinit.add(prev)
            carried[target] = self.local(self.version(target))
            self.emit(self.copy(carried[target], prev))
        before = set(self.env)
        head = self.env[target] = self.local(self.new_version(target))
        body = self.block(node.body)
        self.leave_loop(body, carried, before)
        loop = gast.For(target=_name(head, gast.Store()), iter=iterable,
                        body=body, orelse=[], type_comment=None)
        if prev is None:
            # the last iteration's value, unbound if the loop ran no times
            self.maybe_unbound.add(self.env[target])
        self.emit(loop, node)
        self.carried[id(loop)] = set(carried.values())
        self.statements(node.orelse)

    def stmt_While(self, node):
        cond = self.local(self.fresh("loop_cond"))
        self.emit(self.copy_value(cond, self.atom(node.test)), node)
        self.env[cond] = cond
        carried = self.enter_loop(node.body, extra=[cond])
        before = set(self.env)
        body = self.block(node.body)
        saved, self.out = self.out, []
        test = self.atom(node.test)             # the condition, recomputed
        if not isinstance(test, gast.Name):
            tmp = self.local(self.fresh("loop_cond"))
            self.out.append(self.copy_value(tmp, test))
            test = _name(tmp)
        recompute, self.out = self.out, saved
        self.env[cond] = test.id
        _insert_before_break(body, recompute)
        self.leave_loop(body, carried, before)
        del self.env[cond]
        loop = self.emit(gast.While(test=_name(cond), body=body, orelse=[]), node)
        self.carried[id(loop)] = set(carried.values())
        self.statements(node.orelse)

    def enter_loop(self, body, exclude=(), extra=()):
        """Give every variable the loop body assigns, and that exists already,
        a fresh name copied in just before the loop (its loop-carried name)."""
        carried = {}
        for v in sorted(assigned_names(body) - set(exclude)):
            if v in self.env:
                if self.env[v] in self.maybe_unbound:
                    self.preinit.add(self.env[v])
                carried[v] = self.local(self.version(v))
                self.emit(self.copy(carried[v], self.env[v]))
                self.env[v] = carried[v]
        for v in extra:
            carried[v] = self.env[v]
        return carried

    def leave_loop(self, body, carried, before=None):
        """Copy each carried variable's last value back to its carried name at
        the end of the body (before a final `if flag: break`).  A variable the
        body defines first is unbound after a loop that ran no iteration."""
        for v, current in self.env.items():
            if before is not None and v not in before:
                self.maybe_unbound.add(current)
        copies = [self.copy(name, self.env[v]) for v, name in carried.items()
                  if self.env.get(v) not in (None, name)]
        _insert_before_break(body, copies)
        for v, name in carried.items():
            self.env[v] = name

    def copy(self, target, source):
        return self.copy_value(target, _name(source))

    def copy_value(self, target, value):
        stmt = gast.Assign(targets=[_name(target, gast.Store())], value=value, type_comment=None)
        stmt.lineno = self.lineno
        if isinstance(value, gast.Name):
            self.renames.add(id(stmt))
        return stmt

    def stmt_Break(self, node):
        raise self.parsed.unsupported(node, "a `break` here", "Use a flag.")

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


def _insert_before_break(body, stmts):
    """Append ``stmts`` to a loop body, before its final ``if flag: break``."""
    last = body[-1] if body else None
    if isinstance(last, gast.If) and last.body and isinstance(last.body[0], gast.Break):
        body[-1:-1] = stmts
    else:
        body.extend(stmts)


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
