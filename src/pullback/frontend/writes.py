"""Writes into arguments: the function works on its own copy, and a call of
a function that writes into its argument hands the new value back.

NumPy semantics: ``x[0] = v`` or ``x -= v`` on a parameter changes the
caller's array.  pullback differentiates a function as a function of the
values its arguments have on entry, and never changes the caller's arrays
itself (a transform may run the function several times: ``jacfwd`` once per
input element), so a parameter written into is copied on entry
(``x = copy_argument(x)``).  Inside a differentiated function, a call of a user
function that writes into its argument (``step(state)``, an ODE solver
updating its state in place) changes the caller's array: the call goes to the
callee's *variant*, which returns the result and the argument's new value,
and the new value is assigned back, as an in-place update
(``updates.check_updates`` proves that no other name holds the array)::

>>> from pullback.testing import function_from_source
>>> from pullback.backend.codegen import unparse
>>> from pullback.analyses.kinds import ARRAY
>>> step = function_from_source('''
... def step(s, dt):
...     s[0] += dt * s[1]
... ''')
>>> f = function_from_source('''
... def f(x):
...     for i in range(3):
...         step(x, 0.1)
...     return x[0]
... ''', {"step": step})
>>> print(unparse(rewritten(f, {"x": ARRAY})).strip())
def f(x):
    x = copy_argument(x)
    for i in range(3):
        step_result, x_new = step_writes(x, 0.1)
        x = x_new
    return x[0]
"""
from __future__ import annotations

import copy
import inspect
import types

import gast
import numpy as np

from ..analyses import kinds as kinds_
from ..errors import UnsupportedSyntaxError
from ..ir.build import closure_name as _helper, name as _name
from ..rules.registry import nondifferentiable
from ..runtime.arguments import instance_attribute
from .held_writes import guard_held_writes
from .list_items import split_lists
from .properties import follow_properties
from .view_writes import write_views
from .call_guards import no_attribute_store as _no_attribute_store, no_writer as _no_writer
from .written import (ITEM as _ITEM, MIXED as _MIXED, _apart, _front,
                      _known_method, attribute_stores,
                      _number_argument, _result_apart, bound_arguments as _bound, scan as _scan,
                      static_callee as _static_callee, variant, walk as _walk, written_params)

__all__ = ["follow_writes", "written_params", "variant", "rewritten"]

nondifferentiable(instance_attribute)


# -- the pass ---------------------------------------------------------------------------

def follow_writes(tree, namer, parsed, param_kinds, marker=None):
    """Rewrite ``tree`` (after ``structure``): calls of functions that write
    into their arguments go to their variants; the function's own parameters
    written into are copied on entry; a variant's returns add the new values.
    Lists written into by item are first given one name per item
    (``list_items``), so that those writes are followed as names are, and
    property reads of objects of a known class become calls of their getters
    (``properties``), and writes through a view in a loop or a branch are
    spelled out (``view_writes``); writes into arrays that objects and
    containers hold are checked before they run (``held_writes``)."""
    attribute_reads(tree, namer, parsed)
    split_lists(tree, namer, parsed)
    follow_properties(tree, namer, parsed)
    write_views(tree, namer, parsed)
    guard_held_writes(tree, namer, parsed)
    locals_ = {a.id for a in tree.args.args} | {
        n.id for n in gast.walk(tree) if isinstance(n, gast.Name)
        and isinstance(n.ctx, gast.Store)}
    own = _scan(tree, parsed)         # before the calls go to variants
    calls = _Calls(namer, parsed, locals_, tree)
    calls.param_kinds = param_kinds
    calls.rewrite(tree)
    if marker is not None:
        _variant_returns(tree, namer, parsed, marker[1], param_kinds, own)
    _copy_on_entry(tree, namer, parsed, param_kinds, own)


