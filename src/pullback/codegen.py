"""Codegen: print generated functions as Python, with provenance comments.

Statements carry the line number of the user's statement they came from;
where that changes, a ``# line N: <source line>`` comment is interleaved.

>>> from pullback.testing import function_from_source, normal_form
>>> f = function_from_source('''
... def f(x):
...     y = np.sin(x) * 2.0
...     return y
... ''')
>>> print(render_function(normal_form(f).tree, f.__code__.co_filename), end="")
def f(x):
    # line 2: y = np.sin(x) * 2.0
    sin_x = np.sin(x)
    y = sin_x * 2.0
    # line 3: return y
    return y
"""
from __future__ import annotations

import ast
import copy
import linecache
import math

import gast

__all__ = ["unparse", "render_function", "register_source"]


def unparse(node):
    """Python source of one gast node (no comments)."""
    tree = _NegativeConstants().visit(gast.gast_to_ast(node))
    ast.fix_missing_locations(tree)
    return ast.unparse(tree)


class _NegativeConstants(ast.NodeTransformer):
    """A folded constant may be negative: ``ast.unparse`` prints
    ``Constant(-0.7) ** 2`` as ``-0.7 ** 2``, which is ``-(0.7 ** 2)``.  As a
    negation of a positive constant it is printed ``(-0.7) ** 2``."""

    def visit_Constant(self, node):
        v = node.value
        if type(v) in (int, float) and (v < 0 or (v == 0 and math.copysign(1, v) < 0)):
            return ast.copy_location(ast.UnaryOp(ast.USub(), ast.Constant(-v)), node)
        return node


def render_function(fn, filename, indent="", nested=False):
    """Source of a gast ``FunctionDef`` whose body is flat, with ``# line``
    comments taken from ``filename``; with ``nested``, inside loops and
    branches too (so that an error there is traced to its own line)."""
    header = unparse(gast.FunctionDef(name=fn.name, args=fn.args, body=[gast.Pass()],
                                      decorator_list=[], returns=None, type_comment=None,
                                      type_params=[]))
    lines = [indent + header.splitlines()[0]]
    if fn.body and isinstance(fn.body[0], gast.Expr) and isinstance(
            fn.body[0].value, gast.Constant) and isinstance(fn.body[0].value.value, str):
        lines.append(indent + "    " + repr(fn.body[0].value.value))
        body = fn.body[1:]
    else:
        body = fn.body
    _render_body(body, filename, indent + "    ", lines, [None], nested)
    return "\n".join(lines) + "\n"


def _render_body(body, filename, indent, lines, last, nested=False):
    linenos = [getattr(stmt, "lineno", None) for stmt in body]
    converted = _NegativeConstants().visit(
        gast.gast_to_ast(gast.Module(body=body, type_ignores=[]))).body
    for lineno, stmt in zip(linenos, converted):
        ast.fix_missing_locations(stmt)
        _render_statement(stmt, lineno, filename, indent, lines, last, nested)


def _render_statement(stmt, lineno, filename, indent, lines, last, nested, header=None):
    # inside a loop or branch, bookkeeping of the header's own line (a tape
    # append) is not worth a comment
    if lineno is not None and lineno != last[0] and lineno != header and filename:
        text = linecache.getline(filename, lineno).strip()
        if text:
            lines.append(f"{indent}# line {lineno}: {text}")
        last[0] = lineno
    if nested and isinstance(stmt, (ast.For, ast.While, ast.If)):
        header = copy.copy(stmt)
        header.body, header.orelse = [ast.Pass()], []
        lines.append(indent + ast.unparse(header).splitlines()[0])
        for part, word in ((stmt.body, None), (stmt.orelse, "else:")):
            if word and part:
                lines.append(indent + word)
            for inner in part:
                _render_statement(inner, getattr(inner, "lineno", None), filename,
                                  indent + "    ", lines, last, nested, lineno)
        last[0] = lineno        # what follows the block on the header's line needs no comment
        return
    for line in ast.unparse(stmt).splitlines():
        lines.append(indent + line)


def register_source(filename, text):
    """Make ``text`` visible to tracebacks, ``inspect`` and ``pdb``."""
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
