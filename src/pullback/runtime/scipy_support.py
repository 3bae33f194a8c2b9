"""Helpers called by the SciPy rules (``rules.scipy_*``).

SciPy is optional: this module imports it only when a helper runs (a rule
that calls one is registered only when SciPy imports), so ``pullback`` and
its generated code import without it.  Each helper returns a contribution
in the input's dtype (float32 stays float32) and follows JAX's convention
(the adjoint of the derivative under ``Re sum(a * b)``, no conjugation).
"""
from __future__ import annotations

import math

import numpy as np

from .core import unbroadcast, zeros_like
from .linalg_support import cholesky_grad, hermitian_grad

__all__ = ["sp_digamma", "sp_polygamma", "multigammaln_grad", "bessel_grad",
           "incomplete_grad", "mvn_entropy_grad", "sylvester_grad",
           "logsumexp_grad", "xlogy_grad", "stats_grad", "mvn_grad", "dirichlet_grad",
           "solve_triangular_grad", "cho_factor_grad", "cho_solve_grad", "sqrtm_grad",
           "expm_grad", "scipy_solve_grad", "signal_conv_grad", "odeint_grad",
           "set_odeint_vjp", "scipy_inv_grad"]

LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def _special():
    import scipy.special
    return scipy.special


def _like(v, *xs):
    """``v`` cast to float32 when every float input is float32 (SciPy computes
    some results, ``polygamma``, in float64 whatever the input)."""
    kinds = [np.result_type(x) for x in xs if isinstance(x, (np.ndarray, np.generic))
             or isinstance(x, float)]
    if kinds and all(k == np.float32 for k in kinds):
        return np.asarray(v, dtype=np.float32)[()]
    return v


def sp_digamma(x):
    """``scipy.special.digamma(x)`` in ``x``'s dtype."""
    return _like(_special().digamma(x), x)


def sp_polygamma(n, x):
    """``scipy.special.polygamma(n, x)`` in ``x``'s dtype."""
    return _like(_special().polygamma(n, x), x)


def multigammaln_grad(g, a, d):
    """Cotangent of ``a`` in ``multigammaln(a, d)``: ``g * sum_j digamma(a - j/2)``."""
    total = sum(_special().digamma(np.asarray(a) - 0.5 * j) for j in range(int(d)))
    return _like(g * total, a)


def bessel_grad(g, name, v, x):
    """Cotangent of ``x`` in ``jv``/``yv``/``jn``/``yn``/``j0``/``j1``/``y0``/``y1``/
    ``iv``/``ive``/``i0``/``i1``/``i0e``/``i1e``.

    ``J'_v = (J_{v-1} - J_{v+1}) / 2`` (the same recurrence for ``Y``),
    ``I'_v = (I_{v-1} + I_{v+1}) / 2``;
    ``i0' = i1``, ``i1' = i0 - i1 / x`` (``1/2`` at 0), and the exponentially
    scaled ``i0e = exp(-|x|) i0``, ``i1e = exp(-|x|) i1`` by the product rule."""
    sp = _special()
    x = np.asarray(x) if not isinstance(x, float) else x
    if name in ("jv", "jn", "j0", "j1"):
        d = 0.5 * (sp.jv(v - 1, x) - sp.jv(v + 1, x))
    elif name in ("y0", "y1"):
        d = 0.5 * (sp.yv(v - 1, x) - sp.yv(v + 1, x))
    elif name == "iv":
        d = 0.5 * (sp.iv(v - 1, x) + sp.iv(v + 1, x))
    elif name == "ive":        # ive = exp(-|x|) iv
        d = 0.5 * (sp.ive(v - 1, x) + sp.ive(v + 1, x)) - np.sign(x) * sp.ive(v, x)
    elif name in ("yv", "yn"):
        d = 0.5 * (sp.yv(v - 1, x) - sp.yv(v + 1, x))
    elif name == "i0":
        d = sp.i1(x)
    elif name == "i0e":
        d = sp.i1e(x) - np.sign(x) * sp.i0e(x)
    else:
        safe = np.where(x == 0, 1.0, x)
        ratio = np.where(x == 0, 0.5, (sp.i1e(x) if name == "i1e" else sp.i1(x)) / safe)
        if name == "i1":
            d = sp.i0(x) - ratio
        else:       # i1e
            d = sp.i0e(x) - ratio - np.sign(x) * sp.i1e(x)
    return _like(g * d, x)


