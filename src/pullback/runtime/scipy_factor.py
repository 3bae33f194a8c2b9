"""Helpers of the rules of ``scipy.linalg.lu_factor``/``lu_solve`` and
``scipy.linalg.qr`` (``rules.scipy_linalg``), both modes.

``lu_factor(a)`` returns ``(lu, piv)``: ``lu`` packs the unit lower factor
``L`` (below the diagonal) and ``U``, ``piv`` LAPACK's row interchanges, so
that ``a[perm] = L U``.  The pivoting is piecewise constant: ``piv`` gets no
tangent and no cotangent.  With ``F = L^-1 da[perm] U^-1``::

    dlu = L tril(F, -1) + triu(F) U          (forward)
    a_bar[perm] = L^-T (tril(L^T lu_bar_L, -1) + triu(lu_bar_U U^T)) U^-T

``lu_solve((lu, piv), b, trans)`` is differentiated in ``lu`` (its
cotangent ``(lu_bar, None)`` goes on to ``lu_factor``'s rule, so that the
pair as a whole gives ``a`` the cotangent of ``solve(a, b)``) and in ``b``.
Plain transposes: JAX's convention for these holomorphic maps;
``trans=2`` (the conjugate transpose) of complex values is refused in
reverse mode.  Square matrices (one or a stack for ``qr``; one for the
LU pair).

``qr(a, mode)``: ``'full'`` is NumPy's ``'complete'``, ``'economic'`` its
``'reduced'``, ``'r'`` gives ``(R,)`` with ``R`` of ``a``'s shape; the
formulas are ``np.linalg.qr``'s (``linalg_support.qr_grad``,
``linalg_forward.qr_jvp``: ``R``'s diagonal kept real, as LAPACK's and
JAX's).  ``pivoting=True`` and ``mode='raw'`` are refused, and so is what
is not unique (the extra columns of a full ``Q`` of a tall matrix).
"""
from __future__ import annotations

import numpy as np
from scipy.linalg import lu_solve, solve_triangular

from ..errors import NonDifferentiableError
from .linalg_forward import qr_jvp
from .linalg_support import qr_grad
from .scipy_support import _like

__all__ = ["lu_factor_grad", "lu_factor_jvp", "lu_solve_grad", "lu_solve_jvp", "sp_qr_grad",
           "sp_qr_jvp"]


def _T(x):
    return np.swapaxes(x, -1, -2)


def _perm(piv):
    """The row order ``perm`` with ``a[perm] = L U`` (LAPACK's interchanges, in turn)."""
    perm = np.arange(len(piv))
    for i, p in enumerate(piv):
        perm[i], perm[p] = perm[p], perm[i]
    return perm


def _factors(lu):
    n = lu.shape[-1]
    return np.tril(lu, -1) + np.eye(n, dtype=lu.dtype), np.triu(lu)


def _check_square(lu, what):
    if np.ndim(lu) != 2 or lu.shape[0] != lu.shape[1]:
        raise NonDifferentiableError(
            f"pullback differentiates scipy.linalg.{what} of one square matrix only, not of "
            f"shape {np.shape(lu)}.",
            hint="Factor each square matrix apart (a loop), or use np.linalg.solve.")


def _tri_solves(low, up, m, left_t=False):
    """``L^-1 m U^-1`` (``left_t``: ``L^-T m U^-T``)."""
    if left_t:
        y = solve_triangular(low, m, trans=1, lower=True, unit_diagonal=True)
        return _T(solve_triangular(up, _T(y), trans=0, lower=False))
    y = solve_triangular(low, m, lower=True, unit_diagonal=True)
    return _T(solve_triangular(up, _T(y), trans=1, lower=False))


def _lu_bar(low, up, b_bar):
    """The cotangent of ``lu`` from that of ``B = L U``."""
    return np.tril(np.matmul(b_bar, _T(up)), -1) + np.triu(np.matmul(_T(low), b_bar))


def lu_factor_grad(g, ans, a):
    """Cotangent of ``a`` in ``(lu, piv) = lu_factor(a)``."""
    lu, piv = ans
    _check_square(lu, "lu_factor")
    gl = g[0] if isinstance(g, (tuple, list)) else g
    low, up = _factors(lu)
    f_bar = np.tril(np.matmul(_T(low), np.tril(gl, -1)), -1) + \
        np.triu(np.matmul(np.triu(gl), _T(up)))
    return _like(_tri_solves(low, up, f_bar, left_t=True)[np.argsort(_perm(piv))], a)


