"""The just-in-time driver of forward mode: a handle's tangent function for
the arguments at hand.

``forward.handles.ForwardDerivative.specialize`` comes here
(``ForwardDerivative.driver``): the handle's own cache of tangent functions,
one per abstract signature of the arguments and set of parameters with
tangents, while what the transform resolved is unchanged; else the compiler
(``pipeline.forward_transform``).  For Dask or CuPy arguments the tangent
function is built again with NumPy's names bound to their library, as reverse
mode's functions are (``backend.foreign``).  Tangent functions are not kept
on disk nor compiled ahead of time (``jit.obtain`` is reverse mode's)::

    pb.jvp(f, (x,), (t,))  ->  forward_of(f).call  ->  specialize
                           ->  handle's cache | transform (pipeline.FORWARD_STEPS)
"""
from __future__ import annotations

import sys

from .bindings import Bindings
from ..checks import signature_key
from ..forward.handles import ForwardDerivative
from ..runtime.backends import foreign_arguments

__all__ = ["specialize", "transform"]


def specialize(handle, args, wrt, has_aux=False):
    """The ``LoadedForward`` of ``handle`` (a ``forward.handles.ForwardDerivative``)
    for ``args``, with tangents for the parameters ``wrt`` (indices)."""
    from ..lowering import kernels      # late: importing pullback does not load the compiler
    large = kernels.size_class(args)
    key = (tuple(signature_key(a) for a in args), wrt, has_aux, large,
           getattr(args, "layout", None))
    entry = handle.cache.get(key)
    if entry is not None and entry[1].current():
        return entry[0]
    with handle._lock:
        entry = handle.cache.get(key)
        if entry is not None and entry[1].current():
            return entry[0]
        # what the transform resolves (globals, closure cells) is recorded first
        # and checked on every later call: a rebinding makes it transform again
        bindings = Bindings.capture(handle.fun)
        loaded = transform(handle, args, wrt, has_aux)
        if foreign_arguments(args):     # Dask, CuPy: NumPy's names bound to their library
            loaded = _foreign_build(handle, args, loaded)
        handle.cache[key] = (loaded, bindings)
    return loaded


def _foreign_build(handle, args, loaded):
    from ..backend.loader import LoadedForward
    from .jit import _foreign_build as bound_to_library
    bound = bound_to_library(handle, args, loaded._loaded)
    return loaded if bound is loaded._loaded else LoadedForward(bound, loaded.source)


def transform(handle, args, wrt, has_aux=False):
    """A new tangent function of ``handle``'s function for ``args`` (the compiler)."""
    from .. import pipeline
    from ..analyses import kinds as kinds_
    from ..lowering import kernels
    layout = handle.layout_of(args)
    params = handle.params if layout is None else layout.params
    param_kinds = {p: kinds_.of_value(a) for p, a in zip(params, args)}
    with kernels.sizing(args):
        return pipeline.forward_transform(handle.fun, param_kinds, [params[i] for i in wrt],
                                          has_aux, layout=layout)


ForwardDerivative.driver = sys.modules[__name__]      # see ForwardDerivative.driver
