"""Forward rules' helpers for ``scipy.linalg`` and the ``scipy.stats``
densities that are not elementwise (``rules.scipy_linalg``,
``rules.scipy_stats``): each takes the tangent ``t`` of one differentiable
argument and returns its contribution to the output's tangent, shaped and
typed like the output.  They read the same triangles as the reverse rules
(``runtime.scipy_solvers``): a function that reads one triangle of ``a``
moves with that triangle of ``t`` only, so the two modes agree::

    x = solve_triangular(a, b, lower=True)
    x_dot = solve_triangular(a, b_dot - tril(a_dot) @ x, lower=True)

``expm``'s tangent is its Frechet derivative (the upper-right block of
``expm([[A, T], [0, A]])``), ``sqrtm``'s solves ``X dX + dX X = dA``.
"""
from __future__ import annotations

import numpy as np
from scipy.linalg import cho_solve, solve, solve_sylvester, solve_triangular

from ..errors import NonDifferentiableError
from .forward_support import cholesky_jvp
from .scipy_linalg_grads import _mat, _T, expm_grad
from .scipy_support import _mvn_parts, _special

__all__ = ["solve_triangular_jvp", "sp_cholesky_jvp", "cho_factor_jvp", "cho_solve_jvp",
           "sqrtm_jvp", "sylvester_jvp", "expm_jvp", "scipy_inv_jvp", "scipy_solve_jvp",
           "mvn_jvp", "mvn_entropy_jvp", "dirichlet_jvp"]


def _out(v, ans):
    """``v`` in the output's shape and dtype."""
    v = np.reshape(v, np.shape(ans)) if np.size(v) == np.size(ans) else v
    return np.asarray(v).astype(np.result_type(ans), copy=False)[()] if np.ndim(ans) == 0 \
        else np.asarray(v).astype(np.result_type(ans), copy=False)


def _tri(m, lower, strict=False):
    k = 1 if strict else 0
    return np.tril(m, -k) if lower else np.triu(m, k)


def _back(v, b):
    """A solution computed for ``_mat(b)`` in ``b``'s layout (a column back to 1-d)."""
    return v[..., 0] if np.ndim(b) == 1 else v


def solve_triangular_jvp(t, ans, a, b, trans, lower, unit_diagonal, wrt):
    """``x_dot = M^-1 (b_dot - op(tri(a_dot)) x)`` with ``M = op(tri(a))``."""
    if wrt == "b":
        rhs = t
    else:
        k = {0: 0, 1: 1, 2: 2, "N": 0, "T": 1, "C": 2}[trans]
        tr = _tri(t, lower, unit_diagonal)
        dm = tr if k == 0 else _T(tr) if k == 1 else np.conj(_T(tr))
        rhs = _back(-np.matmul(dm, _mat(ans)), ans)
    return _out(solve_triangular(a, rhs, trans=trans, lower=lower,
                                 unit_diagonal=unit_diagonal), ans)


def sp_cholesky_jvp(t, ans, a, lower):
    """``scipy.linalg.cholesky``: ``U`` by default, read from ``a``'s upper triangle."""
    return _out(cholesky_jvp(t, ans, a, upper=not lower), ans)


def cho_factor_jvp(t, ans, a, lower):
    """``(c, lower)``: the factor's triangle as ``cholesky``'s, the other
    triangle (a copy of ``a``'s) moving with ``t``; ``lower`` has none."""
    c = ans[0]
    dc = cholesky_jvp(t, _tri(c, lower), a, upper=not lower)
    return (_out(dc + _tri(t, not lower, strict=True), c), None)


def _refuse_complex(*xs):
    if any(np.iscomplexobj(x) for x in xs):
        raise NonDifferentiableError(
            "pullback differentiates scipy.linalg.cho_solve for real matrices only.",
            hint="Use np.linalg.solve for complex systems.")


def cho_solve_jvp(t, ans, c_and_lower, b, wrt):
    """``x_dot = A^-1 (b_dot - A_dot x)``, ``A_dot = L_dot L^T + L L_dot^T`` from
    the factor's triangle of ``c_dot`` (``U^T U`` for an upper factor)."""
    c, lower = c_and_lower
    if wrt == "b":
        _refuse_complex(c, t)
        return _out(cho_solve((c, lower), t), ans)
    dc = t[0]
    _refuse_complex(c, dc)
    f, df = _tri(c, lower), _tri(dc, lower)
    da = np.matmul(df, _T(f)) if lower else np.matmul(_T(df), f)
    da = da + _T(da)
    return _out(-cho_solve((c, lower), _back(np.matmul(da, _mat(ans)), ans)), ans)


def sqrtm_jvp(t, ans):
    """``X dX + dX X = dA`` (a Sylvester equation)."""
    if np.ndim(ans) > 2:
        return np.stack([sqrtm_jvp(ti, xi) for ti, xi in
                         zip(np.broadcast_to(t, np.shape(ans)), ans)])
    return _out(solve_sylvester(ans, ans, t), ans)


