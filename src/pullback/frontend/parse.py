"""Frontend: from a Python function to its gast tree, globals and cells.

Reads the source with ``inspect.getsource``, dedents it, parses it with gast
and shifts line and column numbers back to the file's, so that every later
error can quote the user's own line.  A lambda becomes a one-line function.

>>> from pullback.testing import function_from_source
>>> from pullback.backend.codegen import unparse
>>> f = function_from_source('''
... def outer():
...     return lambda x: x * 2.0
... ''')()
>>> print(unparse(parse(f).tree))
def lambda_(x):
    return x * 2.0
"""
from __future__ import annotations

import dataclasses
import inspect
import linecache
import textwrap
import types

import gast
import numpy as np

from ..errors import Location, SourceUnavailableError, UnsupportedSyntaxError
from ..ir.build import name as _name


@dataclasses.dataclass
class Parsed:
    """A user function, parsed, with what its body may refer to."""

    fn: types.FunctionType
    tree: gast.FunctionDef
    filename: str
    globals: dict
    closure: dict            # free variable name -> cell

    def location(self, node):
        lineno = getattr(node, "lineno", None) or self.tree.lineno
        line = linecache.getline(self.filename, lineno)
        end_lineno = getattr(node, "end_lineno", None) if getattr(node, "lineno", None) else None
        return Location(self.filename, lineno, getattr(node, "col_offset", 0),
                        getattr(node, "end_col_offset", None), line, end_lineno)

    def unsupported(self, node, what, hint):
        return UnsupportedSyntaxError(f"pullback cannot differentiate {what}.",
                                      self.location(node), hint)


def _apply_layout(tree: gast.FunctionDef, layout: object) -> None:
    """Give ``tree`` (a FunctionDef) one positional parameter per value of
    ``layout`` and start its body by packing ``*args`` and ``**kwargs``."""
    packs = []
    for kind, target, names in layout.packs:
        if kind == "dict":
            value = gast.Dict(keys=[gast.Constant(k, None) for k, _ in names],
                              values=[_name(n) for _, n in names])
        else:
            value = gast.Tuple(elts=[_name(n) for n in names], ctx=gast.Load())
        stmt = gast.Assign(targets=[_name(target, store=True)], value=value,
                           type_comment=None)
        gast.copy_location(stmt, tree)
        gast.copy_location(value, tree)
        packs.append(stmt)
    tree.args = gast.arguments(
        args=[_name(p, gast.Param()) for p in layout.params], posonlyargs=[], vararg=None,
        kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])
    tree.body = packs + tree.body


