"""Which parameters a function writes into, and its *variant*, which a
call that must see the writes goes to (``frontend.writes``).

A parameter is written into while it holds the caller's object: by index
(``s[0] += v``, ``np.add.at(s, i, v)``), by an update (``s += v``, in place
for an array, a rebinding for a number), or by a call that writes into it.
The variant works on copies of those arguments and returns the result with
their new values::

>>> import numpy as np
>>> from pullback.testing import function_from_source
>>> step = function_from_source('''
... def step(s, v, dt):
...     s[0] += dt * v
...     v -= dt
... ''')
>>> written_params(step)
{'s': 'item', 'v': 'update'}
>>> s = np.zeros(2)
>>> variant(step)(s, 1.0, 0.5), s
((None, array([0.5, 0. ]), 1.0), array([0., 0.]))
"""
from __future__ import annotations

import inspect
import types
import weakref

import gast
import numpy as np

from ..errors import PullbackError, UnsupportedSyntaxError
from ..rules.registry import nondifferentiable
from ..runtime.arguments import arguments_apart, number_argument, result_apart
from ..runtime.origin import module_name

__all__ = ["written_params", "variant", "argument_written", "ITEM", "UPDATE", "MIXED", "walk", "static_callee",
           "bound_arguments", "scan", "attribute_stores", "stored_values"]

ITEM, UPDATE, MIXED = "item", "update", "mixed"
_ITEM, _UPDATE, _MIXED = ITEM, UPDATE, MIXED


_variants = weakref.WeakKeyDictionary()


def variant(fn):
    """``fn``'s variant: called as ``fn`` is, it works on copies of the
    arguments ``fn`` writes into and returns ``(result, new value of each)``,
    in ``written_params(fn)``'s order; a number updated (``n += 1``) comes
    back unchanged, as the caller's number is."""
    v = _variants.get(fn)
    if v is not None:
        return v
    written = list(written_params(fn))
    sig = inspect.signature(fn, follow_wrapped=False)

    def writes(*args, **kwargs):
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        for p in written:
            if isinstance(bound.arguments[p], np.ndarray):
                bound.arguments[p] = bound.arguments[p].copy()
        result = fn(*bound.args, **bound.kwargs)
        return (result,) + tuple(bound.arguments[p] for p in written)

    writes.__signature__ = sig
    writes.__name__ = writes.__qualname__ = f"{fn.__name__}_writes"
    writes.__module__ = fn.__module__
    writes.__pullback_variant__ = (fn, tuple(written))
    _variants[fn] = writes
    return writes


# -- which parameters a function writes into ------------------------------------------

_written = weakref.WeakKeyDictionary()


def written_params(fn):
    """``{param: how}`` for the parameters ``fn`` writes into while they hold
    the caller's object: ``"item"`` (``p[i] = v``, ``p[i] += v``,
    ``np.add.at(p, ...)``, or passed to a function that writes into it),
    ``"update"`` (``p += v``: in place for an array, a rebinding for a number),
    ``"mixed"`` (written into by index and also rebound, ``p = ...``, so which
    object a write reaches depends on the path taken).  A parameter only
    updated and also rebound is left out: a number's updates rebind it, an
    array's are refused by ``updates.check_updates``."""
    fn = getattr(fn, "__pullback_variant__", (fn,))[0]
    if _library(fn):
        return {}       # run as plain Python, checked when it runs (runtime.opaque)
    try:
        memo = _written.get(fn)
    except TypeError:
        return {}
    if fn in _progress:             # a recursive call: the approximation so far
        _progress[fn][1] = True
        return _progress[fn][0]
    if memo is not None:
        return memo
    try:
        parsed, _ = _front(fn)
    except (PullbackError, TypeError, ValueError, SyntaxError, OSError):
        return {}                   # (its own transform refuses it, if it is called)
    # recursion: scan again until the writes found stop growing; a result that
    # read another function's unfinished one is not kept (asked again later)
    _progress[fn] = [{}, False]
    try:
        while True:
            outer = {g: state[1] for g, state in _progress.items() if g is not fn}
            for g in outer:
                _progress[g][1] = False
            _progress[fn][1] = False
            found = scan(parsed.tree, parsed)
            unfinished = any(_progress[g][1] for g in outer)
            for g, was in outer.items():
                _progress[g][1] = _progress[g][1] or was
            if found == _progress[fn][0] or not _progress[fn][1]:
                break
            _progress[fn][0] = found
    finally:
        del _progress[fn]
    if not unfinished:
        _written[fn] = found
    return found


