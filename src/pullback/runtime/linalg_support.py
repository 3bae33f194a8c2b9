"""Helpers called by the ``np.linalg`` rules (``rules.numpy_linalg``).

Every helper works on stacks of matrices (``(..., m, n)``) and returns the
cotangent of its input in JAX's convention: the adjoint of the derivative
under the pairing ``Re sum(a * b)`` (no conjugation), so holomorphic maps
(``inv``, ``solve``, ``det``) get the plain transposed formula and the
others (``cholesky``, ``eigh``, ``svd``, ``qr``, norms) a ``conj`` where the
derivative involves ``conj(dA)``.  Real inputs give real cotangents and
float32 stays float32 (identities are built in the input's dtype).

Decompositions of Hermitian matrices (``cholesky``, ``eigh``, ``eigvalsh``,
``pinv(hermitian=True)``) read one triangle of their input, as NumPy does
(the lower one unless told otherwise, and only the real part of the
diagonal); the cotangent is the exact derivative of that function, so it
lives in that triangle (``hermitian_grad``).  For an input that is
symmetric by construction (``b @ b.T``) this agrees with JAX, which
symmetrizes instead.
"""
from __future__ import annotations

import numpy as np
import numpy as _numpy      # (never rebound: see _concrete)

from ..errors import NonDifferentiableError
from .core import unbroadcast
from .linalg_jit import raise_when

__all__ = ["solve_rhs_grad", "solve_lhs_grad", "det_grad", "slogdet_grad", "cholesky_grad",
           "eigh_grad", "svd_grad", "qr_grad", "pinv_grad", "matrix_power_grad",
           "multi_dot_grad", "lstsq_grad", "norm_grad", "hermitian_grad"]


def _T(x):
    return np.swapaxes(x, -1, -2)


def _cj(x):
    return np.conj(x) if np.iscomplexobj(x) else x


def _H(x):
    return _cj(_T(x))


def _eye(n, like):
    return np.eye(n, dtype=np.result_type(like))


def _diag_embed(v):
    """``(..., k)`` -> ``(..., k, k)`` with ``v`` on the diagonal."""
    return v[..., :, None] * _eye(v.shape[-1], v)


def _concrete(x):
    """Whether ``x`` is a NumPy value, whose entries may steer a Python branch
    (a shortcut: ``inv`` for an invertible matrix, no eigenvector term for a
    zero cotangent).  A traced or lazy array (JAX under ``jax.jit``, where
    these helpers run with ``np`` bound to jax.numpy; Dask) takes the
    branch-free form, which gives the same cotangent."""
    return isinstance(x, (_numpy.ndarray, _numpy.generic, float, int, complex))


def _winners(s, best, axis=-1):
    """Weights that split equally among the entries of ``s`` equal to ``best``."""
    hits = s == best
    return hits / np.sum(hits, axis=axis, keepdims=True, dtype=np.result_type(s))


def _parts(g, ans):
    """The cotangent of a decomposition's result, one part per field: ``g`` is a
    tuple, or (after ``result.field`` or ``result[i]``) a dict by field name."""
    if isinstance(g, dict):
        return tuple(g[f] for f in ans._fields)
    return tuple(g)


def hermitian_grad(c, lower=True):
    """Cotangent of ``A`` from the cotangent ``c`` of the Hermitian matrix
    built from one triangle of ``A`` (the real part of its diagonal).

    >>> hermitian_grad(np.array([[1., 2.], [3., 4.]]))
    array([[1., 0.],
           [5., 4.]])
    """
    out = np.tril(c + _H(c), -1) if lower else np.triu(c + _H(c), 1)
    return out + _diag_embed(np.real(np.diagonal(c, 0, -2, -1))).astype(out.dtype)


def _hermitian(a, lower=True):
    """The Hermitian matrix NumPy's ``eigh``/``cholesky`` see in ``a``."""
    tri = np.tril(a, -1) if lower else np.triu(a, 1)
    return tri + _H(tri) + _diag_embed(np.real(np.diagonal(a, 0, -2, -1))).astype(a.dtype)


# --- solve, inverse, determinants ---


def solve_rhs_grad(g, a, b):
    """Cotangent of ``b`` in ``x = solve(a, b)`` (batch axes not yet summed):
    ``solve(a^T, g)``.  ``b`` is a vector when it is 1-d (NumPy 2)."""
    if np.ndim(b) == 1:
        return np.linalg.solve(_T(a), np.asarray(g)[..., None])[..., 0]
    return np.linalg.solve(_T(a), g)


