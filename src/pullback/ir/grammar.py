"""The normal form that ``normalize`` produces and every later pass assumes::

    block  := stmt*
    stmt   := Name = rhs                  one operation, one target
            | Name, Name, ... = atom      unpacking a value
            | Name[index] = atom          a write into a local array
            | Name[index] OP= atom        (and np.add.at(Name, index, atom))
            | rhs                         a call kept for its effect (print)
            | assert atom
            | if atom: block else: block
            | for Name in atom: block     the block may end with `if Name: break`
            | while Name: block           (ditto); the condition is recomputed at
                                          the end of the block
            | return atom                 once, as the function's last statement
    rhs    := atom | atom OP atom | UOP atom | atom CMP atom | atom and/or atom
            | callee(atom, ..., key=atom) | atom.attr | atom.method(atom, ...)
            | atom[index] | (atom, ...) | [atom, ...] | {atom: atom, ...} | f-string
    index  := atom | atom?:atom?:atom? | (index, ...)
    atom   := Name | Constant | static
    static := a dotted path rooted at a global or closure name (np.pi, np.exp)

Names: a name is assigned once, except a loop-carried name, which is
assigned by a copy just before its loop and by copies (``v = v_2``) at the end
of the loop's body; and a name merged after an ``if``, assigned by a copy at
the end of each branch that defines it.  So any value the reverse pass reads
was computed by exactly one statement per execution of its block.

``check`` asserts the grammar: normalize's output passes, a nested
expression put back does not:

>>> import gast
>>> from pullback.testing import function_from_source, normal_form
>>> normal = normal_form(function_from_source('''
... def f(x):
...     y = x * 2.0 + 1.0
...     return y
... '''))
>>> sorted(assigned_names(normal.tree.body)), check(normal) is normal.tree
(['x_2', 'y'], True)
>>> normal.tree.body[0].value = gast.parse("x * 2.0 + 1.0").body[0].value
>>> check(normal)
Traceback (most recent call last):
AssertionError: binary operands are atoms
"""
from __future__ import annotations

import gast

__all__ = ["is_atom", "is_static", "check", "assigned_names"]


def is_static(node, local_names):
    """A dotted path rooted at a non-local name (np.exp, math.pi, helper)."""
    while isinstance(node, gast.Attribute):
        node = node.value
    return isinstance(node, gast.Name) and node.id not in local_names


def is_atom(node, local_names=()):
    return isinstance(node, (gast.Name, gast.Constant)) or (
        isinstance(node, gast.Attribute) and is_static(node, local_names))


def assigned_names(stmts):
    """Every name a statement list assigns, nested blocks included."""
    out = set()
    stack = list(stmts)
    ast_node, name, store = gast.AST, gast.Name, gast.Store
    while stack:            # gast.walk's nodes, without its generators (a hot path)
        n = stack.pop()
        if isinstance(n, name) and isinstance(n.ctx, store):
            out.add(n.id)
        for field in n._fields:
            v = getattr(n, field, None)
            if isinstance(v, ast_node):
                stack.append(v)
            elif isinstance(v, list):
                stack.extend(x for x in v if isinstance(x, ast_node))
    return out


def check(normal):
    """Assert that ``normal.tree`` is in the normal form; return it."""
    fn = normal.tree
    local_names = set(normal.params) | assigned_names(fn.body)
    atom = lambda n: is_atom(n, local_names)  # noqa: E731
    counts = {}
    _check_block(fn.body, atom, counts, top=True, in_loop=False)
    return fn


def _check_block(stmts, atom, counts, top, in_loop):
    for i, stmt in enumerate(stmts):
        last = i == len(stmts) - 1
        if isinstance(stmt, gast.Assign):
            assert len(stmt.targets) == 1, "one target per assignment"
            target = stmt.targets[0]
            if isinstance(target, gast.Name):
                _check_rhs(stmt.value, atom)
            elif isinstance(target, gast.Subscript):
                assert isinstance(target.value, gast.Name) and atom(stmt.value)
                _check_index(target.slice, atom)
            else:
                assert atom(stmt.value), "unpacking takes an atom"
                assert all(isinstance(n, gast.Name) for n in target.elts)
        elif isinstance(stmt, gast.Return):
            assert top and last, "one return, at the end"
            assert atom(stmt.value), "return takes an atom"
        elif isinstance(stmt, gast.AugAssign):
            assert isinstance(stmt.target, gast.Subscript) and atom(stmt.value)
            _check_index(stmt.target.slice, atom)
        elif isinstance(stmt, gast.Expr):
            _check_rhs(stmt.value, atom)
        elif isinstance(stmt, gast.Assert):
            assert atom(stmt.test)
        elif isinstance(stmt, gast.Raise):
            assert stmt.exc is None or atom(stmt.exc)
            assert stmt.cause is None or atom(stmt.cause)
        elif isinstance(stmt, gast.If):
            assert atom(stmt.test)
            if stmt.body and isinstance(stmt.body[0], gast.Break):
                assert in_loop and last and len(stmt.body) == 1 and not stmt.orelse, \
                    "break only as the loop body's last statement"
                continue
            _check_block(stmt.body, atom, counts, False, in_loop)
            _check_block(stmt.orelse, atom, counts, False, in_loop)
        elif isinstance(stmt, gast.For):
            assert isinstance(stmt.target, gast.Name) and atom(stmt.iter) and not stmt.orelse
            _check_block(stmt.body, atom, counts, False, True)
        elif isinstance(stmt, gast.While):
            assert isinstance(stmt.test, gast.Name) and not stmt.orelse
            _check_block(stmt.body, atom, counts, False, True)
        else:
            raise AssertionError(f"unexpected statement {type(stmt).__name__}")


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
