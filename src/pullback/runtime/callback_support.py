"""Helpers of the rules for NumPy functions that call a user function
(``rules.numpy_callbacks``): ``np.piecewise`` and ``np.apply_along_axis``.

The user function is differentiated by pullback itself, one call at a time,
through the dispatcher that differentiates calls of function values
(``calls.dynamic_call`` / ``dynamic_adjoint`` in reverse mode, the forward
dispatcher's ``dynamic_jvp`` in forward mode, installed by
``pullback.forward.calls``), so a piece or a slice function is any function
pullback can differentiate.  What the function holds (a closure's values,
``*args``) carries no gradient here: the rules refuse those when they
depend on the inputs.

>>> import numpy as np, pullback
>>> x = np.array([-2.0, -1.0, 1.0, 3.0])
>>> piecewise_grad(np.ones(4), x, [x < 0, x > 0], [np.square, np.negative], (), {})
array([-4., -2., -1., -1.])
"""
from __future__ import annotations

import numpy as np

from .calls import _hook, dynamic_adjoint, dynamic_call

__all__ = ["piecewise_grad", "piecewise_jvp", "apply_along_axis_grad",
           "apply_along_axis_jvp"]


def _pieces(x, condlist, funclist):
    """``(cond, chosen, func)`` for each function of ``np.piecewise(x,
    condlist, funclist)``, read as NumPy reads them (one condition alone, an
    extra function for "otherwise"); ``chosen`` is where its value is kept (a
    later condition overwrites an earlier one)."""
    n2 = len(funclist)
    if np.isscalar(condlist) or (not isinstance(condlist[0], (list, np.ndarray))
                                 and np.ndim(x) != 0):
        condlist = [condlist]
    conds = np.asarray(condlist, dtype=bool)
    if len(conds) == n2 - 1:
        conds = np.concatenate([conds, ~np.any(conds, axis=0, keepdims=True)], axis=0)
    later = np.zeros(np.shape(x), dtype=bool)
    out = []
    for cond, func in reversed(list(zip(conds, funclist))):
        cond = np.broadcast_to(cond, np.shape(x))
        out.append((cond, cond & ~later, func))
        later = later | cond
    return [p for p in reversed(out) if callable(p[2]) and np.any(p[0])]


def piecewise_grad(g, x, condlist, funclist, args, kw):
    """Cotangent of ``x`` in ``np.piecewise(x, condlist, funclist, *args,
    **kw)``: each function's vjp at ``x[cond]``, for ``g`` where its value is
    kept (zero where a later condition overwrote it); constants and places
    no condition holds get nothing."""
    x, g, args, kw = np.asarray(x), np.asarray(g), args or (), kw or {}
    out = np.zeros(x.shape, dtype=np.result_type(g, x))
    for cond, chosen, func in _pieces(x, condlist, funclist):
        y, res = dynamic_call(func, (0,), False, x[cond], *args, **kw)
        ct = np.where(chosen, g, 0)[cond]
        if np.ndim(y) == 0:                 # a number for the whole piece: broadcast
            ct = np.sum(ct)
        out[cond] += dynamic_adjoint(res, ct)[0]
    return out


def piecewise_jvp(t, ans, x, condlist, funclist, args, kw):
    """Tangent of ``np.piecewise``: each function's tangent at ``x[cond]``
    where its value is kept."""
    x, t = np.asarray(x), np.broadcast_to(t, np.shape(x))
    args, kw = args or (), kw or {}
    out = np.zeros(np.shape(ans), dtype=np.result_type(t, ans))
    for cond, chosen, func in _pieces(x, condlist, funclist):
        _, dot = _hook("dynamic_jvp")(func, (0,), (t[cond],), x[cond], *args, **kw)
        out[chosen] = np.broadcast_to(dot, (int(np.sum(cond)),))[chosen[cond]]
    return out


def _slices(arr, axis):
    """``arr`` with ``axis`` moved last, and the indices of its 1-d slices."""
    moved = np.moveaxis(np.asarray(arr), axis, -1)
    return moved, list(np.ndindex(moved.shape[:-1]))


def _result_axes(ans, arr, axis):
    """The axes of ``np.apply_along_axis``'s result that one call filled:
    they stand where ``axis`` stood."""
    axis = axis % np.ndim(arr)
    k = np.ndim(ans) - np.ndim(arr) + 1
    return list(range(axis, axis + k)), list(range(-k, 0)) if k else []


def apply_along_axis_grad(g, ans, func1d, axis, arr, args, kwargs):
    """Cotangent of ``arr`` in ``np.apply_along_axis(func1d, axis, arr,
    *args, **kwargs)``: ``func1d``'s vjp on each 1-d slice, for that slice's
    part of ``g``."""
    moved, index = _slices(arr, axis)
    src, dst = _result_axes(ans, arr, axis)
    gm, args, kwargs = np.moveaxis(np.asarray(g), src, dst), args or (), kwargs or {}
    out = np.zeros(moved.shape, dtype=np.result_type(g, moved))
    for ind in index:
        _, res = dynamic_call(func1d, (0,), False, moved[ind], *args, **kwargs)
        out[ind] = dynamic_adjoint(res, gm[ind])[0]
    return np.moveaxis(out, -1, axis)


def apply_along_axis_jvp(t, ans, func1d, axis, arr, args, kwargs):
    """Tangent of ``np.apply_along_axis``: ``func1d``'s tangent on each slice."""
    moved, index = _slices(arr, axis)
    tm = np.moveaxis(np.broadcast_to(t, np.shape(arr)), axis, -1)
    args, kwargs = args or (), kwargs or {}
    src, dst = _result_axes(ans, arr, axis)
    out = np.zeros(np.moveaxis(np.asarray(ans), src, dst).shape,
                   dtype=np.result_type(t, ans))
    for ind in index:
        _, out[ind] = _hook("dynamic_jvp")(func1d, (0,), (tm[ind],), moved[ind], *args,
                                           **kwargs)
    return np.moveaxis(out, dst, src)
