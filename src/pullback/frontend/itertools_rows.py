"""Loops over ``itertools`` iterators of a sequence's values, as index loops.

``itertools.pairwise(x)``, ``combinations(x, r)``, ``product(a, b)``,
``islice(x, ...)``, ``compress(x, s)``, ``zip_longest(a, b)``,
``chain(a, b)`` and ``repeat(x, n)`` pick items of their sequences by a rule
that does not depend on the values: the loop runs over the same call of the
sequences' index ranges (integers, read into a list by ``index_items``) and
reads the items by indexing, so that each item's gradient goes back into its
sequence in place (O(row) per read).  ``accumulate(x, f, initial=v)`` is the
loop it runs, its running value carried by the loop::

    for a, b in itertools.pairwise(x):     seq = index_items(itertools.pairwise(range(len(x))))
        body                         ->    for k in range(len(seq)):
                                               i, j = seq[k]
                                               a = x[i]
                                               b = x[j]
                                               body

``desugar.loop`` asks ``rows_loop`` first for every ``for`` loop (a
comprehension's too; ``enumerate(pairwise(x))`` counts with the loop's
index); the sequences are evaluated once, before the loop; one that has no
positions (a set, a dict, an iterator) is read into a list where its items
are indices (``plain_items``), refused otherwise.  A call whose sequences
are all ``range(...)`` is left to ``desugar`` (its items are the indices).
``list_value_iterators`` runs first: such a call given to ``list``, ``zip``,
``sum``... becomes a comprehension, whose loop is then one of these.

>>> from pullback.testing import function_from_source, desugared
>>> print(desugared(function_from_source('''
... def f(x):
...     return sum(np.sum(b - a) for a, b in itertools.pairwise(x))
... ''', {"itertools": __import__("itertools")})))
def f(x):
    total = 0
    rows = x if by_position(x) else plain_items(x)
    seq = index_items(itertools.pairwise(range(len(rows))))
    indexable(seq)
    for rows_index in range(len(seq)):
        row_index, row_index_1 = seq[rows_index]
        a_1 = rows[row_index]
        b_1 = rows[row_index_1]
        total = total + np.sum(b_1 - a_1)
    return total
"""
from __future__ import annotations

import itertools

import gast

from ..ir.build import (assign_at as _assign, item as _item, length as _len, located,
                        name as _name)
from ..ir.walk import scope_nodes
from ..rules.registry import nondifferentiable
from ..runtime.loop_items import by_position, plain_items
from .iterator_names import followed_names

__all__ = ["ROW_FUNCTIONS", "list_value_iterators", "reads_values", "rows_loop"]

_ALL = None
#: the itertools functions followed, each with how many of its leading
#: positional arguments are sequences (None: all of them)
ROW_FUNCTIONS = {
    itertools.pairwise: 1, itertools.combinations: 1,
    itertools.combinations_with_replacement: 1, itertools.permutations: 1,
    itertools.islice: 1, itertools.compress: 1, itertools.repeat: 1,
    itertools.accumulate: 1, itertools.product: _ALL, itertools.zip_longest: _ALL,
    itertools.chain: _ALL,
}
_SCALAR = (itertools.islice, itertools.compress, itertools.chain)    # an item is one element


def _function(d, call):
    if not isinstance(call, gast.Call) or not d.is_itertools_call(call):
        return None
    from ..analyses.callable_facts import static_value
    fn = static_value(call.func, d.parsed)
    return fn if fn in ROW_FUNCTIONS else None


def _sequences(fn, call):
    n = ROW_FUNCTIONS[fn]
    return list(call.args) if n is _ALL else list(call.args[:n])


def reads_values(d, call):
    """Whether ``call`` is an itertools call this module follows whose items
    are values of a sequence (not all its sequences are ``range(...)``)."""
    fn = _function(d, call)
    if fn is None or any(isinstance(a, gast.Starred) for a in call.args):
        return False
    if fn is itertools.repeat:
        return len(call.args) + len(call.keywords) == 2 and not (
            isinstance(call.args[0], gast.Constant) and call.args[0].value is None)
    if fn is itertools.accumulate:
        return bool(call.args)
    seqs = _sequences(fn, call)
    return bool(seqs) and not all(isinstance(a, gast.Call) and d.is_builtin(a.func, "range")
                                  for a in seqs)


