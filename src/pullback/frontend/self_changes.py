"""Which methods of a user's class may change their object, and whether one
lets ``self`` be seen otherwise than through its attributes: what
``frontend.method_state`` and ``frontend.state_calls`` ask before following
a call as a state function (split from ``method_state``).

A method may change its object when it stores into an attribute of ``self``
(``self.x = ...``, ``self.n += 1``), writes into what one holds
(``self.hist.append(v)``) or calls such a method on ``self``; read from its
source, once per class and method:

>>> from pullback.testing import function_from_source
>>> Sim = function_from_source('''
... def make():
...     class Sim:
...         def __init__(self, x):
...             self.x = x
...         def energy(self):
...             return self.x ** 2
...         def step(self, dt):
...             self.x = self.x - dt * self.energy()
...         def run(self, n):
...             for _ in range(n):
...                 self.step(0.1)
...             return self
...     return Sim
... ''', {"__name__": "example"})()
>>> [changes_self(Sim, m) for m in ("energy", "step", "run")]
[False, True, True]
>>> returns_self(Sim, "run"), returns_self(Sim, "step")
(True, False)
"""
from __future__ import annotations

import ast
import inspect
import textwrap
import types
import weakref

__all__ = ["changes_self", "returns_self"]


_changes = weakref.WeakKeyDictionary()    # class -> {method name: bool}


def changes_self(cls, name):
    """Whether method ``name`` of ``cls`` (a plain function) may change its
    object (``_may_change``; once per class and name)."""
    try:
        table = _changes.setdefault(cls, {})
    except TypeError:
        table = {}
    if name not in table:
        method = inspect.getattr_static(cls, name, None)
        params = list(inspect.signature(method, follow_wrapped=False).parameters) \
            if isinstance(method, types.FunctionType) else []
        table[name] = bool(params) and _may_change(cls, method, params[0], set())
    return table[name]


def returns_self(cls, name):
    """Whether every ``return`` of method ``name`` returns ``self`` (and it
    has one): its result is the object itself."""
    key = ("returns self", name)
    table = _changes.setdefault(cls, {})
    if key not in table:
        table[key] = _returns_self(cls, name)
    return table[key]


def _returns_self(cls, name):
    method = inspect.getattr_static(cls, name, None)
    tree = _source_tree(method)
    if tree is None or not tree.args.args:
        return False
    me = tree.args.args[0].arg
    returns = [n for n in _own_nodes(tree) if isinstance(n, ast.Return)]
    return bool(returns) and all(isinstance(r.value, ast.Name) and r.value.id == me
                                 for r in returns) and _ends_in_return(tree.body)


def _ends_in_return(body):
    return bool(body) and isinstance(body[-1], ast.Return)


def _source_tree(fn):
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return None
    tree = tree.body[0] if tree.body else None
    return tree if isinstance(tree, (ast.FunctionDef, ast.AsyncFunctionDef)) else None


def _own_nodes(tree):
    """The nodes of a function, not those of functions nested in it."""
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                             ast.ClassDef)):
            continue
        stack.extend(ast.iter_child_nodes(node))


def _escape(cls, fn, seen):
    """Where method ``fn`` lets its ``self`` be seen otherwise than through
    its attributes (returned, passed on, put in a container, captured), as a
    sentence, or None; through the methods it calls on ``self`` too."""
    if not seen:
        key = ("escape", fn)
        table = _changes.setdefault(cls, {})
        if key not in table:
            table[key] = _escape(cls, fn, {None})
        return table[key]
    if fn in seen:
        return None
    seen.add(fn)
    tree = _source_tree(fn)
    if tree is None:
        return f"the source of `{fn.__name__}` cannot be read"
    if not tree.args.args:
        return None
    me = tree.args.args[0].arg
    parents = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Name) and node.id == me) or node is tree.args.args[0]:
            continue
        parent = parents.get(node)
        if isinstance(parent, ast.Attribute) and parent.value is node:
            call = parents.get(parent)
            if isinstance(call, ast.Call) and call.func is parent:
                callee = inspect.getattr_static(cls, parent.attr, None)
                if isinstance(callee, types.FunctionType):
                    why = _escape(cls, callee, seen)
                    if why is not None:
                        return why
            continue
        if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) \
                and parent.func.id in ("isinstance", "type", "super") and parent.args \
                and parent.args[0] is node:
            continue
        line = node.lineno + fn.__code__.co_firstlineno - 1
        return f"`{fn.__name__}` uses `{me}` otherwise than through its attributes " \
               f"(line {line} of {fn.__code__.co_filename})"
    return None


# methods of builtin containers and arrays that change their object
_CHANGING = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "update",
                       "setdefault", "popitem", "sort", "reverse", "fill", "put", "itemset",
                       "resize", "setflags", "partition", "add", "discard", "at"})


def _may_change(cls, fn, self_name, seen):
    """Whether ``fn`` (a method of ``cls``) may change its ``self_name``
    parameter's object, directly or through the methods of ``cls`` it calls
    on it: a store or a ``del`` rooted at it (``self.x = v``, ``self.x[0] =
    v``, ``self.n += 1``), a changing container or array method on something
    reached from it (``self.hist.append(v)``, ``np.add.at(self.x, ...)``), a
    call given it (``helper(self)``, ``setattr(self, ...)``) or an ``out=``.
    When its source cannot be read: yes."""
    import ast
    import textwrap
    if fn in seen:
        return False
    seen.add(fn)
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return True

    def root(node):
        while isinstance(node, (ast.Attribute, ast.Subscript, ast.Starred)):
            node = node.value
        return node.id if isinstance(node, ast.Name) else None
    rooted = {self_name}
    for node in ast.walk(tree):     # local aliases: `layers = self.layers`, `for l in self.ls`
        if isinstance(node, ast.Assign) and root(node.value) in rooted:
            rooted |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, (ast.For, ast.comprehension)) and root(node.iter) in rooted:
            rooted |= {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
    def parts(targets):     # `self.a, self.b = ...`: each element (was missed)
        for t in targets:
            if isinstance(t, (ast.Tuple, ast.List)):
                yield from parts(t.elts)
            else:
                yield t.value if isinstance(t, ast.Starred) else t
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else \
            [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For)) else \
            [i.optional_vars for i in node.items if i.optional_vars is not None] \
            if isinstance(node, ast.With) else []
        if any(not isinstance(t, ast.Name) and root(t) in rooted for t in parts(targets)):
            return True
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if any(k.arg == "out" for k in node.keywords):
            return True
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
                and func.value.id == self_name:
            callee = inspect.getattr_static(cls, func.attr, None)
            if isinstance(callee, types.FunctionType):
                names = list(inspect.signature(callee, follow_wrapped=False).parameters)
                if names and _may_change(cls, callee, names[0], seen):
                    return True
                continue
        if isinstance(func, ast.Attribute) and root(func.value) in rooted \
                and func.attr in _CHANGING:
            return True
        if isinstance(func, ast.Attribute) and func.attr == "at" and node.args \
                and root(node.args[0]) in rooted:
            return True
        if any(isinstance(a, ast.Name) and a.id in rooted for a in node.args) or \
                (isinstance(func, ast.Name) and func.id in ("setattr", "delattr")):
            return True
    return False
