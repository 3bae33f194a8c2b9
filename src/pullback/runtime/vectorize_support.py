"""Helpers of the rule for calling an ``np.vectorize`` object
(``rules.numpy_vectorize``).

The user's scalar function is differentiated by pullback itself, one call
per element, through the dispatcher that differentiates calls of function
values (``calls.dynamic_call`` / ``dynamic_adjoint`` in reverse mode, the
forward dispatcher's ``dynamic_jvp`` in forward mode), as NumPy calls it:
the arguments not ``excluded`` are broadcast together and each call gets
one element of each (a Python number, as NumPy passes it); an excluded
argument is passed whole, and its cotangent is the sum over the calls.

>>> import numpy as np, pullback
>>> from pullback.testing import function_from_source
>>> f = function_from_source('''
... def f(r, d):
...     return 0.5 * r * r if abs(r) <= d else d * (abs(r) - 0.5 * d)
... ''')
>>> v, x = np.vectorize(f), np.array([-2.0, 0.5, 3.0])
>>> each_element_grads(np.ones(3), v(x, 1.0), v, (x, 1.0), {})[0]
array([-1. ,  0.5,  1. ])
"""
from __future__ import annotations

import numpy as np

from .calls import _hook, dynamic_adjoint, dynamic_call
from .core import add_cotangents, project, unbroadcast

__all__ = ["each_element_grads", "each_element_jvp"]


class _Call:
    """One call of an ``np.vectorize`` object ``vec``: the arguments that are
    broadcast (``inds``: positions, ``names``: keywords), their common
    ``shape``, and the arguments of the call at each element."""

    def __init__(self, vec, args, kwargs):
        if vec.signature is not None:
            from ..errors import NonDifferentiableError
            raise NonDifferentiableError(
                f"pullback cannot differentiate np.vectorize(..., signature="
                f"{vec.signature!r}) yet (a generalized ufunc: each call takes and returns "
                "arrays).", hint="Loop over the core arrays yourself and np.stack the "
                "results, or write the function with NumPy operations on whole arrays.")
        self.fn, self.args, self.kwargs = vec.pyfunc, tuple(args), dict(kwargs or {})
        self.inds = [i for i in range(len(self.args)) if i not in vec.excluded]
        self.names = [k for k in self.kwargs if k not in vec.excluded]
        self.shape = np.broadcast_shapes(*[np.shape(self.value(k)) for k in self.mapped])
        self.arrays = {k: np.broadcast_to(np.asarray(self.value(k)), self.shape)
                       for k in self.mapped}

    @property
    def mapped(self):
        return self.inds + self.names

    def value(self, k):
        return self.args[k] if isinstance(k, int) else self.kwargs[k]

    def at(self, index):
        """The positional and keyword arguments of the call at ``index``."""
        a = [self.arrays[i][index].item() if i in self.arrays else x
             for i, x in enumerate(self.args)]
        kw = {k: self.arrays[k][index].item() if k in self.arrays else x
              for k, x in self.kwargs.items()}
        return a, kw

    def differentiable(self):
        """The positions of the arguments that may carry a gradient: floats."""
        return tuple(i for i, x in enumerate(self.args) if _inexact(x))


def _inexact(x):
    try:
        return np.asarray(x).dtype.kind in "fc"
    except (TypeError, ValueError):
        return False


def _outputs(v):
    return v if isinstance(v, tuple) else (v,)


def each_element_grads(g, ans, vec, args, kwargs):
    """Cotangents of ``args`` in ``vec(*args, **kwargs)`` for an
    ``np.vectorize`` object ``vec``: the function's vjp at each element, for
    that element of ``g``; an argument NumPy does not broadcast (``excluded``)
    gets the sum over the calls; integers get None."""
    call = _Call(vec, args, kwargs)
    mask = call.differentiable()
    gs = [None if gj is None else np.broadcast_to(gj, call.shape) for gj in _outputs(g)]
    sums = {k: np.zeros(call.shape, dtype=np.result_type(call.arrays[k], *[
        gj for gj in gs if gj is not None])) for k in mask if k in call.arrays}
    whole = {}
    for index in np.ndindex(call.shape):
        a, kw = call.at(index)
        y, res = dynamic_call(call.fn, mask, False, *a, **kw)
        ct = tuple(0.0 if gj is None else gj[index].item() for gj in gs)
        grads = dynamic_adjoint(res, ct if isinstance(y, tuple) else ct[0])
        for k, gk in zip(mask, grads):
            if gk is None:
                continue
            if k in sums:
                sums[k][index] = gk
            else:
                whole[k] = gk if k not in whole else add_cotangents(whole[k], gk)
    out = [None] * len(call.args)
    for k in mask:
        x = call.args[k]
        out[k] = project(unbroadcast(sums[k], x), x) if k in sums else \
            project(whole[k], x) if k in whole else np.zeros_like(x)
    return tuple(out)


class _PerArgument:
    """The forward rule's answer for ``*args``: the tangent of the result for
    a tangent of the ``k``-th argument, computed when the rule reads it."""

    def __init__(self, tangent):
        self.tangent = tangent

    def __getitem__(self, k):
        return self.tangent(k)


def each_element_jvp(t, ans, vec, args, kwargs):
    """Tangent of ``vec(*args, **kwargs)`` for a tangent ``t`` of one of
    ``args`` (the ``k``-th, read as ``each_element_jvp(...)[k]``): the
    function's tangent at each element."""
    call = _Call(vec, args, kwargs)
    outs = _outputs(ans)

    def tangent(k):
        tk = np.broadcast_to(t, call.shape) if k in call.arrays else t
        dots = [np.zeros(np.shape(o), dtype=np.result_type(o, t)) for o in outs]
        for index in np.ndindex(call.shape):
            a, kw = call.at(index)
            _, dot = _hook("dynamic_jvp")(call.fn, (k,), (tk[index] if k in call.arrays
                                                          else tk,), *a, **kw)
            for d, dj in zip(dots, _outputs(dot)):
                d[index] = 0.0 if dj is None else dj
        return tuple(dots) if isinstance(ans, tuple) else dots[0]

    return _PerArgument(tangent)
