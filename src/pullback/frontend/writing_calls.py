"""Calls of functions that write into their arguments, sent to their variants.

A call of a user function that writes into its argument (``step(state)``)
goes to the callee's variant, which returns the result and the argument's
new value, assigned back as an in-place update; a method of a known class
that writes into ``self`` or its arguments is called as a function, after a
check that the object's attribute is that method (``same_method``); a
write through an object's attribute store is guarded where it runs.  Part of
``frontend.writes`` (its docstring has the whole pass's before/after).

>>> from pullback.testing import function_from_source
>>> from pullback.backend.codegen import unparse
>>> from pullback.frontend.function_scans import _front
>>> step = function_from_source('''
... def step(s):
...     s[0] += 1.0
... ''')
>>> f = function_from_source('''
... def f(x):
...     step(x)
...     return x[0]
... ''', {"step": step})
>>> parsed, namer = _front(f, structured=True)
>>> WritingCalls(namer, parsed, {"x"}, parsed.tree).rewrite(parsed.tree)
>>> print(unparse(parsed.tree).strip())
def f(x):
    step_result, x_new = step_writes(x)
    x = x_new
    return x[0]
"""
from __future__ import annotations

import copy
import inspect
import types

import gast

from ..analyses import kinds as kinds_
from ..errors import UnsupportedSyntaxError
from ..ir.build import assign_located, closure_name as _helper, located, name as _name
from ..ir.walk import replace_node
from ..runtime.objects import plain_metaclass
from .call_guards import no_attribute_store as _no_attribute_store, no_writer as _no_writer
from .attribute_stores import attribute_stores
from .function_scans import (_known_method, bound_arguments as _bound,
                             static_callee as _static_callee, walk as _walk)
from .written import MIXED as _MIXED, variant, written_params

__all__ = ["WritingCalls"]


class WritingCalls:
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
                located(call, s)
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
            pre.append(assign_located(_name(temp, True), receiver, s))
            receiver = _name(temp)
        method = _helper(self.namer, self.parsed, f"{cls.__name__}_{attr}", fn)
        from ..runtime.statement_checks import same_method
        check = _helper(self.namer, self.parsed, "same_method", same_method)
        pre.append(located(gast.Expr(value=gast.Call(func=_name(check), args=[
            copy.deepcopy(receiver), gast.Constant(attr, None), _name(method)],
            keywords=[])), s))
        call.func = gast.copy_location(_name(method), call.func)
        call.args = [copy.deepcopy(receiver)] + call.args
        located(call, s)
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
            pre.append(assign_located(_name(temp, True), func.value, s))
            func.value = gast.copy_location(_name(temp), func.value)
        else:
            return pre
        helper = _helper(self.namer, self.parsed, "no_writer", _no_writer)
        return pre + [located(gast.Expr(value=gast.Call(func=_name(helper), args=[
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
        return [located(gast.Expr(value=gast.Call(
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
        out = [assign_located(gast.Tuple(elts=[_name(result, True)] + [_name(n, True) for n in news],
                                  ctx=gast.Store()), gast.copy_location(new_call, call), s)]
        for n, new, p in zip(names, news, written):
            back = assign_located(_name(n, True), _name(new), s)
            origin = gast.copy_location(gast.AugAssign(target=_name(n, True), op=gast.Add(),
                                                       value=_name(new)), call)
            origin.end_lineno, origin.end_col_offset = call.end_lineno, call.end_col_offset
            origin.written_by = (callee.__name__, p)
            back.updates = origin
            out.append(back)
        if isinstance(s, gast.Expr) and s.value is call:
            s.value = gast.Constant(None, None)     # a bare constant: normalize drops it
        else:
            replace_node(s, call, _name(result))
        return out



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
    if not plain_metaclass(cls) or cls.__new__ is not object.__new__:
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
