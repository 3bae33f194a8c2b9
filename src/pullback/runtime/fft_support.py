"""Helpers called by the Fourier-transform and signal rules (``rules.numpy_fft``,
``rules.numpy_misc``).

Every transform of ``np.fft`` is a chain of one-dimensional steps, each
fitting its axis to a length ``n`` (cropping or zero-padding) and then
transforming it: ``fftn`` runs complex steps over its axes from the last,
``rfftn`` a real-to-complex step on the last axis and complex steps on the
others, ``irfftn`` complex inverse steps on all axes but the last and a
complex-to-real step on that one (exactly as ``numpy.fft`` computes them).
The cotangent runs the chain backwards, transposing each step in JAX's
convention (the adjoint under ``Re sum(a * b)``, no conjugation):

- a complex step is symmetric: its transpose is the same transform of ``g``
  with the same ``norm``;
- ``rfft``'s (keep the first ``n//2 + 1`` bins of the ``fft`` of a real
  signal): ``Re fft(g zero-padded to n)``;
- ``irfft``'s (rebuild the missing bins as conjugates of the kept ones,
  dropping the imaginary parts of bin 0 and, ``n`` even, of bin ``n/2``,
  then inverse-transform): ``ifft(g)`` on the kept bins, the interior ones
  doubled (each stands for itself and its mirror); the two edge bins come
  out real, so the ignored imaginary parts get no gradient;

and transposes the fit (the transpose of a crop is a zero-pad and back).
Real inputs get real cotangents; float32 stays float32 (complex64 inside).
"""
from __future__ import annotations

import numpy as np
import numpy as _numpy      # (never rebound under jax.jit: axes and lengths are Python values)

from .core import unbroadcast, zeros_like
from .rule_support import unarray

__all__ = ["fft_grad", "fit_axis", "broadcast_arrays_grads", "convolve_grads",
           "correlate_grads", "gradient_grad", "interp_grads", "eig_grad"]


# --- Fourier transforms ---


def fit_axis(x, axis, n):
    """``x`` cropped or zero-padded along ``axis`` to length ``n``.

    >>> fit_axis(np.arange(3.0), 0, 5)
    array([0., 1., 2., 0., 0.])
    >>> fit_axis(np.arange(3.0), 0, 2)
    array([0., 1.])
    """
    have = x.shape[axis]
    if have == n:
        return x
    if have > n:
        return x[(slice(None),) * axis + (slice(0, n),)]
    widths = [(0, 0)] * x.ndim
    widths[axis] = (0, n - have)
    return np.pad(x, widths)


def _steps(shape, kind, s, axes):
    """The one-dimensional steps of ``np.fft.<kind>`` as (op, axis, n, length
    before), in the order NumPy runs them.  ``kind`` is ``fft``, ``ifft``,
    ``rfft`` or ``irfft``; an int ``axes`` is the one-dimensional transform."""
    ndim = len(shape)
    if axes is not None and _numpy.ndim(axes) == 0:
        axes, s = [axes], None if s is None else [s]
    elif s is not None and _numpy.ndim(s) == 0:
        s = [s]
    if axes is None:
        axes = list(range(ndim)) if s is None else list(range(-len(s), 0))
    axes = [int(ax) % ndim for ax in axes]
    s = [None] * len(axes) if s is None else [shape[ax] if n == -1 else n
                                              for n, ax in zip(s, axes)]
    if kind in ("fft", "ifft"):
        order = [(kind, axes[i], s[i]) for i in reversed(range(len(axes)))]
    elif kind == "rfft":
        order = [("rfft", axes[-1], s[-1])] + [("fft", axes[i], s[i])
                                               for i in reversed(range(len(axes) - 1))]
    else:
        order = [("ifft", axes[i], s[i]) for i in range(len(axes) - 1)]
        order.append(("irfft", axes[-1], s[-1]))
    steps, now = [], list(shape)
    for op, ax, n in order:
        have = now[ax]
        if n is None:
            n = 2 * (have - 1) if op == "irfft" else have
        steps.append((op, ax, n, have))
        now[ax] = n // 2 + 1 if op == "rfft" else n
    return steps


def _edge_weights(m, n, dtype):
    """How many bins of the full spectrum each kept bin of ``irfft`` stands for."""
    i = np.arange(m)
    edge = (i == 0) | ((i == m - 1) if n % 2 == 0 else False)
    return np.where(edge, 1, 2).astype(dtype)


def fft_grad(g, a, kind, s, axes, norm=None):
    """Cotangent of ``a`` in ``np.fft.<kind>(a, s, axes, norm)`` (``kind``:
    ``fft``, ``ifft``, ``rfft``, ``irfft``; ``s``/``axes`` an int for the
    one-dimensional transforms).

    >>> fft_grad(np.array([1.0, 0.0]), np.zeros(2), "irfft", None, -1)
    array([0.5, 0.5])
    """
    given, a = a, np.asarray(a)
    g = np.asarray(g)
    for op, ax, n, have in reversed(_steps(a.shape, kind, s, axes)):
        if op == "irfft":
            g = np.real(g)
            m = n // 2 + 1
            g = fit_axis(np.fft.ifft(g, axis=ax, norm=norm), ax, m)
            shape = [1] * g.ndim
            shape[ax] = m
            g = g * np.reshape(_edge_weights(m, n, g.real.dtype), shape)
        elif op == "rfft":
            g = np.fft.fft(fit_axis(g, ax, n), axis=ax, norm=norm)
        else:
            g = getattr(np.fft, op)(g, axis=ax, norm=norm)
        g = fit_axis(g, ax, have)
    return unarray(g if np.iscomplexobj(a) else np.real(g), given)


