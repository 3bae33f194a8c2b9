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
import re

import gast

__all__ = ["unparse", "render_function", "register_source", "source_lines", "check_nesting"]

#: Where Python's tokenizer ends a line.  ``str.splitlines`` also splits at
#: form feeds, ``\x1c``-``\x1e``, ``\x85``, ``\u2028`` and ``\u2029``, which
#: Python reads as part of a comment or a string: splitting generated text
#: there would turn the rest of a comment into code.
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def source_lines(text, keepends=False):
    """The lines of Python source ``text`` as Python's tokenizer counts them
    (ended only by ``\\n``, ``\\r\\n`` or ``\\r``).

    >>> source_lines("a  # b\\x0cc = 1\\nd = '\\u2028'\\r\\ne")
    ['a  # b\\x0cc = 1', "d = '\\u2028'", 'e']
    """
    lines = _LINE.findall(text)
    return lines if keepends else [line.rstrip("\r\n") for line in lines]


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
    lines = [indent + source_lines(header)[0]]
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
        text = _comment_text(linecache.getline(filename, lineno))
        if text:
            lines.append(f"{indent}# line {lineno}: {text}")
        last[0] = lineno
    if nested and isinstance(stmt, (ast.For, ast.While, ast.If)):
        _render_block(stmt, lineno, filename, indent, lines, last)
        return
    for line in source_lines(ast.unparse(stmt)):
        lines.append(indent + line)


def _render_block(stmt, lineno, filename, indent, lines, last):
    """A loop or branch, its body rendered statement by statement; a branch
    whose ``else`` is one ``if`` continues as ``elif`` at the same level (as
    ``ast.unparse`` writes it), so a chain of ``elif`` does not nest."""
    word, own = "", lineno
    while True:
        header = copy.copy(stmt)
        header.body, header.orelse = [ast.Pass()], []
        lines.append(indent + word + source_lines(ast.unparse(header))[0])
        for inner in stmt.body:
            _render_statement(inner, getattr(inner, "lineno", None), filename,
                              indent + "    ", lines, last, True, own)
        orelse = stmt.orelse
        if not (isinstance(stmt, ast.If) and len(orelse) == 1 and isinstance(orelse[0], ast.If)):
            break
        stmt, word = orelse[0], "el"
        own = getattr(stmt, "lineno", None)
        if own is not None and own != last[0] and filename:
            text = _comment_text(linecache.getline(filename, own))
            if text:
                lines.append(f"{indent}# line {own}: {text}")
            last[0] = own
    if orelse:
        lines.append(indent + "else:")
        for inner in orelse:
            _render_statement(inner, getattr(inner, "lineno", None), filename,
                              indent + "    ", lines, last, True, own)
    last[0] = lineno        # what follows the block on the header's line needs no comment


def register_source(filename, text):
    """Make ``text`` visible to tracebacks, ``inspect`` and ``pdb``."""
    linecache.cache[filename] = (len(text), None, source_lines(text, True), filename)


def _comment_text(line):
    """The user's line as the text of a ``# line N:`` comment: exactly as
    written (form feeds, ``\\u2028`` and all, which a comment may hold), but
    never a line break (none can be in a line linecache gives, but a source
    registered by hand may hold a lone ``\\r``)."""
    return line.rstrip("\r\n").strip(" \t\x0c").replace("\r", "\\r").replace("\n", "\\n")


# -- how deep generated code nests ------------------------------------------------

#: Python refuses a line indented 100 levels; a generated function sits one
#: level inside its factory and its body one more, and the rest is margin.
MAX_INDENT = 95
#: ... and more than 20 loops, ``with`` and ``try`` blocks inside each other.
MAX_BLOCKS = 20
_BLOCKS = (gast.For, gast.AsyncFor, gast.While, gast.With, gast.AsyncWith, gast.Try)


def _children(stmt):
    """The statement lists inside ``stmt``, each with how many indentation
    levels (beyond ``stmt``'s own) and blocks its statements sit in."""
    block = int(isinstance(stmt, _BLOCKS))
    orelse = getattr(stmt, "orelse", None) or []
    elif_ = isinstance(stmt, gast.If) and len(orelse) == 1 and isinstance(orelse[0], gast.If)
    yield stmt.body if hasattr(stmt, "body") and isinstance(stmt.body, list) else [], 1, block
    yield orelse, 0 if elif_ else 1, block          # (an `elif` sits at its `if`'s level)
    yield getattr(stmt, "finalbody", None) or [], 1, block
    for handler in getattr(stmt, "handlers", None) or []:
        yield handler.body, 1, block + 1
    for case in getattr(stmt, "cases", None) or []:
        yield case.body, 2, block


def check_nesting(fn, location, name=None):
    """Raise ``UnsupportedSyntaxError`` if the generated function ``fn`` (a
    gast ``FunctionDef``) nests deeper than Python compiles; ``location(node)``
    gives the user's ``Location`` of a statement that carries its line;
    ``name`` is the user's function, as the message names it."""
    from ..errors import UnsupportedSyntaxError
    stack = [(stmt, 0, 0, stmt) for stmt in reversed(fn.body)]
    while stack:
        stmt, indent, blocks, user = stack.pop()
        user = stmt if getattr(stmt, "lineno", None) is not None else user
        if indent > MAX_INDENT or blocks > MAX_BLOCKS:
            what = (f"{MAX_INDENT} levels of blocks" if indent > MAX_INDENT else
                    f"{MAX_BLOCKS} loops, `with` and `try` blocks inside each other")
            raise UnsupportedSyntaxError(
                f"The code pullback generates for {name or fn.name} would nest more than "
                f"{what} here, more than Python compiles (it allows 100 levels of "
                "indentation and 20 nested loops); each `if`, `elif` and loop adds a level.",
                location(user),
                "Nest less: join conditions with `and` (`if a and b:`), return early, look "
                "values up in a list or dict instead of a long `elif` chain, or move the "
                "inner part into a function of its own and call it.")
        for body, deeper, more in _children(stmt):
            stack.extend((s, indent + deeper, blocks + more, user) for s in reversed(body))