def attribute_reads(tree, namer, parsed):
    """Reads of an attribute by its constant name, written as one:
    ``getattr(obj, "w")`` (the builtin, no default) is ``obj.w``, and
    ``vars(obj)["w"]`` and ``obj.__dict__["w"]`` are ``obj.w`` after a check,
    where the statement runs, that the two are one (``instance_attribute``:
    ``w`` is in the object's ``__dict__``, its class has no data descriptor
    ``w`` and no ``__getattribute__`` of its own); so an object that carries
    a gradient is differentiated through them (they were refused as calls
    with no rule)::

        s = getattr(p, "w") + vars(p)["b"]  ->  instance_attribute(p, 'b')
                                                s = p.w + p.b
    """
    import builtins
    import keyword
    local = {n.id for n in gast.walk(tree) if isinstance(n, gast.Name)
             and isinstance(n.ctx, (gast.Store, gast.Del))} | {
        a.id for a in gast.walk(tree.args) if isinstance(a, gast.Name)}

    def builtin(name):
        return name not in local and name not in parsed.closure and parsed.globals.get(
            name, getattr(builtins, name)) is getattr(builtins, name)
    plain = {n for n in ("getattr", "vars") if builtin(n)}
    if not plain and not any(isinstance(n, gast.Attribute) and n.attr == "__dict__"
                             for n in gast.walk(tree)):
        return

    def name_of(node):
        if isinstance(node, gast.Constant) and isinstance(node.value, str) \
                and node.value.isidentifier() and not keyword.iskeyword(node.value) \
                and not node.value.startswith("__"):
            return node.value
        return None

    def instance_dict(node):        # `vars(obj)`, `obj.__dict__`: obj
        if isinstance(node, gast.Call) and isinstance(node.func, gast.Name) \
                and node.func.id == "vars" and "vars" in plain and len(node.args) == 1 \
                and not node.keywords and not isinstance(node.args[0], gast.Starred):
            return node.args[0]
        if isinstance(node, gast.Attribute) and node.attr == "__dict__" \
                and isinstance(node.ctx, gast.Load):
            return node.value
        return None

    checks = []

    class Reads(gast.NodeTransformer):
        def visit_Call(self, node):
            self.generic_visit(node)
            if isinstance(node.func, gast.Name) and node.func.id == "getattr" \
                    and "getattr" in plain and len(node.args) == 2 and not node.keywords \
                    and not isinstance(node.args[0], gast.Starred) and name_of(node.args[1]):
                return gast.copy_location(gast.Attribute(
                    value=node.args[0], attr=node.args[1].value, ctx=gast.Load()), node)
            return node

        def visit_Subscript(self, node):
            self.generic_visit(node)
            obj = instance_dict(node.value)
            attr = name_of(node.slice)
            if obj is None or attr is None or not isinstance(node.ctx, gast.Load) \
                    or not isinstance(obj, gast.Name):
                return node
            checks.append((obj.id, attr))
            return gast.copy_location(gast.Attribute(value=gast.Name(
                id=obj.id, ctx=gast.Load(), annotation=None, type_comment=None), attr=attr,
                ctx=gast.Load()), node)

        def visit_FunctionDef(self, node):
            return node                 # (lifted already; their own transform)

        visit_Lambda = visit_ClassDef = visit_FunctionDef

    def block(stmts):
        out = []
        for st in stmts:
            if isinstance(st, (gast.FunctionDef, gast.ClassDef)):
                out.append(st)
                continue
            for field in ("body", "orelse", "finalbody"):
                if getattr(st, field, None):
                    setattr(st, field, block(getattr(st, field)))
            if isinstance(st, gast.Try):
                for h in st.handlers:
                    h.body = block(h.body)
            heads = [st] if not isinstance(st, (gast.If, gast.For, gast.While, gast.Try,
                                                gast.With)) else \
                [st.test] if isinstance(st, gast.If) else \
                [st.iter] if isinstance(st, gast.For) else []
            for head in heads:
                checks.clear()
                new = Reads().visit(head)
                if head is not st and new is not head:
                    setattr(st, "test" if isinstance(st, gast.If) else "iter", new)
                if checks:
                    helper = _helper(namer, parsed, "instance_attribute", instance_attribute)
                    for obj, attr in checks:
                        out.append(_located(gast.Expr(value=gast.Call(
                            func=_name(helper), args=[_name(obj), gast.Constant(attr, None)],
                            keywords=[])), st))
            out.append(st)
        return out
    tree.body = block(tree.body)


