"""Helpers called by the SciPy rules of ``scipy.linalg``, ``scipy.signal`` and
``scipy.integrate.odeint`` (``rules.scipy_linalg``, ``scipy_signal``,
``scipy_integrate``); the special functions' and distributions' are in
``scipy_support``.  As there, SciPy is imported only when a helper runs,
float32 stays float32, and the convention is JAX's.
"""
from __future__ import annotations

import numpy as np

from .linalg_support import cholesky_grad, hermitian_grad
from .scipy_support import _like

__all__ = ["solve_triangular_grad", "cho_factor_grad", "cho_solve_grad", "sylvester_grad",
           "sqrtm_grad", "expm_grad", "scipy_solve_grad", "signal_conv_grad",
           "odeint_grad", "set_odeint_vjp", "scipy_inv_grad", "solve_triangular_jvp"]


# --- scipy.linalg --------------------------------------------------------------


def _T(x):
    return np.swapaxes(x, -1, -2)


def _mat(v):
    """A right-hand side as a stack of matrices (1-d ``b`` becomes a column)."""
    return v[..., None] if np.ndim(v) == 1 else v


def solve_triangular_grad(g, ans, a, b, trans, lower, unit_diagonal, wrt):
    """Cotangent of ``a`` or ``b`` in ``x = solve_triangular(a, b, trans, lower,
    unit_diagonal)``: ``M = op(tri(a))`` solved against, ``gb = M^-T g``
    (solved with the same factor), ``ga = -gb x^T`` mapped back through
    ``op`` and restricted to the triangle read (strictly, ``unit_diagonal``)."""
    from scipy.linalg import solve_triangular
    t = {0: 0, 1: 1, 2: 2, "N": 0, "T": 1, "C": 2}[trans]
    if t == 2:
        gb = np.conj(solve_triangular(a, np.conj(g), trans=0, lower=lower,
                                      unit_diagonal=unit_diagonal))
    else:
        gb = solve_triangular(a, g, trans=1 - t, lower=lower, unit_diagonal=unit_diagonal)
    if wrt == "b":
        return _like(gb, b)
    gm = -np.matmul(_mat(gb), _T(_mat(ans)))
    ga = gm if t == 0 else _T(gm) if t == 1 else np.conj(_T(gm))
    if unit_diagonal:
        ga = np.tril(ga, -1) if lower else np.triu(ga, 1)
    else:
        ga = np.tril(ga) if lower else np.triu(ga)
    return _like(ga, a)


def solve_triangular_jvp(t, ans, a, b, trans, lower, unit_diagonal, wrt):
    """Tangent of ``x = solve_triangular(a, b, trans, lower, unit_diagonal)``
    along ``a``'s tangent ``t`` (``-M^-1 op(tri(t)) x``, the triangle read) or
    along ``b``'s (``M^-1 t``), ``M = op(tri(a))``."""
    from scipy.linalg import solve_triangular
    if wrt == "a":
        k = (-1 if lower else 1) if unit_diagonal else 0
        m = np.tril(t, k) if lower else np.triu(t, k)
        op = {0: 0, 1: 1, 2: 2, "N": 0, "T": 1, "C": 2}[trans]
        m = m if op == 0 else _T(m) if op == 1 else np.conj(_T(m))
        t = -np.matmul(m, ans)
    return solve_triangular(a, t, trans=trans, lower=lower, unit_diagonal=unit_diagonal)


def cho_factor_grad(g, ans, a, lower):
    """Cotangent of ``a`` in ``(c, lower) = cho_factor(a, lower)``: the factor's
    triangle through ``cholesky``'s rule, the other triangle of ``c`` (a copy
    of ``a``'s) passed through."""
    gc = g[0]
    c = ans[0]
    factor = np.tril(c) if lower else np.triu(c)
    tri = np.tril(gc) if lower else np.triu(gc)
    out = cholesky_grad(tri, factor, a, not lower)
    return _like(out + (np.triu(gc, 1) if lower else np.tril(gc, -1)), a)


def cho_solve_grad(g, ans, c_and_lower, b, wrt):
    """Cotangent of ``c_and_lower`` (its factor ``c``) or ``b`` in ``x =
    cho_solve((c, lower), b)``, real only: ``gb = A^-1 g``, ``gA = -gb x^T``
    and ``gL = (gA + gA^T) L`` (``gU = U (gA + gA^T)``) on the factor's
    triangle, zero on the other (never read)."""
    from scipy.linalg import cho_solve
    c, lower = c_and_lower
    if np.iscomplexobj(c) or np.iscomplexobj(b) or np.iscomplexobj(g):
        from ..errors import NonDifferentiableError
        raise NonDifferentiableError(
            "pullback differentiates scipy.linalg.cho_solve for real matrices only.",
            hint="Use np.linalg.solve for complex systems.")
    gb = cho_solve((c, lower), g)
    if wrt == "b":
        return _like(gb, b)
    ga = -np.matmul(_mat(gb), _T(_mat(ans)))
    sym = ga + _T(ga)
    if lower:
        gc = np.tril(np.matmul(sym, np.tril(c)))
    else:
        gc = np.triu(np.matmul(np.triu(c), sym))
    return (_like(gc, c), None)


