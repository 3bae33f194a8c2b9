"""Helpers called by the SciPy rules of ``scipy.special`` and ``scipy.stats``
(``rules.scipy_special``, ``rules.scipy_stats``); those of ``scipy.linalg``,
``scipy.signal`` and ``odeint`` are in ``scipy_solvers``.

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
from .linalg_support import hermitian_grad

__all__ = ["sp_digamma", "sp_polygamma", "multigammaln_grad", "bessel_grad",
           "incomplete_grad", "mvn_entropy_grad", "logsumexp_grad", "xlogy_grad",
           "stats_grad", "mvn_grad", "dirichlet_grad"]

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
    ``iv``/``ive``/``kv``/``kve``/``i0``/``i1``/``i0e``/``i1e``.

    ``J'_v = (J_{v-1} - J_{v+1}) / 2`` (the same recurrence for ``Y``),
    ``I'_v = (I_{v-1} + I_{v+1}) / 2``, ``K'_v = -(K_{v-1} + K_{v+1}) / 2``;
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
    elif name == "kv":
        d = -0.5 * (sp.kv(v - 1, x) + sp.kv(v + 1, x))
    elif name == "kve":        # kve = exp(x) kv
        d = sp.kve(v, x) - 0.5 * (sp.kve(v - 1, x) + sp.kve(v + 1, x))
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


def _refuse_return_sign():
    # (apart from logsumexp_grad, which pb.hessian transforms from its source,
    # where an import is refused)
    from ..errors import NonDifferentiableError
    raise NonDifferentiableError(
        "pullback differentiates scipy.special.logsumexp with return_sign=False only.",
        hint="Keep b >= 0 and drop return_sign, or compute the sign separately.")


def logsumexp_grad(g, ans, a, axis, b, keepdims, return_sign, wrt):
    """Cotangent of ``a`` or ``b`` in ``logsumexp(a, axis, b, keepdims)``:
    ``g * b * exp(a - ans)`` and ``g * exp(a - ans)``, broadcast back."""
    if return_sign:
        _refuse_return_sign()
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
    elementwise, of the broadcast shape: the rule is registered with
    ``broadcasts=True`` (the machinery sums it onto the argument), and read
    forwards with the tangent in place of ``g``."""
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
        return _like(out, arg)
    if dist == "chi2":
        # chi2(df, loc, scale) is gamma(df / 2, loc, 2 scale)
        out = stats_grad(g, ans, "gamma", fn, wrt, x, 0.5 * p1, None, loc, 2.0 * scale)
        if wrt == "p1":
            return _like(0.5 * out, p1)
        return _like(2.0 * out if wrt == "scale" else out, arg)
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
        elif dist == "expon":
            dz = -np.ones_like(z)
        elif dist == "laplace":
            dz = -np.sign(z)
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
        if dist == "expon":       # -inf (or 0) off the support, as JAX's where
            d = d * (z >= 0)
        out = g * d if fn == "logpdf" else g * ans * d
        return _like(out, arg)
    # distribution functions: d cdf / dz is the standard density
    if dist == "norm":
        logphi = -0.5 * z * z - LOG_SQRT_2PI
    elif dist == "t":
        nu = p1
        logphi = (sp.gammaln(0.5 * (nu + 1.0)) - sp.gammaln(0.5 * nu) - 0.5 * np.log(nu * math.pi)
                  - 0.5 * (nu + 1.0) * np.log1p(z * z / nu))
    elif dist == "gamma":
        logphi = sp.xlogy(p1 - 1.0, z) - z - sp.gammaln(p1)
    elif dist == "expon":
        logphi = np.where(z >= 0, -z, -np.inf)
    elif dist == "laplace":
        logphi = -np.abs(z) - math.log(2.0)
    else:
        logphi = sp.xlogy(p1 - 1.0, z) + sp.xlog1py(p2 - 1.0, -z) - sp.betaln(p1, p2)
    dcdf = np.exp(logphi - ans) if fn == "logcdf" else np.exp(logphi)
    if wrt == "x":
        d = dcdf / scale
    elif wrt == "loc":
        d = -dcdf / scale
    else:
        d = -z * dcdf / scale
    return _like(g * d, arg)


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
    gg = np.expand_dims(np.reshape(gg, np.shape(pr)[:-1]), -1)
    if wrt == "x":
        return _like(np.reshape(-gg * pr, np.shape(x)), x)
    if wrt == "mean":
        return _like(np.reshape(np.sum(gg * pr, axis=tuple(range(pr.ndim - 1))),
                                np.shape(mean)), mean)
    flat = np.reshape(pr, (-1, np.shape(pr)[-1]))
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