def _copy_on_entry(tree, namer, parsed, param_kinds, own):
    # an array, or (written into by index) a value that can only be one
    # (a dict is of no known shape: the caller's own, changed as Python changes
    # it where the stores carry no gradient, analyses/item_stores.py)
    maybe = (kinds_.Shape.ARRAY, kinds_.Shape.NUMBER, None)
    arrays = [p for p, how in own.items()
              if getattr(param_kinds.get(p), "shape", None) is kinds_.Shape.ARRAY
              or (how == _ITEM and getattr(param_kinds.get(p), "shape", None) in maybe)]
    if not arrays:
        return
    pre = []
    copier = _helper(namer, parsed, "copy_argument", np.copy)
    for p in arrays:
        pre.append(_assign(_name(p, True), gast.Call(func=_name(copier), args=[_name(p)],
                                                    keywords=[]), tree.body[0]))
    others = [p for p in param_kinds if p in {a.id for a in tree.args.args}
              and getattr(param_kinds[p], "shape", None) is kinds_.Shape.ARRAY]
    if len(others) > 1:
        apart = _helper(namer, parsed, "arguments_apart", _apart)
        pairs = [a for p in others for a in (gast.Constant(p, None), _name(p))]
        check = gast.Expr(value=gast.Call(func=_name(apart), args=pairs, keywords=[]))
        pre.insert(0, _located(check, tree.body[0]))
    tree.body[:0] = pre


def _variant_returns(tree, namer, parsed, written, param_kinds, own):
    """The variant's returns: ``return (v, p1, p2)``; a parameter that holds a
    number (updated by rebinding) comes back as it came in."""
    entry = {}
    for p in written:
        shape = getattr(param_kinds.get(p), "shape", None)
        if shape is kinds_.Shape.ARRAY:
            continue
        if own.get(p) == _ITEM:
            continue            # a list written into: the mutation check refuses it
        entry[p] = namer.fresh(f"{p}_entry")
    pre = [_assign(_name(e, True), _name(p), tree.body[0]) for p, e in entry.items()]
    if entry:
        scalar = _helper(namer, parsed, "number_argument", _number_argument)
        for p in entry:
            pre.append(_located(gast.Expr(value=gast.Call(
                func=_name(scalar), args=[_name(p), gast.Constant(p, None)], keywords=[])),
                tree.body[0]))
    last = tree.body[-1] if tree.body else None
    if isinstance(last, gast.Return) and last.value is not None:
        # the result must not share memory with an array written into: the
        # caller would not know the two are one
        result = namer.fresh("result")
        apart = _helper(namer, parsed, "result_apart", _result_apart)
        tree.body[-1:] = [_assign(_name(result, True), last.value, last), _located(gast.Expr(
            value=gast.Call(func=_name(apart), args=[_name(result)] + [
                a for p in written for a in (gast.Constant(p, None), _name(p))],
                keywords=[])), last), last]
        last.value = _name(result)
    for node in list(_walk(tree.body)):
        if isinstance(node, gast.Return):
            value = node.value or gast.Constant(None, None)
            node.value = gast.copy_location(gast.Tuple(
                elts=[value] + [_name(entry.get(p, p)) for p in written], ctx=gast.Load()),
                value if hasattr(value, "lineno") else node)
    if not tree.body or not isinstance(tree.body[-1], gast.Return):
        tree.body.append(_located(gast.Return(value=gast.Tuple(
            elts=[gast.Constant(None, None)] + [_name(entry.get(p, p)) for p in written],
            ctx=gast.Load())), tree.body[-1] if tree.body else tree))
    tree.body[:0] = pre


