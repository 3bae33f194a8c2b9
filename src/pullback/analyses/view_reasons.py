"""Why a write through a view was not followed: the words of
``mutation``'s refusal.

``analyses.aliases`` spells out a write through a view written at the top
of the function (``v = y[1:]`` then ``v[0] = 3``) and ``frontend.view_writes``
one inside a loop or a branch, each under its conditions; a write neither
places is refused, and the refusal names the condition that failed: the
write or the view inside a loop or a branch, a view of a view, a view made
by something other than indexing or ``.T`` (``reshape``), or a name of the
array used in a way neither follows.

>>> import gast
>>> tree = gast.parse('''
... def f(x):
...     y = x * 1.0
...     v = y[1:]
...     w = v[1:]
...     w[0] = 3.0
... ''').body[0]
>>> why_not_followed(tree.body, tree.body[2], "w")[0]
'`w` is a view of `v`, itself a view of `y`: pullback follows a write through a view of an array, not through a view of a view'
"""
from __future__ import annotations

import gast

from ..ir.walk import all_statements

__all__ = ["why_not_followed"]

_NUMPY_VIEWS = ("reshape", "ravel", "transpose", "swapaxes", "moveaxis", "squeeze",
                "expand_dims", "view", "diagonal", "broadcast_to", "flip", "rot90")


def why_not_followed(body, stmt, target):
    """``(reason, hint)`` for the view ``target`` bound by ``stmt`` (a
    statement of ``body``, a function's normal-form body) and written into."""
    top = {id(s) for s in body}
    base, how = _view_source(stmt)
    writes = [s for s in all_statements(body) if _writes_into(s, target)]
    if any(id(s) not in top for s in writes):
        return (f"`{target}` is written into inside a loop or a branch, where pullback "
                "follows a write through a view only of a slice taken once at the top of "
                "the function, of an array bound once, both names only read otherwise",
                f"Write into the array itself (`y[1 + i] = ...` for `{target} = y[1:]`), or "
                "make a new array to write into (x.copy()).")
    if id(stmt) not in top:
        return (f"the view `{target}` is taken inside a loop or a branch",
                "Take the view once, before the loop or the branch, or write into the "
                "array itself.")
    if base is not None:
        outer = next((s for s in all_statements(body) if isinstance(s, gast.Assign)
                      and isinstance(s.targets[0], gast.Name) and s.targets[0].id == base
                      and _view_source(s)[0] is not None), None)
        if outer is not None:
            root = _view_source(outer)[0]
            return (f"`{target}` is a view of `{base}`, itself a view of `{root}`: pullback "
                    "follows a write through a view of an array, not through a view of a view",
                    f"Take the view of `{root}` itself (`{target} = {root}[...]`, the two "
                    f"indices composed), or write into `{root}` directly.")
    if how not in (None, "index", "T"):
        return (f"`{target}` is a view made by `{how}`, which pullback follows for reading; "
                "it follows writes through a view made by indexing (`y[1:]`) or `.T`",
                f"Write into `{base or 'the array'}` itself by index, or copy the view "
                f"(`{target} = {base or 'y'}.{how}(...).copy()`) and build from it the array "
                "you need.")
    return (f"`{target}` or the array it views is also used in a way pullback does not follow "
            "for a write through a view: aliased (`z = y`), handed to a function, put in a "
            "list or iterated over",
            f"Write into the array itself (`y[1 + i] = ...` for `{target} = y[1:]`), or make "
            "a new array to write into (x.copy()).")


def _view_source(stmt):
    """``(base, how)`` of ``v = y[...]`` (``"index"``), ``v = y.T``,
    ``v = y.reshape(...)`` or ``v = np.reshape(y, ...)``; ``(None, None)``
    for anything else."""
    value = getattr(stmt, "value", None)
    if isinstance(value, gast.Subscript) and isinstance(value.value, gast.Name):
        return value.value.id, "index"
    if isinstance(value, gast.Attribute) and isinstance(value.value, gast.Name):
        return value.value.id, value.attr
    if isinstance(value, gast.Call) and isinstance(value.func, gast.Attribute):
        if isinstance(value.func.value, gast.Name) and value.func.attr in _NUMPY_VIEWS:
            if value.args and isinstance(value.args[0], gast.Name) \
                    and isinstance(value.func.value, gast.Name) \
                    and value.func.value.id in ("np", "numpy", "jnp"):
                return value.args[0].id, value.func.attr
            return value.func.value.id, value.func.attr
    return None, None


def _writes_into(stmt, name):
    """``name[...] = v``, ``name[...] += v``, ``name += v``."""
    if isinstance(stmt, gast.Assign):
        return any(isinstance(t, gast.Subscript) and isinstance(t.value, gast.Name)
                   and t.value.id == name for t in stmt.targets)
    if isinstance(stmt, gast.AugAssign):
        t = stmt.target
        return (isinstance(t, gast.Name) and t.id == name) or (
            isinstance(t, gast.Subscript) and isinstance(t.value, gast.Name)
            and t.value.id == name)
    return False