def solve_lhs_grad(gb, x, a, b):
    """Cotangent of ``a`` in ``x = solve(a, b)`` from ``gb = solve_rhs_grad(...)``."""
    if np.ndim(b) == 1:
        return unbroadcast(-gb[..., :, None] * x[..., None, :], a)
    return unbroadcast(-np.matmul(gb, _T(x)), a)


def _adjugate(a):
    """adj(a) = det(a) inv(a), defined for singular ``a`` too (through the SVD)."""
    u, s, vh = np.linalg.svd(a)
    n = s.shape[-1]
    others = np.prod(np.where(np.eye(n, dtype=bool), np.ones((), s.dtype), s[..., None, :]),
                     axis=-1)
    scale = (np.linalg.det(u) * np.linalg.det(vh))[..., None, None]
    return scale * np.matmul(_H(vh) * others[..., None, :], _H(u))


def det_grad(g, ans, a):
    """Cotangent of ``a`` in ``det(a)``: ``g * adj(a)^T`` (``g det(a) inv(a)^T``
    when ``a`` is a NumPy array known invertible; through the SVD otherwise,
    which has no branch on values)."""
    g = np.asarray(g)[..., None, None]
    ans = np.asarray(ans)
    if _concrete(ans) and np.all(ans != 0):
        return g * ans[..., None, None] * _T(np.linalg.inv(a))
    return g * _T(_adjugate(a)).astype(np.result_type(a, ans))


def slogdet_grad(g, ans, a):
    """Cotangent of ``a`` in ``(sign, logabsdet) = slogdet(a)``.

    With ``t = tr(inv(a) da)``: ``d logabsdet = Re t``, and for complex ``a``
    ``d sign = i Im(t) sign`` (a real sign is constant).
    """
    (gsign, glog), sign = _parts(g, ans), ans[0]
    glog = np.real(glog)
    c = glog + 1j * np.imag(gsign * sign) if np.iscomplexobj(a) else glog
    return np.asarray(c)[..., None, None] * _T(np.linalg.inv(a))


# --- decompositions ---


def cholesky_grad(g, L, a, upper=False):
    """Cotangent of ``a`` in ``L = cholesky(a)`` (JAX's formula
    ``dL = L phi(L^-1 dA L^-H)``, ``phi`` = lower triangle, halved diagonal),
    mapped onto the triangle NumPy reads."""
    if upper:   # cholesky(a, upper=True) == cholesky(a^T)^T
        return _T(cholesky_grad(_T(g), _T(L), _T(a)))
    linv = np.linalg.inv(L)
    m = np.matmul(_T(L), g)
    phi = np.tril(m) - 0.5 * _diag_embed(np.diagonal(m, 0, -2, -1))
    return hermitian_grad(np.matmul(np.matmul(_T(linv), phi), _cj(linv)), lower=True)


def eigh_grad(g, ans, a, lower=True, vectors=True):
    """Cotangent of ``a`` in ``w, v = eigh(a)``: ``conj(v) (diag(gw) + F o (v^T gv)) v^T``
    with ``F_ij = 1 / (w_j - w_i)`` off the diagonal (JAX's nondegenerate formula;
    an entry of ``v^T gv`` that is zero adds nothing, so repeated eigenvalues
    are fine for functions of the eigenvalues alone, and the term is skipped
    when a NumPy ``gv`` is zero).  ``vectors=False``: the eigenvalues of
    ``eigvalsh`` (``ans``), the eigenvectors recomputed (from the Hermitian
    matrix NumPy sees: jax.numpy's ``eigh`` would symmetrize ``a`` instead)."""
    if vectors:
        (gw, gv), (w, v) = _parts(g, ans), ans
    else:
        gw, gv, (w, v) = g, None, np.linalg.eigh(_hermitian(a, lower))
    mid = _diag_embed(np.asarray(gw, dtype=np.result_type(w)))
    if gv is not None and not (_concrete(gv) and not np.any(gv)):
        eye = _eye(w.shape[-1], w)
        p = np.matmul(_T(v), gv)
        mid = mid + np.where(p == 0, 0, p / (w[..., None, :] - w[..., :, None] + eye)) * (1 - eye)
    return hermitian_grad(np.matmul(np.matmul(_cj(v), mid), _T(v)), lower)