def sylvester_grad(g, ans, a, b, wrt):
    """Cotangent of ``a``, ``b`` or ``q`` in ``X = solve_sylvester(a, b, q)``
    (``a X + X b = q``): ``gq`` solves ``a^T gq + gq b^T = g``, then
    ``ga = -gq X^T`` and ``gb = -X^T gq`` (holomorphic: plain transposes)."""
    from scipy.linalg import solve_sylvester
    gq = solve_sylvester(_T(a), _T(b), g)
    if wrt == "q":
        return gq
    if wrt == "a":
        return -np.matmul(gq, _T(ans))
    return -np.matmul(_T(ans), gq)


def sqrtm_grad(g, ans):
    """Cotangent of ``A`` in ``X = sqrtm(A)``: ``X^T G_A + G_A X^T = G``
    (a Sylvester equation, from ``dX X + X dX = dA``)."""
    from scipy.linalg import solve_sylvester
    if np.ndim(ans) > 2:
        return np.stack([sqrtm_grad(gi, xi) for gi, xi in zip(g, ans)])
    x = ans
    return solve_sylvester(_T(x), _T(x), g).astype(np.result_type(x, g), copy=False)


def expm_grad(g, a):
    """Cotangent of ``A`` in ``expm(A)``: the Frechet derivative of ``expm`` at
    ``A^T`` in the direction ``G`` (the upper-right block of
    ``expm([[A^T, G], [0, A^T]])``)."""
    from scipy.linalg import expm
    n = a.shape[-1]
    at = _T(a)
    g = np.broadcast_to(g, np.shape(a))
    dt = np.result_type(a, g)
    big = np.zeros(np.shape(a)[:-2] + (2 * n, 2 * n), dtype=dt)
    big[..., :n, :n] = at
    big[..., n:, n:] = at
    big[..., :n, n:] = g
    return np.ascontiguousarray(expm(big)[..., :n, n:])


def scipy_solve_grad(g, ans, a, b, assume_a, lower, transposed, wrt):
    """Cotangent of ``a`` or ``b`` in ``x = scipy.linalg.solve(a, b, ...)``: a general
    solve as ``np.linalg.solve`` (``transposed``: of ``a^T``); for ``assume_a``
    ``'sym'``/``'pos'`` (real) the matrix SciPy reads is the one built from one
    triangle of ``a``, so ``a``'s cotangent lies in that triangle."""
    from scipy.linalg import solve
    kind = assume_a or "gen"
    if kind in ("her", "hermitian") or (np.iscomplexobj(a) and kind not in ("gen", "general")):
        from ..errors import NonDifferentiableError
        raise NonDifferentiableError(
            f"pullback differentiates scipy.linalg.solve(assume_a={assume_a!r}) for real "
            "matrices only.", hint="Use assume_a='gen' (the default).")
    if kind in ("gen", "general"):
        gb = solve(a if transposed else _T(a), g)
    else:
        gb = solve(a, g, assume_a=kind, lower=lower)
    if wrt == "b":
        return _like(gb, b)
    ga = -np.matmul(_mat(gb), _T(_mat(ans)))
    if transposed:
        ga = _T(ga)
    if kind in ("gen", "general", "diagonal", "tridiagonal", "banded"):
        if kind not in ("gen", "general"):
            from ..errors import NonDifferentiableError
            raise NonDifferentiableError(
                f"pullback does not differentiate scipy.linalg.solve(assume_a={assume_a!r}).",
                hint="Use assume_a='gen' (the default).")
        return _like(ga, a)
    return _like(hermitian_grad(ga, lower=lower), a)


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


def scipy_inv_grad(g, ans, assume_a):
    """Cotangent of ``a`` in ``scipy.linalg.inv(a)``: ``-inv^T g inv^T`` (a
    general matrix; the structured ``assume_a`` variants are refused)."""
    if assume_a not in (None, "gen", "general"):
        from ..errors import NonDifferentiableError
        raise NonDifferentiableError(
            f"pullback differentiates scipy.linalg.inv with assume_a=None only, not "
            f"{assume_a!r}.", hint="Drop assume_a (a general inverse, the same values).")
    return -np.matmul(np.matmul(_T(ans), g), _T(ans))