def incomplete_grad(g, name, a, b, x):
    """Cotangent of ``x`` in ``gammainc(a, x)``, ``gammaincc(a, x)`` (``b`` unused)
    or ``betainc(a, b, x)``: the integrand over the complete function,
    ``exp(-x) x^(a-1) / Gamma(a)`` and ``x^(a-1) (1-x)^(b-1) / B(a, b)``."""
    sp = _special()
    if name == "betainc":
        d = np.exp(sp.xlogy(a - 1.0, x) + sp.xlog1py(b - 1.0, -x) - sp.betaln(a, b))
        return _like(g * d, x)
    d = np.exp(-x + sp.xlogy(a - 1.0, x) - sp.gammaln(a))
    return _like(g * d if name == "gammainc" else -g * d, x)


def _expand(v, axis, ndim, keepdims):
    """A reduction's result or cotangent with the reduced axes put back."""
    if keepdims or axis is None and np.ndim(v) == ndim:
        return v
    if axis is None:
        return np.reshape(v, (1,) * ndim)
    axes = tuple(sorted(a % ndim for a in (axis if isinstance(axis, tuple) else (axis,))))
    return np.expand_dims(v, axes)


def logsumexp_grad(g, ans, a, axis, b, keepdims, return_sign, wrt):
    """Cotangent of ``a`` or ``b`` in ``logsumexp(a, axis, b, keepdims)``:
    ``g * b * exp(a - ans)`` and ``g * exp(a - ans)``, broadcast back."""
    if return_sign:
        from ..errors import NonDifferentiableError
        raise NonDifferentiableError(
            "pullback differentiates scipy.special.logsumexp with return_sign=False only.",
            hint="Keep b >= 0 and drop return_sign, or compute the sign separately.")
    if wrt == "b" and b is None:
        return None
    nd = max(np.ndim(a), np.ndim(b) if b is not None else 0)
    lse = _expand(ans, axis, nd, keepdims)
    gg = _expand(g, axis, nd, keepdims)
    w = np.exp(a - lse)
    if wrt == "a":
        return unbroadcast(gg * w if b is None else gg * w * b, a)
    return unbroadcast(gg * w, b)


def xlogy_grad(g, x, y, wrt, shift=0.0):
    """Cotangent of ``x`` or ``y`` in ``xlogy(x, y)`` (``shift=1.0``: ``xlog1py``).

    ``d/dx = log(y + shift)``; ``d/dy = x / (y + shift)``, 0 where ``x == 0``
    (the function is 0 there for every ``y``)."""
    if wrt == "x":
        return g * np.log(y + shift) if shift == 0.0 else g * np.log1p(y)
    den = np.where(np.asarray(x) == 0, 1.0, y + shift) if shift else \
        np.where(np.asarray(x) == 0, 1.0, y)
    out = g * (x / den)
    return _like(out, x, y)


# --- scipy.stats -------------------------------------------------------------


def _std(x, loc, scale):
    return (x - loc) / scale


def _t_logpdf_dz(z, df):
    return -(df + 1.0) * z / (df + z * z)


