"""How the user wrote a value the compiler named: error messages quote the
user's own expression (``x[0] * 2``), never a temporary that normalizing
the function made up for it (``x_item_2``).

Before, the argument a message is about, in the normal form; after, as the
user's call spells it:

>>> import gast
>>> user = gast.parse("def f(x):\\n    return np.interp(t, xp, x, left=x[0] * 2)\\n").body[0]
>>> call = user.body[0].value
>>> normal = gast.Call(func=call.func, args=call.args, keywords=[
...     gast.keyword(arg="left", value=gast.Name("x_item_2", gast.Load(), None, None))])
>>> gast.copy_location(normal, call) is normal
True
>>> bind = lambda args, kwargs: {"x": args[0], "xp": args[1], "fp": args[2], **kwargs}
>>> spelled(user, normal, "x_item_2", "left", bind)
'`x[0] * 2`'
>>> spelled(user, normal, "x", "fp", bind)
'`x`'
"""
from __future__ import annotations

import gast

__all__ = ["spelled"]


def spelled(user_tree, node, name, param, bind):
    """How a message names ``name``, the value bound to ``param`` in the call
    ``node`` of the normal form: ``name`` itself when the user wrote it, else
    the expression the user's call at the same place passes there (bound by
    ``bind(args, kwargs)``, a mapping or ``inspect.BoundArguments``), else
    "the value passed as `param`"."""
    if any(isinstance(n, gast.Name) and n.id == name for n in gast.walk(user_tree)):
        return f"`{name}`"
    where = _position(node)
    for call in gast.walk(user_tree):
        if isinstance(call, gast.Call) and where is not None and _position(call) == where:
            try:
                bound = bind(call.args, {k.arg: k.value for k in call.keywords if k.arg})
            except TypeError:
                break
            expr = getattr(bound, "arguments", bound).get(param)
            if isinstance(expr, gast.expr):
                return f"`{gast.unparse(expr).strip()}`"
            break
    return f"the value passed as `{param}`"


def _position(node):
    at = tuple(getattr(node, f, None) for f in ("lineno", "col_offset", "end_lineno",
                                                 "end_col_offset"))
    return None if at[0] is None else at
