"""Forward rules' helpers for ``np.linalg``'s decompositions, pseudo-inverse,
least squares, powers and chains (``rules/numpy_linalg.py`` declares them).

Each takes the tangent ``t`` of one differentiable argument and returns
that argument's contribution to the output's tangent, shaped like the
output (a decomposition's tangent is a result of the same named tuple).
Where the derivative is not unique the helper refuses at run time rather
than pick one: the singular vectors of a complex matrix and the
eigenvectors of a complex Hermitian one (their phases), the extra columns
of a full SVD or a complete QR of a non-square matrix, ``qr`` with
``m < n``.  ``eig``'s complex eigenvectors follow NumPy's own choice of
phase (LAPACK's: unit norm, the largest entry real and positive).

>>> import numpy as np
>>> a = np.array([[2.0, 1.0], [1.0, 3.0]])
>>> t = np.array([[1.0, 0.0], [0.0, 0.0]])
>>> ans = np.linalg.eigh(a)
>>> w_dot, v_dot = eigh_jvp(t, ans, a)
>>> h = 1e-6
>>> np.allclose(w_dot, (np.linalg.eigvalsh(a + h * t) - np.linalg.eigvalsh(a - h * t)) / 2 / h)
True
"""
from __future__ import annotations

import numpy as np

from ..errors import NonDifferentiableError
from .linalg_support import _H, _T, _cj, _concrete, _diag_embed, _eye, _hermitian

__all__ = ["eigh_jvp", "eigvalsh_jvp", "eig_jvp", "eigvals_jvp", "svd_jvp", "qr_jvp",
           "pinv_jvp", "lstsq_jvp", "matrix_power_jvp", "multi_dot_jvp"]


def _refuse(what, hint):
    raise NonDifferentiableError(f"forward mode has no rule for {what}.", hint=hint)


def _like(ans, *parts):
    """A decomposition's tangent as its result is: NumPy's and JAX's named
    tuple, or a plain tuple (Dask's)."""
    return type(ans)(*parts) if hasattr(ans, "_fields") else tuple(parts)


def _gaps(w):
    """``F[i, j] = 1 / (w[j] - w[i])`` off the diagonal, 0 on it."""
    eye = _eye(w.shape[-1], w)
    return 1 / (w[..., None, :] - w[..., :, None] + eye) - eye


# --- Hermitian and general eigendecompositions ---


def eigh_jvp(t, ans, a, UPLO="L"):
    """``w_dot = Re diag(V^H dA V)``, ``V_dot = V (F o V^H dA V)``, ``dA`` the
    Hermitian matrix NumPy reads from one triangle of the tangent."""
    w, v = ans
    if np.iscomplexobj(v):
        _refuse("the eigenvectors of a complex Hermitian matrix (np.linalg.eigh: their "
                "phases are not unique)",
                "Use np.linalg.eigvalsh for the eigenvalues alone, or pb.vjp for a "
                "phase-free function of the eigenvectors.")
    inner = np.matmul(np.matmul(_H(v), _hermitian(t, UPLO == "L")), v)
    w_dot = np.real(np.diagonal(inner, 0, -2, -1)).astype(w.dtype)
    v_dot = np.matmul(v, _gaps(w) * inner).astype(v.dtype)
    return _like(ans, w_dot, v_dot)


def eigvalsh_jvp(t, ans, a, UPLO="L"):
    """The eigenvalues' part of ``eigh_jvp`` (the eigenvectors recomputed)."""
    _, v = np.linalg.eigh(_hermitian(a, UPLO == "L"))     # (the triangle NumPy reads)
    inner = np.matmul(np.matmul(_H(v), _hermitian(t, UPLO == "L")), v)
    return np.real(np.diagonal(inner, 0, -2, -1)).astype(ans.dtype)


def _eig_inner(t, v):
    """``V^-1 dA V``."""
    return np.linalg.solve(v, np.matmul(t.astype(v.dtype), v))


def eig_jvp(t, ans, a):
    """``w_dot = diag(V^-1 dA V)``; ``V_dot = V (F o V^-1 dA V)`` less what
    would change each column's norm, then turned so that the column's
    largest entry stays real (NumPy's phase: LAPACK's geev normalization)."""
    w, v = ans
    inner = _eig_inner(t, v)
    w_dot = np.diagonal(inner, 0, -2, -1)
    dv = np.matmul(v, _gaps(w) * inner)
    dv = dv - v * np.real(np.sum(_cj(v) * dv, axis=-2))[..., None, :]
    if np.iscomplexobj(v):
        # d(v_k e^{i theta}) = i theta v_k: theta keeps Im of the largest entry at 0
        k = np.argmax(np.abs(v), axis=-2)[..., None, :]
        top = np.take_along_axis(v, k, axis=-2)
        theta = -np.imag(np.take_along_axis(dv, k, axis=-2)) / np.real(top)
        dv = dv + 1j * theta * v
    return _like(ans, w_dot.astype(w.dtype, copy=False), dv.astype(v.dtype, copy=False))