def broadcast_arrays_grads(g, args):
    """Cotangents of ``np.broadcast_arrays(*args)``: each part summed back onto
    its input's shape (a part without a cotangent gives zeros)."""
    return tuple(zeros_like(x) if gi is None else unarray(unbroadcast(gi, x), x)
                 for gi, x in zip(g, args))


# --- convolutions ---


def _full_cotangent(g, a, v, mode, correlate):
    """``g`` placed into the cotangent of the ``full`` result."""
    n, m = np.size(a), np.size(v)
    short = min(n, m)
    if mode == "full":
        return g
    if mode == "valid":
        start = short - 1
    elif correlate and n < m:
        start = short // 2
    else:
        start = (short - 1) // 2
    out = np.zeros(n + m - 1, dtype=np.result_type(g))
    out[start:start + np.size(g)] = g
    return out


def _transpose_conv(gf, other):
    """The transpose of ``x -> convolve(x, other, 'full')`` at ``gf``."""
    return np.convolve(gf, np.asarray(other)[::-1], "valid")


def convolve_grads(g, a, v, mode="full"):
    """Cotangents of ``a`` and ``v`` in ``np.convolve(a, v, mode)``.

    >>> convolve_grads(np.ones(2), np.array([1.0, 2.0]), np.array([3.0]), "same")
    (array([3., 3.]), array([3.]))
    """
    gf = _full_cotangent(g, a, v, mode, False)
    ga = _transpose_conv(gf, np.ravel(v))
    gv = _transpose_conv(gf, np.ravel(a))
    return unarray(ga, a), unarray(gv, v)


def correlate_grads(g, a, v, mode="valid"):
    """Cotangents of ``a`` and ``v`` in ``np.correlate(a, v, mode)``, which is
    ``convolve(a, conj(v[::-1]))``: holomorphic in ``a``, antiholomorphic in ``v``."""
    gf = _full_cotangent(g, a, v, mode, True)
    w = np.conj(np.ravel(v)[::-1])
    ga = _transpose_conv(gf, w)
    gw = _transpose_conv(gf, np.ravel(a))
    return unarray(ga, a), unarray(np.conj(gw[::-1]), v)


# --- finite differences and interpolation ---


def _band(n, spacing, edge_order):
    """``np.gradient``'s matrix along one axis of length ``n`` as five
    diagonals: ``band[d + 2, i]`` weighs input ``i + d`` in output ``i``.
    Found by differencing five comb signals (no output reads inputs more
    than two places away)."""
    band = np.zeros((5, n))
    i = np.arange(n)
    for r in range(5):
        comb = (i % 5 == r).astype(float)
        d = np.gradient(comb, spacing, edge_order=edge_order)
        band[(r - i + 2) % 5, i] = d
    return band


def gradient_grad(g, f, varargs, axis=None, edge_order=1):
    """Cotangent of ``f`` in ``np.gradient(f, *varargs, axis=..., edge_order=...)``
    (``g`` one cotangent per differentiated axis, or one for a single axis)."""
    given, f = f, np.asarray(f)
    axes = list(range(f.ndim)) if axis is None else [
        int(ax) % f.ndim for ax in (axis if isinstance(axis, (tuple, list)) else (axis,))]
    parts = [g] if len(axes) == 1 else list(g)
    varargs = () if varargs is None else tuple(varargs)
    if len(varargs) == 0:
        spacing = [1.0] * len(axes)
    elif len(varargs) == 1 and np.ndim(varargs[0]) == 0:
        spacing = list(varargs) * len(axes)
    else:
        spacing = list(varargs)
    dtype = np.result_type(*[p for p in parts if p is not None], f.dtype, np.float16)
    out = np.zeros(f.shape, dtype=dtype)
    for ax, gi, h in zip(axes, parts, spacing):
        if gi is None:
            continue
        n = f.shape[ax]
        band = _band(n, h, edge_order).astype(np.real(out).dtype)
        gm = np.moveaxis(np.asarray(gi), ax, -1)
        dst = np.moveaxis(out, ax, -1)          # a view: adds land in out
        for d in range(-2, 3):
            lo, hi = max(0, -d), min(n, n - d)
            if lo < hi:
                dst[..., lo + d:hi + d] += band[d + 2, lo:hi] * gm[..., lo:hi]
    return unarray(out, given)