_progress = {}      # fn -> [its writes found so far, whether a recursive call read them]


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


def scan(tree, parsed):
    params = [a.id for a in tree.args.args] + [a.id for a in tree.args.kwonlyargs]
    modes, rebound = {}, set()
    leading = _leading_copies(tree.body, params)

    # `z = p` (or an item of a list `state = [q, p]`, named by list_items):
    # a write through z reaches p where z holds p's array
    # (a name bound only so: one rebound to a new array writes into that)
    sources, bindings = {}, {}
    for node in walk(tree.body):
        if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Store):
            bindings[node.id] = bindings.get(node.id, 0) + 1
        if isinstance(node, gast.AugAssign) and isinstance(node.target, gast.Name):
            bindings[node.target.id] = bindings.get(node.target.id, 0) - 1
        if isinstance(node, gast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], gast.Name) and isinstance(node.value, gast.Name):
            sources.setdefault(node.targets[0].id, []).append(node.value.id)
    sources = {z: set(ps) for z, ps in sources.items() if len(ps) == bindings.get(z)}

    def mark(p, how, seen=()):
        if p in params and p not in leading:
            modes[p] = _ITEM if _ITEM in (how, modes.get(p)) else how
        for q in sources.get(p, ()):
            if q not in seen:
                mark(q, how, (*seen, p))

    for node in walk(tree.body):
        if isinstance(node, (gast.Assign, gast.AugAssign)):
            targets = node.targets if isinstance(node, gast.Assign) else [node.target]
            for t in targets:
                base = _base(t)
                if isinstance(t, gast.Name):
                    if isinstance(node, gast.AugAssign):
                        mark(t.id, _UPDATE)
                    else:
                        rebound.add(t.id)
                elif base is not None and isinstance(t, gast.Subscript):
                    mark(base, _ITEM)
                elif isinstance(t, (gast.Tuple, gast.List)):
                    rebound.update(n.id for n in gast.walk(t) if isinstance(n, gast.Name))
        elif isinstance(node, gast.For):
            rebound.update(n.id for n in gast.walk(node.target) if isinstance(n, gast.Name))
        elif isinstance(node, gast.Call):
            f = node.func
            if isinstance(f, gast.Attribute) and f.attr == "at" and node.args \
                    and isinstance(node.args[0], gast.Name):
                mark(node.args[0].id, _ITEM)        # np.add.at(p, idx, v)
            callee = static_callee(f, parsed, params)
            if callee is not None:
                for q, arg in bound_arguments(callee, node).items():
                    how = written_params(callee).get(q)
                    if how and isinstance(arg, gast.Name):
                        mark(arg.id, how)
    # `s += v` and `s = ...`: a number's updates only rebind it; an array's
    # are refused by check_updates (whose object a path reaches is not known)
    return {p: (_MIXED if p in rebound else modes[p]) for p in params
            if p in modes and not (p in rebound and modes[p] == _UPDATE)}


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


# -- which parameters a function stores attributes into --------------------------------

_stored = weakref.WeakKeyDictionary()
_stored_progress = {}   # fn -> [its stores found so far, whether a recursive call read them]


def _library(fn):
    from ..runtime.opaque import is_library_code
    return is_library_code(fn)


