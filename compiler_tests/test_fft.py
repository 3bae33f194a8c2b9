"""End-to-end tests of the Fourier-transform, signal, interpolation and
``eig`` rules (issue 14): small functions a user would write, differentiated
with ``pb.grad`` and checked against central differences and against
``jax.grad`` of the same source run with ``jax.numpy`` (float64), to 1e-6
relative.  Then the conventions chosen where the derivative is not unique.
"""
import inspect
import textwrap

import numpy as np
import pytest

import pullback as pb

from fd_helpers import central_differences

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)

RTOL = 1e-6


# --- the functions ----------------------------------------------------------------


def circular_filter(x, h):
    """Filtering through the real FFT (irfft of a product of rffts), and a
    padded orthonormal power spectrum."""
    n = x.shape[0]
    y = np.fft.irfft(np.fft.rfft(x) * np.fft.rfft(h, n=n), n=n)
    power = np.abs(np.fft.fft(x, n=8, norm="ortho")) ** 2
    return np.sum(y ** 2 * np.arange(n)) + np.sum(power * np.linspace(0.0, 1.0, 8))


def image_spectrum(img, k):
    """2-d spectra: padded fft2, a centred power spectrum, an inverse of a product."""
    F = np.fft.fft2(img, s=(6, 6))
    P = np.abs(np.fft.fftshift(F)) ** 2
    back = np.fft.ifftn(F * np.fft.ifftshift(k), axes=(0, 1))
    half = np.fft.rfft2(img, norm="forward")
    return (np.sum(P * k) + np.sum(np.real(back) ** 2)
            + np.sum(np.abs(half) ** 2) + np.sum(np.fft.irfftn(half, s=(4, 5), axes=(0, 1), norm="forward")))


def complex_signal(z, w):
    """Complex inputs: a correlation through the FFT, a cropped inverse transform."""
    c = np.fft.ifft(np.fft.fft(z) * np.conj(np.fft.fft(w)))
    d = np.fft.ifft(z, n=3, norm="ortho")
    return np.sum(np.abs(c) ** 2) + np.sum(np.real(d * np.conj(d))) + np.real(np.sum(c * d[0]))


def volume(x):
    """rfftn and irfftn over chosen axes with cropping and padding."""
    X = np.fft.rfftn(x, s=(4, 3), axes=(0, 2))
    y = np.fft.irfftn(X * X, s=(5, 6), axes=(0, 2))
    return np.sum(y * np.cos(y)) + np.sum(np.abs(np.fft.fftn(x, axes=(1, 2))) ** 2)


def signals(x, v, fp):
    """Finite differences, interpolation, convolutions, a NaN-skipping maximum."""
    d = np.gradient(x, 0.5)
    dx, dy = np.gradient(np.outer(x, v[:3]))
    y = np.interp(np.linspace(-0.5, 3.5, 11) + 0.1 * x[0], np.array([0.0, 1.0, 2.5, 3.0]), fp)
    c = np.convolve(x, v, mode="same")
    r = np.correlate(x, v, mode="full")
    m = np.nanmax(np.where(x > 10.0, np.nan, x * fp[0]))
    return (np.sum(d ** 2) + np.sum(dx * dy) + np.sum(y ** 3) + np.sum(c * x) + np.sum(r ** 2)
            + m + np.sum(np.convolve(v, fp, mode="valid")))


def broadcasting(a, b, c):
    p, q, r = np.broadcast_arrays(a, b, c)
    return np.sum(p * q * r) + np.sum(np.sin(q) * r)


def eigen(A, c):
    """A non-symmetric matrix with real eigenvalues: eigenvalues and (sign-free)
    eigenvector entries."""
    w, v = np.linalg.eig(A)
    return np.real(np.sum(w ** 3) + np.sum(v[:, 0] * v[:, 0] * c)
                   + np.sum(np.exp(np.linalg.eigvals(A * c[0]))))


def complex_eigen(Z, c):
    """Phase-free functions of a complex matrix's eigenvectors."""
    w, v = np.linalg.eig(Z)
    return np.sum(np.abs(v) ** 2 * c) + np.sum(np.real(w) ** 2) + np.sum(np.imag(w))


# --- inputs and checks -------------------------------------------------------------


def _inputs(seed):
    rng = np.random.default_rng(seed)

    def n(*shape):
        return rng.normal(size=shape)

    def c(*shape):
        return rng.normal(size=shape) + 1j * rng.normal(size=shape)

    return {
        circular_filter: (n(6), n(4)),
        image_spectrum: (n(4, 5), n(6, 6)),
        complex_signal: (c(5), c(5)),
        volume: (n(3, 4, 5),),
        signals: (n(6), n(4), n(4)),
        broadcasting: (n(3, 1), n(4), n(2, 1, 1)),
        eigen: (np.diag([1.0, 2.0, 3.5, 5.0]) + 0.2 * n(4, 4), n(4)),
        complex_eigen: (np.diag([1.0, 2.0, 3.5]) + 0.3 * c(3, 3), n(3)),
    }


