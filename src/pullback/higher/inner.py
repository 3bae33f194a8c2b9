"""The inner derivative, transformed to be differentiated again, and forward
mode run over it.

A derivative that will be differentiated again is transformed apart from
the one ``pb.grad`` and ``pb.jvp`` use, once per signature: without fused
JAX kernels (their partials would need derivatives of their own) and, in
reverse mode, with out-of-place accumulation and an indexed tape
(``again``), so that forward mode sees no write into a buffer it does not
own::

    inner_transform(handle, args, wrt)   # reverse: loaded.primal, loaded.adjoint
    inner_forward(handle, args, wrt)     # forward: loaded.jvp

``jvp`` runs forward mode over the generated functions; ``annotated`` gives
an error in them the user's line it came from.
"""
from __future__ import annotations

import threading
import weakref

from ..again import again
from ..checks import signature_key
from ..errors import PullbackError

__all__ = ["inner_transform", "inner_forward", "jvp", "annotated"]

_inner = weakref.WeakKeyDictionary()     # handle -> {key: (loaded, Bindings)}
_lock = threading.RLock()


def _cached(handle, key, make):
    """``make()``, cached for ``handle`` and ``key`` while the globals the
    function reads are those it was made with."""
    from ..driver.bindings import Bindings
    with _lock:
        cache = _inner.setdefault(handle, {})
        entry = cache.get(key)
        if entry is not None and entry[1].current():
            return entry[0]
        bindings = Bindings.capture(handle.fun)
        loaded = make()
        cache[key] = (loaded, bindings)
    return loaded


def inner_transform(handle, args, wrt, has_aux=False):
    """``handle``'s transform (a ``callees.Derivative``) for ``args`` without
    fused kernels and with out-of-place accumulation."""
    from ..lowering import kernels

    def make():
        with again(), kernels.options(lower=False):
            return handle.transform(args, wrt, has_aux, inplace=False)
    key = ("reverse", tuple(signature_key(a) for a in args), wrt, has_aux,
           handle.layout_of(args))
    return _cached(handle, key, make)


def inner_forward(handle, args, wrt, has_aux=False):
    """``handle``'s tangent function (a ``forward.handles.ForwardDerivative``)
    for ``args`` without fused kernels."""
    from ..lowering import kernels

    def make():
        with kernels.options(lower=False):
            return handle.transform(args, tuple(wrt), has_aux)
    key = ("forward", tuple(signature_key(a) for a in args), tuple(wrt), has_aux,
           getattr(args, "layout", None))
    return _cached(handle, key, make)


def jvp(fn, args, mask, tangents):
    """``fn(*args)`` and its tangent, the arguments at ``mask`` carrying ``tangents``."""
    from ..forward import calls
    keep = [(k, t) for k, t in zip(mask, tangents) if t is not None]
    return calls.jvp_call(fn, tuple(args), {}, tuple(k for k, _ in keep),
                          tuple(t for _, t in keep), top=True)


def annotated(loaded, run):
    """``run()``; an error in ``loaded``'s generated code (when it runs, or when
    forward mode transforms it) is given the user's line it came from."""
    try:
        return run()
    except PullbackError as err:
        where = err.location
        if where is not None and where.filename == getattr(loaded, "filename", None):
            user = loaded.user_line(where.lineno)
            if user is not None:
                import linecache
                text = linecache.getline(loaded.user_file, user).strip()
                err.add_note("in the derivative of this line, differentiated again (forward "
                             f'over reverse):\n  File "{loaded.user_file}", line {user}\n'
                             f"    {text}")
        else:
            loaded.annotate(err)
        raise
    except Exception as err:
        loaded.annotate(err)
        raise