def attribute_stores(fn):
    """``{param: (attribute, function, method)}`` for the parameters ``fn``
    stores an attribute into, directly or through a call of a function it
    names (``p.b = v``, ``p.b op= v``, ``del p.b``, ``setattr(p, "b", v)``),
    also into an object reached from the parameter (``p.layers[0].w = v``)
    or through a local alias of it: ``(attribute or None, function, None)``,
    the attribute ``None`` where its name is not a constant, ``function`` the
    one whose body holds the store.  Methods called on the parameter
    (``p.reset()``, not an array's or a container's), whose class is known
    only when they run, give ``(None, function, ("reset", ...))`` where no
    store is found::

    >>> from pullback.testing import function_from_source
    >>> h = function_from_source('''
    ... def h(p, q):
    ...     r = p
    ...     r.b = 0.0
    ...     s = Q(q)
    ...     s.b = 1.0
    ... ''')
    >>> {p: (a, f.__name__, m) for p, (a, f, m) in attribute_stores(h).items()}
    {'p': ('b', 'h', ())}

    A store into an object the function makes, a global, or a parameter
    rebound by the first statements (``p = dataclasses.replace(p)``) is not
    one of them."""
    return _analysis(fn)[0]


def stored_values(fn):
    """``{param: (target, function)}`` for the parameters whose value ``fn``
    stores into an attribute of any object (``log.last = v * 2``: ``v``
    flows into ``log.last``), directly or through the functions it calls by
    name; values that carry no gradient (``v.shape``, ``len(v)``, a
    comparison) are not counted::

    >>> from pullback.testing import function_from_source
    >>> stash = function_from_source('''
    ... def stash(log, v, w):
    ...     y = v * 2.0
    ...     log.last = y
    ...     log.n = w.shape[0]
    ... ''')
    >>> {p: (t, f.__name__) for p, (t, f) in stored_values(stash).items()}
    {'v': ('log.last', 'stash')}
    """
    return _analysis(fn)[1]


def _analysis(fn):
    fn = getattr(fn, "__pullback_variant__", (fn,))[0]
    if _library(fn):
        return {}, {}   # run as plain Python, checked when it runs (runtime.opaque)
    try:
        memo = _stored.get(fn)
    except TypeError:
        return {}, {}
    if fn in _stored_progress:      # a recursive call: the approximation so far
        _stored_progress[fn][1] = True
        return _stored_progress[fn][0]
    if memo is not None:
        return memo
    try:
        parsed, _ = _front(fn)
    except (PullbackError, TypeError, ValueError, SyntaxError, OSError):
        return {}, {}               # (its own transform refuses it, if it is called)
    _stored_progress[fn] = [({}, {}), False]
    unfinished = False
    try:
        while True:
            outer = {g: state[1] for g, state in _stored_progress.items() if g is not fn}
            for g in outer:
                _stored_progress[g][1] = False
            _stored_progress[fn][1] = False
            found = _scan_stores(parsed.tree, parsed, fn)
            unfinished = any(_stored_progress[g][1] for g in outer)
            for g, was in outer.items():
                _stored_progress[g][1] = _stored_progress[g][1] or was
            if found == _stored_progress[fn][0] or not _stored_progress[fn][1]:
                break
            _stored_progress[fn][0] = found
    finally:
        del _stored_progress[fn]
    if not unfinished:
        _stored[fn] = found
    return found


def _known_method(name):
    """A method of arrays (with a rule, or non-differentiable) or of the
    builtin containers, which stores no attribute."""
    from ..rules.registry import is_nondifferentiable, lookup
    if name in _CONTAINER_METHODS:
        return True
    key = f"ndarray.{name}"
    return lookup(key) is not None or is_nondifferentiable(key)


_CONTAINER_METHODS = frozenset(
    n for t in (list, tuple, dict, str, set) for n in dir(t) if not n.startswith("_"))


def _root(node):
    """The name an expression's object is reached from (``p`` for ``p``,
    ``p.a``, ``p.a[0].b``), else None."""
    while isinstance(node, (gast.Attribute, gast.Subscript, gast.Starred)):
        node = node.value
    return node.id if isinstance(node, gast.Name) else None


def _target_names(target):
    """The names a target binds (``a``, ``a, (b, *c)``), not those inside an
    attribute or an index it stores into."""
    if isinstance(target, gast.Name):
        return [target.id]
    if isinstance(target, gast.Starred):
        return _target_names(target.value)
    if isinstance(target, (gast.Tuple, gast.List)):
        return [n for e in target.elts for n in _target_names(e)]
    return []