def _trim_full(u, gu, vh, gvh, k):
    """Reduce a full SVD to its first ``k`` singular vectors; refused when the
    cotangent reaches the others (they are not unique)."""
    if np.any(gu[..., k:]) or np.any(gvh[..., k:, :]):
        raise NotImplementedError(
            "the gradient of svd(full_matrices=True) of a non-square matrix is not defined "
            "for the extra singular vectors; use full_matrices=False")
    return u[..., :k], gu[..., :k], vh[..., :k, :], gvh[..., :k, :]


def svd_grad(g, ans, a, full_matrices=True, compute_uv=True, hermitian=False):
    """Cotangent of ``a`` in ``svd(a)``: the adjoint of JAX's derivative (which
    fixes the phases of complex singular vectors by putting ``i Im diag(U^H dA V)``
    into ``dU``).  Distinct nonzero singular values are assumed where ``g``
    reaches the singular vectors."""
    if hermitian:
        raise NotImplementedError("the gradient of svd(hermitian=True) is not implemented; "
                                  "use hermitian=False (the same values) or eigh")
    if not compute_uv:
        u, _, vh = np.linalg.svd(a, full_matrices=False)
        return _cj(np.matmul(u * g[..., None, :], vh))
    u, s, vh = ans[0], ans[1], ans[2]
    gu, gs, gvh = (np.broadcast_to(x, np.shape(y)) for x, y in zip(_parts(g, ans), ans))
    phased = None       # (a traced or lazy cotangent: checked with the result)
    if np.iscomplexobj(a) and not (_concrete(gu) and _concrete(gvh) and not (
            np.any(gu) or np.any(gvh))):
        phased = _phase_dependent(u, gu, vh, gvh, min(a.shape[-2:]))
    m, n = a.shape[-2:]
    k = min(m, n)
    if full_matrices and m != n:
        u, gu, vh, gvh = _trim_full(u, gu, vh, gvh, k)
    eye = _eye(k, s)
    sr, sc = s[..., None, :], s[..., :, None]
    f = 1 / ((sr + sc) * (sr - sc) + eye) - eye
    ju = np.matmul(_T(u), gu)
    jv = np.matmul(_cj(vh), _H(gvh))      # conj(V^H conj(gV)), V = vh^H, gV = gvh^H
    pu, pv = f * ju, f * jv
    cs = _diag_embed(gs.astype(s.dtype)) + (pu + _H(pu)) * sr + (pv + _H(pv)) * sc
    if np.iscomplexobj(a):
        cs = cs + _diag_embed(1j * _safe_div(np.imag(np.diagonal(ju, 0, -2, -1)), s))
    out = np.matmul(np.matmul(_cj(u), cs), _cj(vh))
    if m > k:
        x = gu / sr
        out = out + np.matmul(x - np.matmul(_cj(u), np.matmul(_T(u), x)), _cj(vh))
    if n > k:
        x = gvh / sc
        out = out + np.matmul(_cj(u), x - np.matmul(np.matmul(x, _T(vh)), _cj(vh)))
    if phased is not None:      # NumPy raises; traced, JAX raises from the host, and NaN
        raise_when(phased, NonDifferentiableError(
            "This function of np.linalg.svd's singular vectors depends on their phases, "
            "which are not unique for a complex matrix (u[:, j] * e^(it) with "
            "vh[j] * e^(-it) is as good an SVD); it has no derivative.",
            hint="Use phase-free quantities: the singular values, |u|, |vh|, or "
                 "products u[:, j] * vh[j] (for example u @ np.diag(s) @ vh)."))
        if not _concrete(phased):
            out = np.where(phased, np.nan, out)
    return out


def _peak(x):
    """The largest ``|x|`` (0 for an empty array; Dask's max takes no ``initial``)."""
    return np.max(np.abs(x)) if np.size(x) else 0.0


