"""Helpers for the control constructs and calls the front end writes.

The state of ``with`` blocks and ``try`` bodies while a primal runs: what
``frontend.exceptions`` writes for them calls these helpers (``attempt``
runs a ``try`` body that has a ``finally`` or a handler that goes on), and
``callees.Derivative.call_primal`` closes the contexts the primal left open.
Per thread.  And
``star_call`` (a call with ``*xs`` or ``**d``, as normalize writes it; the
dispatcher, ``driver.dispatch``, differentiates it) and ``nested_value`` (a
nested function used as a value, ``frontend.closures``); ``sort_order`` and
``zip_length`` (``sorted`` and ``zip``, as desugar writes them).  The dicts
the function builds and changes are ``dict_support``'s (reached here too).

Before and after ``frontend.exceptions``::

    with np.errstate(divide="ignore"):      context = np.errstate(divide="ignore")
        y = np.log(x)                       context_enter(context)
                                            y = np.log(x)
                                            context_exit(context)

    try:                                    def try_body(x):
        y = f(x)                                y = f(x)
    except ValueError:                          return (0, (y,))
        y = 0.0                             tried = attempt(try_body, x)
                                            if tried[0] == 2:
                                                if isinstance(tried[1], ValueError):
                                                    y = 0.0
                                                else:
                                                    raise tried[1]
                                            elif tried[0] == 1:
                                                return tried[1]
                                            else:
                                                y, = tried[1]

Generated code and ``callees`` import this module; it imports nothing of
the compiler.
"""
from __future__ import annotations

import functools
import threading

import numpy as np

# (generated code and rules.dicts reach the dict helpers as control.dict_set...)
from .dict_support import (ChainGrads, dict_item, dict_item_grads, dict_merge,  # noqa: F401
                           dict_merge_grads, dict_set, dict_set_grads, dict_set_in_place,
                           dict_setdefault, dict_setdefault_grads, dict_store, dict_stored_grad,
                           dict_without, item_rebinds, loop_keys)

__all__ = ["context_enter", "context_exit", "open_contexts", "close_contexts",
           "entered_count", "take_entered", "attempt", "star_call", "spread", "nested_value",
           "list_index",
           "expire_value", "check_live",
           "sort_order", "zip_length", "reduce_start", "caught_exception", "next_at",
           "dict_set", "dict_set_in_place", "dict_merge", "dict_setdefault", "item_rebinds", "loop_keys",
           "pick_index", "dict_set_grads", "dict_setdefault_grads", "dict_merge_grads"]

_open = threading.local()
blocks_used = False     # set when a `with` or `try` block is first transformed (exceptions)


def context_enter(cm):
    """``with cm:`` as ``frontend.exceptions`` writes it: enter ``cm`` and
    remember it, so that it is left however the function ends (the NumPy
    error settings of an ``np.errstate`` also hold for the adjoint)."""
    global blocks_used
    blocks_used = True
    stack = getattr(_open, "stack", None)
    if stack is None:
        stack = _open.stack = []
    value = cm.__enter__()
    stack.append(cm)
    if isinstance(cm, np.errstate):
        entered = getattr(_open, "entered", None)
        if entered is None:
            entered = _open.entered = []
        entered.append(np.geterr())       # the adjoint runs under the same settings
    return value


def context_exit(cm):
    """The end of a ``with cm:`` block."""
    stack = _open.stack
    if stack and stack[-1] is cm:
        stack.pop()
        cm.__exit__(None, None, None)


def open_contexts():
    """How many contexts are open (``callees`` closes those a primal left open)."""
    stack = getattr(_open, "stack", None)
    return len(stack) if stack else 0


def entered_count():
    entered = getattr(_open, "entered", None)
    return len(entered) if entered else 0


def take_entered(mark):
    """The NumPy error settings of the ``with np.errstate`` blocks entered
    since ``mark``, merged (per category, the most lenient), or None: the
    adjoint of a function that silenced a warning runs silenced too."""
    entered = _open.entered
    states = entered[mark:]
    del entered[mark:]
    order = ["ignore", "warn", "print", "log", "call", "raise"]
    merged = {}
    for state in states:
        for k, v in state.items():
            if k not in merged or order.index(v) < order.index(merged[k]):
                merged[k] = v
    return merged


def close_contexts(depth, err=None):
    """Leave the contexts entered after ``depth`` was taken, innermost first:
    those a ``return`` or an exception inside a ``with`` block skipped."""
    stack = _open.stack
    while len(stack) > depth:
        cm = stack.pop()
        if err is None:
            cm.__exit__(None, None, None)
        elif cm.__exit__(type(err), err, err.__traceback__):
            from ..errors import UnsupportedSyntaxError
            raise UnsupportedSyntaxError(
                f"The context manager {type(cm).__name__} swallowed a {type(err).__name__} "
                "raised in its `with` block; pullback cannot go on with the function after "
                "the block.", hint="Catch the exception with `try`/`except` in the block, "
                "or test for the condition before it happens.") from err


RAN, RETURNED, RAISED, BROKE, CONTINUED = 0, 1, 2, 3, 4


def attempt(body, *args):
    """A ``try`` body run as a function (``frontend.exceptions``): what it
    returns (``(kind, (value, outputs))``: kind 0 at its end, 1 for a
    ``return value``, 3 and 4 for a ``break`` and a ``continue``; outputs, what
    it assigned), or ``(2, error)`` when an exception leaves it.  pullback's own errors are
    not caught: they are never the user's program's."""
    try:
        return body(*args)
    except BaseException as err:
        if _is_pullback_error(err):
            raise
        return (RAISED, err)