class _Namespace:
    """``jax.numpy`` with ``linalg.eig`` opted into eigenvector derivatives
    (JAX asks for that: they assume distinct eigenvalues)."""

    def __init__(self, module, **overrides):
        self._module, self._overrides = module, overrides

    def __getattr__(self, name):
        return self._overrides.get(name) or getattr(self._module, name)


def _jax_eig(a):
    return tuple(jax.lax.linalg.eig(a, compute_left_eigenvectors=False,
                                    enable_eigvec_derivs=True))


JNP = _Namespace(jnp, linalg=_Namespace(jnp.linalg, eig=_jax_eig))


def jax_version(f):
    """The same source, run with jax.numpy as ``np``."""
    namespace = {"np": JNP}
    exec(compile(textwrap.dedent(inspect.getsource(f)), "<jax>", "exec"), namespace)
    return namespace[f.__name__]


def close(got, want, rtol=RTOL):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype
    scale = max(np.max(np.abs(want)), 1.0)
    assert np.max(np.abs(got - want)) <= rtol * scale, np.max(np.abs(got - want)) / scale


CASES = list(_inputs(0))


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_against_differences_and_jax(f):
    args = _inputs(0)[f]
    argnums = tuple(range(len(args)))
    ours = pb.grad(f, argnums=argnums)(*args)
    theirs = jax.grad(jax_version(f), argnums=argnums)(*args)
    assert np.isclose(pb.value_and_grad(f)(*args)[0], f(*args))
    for k, (g, t) in enumerate(zip(ours, theirs)):
        close(g, central_differences(f, args, k), rtol=1e-5)
        close(g, np.asarray(t))


def second_order_edges(f, h):
    """np.gradient with edge_order=2 and coordinates (JAX has neither)."""
    g0, g1 = np.gradient(f, np.array([0.0, 0.4, 1.0, 1.5]), 0.5, edge_order=2)
    return np.sum(g0 ** 2 * h) + np.sum(np.sin(g1)) + np.sum(np.gradient(f[0], edge_order=2) ** 3)


def periodic_interp(x, fp):
    return np.sum(np.interp(x, np.array([0.5, 2.0, 3.0]), fp, period=3.5) ** 2)


@pytest.mark.parametrize("f,args", [
    (second_order_edges, (np.arange(20.0).reshape(4, 5) ** 1.5 / 7, np.ones(5))),
    (periodic_interp, (np.array([-1.2, 0.2, 1.1, 2.6, 3.3, 5.0]), np.array([1.0, -0.5, 2.0]))),
], ids=["second_order_edges", "periodic_interp"])
def test_against_differences(f, args):
    ours = pb.grad(f, argnums=(0, 1))(*args)
    for k, g in enumerate(ours):
        close(g, central_differences(f, args, k), rtol=1e-5)


def test_float32_stays_float32():
    args = {k: v for k, v in _inputs(1).items() if k in (circular_filter, image_spectrum, volume)}
    for f, xs in args.items():
        x32 = [x.astype(np.float32) for x in xs]
        g32 = pb.grad(f, argnums=tuple(range(len(xs))))(*x32)
        g64 = pb.grad(f, argnums=tuple(range(len(xs))))(*xs)
        for x, y in zip(g32, g64):
            assert x.dtype == np.float32
            np.testing.assert_allclose(x, y, rtol=2e-3, atol=2e-3 * np.max(np.abs(y)))


def test_list_inputs_get_lists():
    g = pb.grad(lambda x: np.sum(np.abs(np.fft.fft(x)) ** 2))([1.0, 2.0, 3.0])
    assert isinstance(g, list) and np.allclose(g, [6.0, 12.0, 18.0])


# --- conventions --------------------------------------------------------------------


def test_irfft_ignores_imaginary_edge_bins():
    # the imaginary parts of bin 0 and (n even) bin n/2 do not reach the result
    def f(X):
        return np.sum(np.fft.irfft(X, n=6) * np.arange(6.0))
    X = np.array([1 + 2j, 0.5 - 1j, 2 + 1j, 3 - 4j])
    g = pb.grad(f)(X)
    assert g[0].imag == 0 and g[3].imag == 0
    close(g, central_differences(f, (X,), 0), rtol=1e-6)


def test_interp_slope_at_knots_is_the_right_interval():
    xp, fp = np.array([0.0, 1.0, 2.0]), np.array([0.0, 2.0, 3.0])
    gx = pb.grad(lambda x: np.sum(np.interp(x, xp, fp)))(np.array([0.0, 1.0, 2.0, -1.0, 3.0]))
    np.testing.assert_array_equal(gx, [2.0, 1.0, 1.0, 0.0, 0.0])


def test_nanmax_ties_and_all_nan():
    a = np.array([[1.0, np.nan, 3.0, 3.0], [np.nan, np.nan, np.nan, np.nan]])
    with np.errstate(invalid="ignore"), pytest.warns(RuntimeWarning):
        g = pb.grad(lambda a: np.nansum(np.nanmax(a, axis=1)))(a)
    np.testing.assert_array_equal(g, [[0, 0, 0.5, 0.5], [0, 0, 0, 0]])
    np.testing.assert_array_equal(pb.grad(lambda a: np.nanmin(a))(np.array([2.0, np.nan, 1.0])),
                                  [0, 0, 1])
