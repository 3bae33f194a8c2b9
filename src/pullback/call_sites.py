"""What generated code runs at a call of a user function: the call site's
primal wrapper, and the spreading of the adjoint's gradients.

``Derivative.for_callers`` (``callees``) hands a call site a primal made
here by ``_caller_primal``: one wrapper per parameter count, compiled once,
that keeps the transform of the site's last argument types and skips the
``with``-block bookkeeping (``runtime.control``) while no block was ever
transformed.  ``_spread(wrt, n)`` and ``_pick(wrt, n)`` place the gradients
an adjoint returns for the parameters ``wrt`` among all ``n``; ``_unwind``
and ``_settle`` close what a primal left open.
"""
from __future__ import annotations

import functools
import operator
import re

import numpy as np

from .runtime import control
from .runtime.control import close_contexts, entered_count, open_contexts, take_entered


_SPREAD = {}        # (wrt, n) -> grads of wrt -> one entry per parameter (None if not in wrt)
_NONE = (None,)
_SAME = object()        # _pick: the gradients are already one per parameter


def _pick(wrt, n):
    """``_spread(wrt, n)`` for a tuple of gradients with ``None`` appended, as
    an ``operator.itemgetter`` (a C call, where the spreading function is a
    Python frame on every call of a user function); ``_SAME`` where the
    gradients are already one per parameter; None for no parameter left out
    of fewer than two, or more than 255 parameters (``_spread`` then).

    >>> _pick((0, 2), 3)((1.0, 2.0) + _NONE)
    (1.0, None, 2.0)
    """
    if tuple(wrt) == tuple(range(n)):
        return _SAME
    if n < 2 or n > 255:
        return None
    where = {i % n if n else i: k for k, i in enumerate(wrt)}
    return operator.itemgetter(*[where.get(i, len(wrt)) for i in range(n)])


def _spread(wrt, n):
    """The function that places the adjoint's gradients of the parameters
    ``wrt`` among ``n`` parameters (made once per call-site mask: every call
    of a user function from generated code goes through it): one tuple
    display, ``lambda g: (g[0], None, g[1])``, compiled once.

    >>> _spread((0, 2), 3)((1.0, 2.0))
    (1.0, None, 2.0)
    """
    if tuple(wrt) == tuple(range(n)):
        def spread(grads):
            return grads if type(grads) is tuple else tuple(grads)
    elif n <= 255:
        where = {i % n if n else i: k for k, i in enumerate(wrt)}    # argnums=-1: the last
        items = "".join(f"g[{where[i]}], " if i in where else "None, " for i in range(n))
        spread = eval(compile(f"lambda g: ({items})", "<pullback spread>", "eval"))
    else:
        where = {i % n if n else i: k for k, i in enumerate(wrt)}
        pick = operator.itemgetter(*[where.get(i, len(wrt)) for i in range(n)])

        def spread(grads):
            return pick(tuple(grads) + (None,))
    _SPREAD[(wrt, n)] = spread
    return spread


_CALLER_PRIMAL = """\
def make(bind, call_primal, run_primal, scalar_cache, mask, inplace):
    last = [None]       # (argument types, (Loaded, Bindings)), one object: threads

    def primal(*args, **kwargs):
        if kwargs or len(args) != n:      # all positional: nothing to bind
            args = bind(args, kwargs)
        else:       # scalar code: the transform by the arguments' types alone
            types_ = TYPES
            hit = last[0]
            if hit is not None and hit[0] == types_:
                entry = hit[1]
            else:
                entry = scalar_cache.get((types_, mask, False, inplace))
                if entry is not None:
                    last[0] = (types_, entry)
            if entry is not None and entry[1].current():
                if control.blocks_used:
                    return SLOW(run_primal(entry[0], args, mask))
                loaded = entry[0]
                try:
                    out, res = loaded.primal(*args)
                except Exception as err:
                    _unwind(False, 0, 0, err)
                    loaded.annotate(err)
                    raise
                return out, RESULT(loaded)
            last[0] = None        # stale (a name rebound): specialize again
        return SLOW(call_primal(args, mask, inplace=inplace))
    return primal
"""


_caller_primals = {}


_CALLER_POSITIONAL = """\
def make(bind, call_primal, run_primal, scalar_cache, mask, inplace):
    # the last hit, one tuple (threads): the argument types, then the
    # Loaded's adjoint, the Loaded, its primal and its Bindings, read by
    # position (no tuple of types made and compared, no attribute lookup on
    # the Loaded)
    last = [None]

    def primal(PARAMS):
        hit = last[0]
        if hit is not None and SAME_TYPES and hit[-1].current():
            if not control.blocks_used:
                try:
                    out, res = hit[-2](PARAMS)
                except Exception as err:
                    _unwind(False, 0, 0, err)
                    hit[-3].annotate(err)
                    raise
                return out, FAST(hit[-4], hit[-3])
            return SLOW(run_primal(hit[-3], (PARAMS,), mask))
        types_ = TYPES
        entry = scalar_cache.get((types_, mask, False, inplace))
        if entry is not None and entry[1].current():
            loaded = entry[0]
            last[0] = types_ + (loaded.adjoint, loaded, loaded.primal, entry[1])
            if control.blocks_used:
                return SLOW(run_primal(loaded, (PARAMS,), mask))
            try:
                out, res = loaded.primal(PARAMS)
            except Exception as err:
                _unwind(False, 0, 0, err)
                loaded.annotate(err)
                raise
            return out, RESULT(loaded)
        last[0] = None        # none yet, or stale (a name rebound): specialize again
        return SLOW(call_primal((PARAMS,), mask, inplace=inplace))
    return primal
"""