class _Calls:
    """Calls of functions that write into their arguments, to their variants."""

    param_kinds = {}

    def __init__(self, namer, parsed, locals_, tree=None):
        self.namer, self.parsed, self.locals = namer, parsed, locals_
        self.params = list(tree.args.args) if tree is not None else []
        self.constructed = {} if tree is None else self.single_constructions(tree)

    def single_constructions(self, tree):
        """``{name: C}`` for the locals bound once in the function (nested
        functions included), by ``name = C(...)`` with ``C`` a class."""
        stores = {}
        for n in gast.walk(tree):
            if isinstance(n, gast.Name) and isinstance(n.ctx, (gast.Store, gast.Del)):
                stores[n.id] = stores.get(n.id, 0) + 1
        params = {a.id for a in gast.walk(tree.args) if isinstance(a, gast.Name)}
        found = {}
        for n in gast.walk(tree):
            if (isinstance(n, gast.Assign) and len(n.targets) == 1
                    and isinstance(n.targets[0], gast.Name) and isinstance(n.value, gast.Call)
                    and stores.get(n.targets[0].id) == 1 and n.targets[0].id not in params):
                cls = self.static_class(n.value.func)
                if cls is not None:
                    found[n.targets[0].id] = cls
        return found

    def rewrite(self, tree):
        tree.body = self.block(tree.body)

    def block(self, stmts):
        out = []
        for s in stmts:
            for field in ("body", "orelse", "finalbody"):
                if getattr(s, field, None) and not isinstance(s, (gast.FunctionDef,
                                                                   gast.ClassDef)):
                    setattr(s, field, self.block(getattr(s, field)))
            if isinstance(s, gast.Try):
                for h in s.handlers:
                    h.body = self.block(h.body)
            out.extend(self.stmt(s))
        return out

    def writing_calls(self, node):
        """(call, callee, {param: how}) for each call in ``node`` (a statement
        or an expression) of a function that writes into a parameter it binds."""
        found = []
        roots = [node] if not isinstance(node, (gast.If, gast.While, gast.For)) else \
            [getattr(node, "test", None) or node.iter]
        for root in roots:
            for n in _walk([root]):
                if isinstance(n, gast.Call):
                    callee = _static_callee(n.func, self.parsed, self.locals)
                    if callee is None:
                        continue
                    written = written_params(callee)
                    bound = _bound(callee, n)
                    if any(p in bound for p in written):
                        found.append((n, callee, written))
        return found

    def stmt(self, s):
        pre = self.method_call(s)
        return pre + self.calls(s) if pre else self.calls(s)

    def method_call(self, s):
        """``C(a).step(q, p)``, or ``obj.step(q, p)`` where ``obj = C(a)`` is
        the function's only binding of ``obj``, a statement of its own: when
        ``C.step`` is a plain function that writes into its arguments, the
        call becomes ``C_step(obj, q, p)``, a direct call (which goes to the
        variant), after a check that ``obj.step`` is that method when it
        runs.  Statements before ``s``, which is changed in place."""
        call = s.value if isinstance(s, (gast.Expr, gast.Assign)) else None
        if not (isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute)):
            return []
        receiver, attr = call.func.value, call.func.attr
        owner = self.static_object(receiver)
        if isinstance(owner, (type, types.ModuleType)):
            # `C.step(obj, q)`, `solvers.step(q)`: the function itself, called by name
            try:
                fn = inspect.getattr_static(owner, attr)
            except AttributeError:
                fn = None
            if isinstance(fn, types.FunctionType) and (
                    getattr(fn, "__module__", "") or "").split(".")[0] not in (
                    "numpy", "scipy", "jax", "pullback") and written_params(fn):
                call.func = gast.copy_location(_name(_helper(
                    self.namer, self.parsed, fn.__name__, fn)), call.func)
                _located(call, s)
            return []
        if isinstance(receiver, gast.Call):
            cls = self.static_class(receiver.func)
        elif isinstance(receiver, gast.Name) and receiver.id in self.locals:
            cls = self.constructed.get(receiver.id)
        elif isinstance(receiver, gast.Name):      # a global instance: `SOLVER.step(q)`
            obj = self.static_object(receiver)
            cls = None if obj is None or isinstance(obj, (type, types.ModuleType)) else type(obj)
        else:
            cls = None
        fn = _method_function(cls, attr) if cls is not None else None
        if fn is None or not written_params(fn):
            return []
        pre = []
        if isinstance(receiver, gast.Call):      # evaluated first, as Python does
            temp = self.namer.fresh(cls.__name__)
            self.locals.add(temp)
            pre.append(_assign(_name(temp, True), receiver, s))
            receiver = _name(temp)
        method = _helper(self.namer, self.parsed, f"{cls.__name__}_{attr}", fn)
        from ..runtime.core import same_method
        check = _helper(self.namer, self.parsed, "same_method", same_method)
        pre.append(_located(gast.Expr(value=gast.Call(func=_name(check), args=[
            copy.deepcopy(receiver), gast.Constant(attr, None), _name(method)],
            keywords=[])), s))
        call.func = gast.copy_location(_name(method), call.func)
        call.args = [copy.deepcopy(receiver)] + call.args
        _located(call, s)
        return pre

    def static_class(self, func):
        """The class ``func`` names (a global or closure variable), or None."""
        obj = self.static_object(func)
        return obj if isinstance(obj, type) else None

    def static_object(self, node):
        """What the global or closure variable ``node`` holds now, or None."""
        if not isinstance(node, gast.Name) or node.id in self.locals:
            return None
        if node.id in self.parsed.closure:
            try:
                return self.parsed.closure[node.id].cell_contents
            except ValueError:
                return None
        return self.parsed.globals.get(node.id)

    def calls(self, s):
        calls = self.writing_calls(s)
        if not calls:
            return self.guard(s) + [s]
        if isinstance(s, (gast.If, gast.While, gast.For)):
            raise self.refuse(calls[0][0], calls[0][1], "in the test or the sequence of a "
                              "loop or a branch", "Call it in a statement of its own before.")
        pre = []
        for call, callee, written in calls:
            pre.extend(self.hoist(s, call, callee, written))
        if isinstance(s, gast.Expr) and isinstance(s.value, gast.Constant):
            return pre          # the call was the whole statement
        return pre + [s]

    def guard(self, s):
        """``no_writer(fn)`` before ``fn(a)``, a call of a value whose result
        is unused: a callee that writes into its arguments is refused when
        it runs (a call whose result is used goes to the dispatcher, which
        refuses it there)."""
        pre = self.store_guard(s)
        if not (isinstance(s, gast.Expr) and isinstance(s.value, gast.Call)):
            return pre
        func = s.value.func
        base = func.value if isinstance(func, gast.Attribute) else func
        root = base
        while isinstance(root, gast.Attribute):
            root = root.value
        if isinstance(root, gast.Name):
            # `obj.step(q)`, `self.solver.step(q)`, `SOLVER.step(q)`: not a module's function
            if root.id not in self.locals and (
                    base is func or isinstance(self.static_object(root), types.ModuleType)
                    or _builtin_attribute(self.static_object(root), func)):
                return pre
        elif isinstance(func, gast.Attribute):
            # `make().step(q)`: the receiver, evaluated once, first
            temp = self.namer.fresh("receiver")
            self.locals.add(temp)
            pre.append(_assign(_name(temp, True), func.value, s))
            func.value = gast.copy_location(_name(temp), func.value)
        else:
            return pre
        helper = _helper(self.namer, self.parsed, "no_writer", _no_writer)
        return pre + [_located(gast.Expr(value=gast.Call(func=_name(helper), args=[
            copy.deepcopy(func)], keywords=[])), s)]

    def store_guard(self, s):
        """``no_attribute_store(fn, a, k=b)`` before ``fn(a, k=b)`` (a statement
        or an assignment's value), where ``fn`` is a value (``obj.method``,
        a partial) or a function that stores attributes into a parameter:
        refused when it runs if the call would store into a dataclass given
        to it (``analyses.attributes`` refuses at compile time a store into
        an argument holding differentiated values; a dataclass holding none
        is refused here, as ``runtime.core`` refuses such a store inside a
        differentiated function)."""
        if not (isinstance(s, (gast.Expr, gast.Assign)) and isinstance(s.value, gast.Call)):
            return []
        call = s.value
        func = call.func
        if isinstance(func, gast.Attribute):
            if not (isinstance(func.value, gast.Name) and func.value.id in self.locals) \
                    or _known_method(func.attr):
                return []
        elif isinstance(func, gast.Name) and func.id not in self.locals:
            callee = _static_callee(func, self.parsed, self.locals)
            if callee is None or not attribute_stores(callee):
                return []
        elif not isinstance(func, gast.Name):
            return []

        def plain(a):       # an argument read again: names and their attributes only
            inner = a.value if isinstance(a, gast.Starred) else a
            while isinstance(inner, gast.Attribute):
                inner = inner.value
            return copy.deepcopy(a) if isinstance(inner, gast.Name) \
                else gast.Constant(None, None)
        if any(isinstance(a, gast.Starred) and not isinstance(plain(a), gast.Starred)
               for a in call.args):
            return []       # (the positions after it are not known)
        helper = _helper(self.namer, self.parsed, "no_attribute_store", _no_attribute_store)
        return [_located(gast.Expr(value=gast.Call(
            func=_name(helper), args=[copy.deepcopy(func)] + [plain(a) for a in call.args],
            keywords=[gast.keyword(arg=k.arg, value=plain(k.value)) for k in call.keywords
                      if k.arg is not None or not isinstance(plain(k.value), gast.Constant)])),
            s)]

    def refuse(self, call, callee, where, hint):
        return UnsupportedSyntaxError(
            f"`{callee.__name__}` writes into its argument, and pullback follows that only "
            f"for a call that is a statement or an assignment of its own, not {where}.",
            self.parsed.location(call), hint)

    def hoist(self, s, call, callee, written):
        """Statements for ``call`` before ``s``, which then reads its result."""
        if any(call is n for c in _walk([s]) if isinstance(
                c, (gast.ListComp, gast.GeneratorExp, gast.SetComp, gast.DictComp,
                    gast.IfExp, gast.BoolOp)) for n in _walk([c])):
            raise self.refuse(call, callee, "inside a comprehension or a conditional "
                              "expression", "Write the loop out with a `for` statement.")
        bound = _bound(callee, call)
        names = []
        for p in written:
            if p not in bound:
                raise UnsupportedSyntaxError(
                    f"`{callee.__name__}` writes into its parameter `{p}`, which this call "
                    "leaves to its default, an object shared by every call.",
                    self.parsed.location(call), f"Pass `{p}` explicitly.")
            arg = bound[p]
            if written[p] == _MIXED:
                raise UnsupportedSyntaxError(
                    f"`{callee.__name__}` writes into its argument `{p}` and also assigns "
                    f"`{p}` a new value, so which array a write reaches depends on the path "
                    "taken; pullback does not follow that.", self.parsed.location(call),
                    f"In `{callee.__name__}`, copy first (`{p} = {p}.copy()`) and return "
                    f"the new `{p}`, or only write into it.")
            if not (isinstance(arg, gast.Name) and arg.id in self.locals):
                raise UnsupportedSyntaxError(
                    f"`{callee.__name__}` writes into its argument `{p}`, and here `{p}` is "
                    "not a variable of this function, so pullback cannot follow the change.",
                    self.parsed.location(call),
                    f"Assign the value to a variable first and pass that (`{p}_value = "
                    f"...; {callee.__name__}({p}_value)`), or pass a copy if the change "
                    "should not be seen.")
            if written[p] != "update" and getattr(
                    self.param_kinds.get(arg.id), "shape", None) is kinds_.Shape.CONTAINER \
                    and arg.id in {a.id for a in self.params}:
                raise UnsupportedSyntaxError(
                    f"`{callee.__name__}` writes into its argument `{p}` by item, and here "
                    + (f"`{p}` is `{arg.id}`, " if arg.id != p else f"`{p}` is ")
                    + "a list or a tuple this function is given: the write "
                    "would change the caller's list, which pullback's transforms never do, "
                    "and pullback follows writes by item only into a list the function "
                    "builds itself (`state = [q, p]`).", self.parsed.location(call),
                    f"Make `{callee.__name__}` build and return a new list (`return "
                    f"[{p}[0] - g] + {p}[1:]`) and bind it: `{arg.id} = "
                    f"{callee.__name__}({arg.id}, ...)`.")
            names.append(arg.id)
        others = [n.id for n in gast.walk(s) if isinstance(n, gast.Name)
                  and isinstance(n.ctx, gast.Load) and n.id in names
                  and not any(n is m for m in gast.walk(call))]
        if others and not (isinstance(s, (gast.Expr, gast.Assign, gast.Return))
                           and s.value is call):
            raise self.refuse(call, callee, f"inside an expression that also reads `{others[0]}`",
                              "Call it in a statement of its own.")
        fn_name = _helper(self.namer, self.parsed, f"{callee.__name__}_writes", variant(callee))
        result = self.namer.fresh(f"{callee.__name__}_result")
        news = [self.namer.fresh(f"{n}_new") for n in names]
        new_call = gast.Call(func=_name(fn_name), args=call.args, keywords=call.keywords)
        out = [_assign(gast.Tuple(elts=[_name(result, True)] + [_name(n, True) for n in news],
                                  ctx=gast.Store()), gast.copy_location(new_call, call), s)]
        for n, new, p in zip(names, news, written):
            back = _assign(_name(n, True), _name(new), s)
            origin = gast.copy_location(gast.AugAssign(target=_name(n, True), op=gast.Add(),
                                                       value=_name(new)), call)
            origin.end_lineno, origin.end_col_offset = call.end_lineno, call.end_col_offset
            origin.written_by = (callee.__name__, p)
            back.updates = origin
            out.append(back)
        if isinstance(s, gast.Expr) and s.value is call:
            s.value = gast.Constant(None, None)     # a bare constant: normalize drops it
        else:
            _replace(s, call, _name(result))
        return out