def eigvals_jvp(t, ans, a):
    """The eigenvalues' part of ``eig_jvp`` (the eigenvectors recomputed)."""
    _, v = np.linalg.eig(a)         # (complex under jax.jit: real eigenvalues, real dots)
    dot = np.diagonal(_eig_inner(t, v), 0, -2, -1)
    return (dot if np.iscomplexobj(ans) else np.real(dot)).astype(ans.dtype, copy=False)


# --- singular values, QR, pseudo-inverse, least squares ---


def svd_jvp(t, ans, a, full_matrices=True, compute_uv=True, hermitian=False):
    """``s_dot = Re diag(U^H dA V)``; for real matrices with distinct nonzero
    singular values, ``U_dot`` and ``V_dot`` from the antisymmetric parts of
    ``U^T dA V diag(s)`` and ``diag(s) U^T dA V`` over ``s_j^2 - s_i^2``, plus
    the parts of ``dA`` outside the spans of ``U`` (m > n) or ``V`` (n > m)."""
    m, n = a.shape[-2:]
    k = min(m, n)
    if hermitian:
        _refuse("np.linalg.svd(hermitian=True)",
                "Use hermitian=False (the same singular values) or np.linalg.eigh.")
    if not compute_uv:
        u, _, vh = np.linalg.svd(a, full_matrices=False)
        return np.real(np.diagonal(np.matmul(np.matmul(_H(u), t), _H(vh)),
                                   0, -2, -1)).astype(ans.dtype)
    if np.iscomplexobj(ans[0]):
        _refuse("the singular vectors of a complex matrix (np.linalg.svd: their phases are "
                "not unique)",
                "Use np.linalg.svd(a, compute_uv=False) for the singular values, or pb.vjp "
                "for a phase-free function of the vectors.")
    if full_matrices and m != n:
        _refuse("np.linalg.svd(full_matrices=True) of a non-square matrix (its extra "
                "singular vectors are not unique)", "Use full_matrices=False.")
    u, s, vh = ans
    v = _T(vh)
    ds_full = np.matmul(np.matmul(_T(u), t), v)              # (..., k, k)
    s_dot = np.diagonal(ds_full, 0, -2, -1)
    sr, sc = s[..., None, :], s[..., :, None]
    eye = _eye(k, s)
    f = 1 / ((sr - sc) * (sr + sc) + eye) - eye              # 1 / (s_j^2 - s_i^2)
    right = ds_full * sr                                     # dS diag(s)
    left = sc * ds_full                                      # diag(s) dS
    u_dot = np.matmul(u, f * (right + _T(right)))
    v_dot = np.matmul(v, f * (left + _T(left)))
    if m > k:
        tv = np.matmul(t, v)
        u_dot = u_dot + (tv - np.matmul(u, np.matmul(_T(u), tv))) / sr
    if n > k:
        tu = np.matmul(_T(t), u)
        v_dot = v_dot + (tu - np.matmul(v, np.matmul(vh, tu))) / sr
    dt = u.dtype
    return _like(ans, u_dot.astype(dt), s_dot.astype(s.dtype), _T(v_dot).astype(dt))


def qr_jvp(t, ans, a, mode="reduced"):
    """``C = Q^H dA R^-1``; ``Omega`` the skew-Hermitian matrix with ``C``'s
    strict lower triangle (and the imaginary part of its diagonal: ``R``'s
    diagonal stays real); ``dQ = Q Omega + (I - Q Q^H) dA R^-1``,
    ``dR = (C - Omega) R``."""
    m, n = a.shape[-2:]
    if mode not in ("reduced", "complete", "r") or m < n or (mode == "complete" and m != n):
        _refuse(f"np.linalg.qr(mode={mode!r}) of a {m}x{n} matrix (defined for m >= n, "
                "modes 'reduced' and 'r', and 'complete' of a square matrix)",
                "Use mode='reduced' with at least as many rows as columns, or pb.vjp.")
    q, r = np.linalg.qr(a) if mode == "r" else ans
    t = t.astype(np.result_type(t, q), copy=False)
    t_rinv = _T(np.linalg.solve(_T(r), _T(t)))                # dA R^-1
    c = np.matmul(_H(q), t_rinv)
    low = np.tril(c, -1)
    omega = low - _H(low)
    if np.iscomplexobj(c):
        omega = omega + _diag_embed(1j * np.imag(np.diagonal(c, 0, -2, -1)))
    r_dot = np.matmul(c - omega, r).astype(r.dtype, copy=False)
    if mode == "r":
        return r_dot
    q_dot = np.matmul(q, omega) + t_rinv - np.matmul(q, c)
    return _like(ans, q_dot.astype(q.dtype, copy=False), r_dot)