_NO_GRADIENT_ATTRIBUTES = frozenset({"shape", "ndim", "dtype", "size"})
_NO_GRADIENT_CALLS = frozenset({"len", "isinstance", "type", "id", "str", "repr", "bool",
                                "callable", "hasattr"})


def _mentioned(expr, names):
    """The names of ``names`` whose value may flow into ``expr``'s (not
    through ``.shape``, ``len(...)``, a comparison, which carry no gradient)."""
    out, work = [], [expr]
    while work:
        node = work.pop()
        if isinstance(node, gast.Name):
            if node.id in names:
                out.append(node.id)
            continue
        if isinstance(node, gast.Attribute) and node.attr in _NO_GRADIENT_ATTRIBUTES \
                or isinstance(node, gast.Compare) \
                or isinstance(node, gast.Call) and isinstance(node.func, gast.Name) \
                and node.func.id in _NO_GRADIENT_CALLS:
            continue
        if isinstance(node, (gast.Lambda, gast.FunctionDef)):
            continue
        work.extend(gast.iter_child_nodes(node))
    return out


def _scan_stores(tree, parsed, fn):
    args = tree.args
    params = [a.id for a in args.args + args.kwonlyargs]
    params += [a.id for a in (args.vararg, args.kwarg) if a is not None]
    leading = _leading_copies(tree.body, params)
    reach = {p: p for p in params if p not in leading}     # name -> the parameter it reaches
    taint = {p: p for p in params}          # name -> a parameter whose value flows into it
    nodes = list(walk(tree.body))
    changed = True
    while changed:      # aliases: `q = p`, `layer = p.layers[0]`, `for l in p.ls`; values
        changed = False
        for node in nodes:
            pairs = []
            if isinstance(node, (gast.Assign, gast.AugAssign, gast.AnnAssign)):
                targets = node.targets if isinstance(node, gast.Assign) else [node.target]
                pairs = [(t, node.value) for t in targets if node.value is not None]
            elif isinstance(node, (gast.For, gast.comprehension)):
                pairs = [(node.target, node.iter)]
            elif isinstance(node, gast.NamedExpr):
                pairs = [(node.target, node.value)]
            elif isinstance(node, gast.withitem) and node.optional_vars is not None:
                pairs = [(node.optional_vars, node.context_expr)]
            for target, value in pairs:
                names = _target_names(target)
                values = value.elts if isinstance(value, (gast.Tuple, gast.List)) else [value]
                src = next((reach[r] for r in map(_root, values) if r in reach), None)
                if src is not None and not isinstance(node, gast.AugAssign):
                    for n in names:
                        if n not in reach:
                            reach[n], changed = src, True
                flows = _mentioned(value, taint)
                for n in names:
                    if flows and n not in taint:
                        taint[n], changed = taint[flows[0]], True
    local = {n.id for n in nodes if isinstance(n, gast.Name)
             and isinstance(n.ctx, gast.Store)} | set(params)
    found, methods, flows = {}, {}, {}

    def note(obj, attr, where, called=()):
        r = _root(obj)
        if r not in reach:
            return
        if called:
            methods[reach[r]] = methods.get(reach[r], ()) + tuple(
                m for m in called if m not in methods.get(reach[r], ()))
        elif reach[r] not in found:
            found[reach[r]] = (attr, where, ())

    def flow(value, target, where):
        for n in _mentioned(value, taint):
            flows.setdefault(taint[n], (target, where))

    for node in nodes:
        if isinstance(node, (gast.Assign, gast.AugAssign, gast.AnnAssign, gast.Delete)):
            targets = node.targets if isinstance(node, (gast.Assign, gast.Delete)) \
                else [node.target]
            for t in targets:
                for n in gast.walk(t):
                    if isinstance(n, gast.Attribute) and isinstance(n.ctx, (gast.Store,
                                                                            gast.Del)):
                        note(n.value, n.attr, fn)
                        if getattr(node, "value", None) is not None:
                            flow(node.value, _text(n), fn)
        elif isinstance(node, gast.Call):
            f = node.func
            if isinstance(f, gast.Name) and f.id in ("setattr", "delattr") and node.args \
                    and f.id not in local and f.id not in parsed.globals \
                    and f.id not in parsed.closure:
                name = node.args[1] if len(node.args) > 1 else None
                attr = name.value if isinstance(name, gast.Constant) \
                    and isinstance(name.value, str) else None
                note(node.args[0], attr, fn)
                for v in node.args[2:]:
                    flow(v, f"{_text(node.args[0])}.{attr or '...'}", fn)
                continue
            if isinstance(f, gast.Attribute) and _root(f.value) in reach \
                    and not _known_method(f.attr):
                note(f.value, None, fn, (f.attr,))  # `p.reset()`: its class is not known here
            callee = static_callee(f, parsed, local)
            if callee is not None:
                stores, values = _analysis(callee)
                for q, arg in bound_arguments(callee, node).items():
                    args = arg if isinstance(arg, tuple) else tuple(arg.values()) \
                        if isinstance(arg, dict) else (arg,)
                    for a in args:
                        if q in stores:
                            note(a, *stores[q])
                        if q in values:
                            flow(a, *values[q])
    for p, called in methods.items():
        if p not in found:
            found[p] = (None, fn, called)
    return found, flows


