"""Item stores that carry no gradient: plain side effects of the primal.

``d[k] = v``, ``d[k] += v``, ``d[k] -= v`` and ``xs.append(v)`` into a
container that holds no differentiated value (by the activity analysis: not
varied), of a value that carries no gradient, run once, where Python runs
them, in the primal; the adjoint and the tangent code never run them again.
The container may be the function's own, an argument not differentiated, a
global, a captured value, or a dict already handed elsewhere (appended to a
log, say); it may even hold differentiated values, so long as nothing read
from it reaches the output (a log of the arguments)::

    def loss(x, log):                      def loss_primal(x, log):
        call = {'n': x.shape}                  call = {'n': x.shape}
        log.append(call)                       log.append(call)
        y = np.sum(x * x)           ->         ...
        call['returned'] = True                call['returned'] = True
        return y                               ...

A store that would carry a gradient into a dict or a list (a varied value,
or a container that holds one and is not the function's own list) stays
refused, naming the container and, for a dict, why ``frontend.dict_stores``
did not make it a new dict (the function's own dicts held by no other name
are followed that way: ``d = dict_set(d, k, v)``; those of them that carry no
gradient get ``dict_set_in_place`` here, a store with no copy).  So does an
append of a differentiated value to a list that is an item of another
container (``d["xs"].append(v)``).  So does a store into a container that a
differentiated operation also reads (``y = x[idx]`` then ``idx.append(2)``):
the gradient of that operation reads the container after the store.

>>> import numpy as np, pullback as pb
>>> from pullback.testing import function_from_source
>>> f = function_from_source('''
... def f(x, log):
...     call = {'kind': 'f'}
...     log.append(call)
...     y = np.sum(x * x)
...     call['returned'] = True
...     return y
... ''')
>>> log = []
>>> pb.grad(f)(np.array([3.0]), log), log
(array([6.]), [{'kind': 'f', 'returned': True}])
"""
from __future__ import annotations

import types

import gast

from ..errors import UnsupportedSyntaxError
from .copies import _closure as _joined
from .kinds import Shape
from .ops import Op, OpKind, all_statements
from .order import only_after
from .views import _derived

__all__ = ["mark"]

_SYMBOL = {"add": "+", "sub": "-"}