def stats_grad(g, ans, dist, fn, wrt, x, p1=None, p2=None, loc=0.0, scale=1.0):
    """Cotangent of one argument of ``scipy.stats.<dist>.<fn>(x, p1, p2, loc, scale)``.

    ``fn`` is ``logpdf``/``pdf``/``cdf``/``logcdf`` (``logpmf``/``pmf`` for
    ``poisson``, whose ``p1`` is ``mu``); ``wrt`` names the argument
    (``"x"``, ``"loc"``, ``"scale"``, ``"p1"``, ``"p2"``).  Location-scale
    families go through ``z = (x - loc) / scale``: ``d/dx = d/dz / scale``,
    ``d/dloc = -d/dx``, ``d/dscale = -(1 + z d/dz) / scale`` for densities
    and ``-z d/dz / scale`` for distribution functions.  The result is
    unbroadcast onto the argument."""
    sp = _special()
    arg = {"x": x, "loc": loc, "scale": scale, "p1": p1, "p2": p2}[wrt]
    if dist == "poisson":
        k = np.floor(x - loc)
        mu = p1
        if fn in ("logpmf", "pmf"):
            d = k / mu - 1.0
            out = g * d if fn == "logpmf" else g * ans * d
        else:
            pmf = np.exp(sp.xlogy(k, mu) - mu - sp.gammaln(k + 1.0)) * (k >= 0)
            out = -g * pmf if fn == "cdf" else -g * pmf / np.exp(ans)
        return _like(unbroadcast(out, arg), arg)
    if dist == "chi2":
        # chi2(df, loc, scale) is gamma(df / 2, loc, 2 scale)
        out = stats_grad(g, ans, "gamma", fn, wrt, x, 0.5 * p1, None, loc, 2.0 * scale)
        if wrt == "p1":
            return _like(unbroadcast(0.5 * out, p1), p1)
        return _like(unbroadcast(2.0 * out if wrt == "scale" else out, arg), arg)
    if fn in ("sf", "logsf"):
        # sf = 1 - cdf: the cdf's derivatives negated; logsf's are the density over
        # sf, which is logcdf's formula with logsf's value in place of logcdf's
        return -stats_grad(g, ans, dist, "cdf" if fn == "sf" else "logcdf", wrt, x, p1, p2,
                           loc, scale)
    z = _std(x, loc, scale)
    density = fn in ("logpdf", "pdf")
    if density:
        # d logpdf / dz (standardized), and d logpdf / d shape parameter
        if dist == "norm":
            dz = -z
        elif dist == "t":
            dz = _t_logpdf_dz(z, p1)
        elif dist == "gamma":
            dz = (p1 - 1.0) / z - 1.0
        else:    # beta
            dz = (p1 - 1.0) / z - (p2 - 1.0) / (1.0 - z)
        if wrt == "x":
            d = dz / scale
        elif wrt == "loc":
            d = -dz / scale
        elif wrt == "scale":
            d = -(1.0 + z * dz) / scale
        elif dist == "t":
            nu = p1
            d = (0.5 * sp.digamma(0.5 * (nu + 1.0)) - 0.5 * sp.digamma(0.5 * nu) - 0.5 / nu
                 - 0.5 * np.log1p(z * z / nu) + 0.5 * (nu + 1.0) * z * z / (nu * (nu + z * z)))
        elif dist == "gamma":
            d = np.log(z) - sp.digamma(p1)
        elif wrt == "p1":     # beta's a
            d = np.log(z) - sp.digamma(p1) + sp.digamma(p1 + p2)
        else:                 # beta's b
            d = np.log1p(-z) - sp.digamma(p2) + sp.digamma(p1 + p2)
        out = g * d if fn == "logpdf" else g * ans * d
        return _like(unbroadcast(out, arg), arg)
    # distribution functions: d cdf / dz is the standard density
    if dist == "norm":
        logphi = -0.5 * z * z - LOG_SQRT_2PI
    elif dist == "t":
        nu = p1
        logphi = (sp.gammaln(0.5 * (nu + 1.0)) - sp.gammaln(0.5 * nu) - 0.5 * np.log(nu * math.pi)
                  - 0.5 * (nu + 1.0) * np.log1p(z * z / nu))
    elif dist == "gamma":
        logphi = sp.xlogy(p1 - 1.0, z) - z - sp.gammaln(p1)
    else:
        logphi = sp.xlogy(p1 - 1.0, z) + sp.xlog1py(p2 - 1.0, -z) - sp.betaln(p1, p2)
    dcdf = np.exp(logphi - ans) if fn == "logcdf" else np.exp(logphi)
    if wrt == "x":
        d = dcdf / scale
    elif wrt == "loc":
        d = -dcdf / scale
    else:
        d = -z * dcdf / scale
    return _like(unbroadcast(g * d, arg), arg)


def _mvn_parts(x, mean, cov):
    """SciPy's reading of ``multivariate_normal``'s arguments: the dimension,
    the points as ``(..., d)``, the mean and the full covariance."""
    cov_arr = np.asarray(cov)
    if mean is not None:
        dim = np.size(mean)
    elif cov_arr.ndim == 0:
        dim = 1
    else:
        dim = cov_arr.shape[0]
    xs = np.asarray(x)
    if xs.ndim == 0:
        xs = xs[np.newaxis]
    elif xs.ndim == 1 and dim == 1:
        xs = xs[:, np.newaxis]
    m = np.zeros(dim, dtype=np.result_type(xs, cov_arr)) if mean is None else \
        np.reshape(np.asarray(mean), (dim,))
    if cov_arr.ndim == 0:
        full = cov_arr * np.eye(dim, dtype=cov_arr.dtype)
    elif cov_arr.ndim == 1:
        full = np.diag(cov_arr)
    else:
        full = cov_arr
    return dim, xs, m, full