def _phase_dependent(u, gu, vh, gvh, k):
    """Whether a cotangent depends on the phases of complex singular vectors
    (a boolean, traced for traced arrays; ``svd_grad`` refuses it: NaN and an
    error under jax.jit, ``runtime.linalg_jit.raise_when``).
    ``u[:, j] e^{it}`` with ``vh[j] e^{-it}`` is as good an SVD as NumPy's; a
    loss is defined only if it does not change along that direction:
    ``Im diag(u^T gu) == Im diag(vh gvh^T)`` (the derivative in ``t``).
    NumPy's choice of phase is a function of ``a`` of its own, so a loss
    that depends on it has no derivative that finite differences and the
    rule agree on."""
    gu, gvh = gu[..., :k], gvh[..., :k, :]
    left = np.imag(np.sum(u[..., :k] * gu, axis=-2))
    right = np.imag(np.sum(vh[..., :k, :] * gvh, axis=-1))
    scale = _peak(gu) + _peak(gvh)
    size = max(u.shape[-2], vh.shape[-1])
    return np.any(np.abs(left - right) > 1e-8 * np.maximum(scale, 1e-300) * size)


def qr_grad(g, ans, a, mode="reduced"):
    """Cotangent of ``a`` in ``qr(a, mode)`` for ``m >= n``: the adjoint of
    JAX's derivative (which keeps the diagonal of ``R`` real)."""
    m, n = a.shape[-2:]
    if mode not in ("reduced", "complete", "r") or m < n:
        raise NotImplementedError(f"the gradient of qr(mode={mode!r}) is defined here for "
                                  "m >= n and modes 'reduced', 'complete' and 'r'")
    if mode == "r":
        q, r = np.linalg.qr(a)
        gq, gr = np.zeros_like(q), g[..., :n, :]
    else:
        (q, r), (gq, gr) = ans, _parts(g, ans)
        gq, gr = np.broadcast_to(gq, np.shape(q)), np.broadcast_to(gr, np.shape(r))
        if m != n and mode == "complete":
            if np.any(gq[..., n:]):
                raise NotImplementedError("the gradient of qr(mode='complete') does not "
                                          "reach the extra columns of Q (not unique)")
            q, r, gq, gr = q[..., :n], r[..., :n, :], gq[..., :n], gr[..., :n, :]
    cdo = np.matmul(_T(q), gq) - np.matmul(gr, _T(r))
    cm = np.tril(cdo - _H(cdo), -1) - cdo
    if np.iscomplexobj(cdo):
        cm = cm + _diag_embed(1j * np.imag(np.diagonal(cdo, 0, -2, -1)))
    cx = gq + np.matmul(_cj(q), cm)
    return _T(np.linalg.solve(r, _T(cx)))


# --- pseudo-inverse, powers, chains, least squares ---


def pinv_grad(g, x, a, hermitian=False):
    """Cotangent of ``a`` in ``x = pinv(a)`` (constant rank):
    ``-x^T g x^T + conj((I - a x) g^T x x^H + x^H x g^T (I - x a))``."""
    if hermitian:
        return hermitian_grad(pinv_grad(g, x, _hermitian(a)))
    gt = _T(g)
    left = np.matmul(np.matmul(gt, x), _H(x))
    right = np.matmul(np.matmul(_H(x), x), gt)
    return (-np.matmul(np.matmul(_T(x), g), _T(x))
            + _cj(left - np.matmul(a, np.matmul(x, left)))
            + _cj(right - np.matmul(np.matmul(right, x), a)))


def matrix_power_grad(g, a, n):
    """Cotangent of ``a`` in ``matrix_power(a, n)``:
    ``sum_k (a^k)^T g (a^(n-1-k))^T`` (through ``inv`` for ``n < 0``)."""
    if n == 0:
        return np.zeros(np.shape(a), np.result_type(a, g))
    if n < 0:
        b = np.linalg.inv(a)
        gb = matrix_power_grad(g, b, -n)
        return -np.matmul(np.matmul(_T(b), gb), _T(b))
    powers = [np.broadcast_to(_eye(a.shape[-1], a), a.shape), a]
    for _ in range(n - 2):
        powers.append(np.matmul(powers[-1], a))
    total = 0
    for k in range(n):
        total = total + np.matmul(np.matmul(_T(powers[k]), g), _T(powers[n - 1 - k]))
    return total


