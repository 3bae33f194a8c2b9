"""Reverse helpers of the ``scipy.linalg`` rules (``rules.scipy_linalg``):
``solve_triangular``, ``cho_factor``/``cho_solve``, ``solve_sylvester``,
``sqrtm``, ``expm``, ``solve``, ``inv``.  Imported with the SciPy rules only
(``import pullback`` does not import SciPy), so SciPy is imported at module
level: forward mode differentiates these helpers from their source
(``own_code.SOURCE_HELPERS``) when ``pb.hessian`` runs forward over an
adjoint that calls them.  float32 stays float32; the convention is JAX's.
"""
from __future__ import annotations

import numpy as np
from scipy.linalg import cho_solve, expm, solve, solve_sylvester, solve_triangular

from ..errors import NonDifferentiableError
from .linalg_support import cholesky_grad, hermitian_grad
from .scipy_support import _like

__all__ = ["solve_triangular_grad", "cho_factor_grad", "cho_solve_grad", "sylvester_grad",
           "sqrtm_grad", "expm_grad", "scipy_solve_grad", "scipy_inv_grad"]


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
    c, lower = c_and_lower
    if np.iscomplexobj(c) or np.iscomplexobj(b) or np.iscomplexobj(g):
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
    gq = solve_sylvester(_T(a), _T(b), g)
    if wrt == "q":
        return gq
    if wrt == "a":
        return -np.matmul(gq, _T(ans))
    return -np.matmul(_T(ans), gq)


def sqrtm_grad(g, ans):
    """Cotangent of ``A`` in ``X = sqrtm(A)``: ``X^T G_A + G_A X^T = G``
    (a Sylvester equation, from ``dX X + X dX = dA``)."""
    if np.ndim(ans) > 2:
        return np.stack([sqrtm_grad(gi, xi) for gi, xi in zip(g, ans)])
    x = ans
    return solve_sylvester(_T(x), _T(x), g).astype(np.result_type(x, g), copy=False)


def expm_grad(g, a):
    """Cotangent of ``A`` in ``expm(A)``: the Frechet derivative of ``expm`` at
    ``A^T`` in the direction ``G`` (the upper-right block of
    ``expm([[A^T, G], [0, A^T]])``)."""
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
    kind = assume_a or "gen"
    if kind in ("her", "hermitian") or (np.iscomplexobj(a) and kind not in ("gen", "general")):
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
            raise NonDifferentiableError(
                f"pullback does not differentiate scipy.linalg.solve(assume_a={assume_a!r}).",
                hint="Use assume_a='gen' (the default).")
        return _like(ga, a)
    return _like(hermitian_grad(ga, lower=lower), a)


def scipy_inv_grad(g, ans, assume_a):
    """Cotangent of ``a`` in ``scipy.linalg.inv(a)``: ``-inv^T g inv^T`` (a
    general matrix; the structured ``assume_a`` variants are refused)."""
    if assume_a not in (None, "gen", "general"):
        raise NonDifferentiableError(
            f"pullback differentiates scipy.linalg.inv with assume_a=None only, not "
            f"{assume_a!r}.", hint="Drop assume_a (a general inverse, the same values).")
    return -np.matmul(np.matmul(_T(ans), g), _T(ans))