def mvn_grad(g, ans, fn, wrt, x, mean=None, cov=1):
    """Cotangent of ``x``, ``mean`` or ``cov`` in ``multivariate_normal.logpdf``
    (``fn="pdf"``: times ``ans``).  ``cov``'s cotangent lives in the lower
    triangle SciPy reads (its diagonal for a 1-d ``cov``, the trace for a
    number): ``-1/2 (C^-1 - C^-1 r r^T C^-1)`` summed over points, folded
    like ``eigh``'s."""
    if wrt == "mean" and mean is None:
        return None
    dim, xs, m, full = _mvn_parts(x, mean, cov)
    gg = np.asarray(g if fn == "logpdf" else g * ans)
    r = xs - m
    prec = np.linalg.inv(full)
    pr = np.matmul(r, prec)                     # C^-1 r (C symmetric)
    gg = np.reshape(gg, pr.shape[:-1] + (1,))
    if wrt == "x":
        return _like(np.reshape(-gg * pr, np.shape(x)), x)
    if wrt == "mean":
        return _like(np.reshape(np.sum(gg * pr, axis=tuple(range(pr.ndim - 1))),
                                np.shape(mean)), mean)
    flat = np.reshape(pr, (-1, dim))
    w = np.reshape(gg, (-1,))
    gcov = -0.5 * (np.sum(w) * prec - np.matmul(flat.T * w, flat))
    cov_arr = np.asarray(cov)
    if cov_arr.ndim == 0:
        out = np.trace(gcov)
    elif cov_arr.ndim == 1:
        out = np.diagonal(gcov).copy()
    else:
        out = hermitian_grad(gcov, lower=True)
    return _like(out, cov) if not isinstance(cov, (int, float)) else float(out)


def mvn_entropy_grad(g, mean, cov, wrt):
    """Cotangent of ``mean`` (zero) or ``cov`` in ``multivariate_normal.entropy(mean,
    cov)`` (``log det(2 pi e cov) / 2``): ``g inv(cov) / 2`` on the lower
    triangle SciPy reads (a 1-d ``cov``'s diagonal, a number's trace)."""
    if wrt == "mean":
        return None if mean is None else zeros_like(mean)
    dim, _, _, full = _mvn_parts(np.zeros(()), mean, cov)
    gcov = 0.5 * g * np.linalg.inv(full)
    cov_arr = np.asarray(cov)
    if cov_arr.ndim == 0:
        out = np.trace(gcov)
        return float(out) if isinstance(cov, (int, float)) else _like(out, cov)
    out = np.diagonal(gcov).copy() if cov_arr.ndim == 1 else hermitian_grad(gcov, lower=True)
    return _like(out, cov)


def dirichlet_grad(g, ans, fn, wrt, x, alpha):
    """Cotangent of ``x`` or ``alpha`` in ``dirichlet.logpdf(x, alpha)`` (``pdf``:
    times ``ans``); ``x``'s components along its first axis, as SciPy reads
    them, ``x`` taken as unconstrained (as JAX and autograd)."""
    alpha = np.asarray(alpha)
    xs = np.asarray(x)
    if xs.shape[0] != alpha.shape[0]:
        from ..errors import NonDifferentiableError
        raise NonDifferentiableError(
            "pullback differentiates scipy.stats.dirichlet with all K components of x "
            "given (SciPy also accepts K-1 and completes the last).",
            hint="Append the last component, 1 - x.sum(axis=0), yourself.")
    a = np.reshape(alpha, alpha.shape + (1,) * (xs.ndim - 1))
    gg = g if fn == "logpdf" else g * ans
    if wrt == "x":
        return _like(gg * (a - 1.0) / xs, x)
    sp = _special()
    d = np.log(xs) + sp.digamma(np.sum(alpha)) - sp.digamma(a)
    d = gg * d
    return _like(np.reshape(np.sum(np.reshape(d, (alpha.shape[0], -1)), axis=1), alpha.shape),
                 alpha)


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