def _text(node):
    if isinstance(node, gast.Name):
        return node.id
    if isinstance(node, gast.Attribute):
        return f"{_text(node.value)}.{node.attr}"
    return "..."


def walk(stmts):
    """The nodes of ``stmts``, nested functions and lambdas left out."""
    work = list(stmts)
    while work:
        node = work.pop()
        yield node
        for child in gast.iter_child_nodes(node):
            if not isinstance(child, (gast.FunctionDef, gast.Lambda, gast.ClassDef)):
                work.append(child)


def _base(target):
    while isinstance(target, gast.Subscript):
        target = target.value
    return target.id if isinstance(target, gast.Name) else None


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


# -- the runtime side -----------------------------------------------------------------

def argument_written(parsed, p, stmt, kind):
    """The refusal of a write into the argument ``p`` that is not an array
    (frontend.writes copies arrays written into): a list, or a variable a
    nested function captures (lifted to an argument)."""
    from ..analyses.kinds import Shape
    what = "a list or a tuple" if getattr(kind, "shape", None) is Shape.CONTAINER \
        else "not known to be an array"
    nested, captured = getattr(parsed.fn, "__pullback_captured__", (None, ()))
    if p in captured:
        return UnsupportedSyntaxError(
            f"The nested function `{nested}` writes into `{p}`, a variable it captures from "
            f"the function around it, and `{p}` is {what}; pullback follows such writes "
            "only into arrays.", parsed.location(stmt),
            f"Make `{p}` an array (`{p} = np.zeros(1)`), or count with a number: "
            f"`nonlocal {p}` and `{p} += 1`.")
    if getattr(kind, "shape", None) is Shape.CONTAINER:
        name = getattr(parsed.fn, "__name__", "f")
        return UnsupportedSyntaxError(
            f"The function writes into its argument `{p}` by item, and `{p}` is a list or a "
            "tuple: the write would change the caller's list, which pullback's transforms "
            "never do, and pullback follows writes by item only into a list the function "
            "builds itself (`state = [q, p]`).", parsed.location(stmt),
            f"Build a new list instead (`{p} = [{p}[0] - g] + {p}[1:]`) and return it "
            f"where a caller needs the change: `return {p}`, then `{p} = {name}({p}, ...)` "
            "in the caller.")
    return UnsupportedSyntaxError(
        f"The function writes into its argument `{p}`, which is {what}; pullback follows "
        "writes into array arguments (on its own copy) only.", parsed.location(stmt),
        f"Pass an array, or work on a copy: `{p} = {p}.copy()` at the top of the function.")


# (generated code calls these; they live in the runtime, which artifacts import)
_apart, _result_apart, _number_argument = arguments_apart, result_apart, number_argument


nondifferentiable(_apart, _number_argument, _result_apart)