def sylvester_jvp(t, ans, a, b, wrt):
    """``a dX + dX b = dq - da X - X db``."""
    rhs = t if wrt == "q" else -np.matmul(t, ans) if wrt == "a" else -np.matmul(ans, t)
    return _out(solve_sylvester(a, b, rhs), ans)


def expm_jvp(t, ans, a):
    """The Frechet derivative of ``expm`` at ``A`` along ``t``."""
    return _out(expm_grad(t, _T(a)), ans)


def scipy_inv_jvp(t, ans, assume_a):
    """``-X dA X`` (a general inverse; ``assume_a`` refused as in reverse mode)."""
    if assume_a not in (None, "gen", "general"):
        raise NonDifferentiableError(
            f"pullback differentiates scipy.linalg.inv with assume_a=None only, not "
            f"{assume_a!r}.", hint="Drop assume_a (a general inverse, the same values).")
    return _out(-np.matmul(np.matmul(ans, t), ans), ans)


def scipy_solve_jvp(t, ans, a, b, assume_a, lower, transposed, wrt):
    """``x_dot = M^-1 (b_dot - M_dot x)``; ``M`` is ``a`` (``transposed``: ``a^T``),
    or for ``'sym'``/``'pos'`` the symmetric matrix built from one triangle."""
    kind = assume_a or "gen"
    if kind not in ("gen", "general", "sym", "symmetric", "pos", "positive definite") or (
            np.iscomplexobj(a) and kind not in ("gen", "general")):
        raise NonDifferentiableError(
            f"pullback differentiates scipy.linalg.solve(assume_a={assume_a!r}) in forward "
            "mode for general matrices, and real symmetric or positive definite ones.",
            hint="Use assume_a='gen' (the default).")
    opts = dict(assume_a=assume_a, lower=lower, transposed=transposed)
    if wrt == "b":
        return _out(solve(a, t, **opts), ans)
    if kind in ("gen", "general"):
        dm = _T(t) if transposed else t
    else:
        tri = _tri(t, lower)
        dm = tri + _T(_tri(t, lower, strict=True))
    return _out(solve(a, _back(-np.matmul(dm, _mat(ans)), ans), **opts), ans)


# --- scipy.stats: multivariate_normal, dirichlet ---


def _cov_tangent(t, cov, dim):
    """The tangent of the covariance SciPy builds: ``t`` times the identity for
    a number, a diagonal for a 1-d ``cov``, the lower triangle reflected."""
    if np.ndim(cov) == 0:
        return np.asarray(t) * np.eye(dim)
    if np.ndim(cov) == 1:
        return np.diag(t)
    return np.tril(t) + _T(np.tril(t, -1))


def mvn_jvp(t, ans, fn, wrt, x, mean=None, cov=1):
    """``d logpdf = -r^T P dx + r^T P dmean - tr(P dC) / 2 + r^T P dC P r / 2``
    (``P = C^-1``, ``r = x - mean``); ``pdf``: times ``ans``."""
    dim, xs, m, full = _mvn_parts(x, mean, cov)
    pr = np.matmul(xs - m, np.linalg.inv(full))
    if wrt == "x":
        d = -np.sum(pr * np.reshape(t, xs.shape), axis=-1)
    elif wrt == "mean":
        d = np.sum(pr * np.reshape(t, (dim,)), axis=-1)
    else:
        dc = _cov_tangent(t, cov, dim)
        d = -0.5 * np.trace(np.linalg.solve(full, dc)) + 0.5 * np.sum(
            np.matmul(pr, dc) * pr, axis=-1)
    return _out(d if fn == "logpdf" else d * np.reshape(ans, np.shape(d)), ans)


def mvn_entropy_jvp(t, ans, mean, cov, wrt):
    """``tr(C^-1 dC) / 2``; the entropy does not depend on the mean."""
    dim, _, _, full = _mvn_parts(np.zeros(()), mean, cov)
    if wrt == "mean":
        return _out(np.zeros(np.shape(ans)), ans)
    return _out(0.5 * np.trace(np.linalg.solve(full, _cov_tangent(t, cov, dim))), ans)


def dirichlet_jvp(t, ans, fn, wrt, x, alpha):
    """``sum_k (alpha_k - 1) dx_k / x_k`` and ``sum_k (log x_k + psi(sum alpha) -
    psi(alpha_k)) dalpha_k`` over the first axis (``pdf``: times ``ans``)."""
    alpha = np.asarray(alpha)
    xs = np.asarray(x)
    a = np.reshape(alpha, alpha.shape + (1,) * (xs.ndim - 1))
    if wrt == "x":
        d = np.sum((a - 1.0) * np.asarray(t) / xs, axis=0)
    else:
        sp = _special()
        part = np.log(xs) + sp.digamma(np.sum(alpha)) - sp.digamma(a)
        d = np.sum(part * np.reshape(t, a.shape), axis=0)
    return _out(d if fn == "logpdf" else d * np.reshape(ans, np.shape(d)), ans)
