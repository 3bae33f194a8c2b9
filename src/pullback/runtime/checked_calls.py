"""Library calls whose result carries no gradient, checked when they run.

What ``analyses.opaque_calls`` writes for a call run for its effect (a
statement, or a result no gradient reaches) given values being
differentiated, and what ``frontend.exceptions`` writes for the ``as`` value
of ``with``: library code runs checked by ``runtime.opaque.call`` (it may only
move the values being differentiated), anything else runs as it is::

    lib.stash(store, v)       ->    checked_call((0, 1), lib.stash, store, v)
    b.apply_defaults()        ->    checked_method_call((-1,), True, b, 'apply_defaults')
    with open(p) as fh:       ->    fh = entered_value(open(p), '`p`')

>>> import operator
>>> checked_call((0,), operator.setitem, [1.0], 0, 2.0)
Traceback (most recent call last):
...
pullback.errors.NonDifferentiableError: ...
"""
from __future__ import annotations

import functools
import types

from .arguments import unseen_method_write
from .leaves import Unwalkable, Walk
from .opaque import call, call_protected, is_library_code, is_numpy_code

__all__ = ["entered_value", "checked_call", "checked_method_call"]


def entered_value(cm, names=""):
    """``v`` of ``with cm as v`` where ``cm`` was built from the function's own
    values (``with open(path) as fh``): entered as ``control.context_enter``
    does, and checked to hold no float, complex or float array, since what
    ``__enter__`` returns is taken to carry no gradient (a file, a lock)."""
    from . import control
    value = control.context_enter(cm)
    try:
        leaves = Walk().leaves(value)
    except Unwalkable:
        leaves = [((), None)]
    if leaves:
        from ..errors import UnsupportedSyntaxError
        raise UnsupportedSyntaxError(
            f"pullback cannot differentiate a context manager built from {names or 'values of this function'} "
            f"whose `as` value (what `{type(cm).__name__}.__enter__` returned) holds numbers.",
            None, "What `__enter__` returns carries no gradient: build the context manager "
            "from module-level values, or compute the value in the block.")
    return value


# -- calls whose result carries no gradient ------------------------------------------

def checked_call(mask, fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` as a statement (or with a result no gradient
    reaches) given values being differentiated (``mask``: the positions and
    keywords that hold them; ``analyses.opaque_calls`` writes it so): library
    code runs checked (``call``), so that what it changes in its arguments
    keeps each differentiated value at its place; anything else runs as it is
    (pullback's other checks are where they were)."""
    f, lead, keywords = fn, (), {}
    while True:         # what the dispatcher unwraps: partials, bound methods
        if isinstance(f, functools.partial):
            lead, keywords, f = f.args + lead, {**f.keywords, **keywords}, f.func
        elif isinstance(f, types.MethodType):
            lead, f = (f.__self__,) + lead, f.__func__
        else:
            break
    if isinstance(f, type) or not callable(f):
        return fn(*args, **kwargs)
    if is_numpy_code(f):            # NumPy's own: its writes into what it is given refused
        return call_protected(fn, args, kwargs, mask)
    if not is_library_code(f):
        return fn(*args, **kwargs)
    if set(keywords) & set(kwargs):
        return fn(*args, **kwargs)      # (Python raises)
    n = len(lead)
    mask = tuple(k + n if isinstance(k, int) and k >= 0 else k for k in mask)
    return call(f, lead + args, {**keywords, **kwargs}, mask)[0]


def checked_method_call(mask, strict, obj, name, *args, **kwargs):
    """``obj.name(*args, **kwargs)`` as a statement, as ``checked_call``
    (``-1`` in ``mask``: ``obj`` holds values being differentiated).  With
    ``strict`` (``obj`` holds them and its class was not known when the
    function was transformed: ``b = sig.bind(*args); b.apply_defaults()``), a
    method that is not library code is refused, as ``analyses.attributes``
    refuses it where the class is known: it would change ``obj`` unseen."""
    method = getattr(obj, name)
    fn, lead = method, ()
    if isinstance(method, types.MethodType):
        fn, lead = method.__func__, (method.__self__,)
    if is_numpy_code(fn):
        return call_protected(method, args, kwargs, mask)
    if is_library_code(fn):
        if lead:
            mask = tuple(0 if k == -1 else k + 1 if isinstance(k, int) else k for k in mask)
        return call(fn, lead + args, kwargs, mask)[0]
    if not strict:
        if any(k != -1 for k in mask) and lead:     # (a value given: kept out of `obj`)
            unseen_method_write(lead[0], name)
        return method(*args, **kwargs)
    from ..errors import UnsupportedSyntaxError
    cls = type(obj).__name__
    raise UnsupportedSyntaxError(
        f"pullback cannot differentiate this call of `{name}`: its result is unused, so it "
        f"runs as plain Python, and the object (a {cls}) holds differentiated values: "
        "whatever the call changes in it would go unseen, and the reads of it after the "
        "call would be differentiated as if the call had not run.", None,
        f"Make `{name}` return a new {cls} (or the new values) instead of changing `self`, "
        f"and bind it: `obj = obj.{name}(...)`; a method called for its result is "
        "differentiated.")
