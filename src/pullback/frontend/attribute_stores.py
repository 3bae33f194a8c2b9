"""Which parameters a function stores attributes into, and which
parameters' values it stores into an attribute of any object.

``attribute_stores(fn)`` and ``stored_values(fn)`` scan ``fn``'s tree as the
front end makes it (``function_scans._front``), following local aliases of
a parameter, the objects reached from it, and the functions ``fn`` calls by
name, to a fixpoint for recursive functions::

>>> from pullback.testing import function_from_source
>>> g = function_from_source('''
... def g(p, v):
...     layer = p.layers[0]
...     layer.w = v + 1.0
... ''')
>>> {p: (a, f.__name__, m) for p, (a, f, m) in attribute_stores(g).items()}
{'p': ('w', 'g', ())}
>>> {p: (t, f.__name__) for p, (t, f) in stored_values(g).items()}
{'v': ('layer.w', 'g')}
"""
from __future__ import annotations

import weakref

import gast

from .function_scans import _known_method, _leading_copies, bound_arguments, static_callee, \
    to_fixpoint, walk


_stored = weakref.WeakKeyDictionary()


_stored_progress = {}   # fn -> [its stores found so far, whether a recursive call read them]


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
    return to_fixpoint(fn, _stored, _stored_progress, lambda: ({}, {}),
                       lambda fn, parsed: _scan_stores(parsed.tree, parsed, fn))


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