def multi_dot_grad(g, arrays):
    """Cotangents of each factor in ``multi_dot(arrays)`` (first and last may be 1-d)."""
    mats = [np.asarray(x) for x in arrays]
    if mats[0].ndim == 1:
        mats[0] = mats[0][None, :]
    if mats[-1].ndim == 1:
        mats[-1] = mats[-1][:, None]
    left = np.reshape(g, (mats[0].shape[0], mats[-1].shape[1]))   # (prefix)^T g
    suffix = [None] * len(mats)
    acc = None
    for i in range(len(mats) - 1, -1, -1):
        suffix[i] = acc
        acc = mats[i] if acc is None else np.dot(mats[i], acc)
    parts = []
    for i, x in enumerate(arrays):
        part = left if suffix[i] is None else np.dot(left, _T(suffix[i]))
        parts.append(np.reshape(part, np.shape(x)))
        left = np.dot(_T(mats[i]), left)
    return list(parts) if isinstance(arrays, list) else tuple(parts)


def lstsq_grad(g, ans, a, b, wrt):
    """Cotangent of ``a`` or ``b`` (``wrt``) in ``x, res, rank, s = lstsq(a, b)``.

    ``x = pinv(a) b`` (constant rank); ``res`` (full column rank, m > n) is
    ``|b - a x|^2`` per column, whose derivative does not see ``dx``; ``s`` as
    in ``svd(a, compute_uv=False)``.
    """
    x, vec = ans[0], np.ndim(b) == 1
    gx, gres, gs = np.asarray(g[0]), np.asarray(g[1]), np.asarray(g[3])
    p = np.linalg.pinv(a)
    x2, gx2, b2 = (x[:, None], gx[:, None], b[:, None]) if vec else (x, gx, b)
    r = np.asarray(b2) - np.matmul(a, x2)
    gr = 2 * _cj(r) * (gres if np.size(gres) else 0)    # d res = 2 Re(conj(r) dr)
    if wrt == "b":
        out = np.matmul(_T(p), gx2) + gr
        return out[:, 0] if vec else out
    out = pinv_grad(np.matmul(gx2, _T(b2)), p, a) - np.matmul(gr, _T(x2))
    if not _concrete(gs) or np.any(gs):
        out = out + svd_grad(gs, None, a, compute_uv=False)
    return out


# --- norms ---


def _norm_axes(x, ord, axis):
    nd = np.ndim(x)
    if axis is None:
        return tuple(range(nd)) if ord is None or nd == 1 else (0, 1)
    return tuple(i % nd for i in (axis if isinstance(axis, tuple) else (axis,)))


def _safe_div(num, den):
    zero = den == 0
    return np.where(zero, 0, num / np.where(zero, 1, den))


def norm_grad(g, ans, x, ord=None, axis=None, keepdims=False):
    """Cotangent of ``x`` in ``np.linalg.norm(x, ord, axis, keepdims)``.

    Conventions where the derivative is not unique: ties (``inf`` norms, the
    largest or smallest singular value, the largest column or row sum) share
    ``g`` equally, as JAX does; at ``x == 0`` the cotangent is 0 (the smallest
    subgradient; JAX gives NaN there), as ``abs`` does at 0.
    """
    x = np.asarray(x)
    axes = _norm_axes(x, ord, axis)
    kshape = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    gk, nk = np.reshape(g, kshape), np.reshape(ans, kshape)
    mag, sgn = np.abs(x), np.conj(np.sign(x))
    if len(axes) == 1 or ord in (None, "fro"):
        if ord in (None, 2, 2.0, "fro"):
            return gk * _safe_div(_cj(x), nk)
        if ord in (np.inf, -np.inf):
            return gk * _winners(mag, nk, axes) * sgn
        if ord == 0:
            return np.zeros_like(x)
        return gk * np.where(mag == 0, 0, _safe_div(mag, nk) ** (ord - 1.0)) * sgn
    r, c = axes
    if ord in (1, -1, np.inf, -np.inf):
        along, across = (r, c) if ord in (1, -1) else (c, r)
        sums = np.sum(mag, axis=along, keepdims=True)
        return gk * _winners(sums, nk, across) * sgn
    xm = np.moveaxis(x, (r, c), (-2, -1))
    u, s, vh = np.linalg.svd(xm, full_matrices=False)
    if ord == "nuc":
        w = np.ones_like(s)
    elif ord in (2, -2):
        w = _winners(s, (np.max if ord == 2 else np.min)(s, axis=-1, keepdims=True))
    else:
        raise ValueError(f"invalid norm order {ord!r} for matrices")
    return gk * np.moveaxis(_cj(np.matmul(u * w[..., None, :], vh)), (-2, -1), (r, c))