def mark(normal, ops, act, parsed, kinds=None) -> None:
    """Flag ``op.effect`` on every item store of ``normal`` that carries no
    gradient (``act``: the activity analysis); refuse the stores pullback
    cannot follow into a dict or a list."""
    varied, active = act.varied, act.active
    renames = {id(s): (s.targets[0].id, s.value.id) for s in all_statements(normal.tree.body)
               if id(s) in normal.renames}
    stores = []
    statements = list(all_statements(normal.tree.body))
    bound = {}                      # name -> the value an assignment binds it to
    for s in statements:
        if isinstance(s, gast.Assign) and len(s.targets) == 1 \
                and isinstance(s.targets[0], gast.Name):
            bound.setdefault(s.targets[0].id, s.value)
    local = set(normal.params) | set(bound) | {
        n.id for s in statements for n in _own_names(s) if isinstance(n.ctx, gast.Store)}
    _in_place(statements, ops, varied, parsed)
    # parameters never rebound: the caller's objects, whatever the function does
    callers = set(normal.params) - {n.id for s in statements for n in _own_names(s)
                                    if isinstance(n.ctx, gast.Store)} - set(bound)
    for s in statements:
        op = ops.get(id(s))
        if op is None or op.kind not in (OpKind.SETITEM, OpKind.APPEND) or op.effect:
            continue
        if op.kind is OpKind.SETITEM and op.bound.get("mode") == "add_at":
            continue                              # np.add.at: an array's own path
        container = op.mutates
        values = [n for _, n in op.operands if n != container]
        # a container that holds differentiated values but from which nothing
        # reaches the output (a log the values were written into) takes a
        # value with no gradient as it would take a constant
        if any(v in varied for v in values) or (container in varied and _joined(
                {container}, list(renames.values())) & set(act.useful)):
            outer = _outer(container, bound, local)
            if outer is not None and op.kind is OpKind.SETITEM:
                raise UnsupportedSyntaxError(
                    f"pullback cannot differentiate a write of a differentiated value into "
                    f"`{outer}`, which is not the function's own (a global or a captured "
                    "value): its later reads would carry no gradient.", parsed.location(s),
                    f"Update `{outer}` outside the function being differentiated (in its "
                    "caller), or write into a local array (y = np.zeros(n); y[i] = ...).")
            if op.kind is OpKind.APPEND and container in callers \
                    and any(v in varied for v in values):
                raise _append_to_callers(parsed, s, container)
            held = bound.get(container)
            if op.kind is OpKind.APPEND and isinstance(held, (gast.Subscript, gast.Attribute)) \
                    and any(v in varied for v in values):
                # `d["xs"].append(v)`, `cfg.layers.append(v)`: the list is an item of
                # another container or an object's attribute, which its gradient would
                # never reach (it was a zero gradient).  A value of a kind not known
                # (a record a helper made) is checked when it runs: one holding no
                # float (strings, counts) carries no gradient and is appended as Python
                # does
                if isinstance(held, gast.Attribute) and kinds is not None and not any(
                        (kinds.get(v) is not None and kinds.get(v).is_number)
                        for v in values if v in varied):
                    _check_when_run(normal, ops, parsed, s, [v for v in values if v in varied])
                else:
                    raise UnsupportedSyntaxError(
                        "pullback does not follow an append of a differentiated value to a "
                        "list held inside another container or by an object's attribute (a "
                        "write into what it holds): the container's or the object's reads "
                        "would not see the gradient.",
                        parsed.location(s),
                        "Keep the list in a local name (`xs = []`, `xs.append(v)`) and store it "
                        "into the container after the loop, or build the container with it.")
            if op.kind is OpKind.APPEND and any(v in varied for v in values):
                _refuse_shared_list(normal, ops, statements, s, container, parsed, bound)
            if op.kind is OpKind.SETITEM:
                _refuse_item_of_item(s, container, bound, parsed)
            kind = _container_kind(container, bound, parsed)
            if kind is not None and op.kind is OpKind.SETITEM:
                what = (f"a differentiated value through an item of the {kind} "
                        f"`{container}`" if any(v in varied for v in values) else
                        f"a store into the {kind} `{container}`, which holds differentiated "
                        "values that reach the output")
                why = _dict_refusal(parsed, container) if kind == "dict" else None
                raise UnsupportedSyntaxError(
                    f"pullback does not follow {what}: " + (
                        f"a store into a dict is followed as a new dict only where nothing "
                        f"else holds it, and {why}." if why else "a store into it is not "
                        "followed as a variable, so its reads would not see the gradient "
                        "right."),
                    parsed.location(s),
                    (f"Give the dict one name only until its last store (copy it where it "
                     f"is handed on: `dict({container})`), " if why else
                     f"Build the {kind} with the value in it, in one display "
                     f"(`{container} = {_display(kind)}`), ") + "or keep the value in a "
                    "plain local name and pass it on or return it; stores of values that "
                    "carry no gradient (counters, flags, shapes) are fine.")
            continue
        shape = getattr((kinds or {}).get(container), "shape", None)
        if shape in (Shape.ARRAY, Shape.NUMBER, Shape.SCALAR):
            continue                              # an array: mutation.py follows it
        stores.append((s, op, shape))
    if not stores:
        return
    # the container, the names normalize's copies join to it and (where it may
    # be an array) its views, or (for `d[k] += v`, which may change the item in
    # place) the items read from it, must not be read by a differentiated
    # statement: its gradient would read them after the store
    pairs = list(renames.values())
    effects = {id(s) for s, _, _ in stores}
    for s, op, shape in stores:
        container = op.mutates
        group = _joined({container}, pairs)
        if shape is not Shape.CONTAINER:
            group = _derived(normal.tree.body, ops, kinds, group)
        if isinstance(s, gast.AugAssign):
            group |= _read_from(normal, ops, group)
        for t in statements:
            if isinstance(t, (gast.If, gast.For, gast.While)) or id(t) in renames \
                    or id(t) in effects:
                continue
            top = ops.get(id(t))
            if top is None:
                continue
            loads = {n.id for n in gast.walk(t) if isinstance(n, gast.Name)
                     and isinstance(n.ctx, gast.Load)}
            written = {top.mutates} if top.mutates else set()
            if not (loads & group and (_binds(t) | written) & active) \
                    or only_after(normal.tree.body, s, t):
                continue                          # (what runs after the store sees it)
            if isinstance(s, gast.AugAssign) and not loads & _joined({container}, pairs):
                raise UnsupportedSyntaxError(
                    f"`{container}[...] {_SYMBOL.get(op.bound.get('mode'), '+')}= ...` may "
                    f"change the item in place, and a differentiated operation at line "
                    f"{getattr(t, 'lineno', '?')} read it before: its gradient would see "
                    "the item as it is after the change.", parsed.location(s),
                    f"Store a new value: `{container}[k] = {container}[k] "
                    f"{_SYMBOL.get(op.bound.get('mode'), '+')} v`.")
            if shape is Shape.CONTAINER or _container_kind(container, bound, parsed):
                raise UnsupportedSyntaxError(
                    f"`{container}` is changed in place here, and a differentiated "
                    f"operation at line {getattr(t, 'lineno', '?')} reads it: its gradient "
                    f"would see `{container}` as it is after the change.",
                    parsed.location(s),
                    f"Give that operation its own copy (`list({container})`, "
                    f"`dict({container})`, `np.array({container})`), or change a new "
                    f"container instead of `{container}`.")
            break                                 # may be an array: mutation.py decides
        else:
            op.effect = True
            if op.kind is OpKind.SETITEM and container in varied \
                    and shape is not Shape.CONTAINER \
                    and not _container_kind(container, bound, parsed):
                # `m = y.view(); m[1] = 5.0`: what a call pullback does not see into
                # returned may share memory with a differentiated array
                _check_when_run(normal, ops, parsed, s, [container], runtime_check="plain_container")