#: builtins that read every item of an iterator given them, once, in order (``zip`` and
#: ``enumerate`` in a loop may stop early: the items are values read, nothing is run)
_CONSUMERS = ("list", "tuple", "sum", "sorted", "min", "max", "zip", "enumerate")


def list_value_iterators(fn, d):
    """Rewrite ``fn`` in place: an itertools call over values (``reads_values``)
    or a dict's ``d.items()`` (``keys``, ``values``) given to ``list``,
    ``tuple``, ``sum``, ``zip``, ``enumerate``... or to such a call becomes the
    list of its items, a comprehension (``list(pairwise(x))`` -> ``[item for
    item in pairwise(x)]``), whose loop ``rows_loop`` (``desugar``, for a dict)
    follows; so does such a call bound to a name that only the loop right
    after reads (``iterator_names``)."""
    nodes = list(scope_nodes(fn))
    numbered = {id(n.iter) for n in nodes if isinstance(n, (gast.For, gast.comprehension))
                and _numbered(d, n.iter, n.target) is not None}     # rows_loop's own
    for node in nodes:
        for field, value in gast.iter_fields(node):
            values = value if isinstance(value, list) else [value]
            for i, v in enumerate(values):
                if isinstance(v, gast.Call) and id(v) not in numbered and (reads_values(d, v) or any(
                        d.is_builtin(v.func, b) for b in _CONSUMERS)):
                    views = not any(d.is_builtin(v.func, b) for b in ("sorted", "min", "max"))
                    v.args = [_items(d, a) if reads_values(d, a) or (views and d.mapping_view(a))
                              else a for a in v.args]
                    if d.is_builtin(v.func, "list") and len(v.args) == 1 and not v.keywords \
                            and isinstance(v.args[0], gast.ListComp):
                        values[i] = v.args[0]
            if not isinstance(value, list) and values[0] is not value:
                setattr(node, field, values[0])
    for stmt in followed_names(fn, lambda call: reads_values(d, call), adjacent=True):
        stmt.value = _items(d, stmt.value)


def _items(d, call):
    item = d.namer.fresh("item")
    return gast.copy_location(gast.ListComp(elt=_name(item), generators=[gast.comprehension(
        target=_name(item, gast.Store()), iter=call, ifs=[], is_async=0)]), call)


def rows_loop(d, node, body, orelse):
    """The statements of the loop ``node`` (``for target in call``; ``body``
    and ``orelse`` already desugared) over a call ``reads_values`` accepts,
    as an index loop; None for any other loop."""
    call, target, pre = node.iter, node.target, []
    numbered = _numbered(d, call, target)
    if numbered is not None:        # enumerate(pairwise(x)): the loop's index counts
        call, target = numbered
    if not reads_values(d, call):
        return None
    fn = _function(d, call)
    seqs = [d.sequence(a, pre, node, check=False) if fn is itertools.repeat   # an object
            else _positional(d, a, pre, node) for a in _sequences(fn, call)]
    if fn is itertools.accumulate:
        return pre + _accumulated(d, node, call, seqs[0], body, orelse, pre)
    rest = call.args[len(seqs):]
    index_call = gast.copy_location(gast.Call(func=call.func, args=[
        gast.Call(func=_name("range"), args=[_len(s)], keywords=[]) for s in seqs] + rest,
        keywords=[k for k in call.keywords if k.arg != "fillvalue"]), call)
    if fn is itertools.repeat:
        index_call.args[0] = gast.Constant(None, None)
    fill = None
    if fn is itertools.zip_longest:
        fill = d.namer.fresh("fill")
        value = next((k.value for k in call.keywords if k.arg == "fillvalue"),
                     gast.Constant(None, None))
        pre.append(_assign(_name(fill, gast.Store()), value, node))
    if fn is itertools.chain:
        index_call = _chain_indices(d, seqs, call)
    items = d.sequence(index_call, pre, node)
    index = d.namer.fresh("rows_index")
    head = []
    if numbered is not None:
        start = node.iter.args[1] if len(node.iter.args) > 1 else next(
            (k.value for k in node.iter.keywords if k.arg == "start"), gast.Constant(0, None))
        if not isinstance(start, gast.Constant):
            held = d.namer.fresh("start")
            pre.append(_assign(_name(held, gast.Store()), start, node))
            start = _name(held)
        head.append(_assign(node.target.elts[0], gast.BinOp(left=_name(index), op=gast.Add(),
                                                            right=start), node))
    if fn is itertools.repeat:
        head.append(_assign(target, _name(seqs[0]), node))
    elif fn in _SCALAR:
        k = d.namer.fresh("row_index")
        head.append(_assign(_name(k, gast.Store()), _item(items, index), node))
        head.append(_assign(target, _scalar_item(fn, seqs, k), node))
    else:
        head.extend(_tuple_items(d, fn, call, seqs, target, _item(items, index), fill, node))
    head = d.block([located(h, node) for h in head])
    return pre + [d.for_range(index, gast.Call(func=_name("range"), args=[_len(items)],
                                               keywords=[]), head + body, orelse, node)]


