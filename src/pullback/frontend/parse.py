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
        return Location(self.filename, lineno, getattr(node, "col_offset", 0),
                        getattr(node, "end_col_offset", None), line)

    def unsupported(self, node, what, hint):
        return UnsupportedSyntaxError(f"pullback cannot differentiate {what}.",
                                      self.location(node), hint)


def parse(fn: object) -> Parsed:
    """Parse ``fn`` into a ``Parsed``; raise ``SourceUnavailableError`` if its
    source cannot be found."""
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
    closure = dict(zip(code.co_freevars, fn.__closure__ or ()))
    return Parsed(fn, tree, filename, fn.__globals__, closure)


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


def _find_function(module, fn, filename):
    code = fn.__code__
    if code.co_name == "<lambda>":
        lambdas = [n for n in gast.walk(module) if isinstance(n, gast.Lambda)
                   and n.lineno == code.co_firstlineno
                   and [a.id for a in n.args.args] == list(code.co_varnames[:code.co_argcount])]
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