def _refuse_shared_list(normal, ops, statements, s, name, parsed, bound):
    """Refuse ``name.append(v)`` of a differentiated ``v`` where another name
    or container may hold the list when the append runs: ``b = a`` (either
    way round), ``[a, 1.0]``, ``{"xs": a}``, ``rows.append(a)``.  The primal
    grows the one list all of them hold, but the gradient of what is read
    through the other holder never reached ``v`` (issue 13: a silent zero).
    A holder that takes the list only after the append (``rows.append(row)``
    after the row is built, in a loop that binds ``row = []`` afresh before
    the append) is fine.  So is a list a call returns, unless a function of
    the user's was handed a list the function built (``b = f(a)``: ``f`` may
    return ``a``; ``list(a)`` copies it)."""
    order = {id(t): i for i, t in enumerate(statements)}
    loops = [t for t in statements if isinstance(t, (gast.For, gast.While))]
    for t in statements:
        if t is s or id(t) in normal.renames or not isinstance(t, (gast.Assign, gast.Expr)):
            continue
        v = t.value
        target = t.targets[0] if isinstance(t, gast.Assign) else None
        defines = isinstance(target, gast.Name) and target.id == name
        if defines and isinstance(v, gast.Name) and v.id != name:
            holder = v.id                          # `b = a`, then `b.append(v)`: `a` holds it
            holder = holder if _read_elsewhere(statements, holder, t) else None
        elif defines and getattr(ops.get(id(t)), "kind", None) is OpKind.USER and any(
                isinstance(a, gast.Name) and isinstance(bound.get(a.id), gast.List)
                for a in v.args):                  # `b = f(a)`: f may hand `a` back
            holder = next(f"`{a.id}`, which the call may hand back" for a in v.args
                          if isinstance(a, gast.Name) and isinstance(bound.get(a.id), gast.List))
        elif isinstance(v, gast.Name) and v.id == name and target is not None:
            holder = target.id if isinstance(target, gast.Name) \
                and _read_elsewhere(statements, target.id, t) else None
        elif isinstance(v, (gast.List, gast.Tuple, gast.Set, gast.Dict)) and any(
                isinstance(e, gast.Name) and e.id == name
                for e in (v.values if isinstance(v, gast.Dict) else v.elts)):
            holder = "the container built at this line" if not isinstance(
                target, gast.Name) or _read_elsewhere(statements, target.id, t) else None
        elif isinstance(t, gast.Expr) and isinstance(v, gast.Call) \
                and isinstance(v.func, gast.Attribute) and v.func.attr == "append" \
                and any(isinstance(a, gast.Name) and a.id == name for a in v.args):
            holder = f"`{v.func.value.id}`" if isinstance(v.func.value, gast.Name) else None
        else:
            continue
        if holder is None or not defines and order[id(t)] > order[id(s)] and all(
                _rebinds(loop, name, s, order) for loop in loops
                if _inside(loop, t) and _inside(loop, s)):
            continue                               # holds it only once it has grown
        holder = holder if holder.startswith(("the", "`")) else f"`{holder}`"
        raise UnsupportedSyntaxError(
            f"pullback cannot differentiate `{name}.append(...)` of a differentiated value "
            f"here: {holder} (line {getattr(t, 'lineno', '?')}) holds the same list, and "
            "the gradient of what is read through it would not reach the appended value.",
            parsed.location(s),
            f"Give the list one name until its last append (copy it where it is handed on: "
            f"`list({name})`), or build the container from it after the appends.")


