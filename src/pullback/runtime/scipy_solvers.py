"""Helpers called by the SciPy rules of ``scipy.signal`` and
``scipy.integrate.odeint`` (``rules.scipy_signal``, ``scipy_integrate``);
the special functions' and distributions' are in ``scipy_support``,
``scipy.linalg``'s in ``scipy_linalg_grads`` (imported with SciPy's rules).  As there, SciPy is imported only when a helper runs,
float32 stays float32, and the convention is JAX's.
"""
from __future__ import annotations

import numpy as np

from .scipy_support import _like

__all__ = ["signal_conv_grad", "odeint_grad", "set_odeint_vjp"]


# --- scipy.signal ---------------------------------------------------------------


def signal_conv_grad(g, in1, in2, mode, wrt, flip_other=False):
    """Cotangent of ``in1`` or ``in2`` in ``scipy.signal.convolve(in1, in2, mode)``
    (any number of dimensions): ``g`` placed in the full result, then
    convolved ('valid') with the other input reversed along every axis.
    ``flip_other``: ``correlate(in1, in2) == convolve(in1, conj(reverse(in2)))``,
    and the cotangent of ``in2`` is the conjugate reverse of that one."""
    from scipy.signal import convolve
    a = np.asarray(in1)
    b = np.asarray(in2)
    if flip_other:
        b = np.conj(np.flip(b))
    full_shape = tuple(n + m - 1 for n, m in zip(a.shape, b.shape))
    gg = np.asarray(g)
    if gg.shape != full_shape:
        full = np.zeros(full_shape, dtype=gg.dtype)
        start = tuple((f - s) // 2 for f, s in zip(full_shape, gg.shape))
        full[tuple(slice(s, s + n) for s, n in zip(start, gg.shape))] = gg
        gg = full
    other = b if wrt == "in1" else a
    out = convolve(gg, np.flip(other), mode="valid")
    if wrt == "in2" and flip_other:
        out = np.conj(np.flip(out))
    target = in1 if wrt == "in1" else in2
    return _like(out.astype(np.result_type(out), copy=False), target)


# --- scipy.integrate.odeint ---------------------------------------------------------

_ODEINT_VJP = []


def set_odeint_vjp(fn):
    """Install the function ``vjp(func, y, t, args, ct) -> (y_bar, t_bar, args_bar)``
    the odeint adjoint calls (``driver.jit`` installs pullback's own)."""
    _ODEINT_VJP[:] = [fn]


def odeint_grad(g, ans, func, y0, t, args, rtol, atol, mxstep, tfirst, full_output):
    """Cotangents ``(y0_bar, t_bar, args_bar)`` in ``ys = odeint(func, y0, t, args)``.

    The adjoint ODE is solved backward with ``odeint`` itself, from the last
    time to the first, over the augmented state ``(y, a, t0_bar, args_bar)``:
    ``y' = f(y, t)``, ``a' = -a^T df/dy``, ``args_bar' = -a^T df/dargs``,
    ``t0_bar' = -a^T df/dt``; at each output time ``t_i`` the adjoint ``a``
    jumps by ``g[i]``, and ``t_i``'s cotangent is ``g[i] . f(y_i, t_i)``
    (``t_0``'s is what ``t0_bar`` gathered), as JAX's ``odeint``.  The
    vector field's vjp comes from pullback (``set_odeint_vjp``); the
    integrator itself is never differentiated."""
    if full_output:
        from ..errors import NonDifferentiableError
        raise NonDifferentiableError(
            "pullback differentiates scipy.integrate.odeint with full_output=False only.",
            hint="Call odeint without full_output for the differentiated solve.")
    y_bar, t_bar, args_bar = _odeint_adjoint(g, ans, func, y0, t, args, rtol, atol, mxstep,
                                             tfirst)
    return (_like(np.reshape(y_bar, np.shape(y0)), y0),
            _like(np.reshape(t_bar, np.shape(t)), t), args_bar)


def _odeint_adjoint(g, ans, func, y0, t, args, rtol, atol, mxstep, tfirst):
    from scipy.integrate import odeint
    if not _ODEINT_VJP:
        raise RuntimeError("the adjoint of odeint differentiates the vector field with "
                           "pullback itself: import pullback before running this code")
    vjp = _ODEINT_VJP[0]
    if np.iscomplexobj(ans) or np.iscomplexobj(g) or np.iscomplexobj(y0):
        from ..errors import NonDifferentiableError
        raise NonDifferentiableError("pullback differentiates odeint of real states only.",
                                     hint="Split a complex state into its real and "
                                          "imaginary parts.")
    args = () if args is None else tuple(args) if isinstance(args, (tuple, list)) else (args,)
    ys = np.asarray(ans, dtype=np.float64)
    gs = np.broadcast_to(np.asarray(g, dtype=np.float64), ys.shape)
    ts = np.asarray(t, dtype=np.float64)
    n = ys.shape[1]
    sizes = [np.size(a) for a in args]

    def flat(v, size):
        return np.zeros(size) if v is None else np.ravel(np.asarray(v, dtype=np.float64))

    def aug(state, s):
        # integrated in s = -t (odeint's times must increase): every rate flips sign
        y, a = state[:n], state[n:2 * n]
        dy, yb, tb, ab = vjp(func, y, -s, args, a, tfirst)
        parts = [-flat(dy, n), flat(yb, n), [float(np.real(np.sum(tb))) if tb is not None
                                             else 0.0]]
        return np.concatenate(parts + [flat(v, k) for v, k in zip(ab, sizes)])

    def field(y, tt):
        out = func(tt, y, *args) if tfirst else func(y, tt, *args)
        return np.ravel(np.asarray(out, dtype=np.float64))

    a = gs[-1].copy()
    t_bar = np.zeros(len(ts))
    args_bar = np.zeros(sum(sizes))
    t0_bar = 0.0
    kw = {k: v for k, v in (("rtol", rtol), ("atol", atol), ("mxstep", mxstep)) if v is not None}
    for i in range(len(ts) - 1, 0, -1):
        t_bar[i] = float(np.dot(gs[i], field(ys[i], ts[i])))
        t0_bar -= t_bar[i]
        if ts[i] != ts[i - 1]:
            state = np.concatenate([ys[i], a, [t0_bar], args_bar])
            state = odeint(aug, state, np.array([-ts[i], -ts[i - 1]]), **kw)[-1]
            a, t0_bar, args_bar = state[n:2 * n], state[2 * n], state[2 * n + 1:]
        a = a + gs[i - 1]
    t_bar[0] = t0_bar
    out, start = [], 0
    for arg, k in zip(args, sizes):
        part = np.reshape(args_bar[start:start + k], np.shape(arg))
        out.append(_like(part, arg) if np.ndim(arg) else
                   (float(part) if isinstance(arg, (float, int)) else _like(part[()], arg)))
        start += k
    return a, t_bar, tuple(out)