def _numbered(d, it, target):
    """``(call, item target)`` for ``for i, item in enumerate(call)`` over an
    itertools call of values (not ``accumulate``), else None."""
    if isinstance(it, gast.Call) and d.is_builtin(it.func, "enumerate") and it.args \
            and len(it.args) + len(it.keywords) <= 2 \
            and all(k.arg == "start" for k in it.keywords) \
            and isinstance(target, gast.Tuple) and len(target.elts) == 2 \
            and reads_values(d, it.args[0]) and _function(d, it.args[0]) is not itertools.accumulate:
        return it.args[0], target.elts[1]
    return None


def _positional(d, arg, pre, node):
    """A name bound to the sequence ``arg`` read by position: ``arg`` itself
    (an array, a list), or the list of its items where it has no positions
    (a set, a dict's keys: ints or strings, ``plain_items``; no gradient)."""
    seq = d.sequence(arg, pre, node, check=False)
    held = d.namer.fresh("rows")
    test = gast.Call(func=_name(d.helper("by_position", by_position)), args=[_name(seq)],
                     keywords=[])
    listed = gast.Call(func=_name(d.helper("plain_items", plain_items)), args=[_name(seq)],
                       keywords=[])
    pre.append(_assign(_name(held, gast.Store()), gast.IfExp(test=test, body=_name(seq),
                                                              orelse=listed), node))
    return held


def _chain_indices(d, seqs, call):
    """``chain(zip(repeat(0), range(len(a))), zip(repeat(1), range(len(b))))``:
    which sequence and where in it."""
    repeat = d.helper("repeat", itertools.repeat)
    parts = [gast.Call(func=_name("zip"), args=[
        gast.Call(func=_name(repeat), args=[gast.Constant(w, None)], keywords=[]),
        gast.Call(func=_name("range"), args=[_len(s)], keywords=[])], keywords=[])
        for w, s in enumerate(seqs)]
    return gast.copy_location(gast.Call(func=call.func, args=parts, keywords=[]), call)


def _scalar_item(fn, seqs, k):
    if fn is not itertools.chain:
        return _item(seqs[0], k)
    which = gast.Subscript(value=_name(k), slice=gast.Constant(0, None), ctx=gast.Load())
    where = gast.Subscript(value=_name(k), slice=gast.Constant(1, None), ctx=gast.Load())
    value = gast.Subscript(value=_name(seqs[-1]), slice=where, ctx=gast.Load())
    for w in range(len(seqs) - 2, -1, -1):
        test = gast.Compare(left=which, ops=[gast.Eq()], comparators=[gast.Constant(w, None)])
        value = gast.IfExp(test=test, body=gast.Subscript(value=_name(seqs[w]), slice=where,
                                                          ctx=gast.Load()), orelse=value)
    return value


def _length(fn, call, seqs, target):
    """How many elements an item has, where it is known before the loop runs."""
    if fn is itertools.pairwise:
        return 2
    if fn in (itertools.product, itertools.zip_longest):
        repeat = next((k.value for k in call.keywords if k.arg == "repeat"),
                      gast.Constant(1, None))
        if isinstance(repeat, gast.Constant) and isinstance(repeat.value, int):
            return len(seqs) * repeat.value
    elif len(call.args) > 1 or call.keywords:
        r = call.args[1] if len(call.args) > 1 else call.keywords[0].value
        if isinstance(r, gast.Constant) and isinstance(r.value, int):
            return r.value
    if isinstance(target, gast.Tuple) and not any(isinstance(e, gast.Starred)
                                                  for e in target.elts):
        return len(target.elts)      # unpacking: Python refuses any other length too
    return None