def _read_elsewhere(statements, name, t):
    """Whether a statement other than ``t`` that may run after it reads
    ``name`` (normalize's own temporaries, ``pack = []; layers = pack``, are
    read once; a list a rewrite builds, ``xs_new.append(v)`` then ``xs =
    xs_new``, only before): one after it, or one in a loop around it."""
    at = next(i for i, u in enumerate(statements) if u is t)
    loops = [u for u in statements if isinstance(u, (gast.For, gast.While)) and _inside(u, t)]
    return any(u is not t and (i > at or any(_inside(loop, u) for loop in loops)) and any(
        n.id == name and isinstance(n.ctx, gast.Load) for n in _own_names(u))
        for i, u in enumerate(statements))


def _inside(loop, stmt):
    return any(t is stmt for t in all_statements(loop.body + loop.orelse))


def _rebinds(loop, name, s, order):
    """Whether ``loop``'s body binds ``name`` anew (at its top level) before ``s``."""
    return any(isinstance(t, gast.Assign) and isinstance(t.targets[0], gast.Name)
               and t.targets[0].id == name and order[id(t)] < order[id(s)] for t in loop.body)


def _append_to_callers(parsed, stmt, p):
    """The refusal of ``p.append(v)`` of a differentiated ``v`` on a list the
    function is given (a parameter, or a list a nested function captures,
    lifted to one): the caller's list, which pullback's transforms never change
    (grown lists are followed in lists the function builds itself)."""
    nested, captured = getattr(parsed.fn, "__pullback_captured__", (None, ()))
    whose = (f"`{p}`, a list the nested function `{nested}` captures from the function "
             "around it" if p in captured else f"its argument `{p}`, the caller's list")
    return UnsupportedSyntaxError(
        f"pullback cannot differentiate `{p}.append(...)` of a differentiated value: it "
        f"changes {whose}, and pullback follows appends only to a list the function builds "
        "itself (its transforms never change a caller's values).", parsed.location(stmt),
        f"Return the new item (or a new list, `{p} + [v]`) and append it where the list is "
        f"built: `{p}.append(f(...))`.")


def _refuse_item_of_item(s, container, bound, parsed):
    """Refuse ``d[a][b] = v`` carrying a gradient, ``d`` a dict: the item is
    changed in place, and every name holding it (``d`` itself) would see the
    change, which pullback does not follow for the items of a dict."""
    from ..runtime import control
    from .callable_facts import static_value
    held = bound.get(container)
    if isinstance(held, gast.Call) and isinstance(held.func, gast.Name) \
            and static_value(held.func, parsed) is control.dict_item:
        pass                              # (an item of a dict frontend.dict_in_place follows)
    elif not (isinstance(held, gast.Subscript) and isinstance(held.value, gast.Name)):
        return
    else:
        outer, seen = held.value.id, set()
        while isinstance(bound.get(outer), gast.Name) and outer not in seen:
            seen.add(outer)
            outer = bound[outer].id       # (normalize's copies: `d_2 = d_1`)
        if _container_kind(outer, bound, parsed) != "dict":
            return
    raise UnsupportedSyntaxError(
        "pullback does not follow a store into an item of an item of a dict "
        "(`d[a][b] = v`, `d[a][b] += v`) where a gradient flows: the inner item is changed "
        "in place, and the dict holding it would have to see the change.",
        parsed.location(s),
        "Build the inner value first and store it whole: `inner = {}` (or `dict(d[a])`, "
        "`d[a].copy()` for an array), `inner[b] = v`, then `d[a] = inner`.")


