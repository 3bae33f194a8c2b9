"""What the scans of a function's writes (``written``) and attribute
stores (``attribute_stores``) ask of its code: its tree as the front end
makes it (``_front``), its nodes outside nested functions (``walk``), the
functions its calls name statically and the arguments bound to their
parameters (``static_callee``, ``bound_arguments``)::

>>> from pullback.testing import function_from_source
>>> f = function_from_source('''
... def f(s, v):
...     helper(s, v)
...
... def helper(a, b):
...     a[0] = b
... ''')
>>> parsed, _ = _front(f)
>>> call = parsed.tree.body[0].value
>>> callee = static_callee(call.func, parsed, {"s", "v"})
>>> callee.__name__, sorted(bound_arguments(callee, call))
('helper', ['a', 'b'])
"""
from __future__ import annotations

import inspect
import types

import gast

from ..errors import PullbackError
from ..ir.walk import unnested_nodes as walk  # noqa: F401  (writes, written read it here)
from ..runtime.origin import module_name


def _front(fn, structured=False):
    """``fn`` parsed, desugared, its nested functions lifted (and with
    ``structured``, its early exits made flags): the tree the pass sees."""
    from ..ir.naming import Namer
    from . import closures, desugar, parse, structure
    from .list_items import split_lists
    parsed = parse.parse(fn)
    namer = Namer.for_tree(parsed.tree, parsed.globals.keys())
    desugar.desugar(parsed.tree, namer, parsed)
    closures.lift_closures(parsed.tree, namer, parsed)
    split_lists(parsed.tree, namer, parsed)       # (as follow_writes does first)
    if structured:
        structure.structure(parsed.tree, namer, parsed)
    return parsed, namer


def _leading_copies(body, params):
    """Parameters rebound by the body's first statements before anything
    else reads them (``x = x.copy()``): writes after reach the copy."""
    out = set()
    for s in body:
        if isinstance(s, gast.Assign) and len(s.targets) == 1 \
                and isinstance(s.targets[0], gast.Name) and s.targets[0].id in params:
            out.add(s.targets[0].id)
            continue
        if isinstance(s, gast.Expr) and isinstance(s.value, gast.Constant):
            continue        # a docstring
        break
    return out


def _library(fn):
    from ..runtime.opaque import is_library_code
    return is_library_code(fn)


def _known_method(name):
    """A method of arrays (with a rule, or non-differentiable), of the
    builtin containers or of a namedtuple, which stores no attribute."""
    from ..rules.registry import is_nondifferentiable, lookup
    if name in _CONTAINER_METHODS:
        return True
    key = f"ndarray.{name}"
    return lookup(key) is not None or is_nondifferentiable(key)


_CONTAINER_METHODS = frozenset(
    n for t in (list, tuple, dict, str, set) for n in dir(t) if not n.startswith("_")) | {
    "_replace", "_asdict"}      # a namedtuple's: a new object, a new dict


def static_callee(func, parsed, local):
    """The Python function a call's ``func`` names when it is a global or a
    closure variable (not a local, whose value is known only when it runs)."""
    if not isinstance(func, gast.Name) or func.id in local:
        return None
    if func.id in parsed.closure:
        try:
            obj = parsed.closure[func.id].cell_contents
        except ValueError:
            return None
    elif func.id in parsed.globals:
        obj = parsed.globals[func.id]
    else:
        return None
    if not isinstance(obj, types.FunctionType) or getattr(obj, "__pullback_variant__", None):
        return None
    if module_name(obj).split(".")[0] in ("numpy", "scipy", "jax", "pullback"):
        return None
    return obj


def bound_arguments(callee, call):
    """``{param: argument node}`` for a call (empty if it cannot be bound)."""
    if any(isinstance(a, gast.Starred) for a in call.args) \
            or any(k.arg is None for k in call.keywords):
        return {}
    try:
        sig = inspect.signature(callee, follow_wrapped=False)
        return dict(sig.bind_partial(*call.args, **{k.arg: k.value
                                                    for k in call.keywords}).arguments)
    except (TypeError, ValueError):
        return {}


def to_fixpoint(fn, memo, progress, empty, scan):
    """``scan(fn, parsed)`` of ``fn``'s tree as the front end makes it (for a
    writer's variant: the writer and its tree), kept in ``memo``; ``empty()`` for library code
    (run as plain Python, checked when it runs: ``runtime.opaque``) and for
    a function the front end refuses (its own transform refuses it, if it is
    called).  Recursion: a call of ``fn`` met while ``fn`` is scanned reads
    the approximation so far (``progress``: fn -> [found so far, whether a
    recursive call read it]), and ``fn`` is scanned again until what it finds
    stops growing; a result that read another function's unfinished one is
    not kept (asked again later)."""
    fn = getattr(fn, "__pullback_variant__", (fn,))[0]
    if _library(fn):
        return empty()
    try:
        known = memo.get(fn)
    except TypeError:
        return empty()
    if fn in progress:              # a recursive call: the approximation so far
        progress[fn][1] = True
        return progress[fn][0]
    if known is not None:
        return known
    try:
        parsed, _ = _front(fn)
    except (PullbackError, TypeError, ValueError, SyntaxError, OSError):
        return empty()
    progress[fn] = [empty(), False]
    unfinished = False
    try:
        while True:
            outer = {g: state[1] for g, state in progress.items() if g is not fn}
            for g in outer:
                progress[g][1] = False
            progress[fn][1] = False
            found = scan(fn, parsed)
            unfinished = any(progress[g][1] for g in outer)
            for g, was in outer.items():
                progress[g][1] = progress[g][1] or was
            if found == progress[fn][0] or not progress[fn][1]:
                break
            progress[fn][0] = found
    finally:
        del progress[fn]
    if not unfinished:
        memo[fn] = found
    return found