def parse(fn: object, layout: object = None) -> Parsed:
    """Parse ``fn`` into a ``Parsed``; raise ``SourceUnavailableError`` if its
    source cannot be found.  With a ``layout``, its ``*args``, ``**kwargs``
    and keyword-only parameters become positional ones (``Layout``)."""
    if not isinstance(fn, types.FunctionType):
        from ..rules.registry import lookup
        name = getattr(fn, "__name__", None)
        hint = ("Differentiate a function written in Python (def or lambda), or give "
                "this callable a rule with pb.custom_vjp.")
        if lookup(fn) is not None and name:
            hint = (f"pullback has a rule for {name}: differentiate a Python function that "
                    f"calls it, such as `lambda x: np.{name}(x)`." if isinstance(fn, np.ufunc)
                    else f"pullback has a rule for {name}: differentiate a Python function "
                         f"that calls it.")
        raise SourceUnavailableError(
            f"{fn!r} is not a Python function, so pullback cannot read its source.",
            hint=hint)
    code = fn.__code__
    filename = code.co_filename
    try:
        # the code object's own lines: a `functools.wraps` wrapper is the wrapper
        # (inspect would follow `__wrapped__` to the function it wraps)
        lines, first = inspect.getsourcelines(code)
    except (OSError, TypeError) as err:
        raise SourceUnavailableError(
            f"The source of {fn.__qualname__} (defined in {filename}) is not available: "
            f"{err}.",
            hint="Define the function in a file (or a notebook cell) rather than at an "
                 "interactive prompt, or give it a rule with pb.custom_vjp.") from None
    text = "".join(lines)
    dedented = textwrap.dedent(text)
    indent = _indent_of(lines[0]) - _indent_of(dedented.splitlines(True)[0])
    try:
        module = gast.parse(dedented)
    except SyntaxError:
        # A lambda inside a larger expression (a dict entry, an argument):
        # its lines need not parse on their own, so parse the whole file.
        module = _parse_file(filename, fn)
        indent = 0
        first = 1
    gast.increment_lineno(module, first - 1)
    for node in gast.walk(module):
        if hasattr(node, "col_offset") and node.col_offset is not None:
            node.col_offset += indent
            if getattr(node, "end_col_offset", None) is not None:
                node.end_col_offset += indent
    tree = _find_function(module, fn, filename)
    if code.co_flags & inspect.CO_GENERATOR:
        _generator_as_list(tree, fn, filename)
    closure = dict(zip(code.co_freevars, fn.__closure__ or ()))
    parsed = Parsed(fn, tree, filename, fn.__globals__, closure)
    rewrite = getattr(fn, "__pullback_rewrite__", None)
    if rewrite is not None:    # Dense(W, b): __init__ as the function that builds the object
        rewrite(tree, parsed)   # (frontend.instances; before the layout, which drops `self`)
    if layout is not None:
        _apply_layout(tree, layout)
    return parsed