def _caller_primal(n, positional=False, compact=False):
    """What makes a callee's primal for call sites (``Derivative.for_callers``)
    for a function of ``n`` parameters.

    Scalar code calls its user functions many times with arguments of the
    same types (a recursion, a loop of calls): the transform for the types of
    a site's last such call is kept, found by comparing the tuple of the
    arguments' types (no hashing), and run without ``run_primal``'s
    bookkeeping while no ``with`` block was ever transformed.  The tuple of
    types is written out for ``n`` (``(type(args[0]), type(args[1]))``, a
    fifth of the instructions of ``tuple(map(type, args))``), so the function
    is compiled once per ``n``.  With ``positional``, the function a call
    site passing its ``n`` arguments by position calls: ``primal(a0, a1)``,
    no ``*args`` tuple nor ``**kwargs`` dict made on each call (the dict
    alone is a third of the wrapper's instructions).  With ``compact``, its
    residuals are ``(adjoint, r)`` (``for_callers``)."""
    make = _caller_primals.get((n, positional, compact))
    if make is None:
        if positional:
            params = ", ".join(f"a{i}" for i in range(n))
            same = " and ".join(f"type(a{i}) is hit[{i}]" for i in range(n))
            text = _CALLER_POSITIONAL.replace("SAME_TYPES", same).replace("TYPES", "(" + "".join(
                f"type(a{i}), " for i in range(n)) + ")").replace("PARAMS", params)
        else:
            types_ = "(" + "".join(f"type(args[{i}]), " for i in range(n)) + ")" \
                if 0 <= n <= 64 else "tuple(map(type, args))"
            text = _CALLER_PRIMAL.replace("TYPES", types_)
        if compact:     # the adjoint itself, or one that runs under the errstate entered
            text = text.replace("FAST(hit[-4], hit[-3])", "((hit[-4], res) if not "
                                "control.blocks_used else _late(hit[-3], res))")
            text = re.sub(r"RESULT\((.*?)\)\n",
                          r"((\1.adjoint, res) if not control.blocks_used else _late(\1, res))\n",
                          text).replace("SLOW(", "_compacted(")
        else:
            text = re.sub(r"FAST\(.*?\)\n", "RESULT(hit[-3])\n", text)
            text = re.sub(r"RESULT\((.*?)\)\n", r"(\1, res, mask, n, _settle(0, 0) "
                          r"if control.blocks_used else None)\n", text)
            text = re.sub(r"SLOW\((.*)\)\n", r"\1\n", text)
        filename = f"<pullback callee primal, {n} parameters{', positional' if positional else ''}" \
                   f"{', compact' if compact else ''}>"
        import linecache
        linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
        namespace = {"n": n, "control": control, "_unwind": _unwind, "_settle": _settle,
                     "_late": _late, "_compacted": _compacted}
        exec(compile(text, filename, "exec"), namespace)
        make = _caller_primals[(n, positional, compact)] = namespace["make"]
    return make


def _run_adjoint(loaded, errstate, r, ct):
    """``loaded.adjoint(r, ct)`` under the NumPy error settings ``errstate``
    (None: those in force), an error in it pointed at the user's line."""
    try:
        if errstate:
            with np.errstate(**errstate):
                return loaded.adjoint(r, ct)
        return loaded.adjoint(r, ct)
    except Exception as err:
        loaded.annotate(err)
        raise


def _compacted(result):
    """A generic callee primal's ``(out, (loaded, r, wrt, n, errstate))`` as a
    compact one's ``(out, (adjoint, r))`` (``for_callers``)."""
    out, (loaded, r, _, _, errstate) = result
    return out, (functools.partial(_run_adjoint, loaded, errstate), r)


def _late(loaded, r):
    """The compact residuals of a call whose primal entered the first
    ``with`` block transformed: its adjoint runs under the error settings
    the primal left (``_settle``)."""
    return functools.partial(_run_adjoint, loaded, _settle(0, 0)), r


def _unwind(tracked, depth, mark, err):
    """After a primal raised ``err``: close the ``with`` blocks it left open
    and drop the error settings it entered (once any block was transformed)."""
    if tracked or control.blocks_used:
        if open_contexts() > depth:      # a `with` block left by the exception
            close_contexts(depth, err)
        if entered_count() > mark:
            take_entered(mark)


def _settle(depth, mark):
    """After a primal returned: close the ``with`` blocks a ``return`` inside
    them left open; the NumPy error settings its adjoint runs under, or None."""
    if open_contexts() > depth:
        close_contexts(depth)
    return take_entered(mark) if entered_count() > mark else None