def interp_grads(g, x, xp, fp, left=None, right=None, period=None):
    """Cotangents of ``x`` and ``fp`` in ``np.interp(x, xp, fp, ...)`` (``xp``
    is a constant).  At a knot the slope is that of the interval on its
    right (the last interval at ``xp[-1]``), as in JAX; outside the knots
    ``x`` gets 0 and ``fp[0]``/``fp[-1]`` get ``g`` unless ``left``/``right``
    replace them."""
    xq = np.asarray(x, dtype=float)
    xp = np.asarray(xp, dtype=float)
    fp_given, fp = fp, np.asarray(fp)
    g = np.asarray(g)
    idx = np.arange(fp.shape[0])
    if period is not None:
        period = abs(float(period))
        xq = xq % period
        order = np.argsort(xp % period, kind="stable")
        knots = (xp % period)[order]
        xp = np.concatenate([knots[-1:] - period, knots, knots[:1] + period])
        idx = np.concatenate([order[-1:], order, order[:1]])
        left = right = 0.0          # no point lies outside one period
    k = len(xp)
    j = np.clip(np.searchsorted(xp, xq, side="right"), 1, max(k - 1, 1))
    lo, hi = xp[np.minimum(j - 1, k - 1)], xp[np.minimum(j, k - 1)]
    width = np.where(hi > lo, hi - lo, 1.0)
    t = np.where(hi > lo, (xq - lo) / width, 0.0)
    inside = (xq >= xp[0]) & (xq <= xp[-1])
    below, above = xq < xp[0], xq > xp[-1]
    f_lo, f_hi = fp[idx[np.minimum(j - 1, k - 1)]], fp[idx[np.minimum(j, k - 1)]]
    slope = np.where(inside & (hi > lo), (f_hi - f_lo) / width, 0)
    gx = g * slope
    gfp = np.zeros(fp.shape, dtype=np.result_type(g, fp, float))
    gi = np.where(inside, g, 0)
    np.add.at(gfp, np.ravel(idx[np.minimum(j - 1, k - 1)]), np.ravel(gi * (1 - t)))
    np.add.at(gfp, np.ravel(idx[np.minimum(j, k - 1)]), np.ravel(gi * t))
    if left is None:
        gfp[idx[0]] += np.sum(np.where(below, g, 0))
    if right is None:
        gfp[idx[-1]] += np.sum(np.where(above, g, 0))
    return unarray(gx, x), unarray(gfp, fp_given)


# --- eigendecomposition of a general matrix ---


def _check_phase_free(v, gv):
    """Refuse a cotangent that depends on the phases of complex eigenvectors:
    ``v[:, k] e^{it}`` is as good a unit eigenvector as NumPy's, and a loss
    is defined only if its derivative in ``t``, ``-Im (v^T gv)[k, k]``, is
    zero (NumPy's choice of phase is a function of ``a`` of its own)."""
    dphase = np.imag(np.sum(v * gv, axis=-2))
    if np.any(np.abs(dphase) > 1e-8 * max(np.max(np.abs(gv), initial=0.0), 1e-300)
              * v.shape[-1]):
        from ..errors import NonDifferentiableError
        raise NonDifferentiableError(
            "This function of np.linalg.eig's eigenvectors depends on their phases, which "
            "are not unique (v[:, k] * e^(it) is as good a unit eigenvector); it has no "
            "derivative.",
            hint="Use phase-free quantities: the eigenvalues, |v|, or v[:, k] * v[j, k].conj().")


def eig_grad(g, ans, a, vectors=True):
    """Cotangent of ``a`` in ``np.linalg.eig(a)`` (``vectors=False``:
    ``eigvals``, ``g`` the eigenvalues' cotangent), transposing JAX's
    derivative: ``dw = diag(V^-1 dA V)``, ``dV = V (F * (V^-1 dA V))`` with
    ``F[i, j] = 1 / (w[j] - w[i])`` off the diagonal, then each column's change
    kept orthogonal (in the real part) to the column, as unit norm requires.
    The eigenvectors' phase (sign) is NumPy's choice: only functions that do
    not depend on it have exact gradients through them."""
    a = np.asarray(a)
    if vectors:
        w, v = ans
        gw, gv = (g[f] for f in ans._fields) if isinstance(g, dict) else g
    else:
        (w, v), gw, gv = np.linalg.eig(a), g, None
    dtype = np.result_type(w, v)
    eye = np.eye(w.shape[-1], dtype=dtype)
    inner = np.zeros(v.shape, dtype=dtype) if gw is None else gw[..., None, :] * eye
    if gv is not None:
        vt = np.swapaxes(v, -1, -2)
        if np.iscomplexobj(v):
            _check_phase_free(v, gv)
        c = np.real(np.diagonal(np.matmul(vt, gv), 0, -2, -1))
        gu = gv - np.conj(v) * c[..., None, :]
        gaps = 1 / (w[..., None, :] - w[..., :, None] + eye) - eye
        inner = inner + gaps * np.matmul(vt, gu)
    out = np.linalg.solve(np.swapaxes(v, -1, -2), np.matmul(inner, np.swapaxes(v, -1, -2)))
    return out if np.iscomplexobj(a) else np.real(out).astype(np.result_type(a, np.float16))
