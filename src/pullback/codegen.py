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
import linecache

import gast

__all__ = ["unparse", "render_function", "register_source"]


def unparse(node):
    """Python source of one gast node (no comments)."""
    tree = gast.gast_to_ast(node)
    ast.fix_missing_locations(tree)
    return ast.unparse(tree)


def render_function(fn, filename, indent=""):
    """Source of a gast ``FunctionDef`` whose body is flat, with ``# line``
    comments taken from ``filename``."""
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
    _render_body(body, filename, indent + "    ", lines, [None])
    return "\n".join(lines) + "\n"


def _render_body(body, filename, indent, lines, last):
    linenos = [getattr(stmt, "lineno", None) for stmt in body]
    converted = gast.gast_to_ast(gast.Module(body=body, type_ignores=[])).body
    for lineno, stmt in zip(linenos, converted):
        if lineno is not None and lineno != last[0] and filename:
            text = linecache.getline(filename, lineno).strip()
            if text:
                lines.append(f"{indent}# line {lineno}: {text}")
            last[0] = lineno
        ast.fix_missing_locations(stmt)
        for line in ast.unparse(stmt).splitlines():
            lines.append(indent + line)


def register_source(filename, text):
    """Make ``text`` visible to tracebacks, ``inspect`` and ``pdb``."""
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
