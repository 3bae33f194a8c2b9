r"""Calls refused before they are resolved, because what they do is out of the
transform's sight: ``out=`` into an array (outside the forms
``frontend.out_arguments`` follows), a method that changes its object in
place (``y.sort()``, ``xs.pop()`` where ``frontend.list_methods`` did not
rewrite it), a NumPy function that writes into its argument
(``np.copyto``), and the builtins that read the function's variables by name
(``eval``, ``exec``, ``locals()``, ``vars()``)::

    def f(x):
        return np.sum(eval("np.sin(x)"))     refused: eval reads `x` by name; the
                                             gradient would be 0

>>> import gast
>>> from pullback.testing import function_from_source
>>> from pullback.frontend.parse import parse
>>> parsed = parse(function_from_source("def f(x):\n    return eval('x')\n"))
>>> call = parsed.tree.body[0].value
>>> try:
...     refuse_unseen_effects(eval, "eval", call, parsed)
... except Exception as err:
...     print(str(err).splitlines()[0][:60])
pullback cannot differentiate eval(...): it reads the functi
"""
from __future__ import annotations

import builtins

from ..errors import UnsupportedSyntaxError
from .callable_facts import dotted, is_mutating_function

__all__ = ["MUTATING_METHODS", "refuse_out", "refuse_mutating_method", "refuse_unseen_effects"]

# write into an argument: pullback cannot follow them, so they are refused
# rather than differentiated as if nothing had changed.
MUTATING_METHODS = {"sort", "fill", "put", "resize", "partition", "itemset", "setfield",
                     "setflags", "byteswap", "reverse", "extend", "insert", "pop",
                     "remove", "clear", "update", "setdefault", "popitem"}
#: what to write instead of the method, in the refusal's hint (issue 13)
_NEW_VALUE = {
    "fill": "for an array's `.fill(v)`: `{y} = np.full_like({y}, v)`; ",
    "sort": "`{y} = np.sort({y})` for an array, `{y} = sorted({y})` for a list; ",
    "reverse": "`{y} = {y}[::-1]`; ", "extend": "`{y} = {y} + more`; ",
    "insert": "`{y} = {y}[:i] + [v] + {y}[i:]`; ", "update": "`{y} = {{**{y}, **more}}`; ",
    "setdefault": "`{y}[k] = {y}.get(k, default)`; a list grown under a key: "
                  "`{y}[k] = {y}.get(k, []) + [v]`; ",
    "put": "`{y} = {y}.copy(); {y}[idx] = v`; ",
}

# builtins that read the calling function's variables without being given them
_READS_LOCALS = (builtins.eval, builtins.exec, builtins.locals, builtins.vars)


def refuse_out(func, node, parsed):
    """The refusal of ``f(..., out=y)`` that ``frontend.out_arguments`` left."""
    return UnsupportedSyntaxError(
        f"pullback cannot differentiate `out=`, which writes the result of "
        f"{dotted(func)} into an existing array.", parsed.location(node),
        "Assign the result to a name instead: `y = np.sin(x)`, not `np.sin(x, out=y)`.")


def refuse_mutating_method(func, node, parsed):
    """The refusal of ``obj.sort()`` and the other in-place methods."""
    obj = dotted(func.value)
    return UnsupportedSyntaxError(
        f"pullback cannot differentiate `.{func.attr}()`, which changes `{obj}` "
        f"in place (as a list's, a dict's or an array's `.{func.attr}()` does; a "
        f"method `{func.attr}` of your own class, where the class of `{obj}` is "
        "not known when the function is transformed, would change the object, "
        "which pullback does not follow either).", parsed.location(node),
        f"Compute a new value instead of changing `{obj}` ("
        + _NEW_VALUE.get(func.attr, "").format(y=obj) + "for a method of your "
        f"own class: make it return a new object and bind it, `{obj} = "
        f"{obj}.with_{func.attr}(...)`).")


def refuse_unseen_effects(obj, label, node, parsed):
    """Raise for a call of ``obj`` (``label`` as written) that reads the
    function's variables by name or writes into its argument."""
    if obj in _READS_LOCALS and (obj is not builtins.vars or not node.args):
        raise UnsupportedSyntaxError(
            f"pullback cannot differentiate {label}(...): it reads the function's "
            "variables by name, out of sight of the transform, so what it computes from "
            "them would carry no gradient.", parsed.location(node),
            "Write the expression itself in the function (`np.sin(x)`, not "
            "`eval('np.sin(x)')`), or pick the function from a dict of functions.")
    if is_mutating_function(obj):
        raise UnsupportedSyntaxError(
            f"pullback cannot differentiate {label}, which changes its argument in place.",
            parsed.location(node),
            "Build the new array with indexing writes into an array the function "
            "creates (`y = x.copy(); y[idx] = v`), or with np.where.")
