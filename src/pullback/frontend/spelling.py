"""How the user wrote a value the compiler named: error messages quote the
user's own text (``x[0] * 2``), never a temporary that normalizing the
function made up for it (``x_item_2``).

Before, the argument a message is about, in the normal form; after, as the
user's call spells it in the file:

>>> import gast, linecache, types
>>> text = "def f(x):\\n    return np.interp(t, xp, x, left=x[0] * 2)\\n"
>>> linecache.cache["<spelling>"] = (len(text), None, text.splitlines(True), "<spelling>")
>>> parsed = types.SimpleNamespace(tree=gast.parse(text).body[0], filename="<spelling>")
>>> call = parsed.tree.body[0].value
>>> normal = gast.copy_location(gast.Call(func=call.func, args=call.args, keywords=[
...     gast.keyword(arg="left", value=gast.Name("x_item_2", gast.Load(), None, None))]), call)
>>> bind = lambda args, kwargs: {"x": args[0], "xp": args[1], "fp": args[2], **kwargs}
>>> spelled(parsed, normal, "x_item_2", "left", bind)
'`x[0] * 2`'
>>> spelled(parsed, normal, "x", "fp", bind)
'`x`'
"""
from __future__ import annotations

import linecache

import gast

__all__ = ["spelled"]


def spelled(parsed, node, name, param, bind):
    """How a message names ``name``, the value bound to ``param`` in the call
    ``node`` of the normal form: ``name`` itself when the user wrote it, else
    the text the user's call at the same place passes there (bound by
    ``bind(args, kwargs)``, a mapping or ``inspect.BoundArguments``), else
    "the value passed as `param`".  ``parsed`` has the user's ``tree`` (as
    the front end rewrote it: lambdas lifted) and ``filename``; the text is
    read from the file, so it is what the user wrote."""
    if any(isinstance(n, gast.Name) and n.id == name for n in gast.walk(parsed.tree)):
        return f"`{name}`"
    where = _position(node)
    for call in gast.walk(parsed.tree):
        if isinstance(call, gast.Call) and where is not None and _position(call) == where:
            try:
                bound = bind(call.args, {k.arg: k.value for k in call.keywords if k.arg})
            except TypeError:
                break
            text = _source(parsed.filename, getattr(bound, "arguments", bound).get(param))
            if text:
                return f"`{text}`"
            break
    return f"the value passed as `{param}`"


def _position(node):
    at = tuple(getattr(node, f, None) for f in ("lineno", "col_offset", "end_lineno",
                                                 "end_col_offset"))
    return None if None in at else at


def _source(filename, node):
    """The text of ``node`` in ``filename`` (within one line), or None."""
    at = _position(node) if isinstance(node, gast.expr) else None
    if at is None or at[0] != at[2]:
        return None
    line = linecache.getline(filename, at[0]).encode()
    return line[at[1]:at[3]].decode(errors="replace").strip() or None