def _replace(root, old, new):
    for node in gast.walk(root):
        for field, value in gast.iter_fields(node):
            if value is old:
                setattr(node, field, new)
            elif isinstance(value, list):
                for i, v in enumerate(value):
                    if v is old:
                        value[i] = new


def _builtin_attribute(obj, func):
    """Whether the attribute chain ``func`` (``LOG.append``) of the object
    ``obj`` that its root names ends, as things stand, in a function written
    in C (a method of a list, a dict): not a user function that could write
    into its arguments."""
    chain = []
    node = func
    while isinstance(node, gast.Attribute):
        chain.append(node.attr)
        node = node.value
    try:
        for k, attr in enumerate(reversed(chain)):
            if k and hasattr(type(obj), "__get__"):
                return False        # a property or the like: its value is known when it runs
            obj = inspect.getattr_static(obj, attr)
    except AttributeError:
        return False
    return isinstance(obj, (types.BuiltinFunctionType, types.MethodDescriptorType,
                            types.WrapperDescriptorType, types.MethodWrapperType,
                            types.ClassMethodDescriptorType))


def _method_function(cls, attr):
    """``C.attr`` when it is a plain function that every instance of ``C``
    made by ``C(...)`` finds as ``obj.attr`` unless its own ``__dict__``
    holds that name (checked when the call runs): ``C`` made by ``type``,
    with neither ``__new__`` nor ``__getattr__``/``__getattribute__`` of its
    own; else None."""
    if type(cls) is not type or cls.__new__ is not object.__new__:
        return None
    if any(k in c.__dict__ for c in cls.__mro__[:-1]
           for k in ("__getattr__", "__getattribute__")):
        return None
    try:
        fn = inspect.getattr_static(cls, attr)
    except AttributeError:
        return None
    if not isinstance(fn, types.FunctionType) or (getattr(fn, "__module__", "") or "").split(
            ".")[0] in ("numpy", "scipy", "jax", "pullback"):
        return None
    return fn


def _assign(target, value, where):
    return _located(gast.Assign(targets=[target], value=value, type_comment=None), where)


def _located(stmt, where):
    for node in gast.walk(stmt):
        if not hasattr(node, "lineno") or getattr(node, "lineno", None) is None:
            gast.copy_location(node, where)
    return stmt


def rewritten(fn, param_kinds):
    """``fn``'s tree after this pass (for the docstring and tests)."""
    parsed, namer = _front(fn, structured=True)
    follow_writes(parsed.tree, namer, parsed, param_kinds)
    return parsed.tree