def _generator_as_list(tree, fn, filename):
    """A generator function differentiated as the function that returns the
    list of what it yields (``yield v`` -> ``items.append(v)``), which is what
    ``sum``, ``list`` and a ``for`` loop read from it."""
    def refuse(node, what, hint):
        raise UnsupportedSyntaxError(
            f"pullback cannot differentiate {what}.",
            Location(filename, node.lineno, node.col_offset, getattr(node, "end_col_offset",
                                                                     None),
                     linecache.getline(filename, node.lineno)), hint)

    taken = set(fn.__code__.co_varnames) | set(fn.__code__.co_names)
    items = "yielded"
    while items in taken:
        items += "_"

    def name(ctx):
        return gast.Name(id=items, ctx=ctx, annotation=None, type_comment=None)

    def append(value, origin):
        call = gast.Call(func=gast.Attribute(value=name(gast.Load()), attr="append",
                                             ctx=gast.Load()), args=[value], keywords=[])
        return gast.copy_location(gast.Expr(value=gast.copy_location(call, origin)), origin)

    def block(stmts):
        out = []
        for stmt in stmts:
            if isinstance(stmt, gast.Expr) and isinstance(stmt.value, gast.Yield):
                value = stmt.value.value or gast.Constant(None, None)
                out.append(append(value, stmt))
                continue
            if isinstance(stmt, gast.Expr) and isinstance(stmt.value, gast.YieldFrom):
                var = items + "_item"
                loop = gast.For(target=gast.Name(id=var, ctx=gast.Store(), annotation=None,
                                                 type_comment=None),
                                iter=stmt.value.value, body=[append(gast.Name(
                                    id=var, ctx=gast.Load(), annotation=None,
                                    type_comment=None), stmt)], orelse=[], type_comment=None)
                out.append(gast.copy_location(loop, stmt))
                continue
            if isinstance(stmt, gast.Return):
                if stmt.value is not None:
                    refuse(stmt, "a generator that returns a value",
                           "End the generator with a plain `return`.")
                stmt.value = name(gast.Load())
            if isinstance(stmt, gast.While) and isinstance(stmt.test, gast.Constant) \
                    and stmt.test.value:
                refuse(stmt, "a generator that may run forever (`while True`)",
                       "Give the loop a condition, or yield from a finite loop.")
            if isinstance(stmt, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
                out.append(stmt)
                continue
            for field in ("body", "orelse", "finalbody"):
                if getattr(stmt, field, None):
                    setattr(stmt, field, block(getattr(stmt, field)))
            for node in _shallow_walk(stmt):
                if isinstance(node, (gast.Yield, gast.YieldFrom)):
                    refuse(node, "`yield` used as a value", "Write `yield v` as a statement.")
            out.append(stmt)
        return out

    init = gast.Assign(targets=[name(gast.Store())], value=gast.List(elts=[], ctx=gast.Load()),
                       type_comment=None)
    ret = gast.Return(value=name(gast.Load()))
    body = block(tree.body)
    gast.copy_location(init, tree)
    gast.copy_location(ret, tree.body[-1])
    tree.body = [init] + body + [ret]


def _shallow_walk(stmt):
    """The expressions of ``stmt`` itself, not those of its nested blocks or
    nested functions."""
    stack = [v for f, v in gast.iter_fields(stmt) if f not in ("body", "orelse", "finalbody",
                                                                 "handlers")]
    while stack:
        v = stack.pop()
        if isinstance(v, list):
            stack.extend(v)
        elif isinstance(v, gast.AST):
            if isinstance(v, (gast.Lambda, gast.FunctionDef)):
                continue
            yield v
            stack.extend(x for _, x in gast.iter_fields(v))


def _indent_of(line):
    return len(line) - len(line.lstrip())


def _parse_file(filename, fn):
    text = "".join(linecache.getlines(filename, fn.__globals__))
    try:
        return gast.parse(text)
    except SyntaxError:
        raise SourceUnavailableError(
            f"Could not parse the source of {fn.__qualname__} in {filename}.",
            hint="Write the function with def on lines of its own.") from None


def _lambda_of_code(lambdas, code):
    """Of several lambdas on one line, the one whose span holds every
    position (line, column) of ``code``'s instructions; the innermost, where
    one lambda holds another (``lambda x: g(lambda y: y * x)``)."""
    where = {(line, col) for line, _, col, end in code.co_positions()
             if line is not None and col is not None and (col, end) != (0, 0)}
    found = [n for n in lambdas if where and all(
        (n.lineno, n.col_offset) <= p < (n.end_lineno, n.end_col_offset) for p in where)]
    return sorted(found, key=lambda n: (n.end_lineno - n.lineno, n.end_col_offset - n.col_offset)
                  )[:1]


def _find_function(module, fn, filename):
    code = fn.__code__
    if code.co_name == "<lambda>":
        lambdas = [n for n in gast.walk(module) if isinstance(n, gast.Lambda)
                   and n.lineno == code.co_firstlineno
                   and [a.id for a in n.args.args] == list(code.co_varnames[:code.co_argcount])]
        if len(lambdas) > 1:
            lambdas = _lambda_of_code(lambdas, code)
        if len(lambdas) != 1:
            raise SourceUnavailableError(
                f"Cannot tell which lambda on line {code.co_firstlineno} of {filename} "
                "is being differentiated.",
                hint="Give the lambda its own line, or write it as a def.")
        lam = lambdas[0]
        ret = gast.Return(value=lam.body)
        gast.copy_location(ret, lam.body)
        tree = gast.FunctionDef(name="lambda_", args=lam.args, body=[ret],
                                decorator_list=[], returns=None, type_comment=None,
                                type_params=[])
        return gast.copy_location(tree, lam)
    for node in gast.walk(module):
        if isinstance(node, (gast.FunctionDef, gast.AsyncFunctionDef)) \
                and node.name == code.co_name:
            if isinstance(node, gast.AsyncFunctionDef):
                raise UnsupportedSyntaxError(
                    "pullback cannot differentiate an async function.",
                    Location(filename, node.lineno, node.col_offset, None,
                             linecache.getline(filename, node.lineno)),
                    "Write an ordinary def.")
            node.decorator_list = []
            return node
    raise SourceUnavailableError(
        f"Could not find the definition of {fn.__qualname__} in its source.",
        hint="Define it with a plain def statement.")