def _in_place(statements, ops, varied, parsed):
    """``d = dict_set(d, k, v)`` (``frontend.dict_stores``: a dict nothing else
    holds) where neither the dict nor the value carries a gradient stores in
    place, as Python does (no residual holds the dict before the store): a
    dict of counters or positions costs no copy per store."""
    from ..runtime import control
    name = None
    for s in statements:
        op = ops.get(id(s))
        if op is None or op.kind is not OpKind.RULE or op.primitive is not control.dict_set \
                or not isinstance(s, gast.Assign) or not isinstance(s.value, gast.Call):
            continue
        if any(n in varied for n in op.names() | _binds(s)):
            continue
        if name is None:
            name = "dict_set_in_place"
            while name in parsed.closure or name in parsed.globals:
                name += "_"
            parsed.closure[name] = types.CellType(control.dict_set_in_place)
        s.value.func = gast.Name(id=name, ctx=gast.Load(), annotation=None, type_comment=None)


def _own_names(stmt):
    from ..ir.walk import own_nodes
    return [n for n in own_nodes(stmt) if isinstance(n, gast.Name)]


def _binds(stmt):
    return {n.id for n in gast.walk(stmt) if isinstance(n, gast.Name)
            and isinstance(n.ctx, gast.Store)}


def _read_from(normal, ops, group):
    """Names bound by reading an item or an attribute of a name in ``group``."""
    out = set()
    for t in all_statements(normal.tree.body):
        if isinstance(t, gast.Assign) and len(t.targets) == 1 \
                and isinstance(t.targets[0], gast.Name) \
                and isinstance(t.value, (gast.Subscript, gast.Attribute)) \
                and isinstance(t.value.value, gast.Name) and t.value.value.id in group:
            out.add(t.targets[0].id)
    return out


def _display(kind):
    return "{'w': w, 'b': b}" if kind == "dict" else "[a, b]"


def _outer(name, bound, local):
    """The global or captured name that ``name`` was bound to, if it was."""
    value = bound.get(name)
    return value.id if isinstance(value, gast.Name) and value.id not in local else None


def _container_kind(name, bound, parsed=None):
    """"dict" or "list" where ``name`` is known to hold one (bound by a dict or
    list display, ``dict(...)``, or a new dict of ``frontend.dict_stores``),
    else None (it may be an array)."""
    value = bound.get(name)
    if isinstance(value, gast.Call) and isinstance(value.func, gast.Name) \
            and parsed is not None:
        from .callable_facts import static_value
        fn = static_value(value.func, parsed)
        if fn is dict or getattr(fn, "makes_dict", False):
            return "dict"
    return "dict" if isinstance(value, gast.Dict) else \
        "list" if isinstance(value, gast.List) else None


def _dict_refusal(parsed, name):
    """Why ``frontend.dict_stores`` left the stores into ``name`` (or the
    name normalize renamed it from) as they are, or None."""
    reasons = getattr(parsed, "dict_refusals", None) or {}
    while name and name not in reasons:
        base, _, tail = name.rpartition("_")
        name = base if tail.isdigit() else ""
    return reasons.get(name)


def _check_when_run(normal, ops, parsed, stmt, names, runtime_check="no_float_in"):
    """Put ``no_float_in(v, ...)`` (``runtime.statement_checks``) before the
    append ``stmt`` for each of ``names``: it refuses a value holding a float
    (which may carry a gradient the container's reads would not see).  With
    ``runtime_check="plain_container"``, the check before a store into a
    container of a kind not known: one that is not a dict or a list (an array
    a call returned, which may be a view of a differentiated one) is refused."""
    import types
    from .. import runtime
    from ..ir.walk import statement_lists
    check_fn = getattr(runtime, runtime_check)
    fn = normal.namer.fresh(runtime_check)
    parsed.closure[fn] = types.CellType(check_fn)
    block = next(b for b in statement_lists(normal.tree.body) if any(t is stmt for t in b))
    at = next(i for i, t in enumerate(block) if t is stmt)
    for name in names:
        call = gast.Call(func=gast.Name(id=fn, ctx=gast.Load(), annotation=None,
                                        type_comment=None),
                         args=[gast.Name(id=name, ctx=gast.Load(), annotation=None,
                                         type_comment=None)], keywords=[])
        check = gast.Expr(value=call)
        for node in gast.walk(check):
            gast.copy_location(node, stmt)
        block.insert(at, check)
        ops[id(check)] = Op(OpKind.NONDIFF, label=runtime_check, primitive=check_fn, node=call)