def lu_factor_jvp(t, ans, a):
    """Tangent of ``(lu, piv) = lu_factor(a)`` along ``da = t``: ``(dlu, 0)``."""
    lu, piv = ans
    _check_square(lu, "lu_factor")
    low, up = _factors(lu)
    f = _tri_solves(low, up, np.asarray(t)[_perm(piv)])
    dlu = np.matmul(low, np.tril(f, -1)) + np.matmul(np.triu(f), up)
    return (dlu.astype(lu.dtype, copy=False), np.zeros_like(piv))


def _trans(trans):
    return {0: 0, 1: 1, 2: 2, "N": 0, "T": 1, "C": 2}[trans]


def lu_solve_grad(g, ans, lu_and_piv, b, trans, wrt):
    """Cotangent of ``lu_and_piv`` (``(lu_bar, None)``) or ``b`` in ``x =
    lu_solve((lu, piv), b, trans)``."""
    lu, piv = lu_and_piv
    _check_square(lu, "lu_solve")
    k = _trans(trans)
    if k == 2 and (np.iscomplexobj(lu) or np.iscomplexobj(b) or np.iscomplexobj(g)):
        raise NonDifferentiableError(
            "pullback differentiates scipy.linalg.lu_solve(trans=2) of real values only "
            "(its complex conjugation has no cotangent in JAX's convention).",
            hint="Use trans=1 with np.conj of the factor, or solve the real and imaginary "
                 "parts apart.")
    gb = lu_solve((lu, piv), g, trans=0 if k else 1)
    if wrt == "b":
        return _like(gb, b)
    x2 = ans[:, None] if np.ndim(ans) == 1 else ans
    gb2 = gb[:, None] if np.ndim(gb) == 1 else gb
    a_bar = -np.matmul(gb2, _T(x2)) if k == 0 else -np.matmul(x2, _T(gb2))
    low, up = _factors(lu)
    return (_like(_lu_bar(low, up, a_bar[_perm(piv)]), lu), None)


def lu_solve_jvp(t, ans, lu_and_piv, b, trans, wrt):
    """Tangent of ``x = lu_solve((lu, piv), b, trans)`` along the tangent of
    ``(lu, piv)`` (its ``lu`` part) or of ``b``."""
    lu, piv = lu_and_piv
    _check_square(lu, "lu_solve")
    if wrt == "b":
        return lu_solve((lu, piv), t, trans=trans).astype(np.result_type(ans), copy=False)
    k = _trans(trans)
    dlu = t[0]
    low, up = _factors(lu)
    db = np.matmul(np.tril(dlu, -1), up) + np.matmul(low, np.triu(dlu))
    da = db[np.argsort(_perm(piv))]
    op = da if k == 0 else _T(da) if k == 1 else np.conj(_T(da))
    out = -lu_solve((lu, piv), np.matmul(op, ans), trans=trans)
    return out.astype(np.result_type(ans), copy=False)


_MODES = {"full": "complete", "economic": "reduced", "r": "r"}


def _qr_mode(mode, pivoting):
    if pivoting or mode not in _MODES:
        raise NonDifferentiableError(
            f"pullback differentiates scipy.linalg.qr with modes 'full', 'economic' and 'r' "
            f"and pivoting=False, not mode={mode!r}, pivoting={pivoting!r}.",
            hint="Drop pivoting (the column order is piecewise constant) and use mode="
                 "'economic'.")
    return _MODES[mode]


def sp_qr_grad(g, ans, a, mode, pivoting):
    """Cotangent of ``a`` in ``scipy.linalg.qr(a, mode=mode)``."""
    m, n = np.shape(a)[-2:]
    np_mode = _qr_mode(mode, pivoting)
    if isinstance(g, (tuple, list)):
        g = tuple(np.zeros_like(x) if gi is None else gi for gi, x in zip(g, ans))
    if m >= n and np_mode == "r":
        return _like(qr_grad(g[0], None, a, "r"), a)
    if m < n or (np_mode == "complete" and m != n and np.any(g[0][..., n:])):
        raise NonDifferentiableError(
            f"pullback differentiates scipy.linalg.qr of a {m}x{n} matrix for m >= n, "
            "without using the extra columns of a full Q (they are not unique).",
            hint="Use mode='economic'.")
    return _like(qr_grad(g, ans, a, np_mode), a)


def sp_qr_jvp(t, ans, a, mode, pivoting):
    """Tangent of ``scipy.linalg.qr(a, mode=mode)`` along ``da = t``."""
    np_mode = _qr_mode(mode, pivoting)
    if np_mode != "r":
        return qr_jvp(t, ans, a, np_mode)
    r = ans[0]
    dr = qr_jvp(t, None, a, "r")
    out = np.zeros(r.shape, dr.dtype)
    out[..., :dr.shape[-2], :] = dr
    return (out,)