def _tuple_items(d, fn, call, seqs, target, item, fill, node):
    """``i, j = items[k]`` then ``a = x[i]``, ``b = x[j]`` (or ``p = (x[i], x[j])``)."""
    n = _length(fn, call, seqs, target)
    if n is None:                   # one sequence, items of a length known when it runs
        ks = d.namer.fresh("row_indices")
        k = d.namer.fresh("row_index")
        rows = gast.ListComp(elt=_item(seqs[0], k), generators=[gast.comprehension(
            target=_name(k, gast.Store()), iter=_name(ks), ifs=[], is_async=0)])
        whole = gast.Call(func=_name("tuple"), args=[rows], keywords=[])
        return [_assign(_name(ks, gast.Store()), item, node), _assign(target, whole, node)]
    ks = [d.namer.fresh("row_index") for _ in range(n)]
    values = []
    for m, k in enumerate(ks):
        value = _item(seqs[m % len(seqs)], k)
        if fill is not None:
            value = gast.IfExp(test=gast.Compare(left=_name(k), ops=[gast.IsNot()],
                                                 comparators=[gast.Constant(None, None)]),
                               body=value, orelse=_name(fill))
        values.append(value)
    head = [_assign(gast.Tuple(elts=[_name(k, gast.Store()) for k in ks], ctx=gast.Store()),
                    item, node)]
    if isinstance(target, gast.Tuple) and len(target.elts) == n \
            and not any(isinstance(e, gast.Starred) for e in target.elts):
        return head + [_assign(t, v, node) for t, v in zip(target.elts, values)]
    return head + [_assign(target, gast.Tuple(elts=values, ctx=gast.Load()), node)]


def _accumulated(d, node, call, seq, body, orelse, pre):
    """``for v in accumulate(xs, f, initial=v0)`` as the loop it runs::

        acc = v0                           (with initial)
        for k in range(-1, len(xs)):       for k in range(len(xs)):
            if k >= 0:                         if k == 0:
                acc = f(acc, xs[k])                acc = xs[k]
            v = acc                            else:
            body                                   acc = f(acc, xs[k])
                                               v = acc
                                               body
    """
    opts = {k.arg: k.value for k in call.keywords}
    func = call.args[1] if len(call.args) > 1 else opts.get("func")
    if isinstance(func, gast.Constant) and func.value is None:
        func = None
    if func is not None and not isinstance(func, (gast.Name, gast.Lambda)):
        held = d.namer.fresh("accumulator")
        pre.append(_assign(_name(held, gast.Store()), func, node))
        func = _name(held)
    acc, k = d.namer.fresh("accumulated"), d.namer.fresh("accumulate_index")
    read = _item(seq, k)
    step = gast.BinOp(left=_name(acc), op=gast.Add(), right=read) if func is None else \
        gast.Call(func=func, args=[_name(acc), read], keywords=[])
    step = _assign(_name(acc, gast.Store()), gast.copy_location(step, node), node)
    initial = opts.get("initial")
    start = []
    if initial is not None and not (isinstance(initial, gast.Constant) and initial.value is None):
        start = [_assign(_name(acc, gast.Store()), initial, node)]
        test = gast.Compare(left=_name(k), ops=[gast.GtE()], comparators=[gast.Constant(0, None)])
        first = gast.If(test=test, body=[step], orelse=[])
        bounds = [gast.Constant(-1, None), _len(seq)]
    else:
        test = gast.Compare(left=_name(k), ops=[gast.Eq()], comparators=[gast.Constant(0, None)])
        first = gast.If(test=test, body=[_assign(_name(acc, gast.Store()), _item(seq, k), node)],
                        orelse=[step])
        bounds = [_len(seq)]
        start = [_assign(_name(acc, gast.Store()), gast.Constant(None, None), node)]
    head = d.block([located(first, node), _assign(node.target, _name(acc), node)])
    loop = d.for_range(k, gast.Call(func=_name("range"), args=bounds, keywords=[]),
                       head + body, orelse, node)
    return d.block([located(s, node) for s in start]) + [loop]


nondifferentiable(by_position, plain_items)