def _pinv_dot(t, x, a):
    """``d pinv(a)`` at constant rank: ``-X dA X + X X^H dA^H (I - A X)
    + (I - X A) dA^H X^H X``."""
    th = _H(t)
    left = np.matmul(np.matmul(x, _H(x)), th)
    right = np.matmul(th, np.matmul(_H(x), x))
    return (-np.matmul(np.matmul(x, t), x) + left - np.matmul(np.matmul(left, a), x)
            + right - np.matmul(np.matmul(x, a), right))


def pinv_jvp(t, ans, a, rcond=None, hermitian=False, rtol=None):
    """Tangent of ``pinv(a)`` at constant rank (``hermitian``: of the matrix
    NumPy reads from ``a``'s lower triangle)."""
    if hermitian:
        a, t = _hermitian(a), _hermitian(t)
    return _pinv_dot(t, ans, a).astype(ans.dtype, copy=False)


def lstsq_jvp(t, ans, a, b, wrt):
    """The contribution of ``a``'s or ``b``'s tangent (``wrt``) to
    ``(x, residuals, rank, s) = lstsq(a, b)``: ``x = pinv(a) b`` at constant
    rank, ``residuals = |b - a x|^2`` per column (when NumPy gives them), ``s``
    as ``svd(a, compute_uv=False)``; the rank has none."""
    x, res, rank, s = ans
    vec = np.ndim(b) == 1
    x2, b2 = (x[:, None], np.asarray(b)[:, None]) if vec else (x, np.asarray(b))
    p = np.linalg.pinv(a)
    t2 = t[:, None] if vec and wrt == "b" else t
    if wrt == "b":
        dx, dr = np.matmul(p, t2), t2
        ds = np.zeros_like(s)
    else:
        dx = np.matmul(_pinv_dot(t, p, a), b2)
        dr = -np.matmul(t, x2)
        u, _, vh = np.linalg.svd(a, full_matrices=False)
        ds = np.real(np.diagonal(np.matmul(np.matmul(_H(u), t), _H(vh)))).astype(s.dtype)
    dr = dr - np.matmul(a, dx)
    if np.size(res):
        r = b2 - np.matmul(a, x2)
        dres = (2 * np.real(np.sum(_cj(r) * dr, axis=0))).astype(res.dtype)
    else:
        dres = np.zeros_like(res)
    dx = (dx[:, 0] if vec else dx).astype(x.dtype, copy=False)
    return (dx, dres, 0.0, ds)


# --- powers and chains ---


def matrix_power_jvp(t, ans, a, n):
    """``d a^n = sum_k a^k dA a^(n-1-k)``, accumulated as ``D_(j+1) = D_j a +
    a^j dA``; through ``inv`` for ``n < 0``."""
    if n == 0:
        return np.zeros(np.shape(ans), np.result_type(ans, t))
    if n < 0:
        a = np.linalg.inv(a)
        t = -np.matmul(np.matmul(a, t), a)
        n = -n
    d, power = t, a
    for _ in range(n - 1):
        d = np.matmul(d, a) + np.matmul(power, t)
        power = np.matmul(power, a)
    return d.astype(np.result_type(ans, t), copy=False)


def multi_dot_jvp(t, ans, arrays):
    """The tangent of ``multi_dot(arrays)`` for tangents ``t`` of the factors
    (a list or tuple, None or zeros where a factor has none): one product per
    factor with a tangent, that factor replaced by it."""
    total = None
    for i, ti in enumerate(t):
        if ti is None or (_concrete(ti) and not np.any(ti)):
            continue
        parts = list(arrays)
        parts[i] = ti
        term = np.linalg.multi_dot(parts)
        total = term if total is None else total + term
    if total is None:
        return np.zeros(np.shape(ans), np.result_type(ans))
    return total