def caught_exception(tried):
    """The error an ``except ... as e`` handler binds (``tried``: what
    ``attempt`` returned).  It carries no gradient: an error that holds
    numbers (in its ``args`` or attributes) is refused rather than handed on
    as constants."""
    err = tried[1]
    held = list(getattr(err, "args", ())) + list(getattr(err, "__dict__", {}).values())
    if any(isinstance(v, (float, complex, np.inexact)) or (
            isinstance(v, np.ndarray) and np.issubdtype(v.dtype, np.inexact)) for v in held):
        from ..errors import UnsupportedSyntaxError
        raise UnsupportedSyntaxError(
            f"pullback treats an error caught by `except ... as e` as carrying no gradient, "
            f"and this `{type(err).__name__}` holds numbers.", None,
            "Return or assign the numbers in the `try` body instead of raising them.")
    return err


def _is_pullback_error(err):
    from ..errors import PullbackError
    return isinstance(err, PullbackError)


# -- calls the front end writes ----------------------------------------------------

def star_call(how, method, callee, *items, **kwargs):
    """``callee(a, *xs, k=v, **d)``, as normalize writes a call with starred
    arguments: ``star_call("p*d", None, callee, a, xs, d, k=v)``.  ``how``
    says, for each item, whether it is passed as is (``p``), spread (``*``)
    or spread by keyword (``d``); with a ``method`` name, ``callee`` is the
    object whose method is called."""
    fn, args, kwargs = spread((how, method), callee, items, kwargs)
    return fn(*args, **kwargs)


def spread(spec, callee, items, kwargs):
    how, method = spec
    fn = getattr(callee, method) if method is not None else callee
    args = []
    for h, v in zip(how, items):
        if h == "p":
            args.append(v)
        elif h == "*":
            args.extend(v)
        else:
            if not hasattr(v, "keys"):
                raise TypeError(f"argument after ** must be a mapping, not {type(v).__name__}")
            for k in v.keys():
                if k in kwargs:
                    raise TypeError(f"got multiple values for keyword argument '{k}'")
            kwargs = {**kwargs, **v}
    return fn, tuple(args), kwargs


def sort_order(items, key=None, reverse=False):
    """The order ``sorted(items, key=key, reverse=reverse)`` puts ``items`` in:
    their positions (the same stable sort, on the same keys)."""
    items = list(items)
    if key is None:
        return sorted(range(len(items)), key=items.__getitem__, reverse=reverse)
    return sorted(range(len(items)), key=lambda i: key(items[i]), reverse=reverse)


def pick_index(items, key=None, which="max", has_default=False):
    """The position of the item ``max(items, key=key)`` (or ``min``) returns:
    the first of the largest (smallest) keys, as Python picks; -1 for no items
    where there is a default (else Python's error)."""
    if not len(items) and not has_default:
        raise ValueError(f"{which}() iterable argument is empty")
    best, at = None, -1
    for i, item in enumerate(items):
        k = item if key is None else key(item)
        if at < 0 or (k > best if which == "max" else k < best):
            best, at = k, i
    return at


def zip_length(rows):
    """How many items ``zip(*rows)`` gives."""
    return min((len(r) for r in rows), default=0)


def reduce_start(items):
    """``functools.reduce(f, xs)`` with no initial value: ``xs`` must have an
    item to start from (Python's error otherwise)."""
    if not len(items):
        raise TypeError("reduce() of empty iterable with no initial value")


def expire_value(value, name, var, line):
    """After the statement that made ``value`` (``nested_value``'s partial)
    where ``var``, which it captured, is assigned again later (``line``): a
    call of it from then on would read the old value where Python reads the
    new one, so it is refused (``check_live``) rather than followed."""
    if isinstance(value, functools.partial):
        value.__pullback_expired__ = (name, var, line)


def check_live(value):
    """Refuse a call of a nested function's value after ``expire_value``."""
    expired = getattr(value, "__pullback_expired__", None)
    if expired is not None:
        name, var, line = expired
        from ..errors import UnsupportedSyntaxError
        raise UnsupportedSyntaxError(
            f"pullback cannot call {name} here: it was made as a value where it reads `{var}`, "
            f"which is assigned again later (line {line}), and Python's closure would read "
            "the new value.", hint=f"Pass `{var}` to it as an argument, or bind the value it "
            f"should read as a default where it is defined (`lambda z, {var}={var}: ...`).")


def nested_value(lifted, **captured):
    """A nested function used as a value (``frontend.closures``): its lifted function
    with the values it captures bound by keyword (their gradients flow
    through it: ``driver.dispatch._make_function``)."""
    return functools.partial(lifted, **captured)


def list_index(seq, index):
    """``index`` into the list ``seq`` as it names an item now (``frontend.grown_lists``):
    a negative index counted from the current end, a slice's bounds made
    non-negative; unchanged for anything but a list (an out-of-range index
    too, so that Python raises its own error)."""
    if type(seq) is not list:
        return index
    n = len(seq)
    if isinstance(index, slice):
        if index.step is not None and index.step < 0:
            from ..errors import NonDifferentiableError
            raise NonDifferentiableError(
                "pullback cannot follow a negative-step slice of a list the function "
                "changes later (the adjoint reads the list after it has changed).",
                hint="Read the items by index (`xs[len(xs) - 1]`), or copy the list first "
                     "(`list(xs)[::-1]`).")
        return slice(*index.indices(n))
    if isinstance(index, int) and not isinstance(index, bool) and -n <= index < 0:
        return index + n
    return index


def next_at(items, at, has_default=False):
    """The position ``next(it)`` reads, for an iterator read into the list
    ``items`` and ``at`` items in (``frontend.next_calls``): ``StopIteration``
    past the end, as ``next`` raises, or ``len(items)`` with a default."""
    if at < len(items):
        return at
    if has_default:
        return len(items)
    raise StopIteration
