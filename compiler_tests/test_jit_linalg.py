"""Matrix decompositions and Fourier transforms under ``jax.jit`` (issue 18):
``det``, ``eigh``/``eigvalsh``, ``svd``, ``cholesky``, ``qr``,
``matrix_power``, ``multi_dot`` and ``np.fft`` have gradient helpers with no
Python branch on values and no write into an array, so ``pb.source`` says
traceable and ``jax.jit(pb.grad(f))`` runs them on jax.numpy.

Oracle: ``jax.grad`` of the same function written with jax.numpy, float64,
to 1e-12 (relative to the gradient's size); and for a matrix that is not
symmetric, pullback's NumPy value and gradient (NumPy's ``eigh`` and
``cholesky`` read one triangle; jax.numpy's symmetrize unless told not to).
"""
import numpy as np
import pytest
from numpy.linalg import eigvalsh as eigvalsh_by_name      # (a function taken by name)

import pullback as pb

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy

RNG = np.random.default_rng(1818)
D = np.diag(np.arange(1.0, 6.0))
W = np.arange(25.0).reshape(5, 5) / 10.0
SINGULAR = np.diag([0.0, 1.0, 1.0, 1.0, 1.0])


def det(x):
    return np.linalg.det(np.eye(5) + np.outer(x, x))


def det_j(x):
    return jnp.linalg.det(jnp.eye(5) + jnp.outer(x, x))


def det_singular(x):            # singular for x[0] == 0: the adjugate, not the inverse
    return np.linalg.det(np.outer(x * np.array([0.0, 1, 1, 1, 1]), x) + SINGULAR)


def det_singular_j(x):
    return jnp.linalg.det(jnp.outer(x * jnp.array([0.0, 1, 1, 1, 1]), x) + SINGULAR)


def eigh_values(x):
    return np.sum(np.linalg.eigh(D + np.outer(x, x))[0] ** 2)


def eigh_values_j(x):
    return jnp.sum(jnp.linalg.eigh(D + jnp.outer(x, x))[0] ** 2)


def eigh_vectors(x):
    return np.sum(np.linalg.eigh(D + np.outer(x, x))[1] ** 2 * W)


def eigh_vectors_j(x):
    return jnp.sum(jnp.linalg.eigh(D + jnp.outer(x, x))[1] ** 2 * W)


def eigvalsh(x):
    return np.sum(np.linalg.eigvalsh(D + np.outer(x, x)) * np.arange(5.0))


def eigvalsh_j(x):
    return jnp.sum(jnp.linalg.eigvalsh(D + jnp.outer(x, x)) * jnp.arange(5.0))


def svd_values(x):
    return np.sum(np.linalg.svd(D + np.outer(x, x))[1])


def svd_values_j(x):
    return jnp.sum(jnp.linalg.svd(D + jnp.outer(x, x))[1])


def svd_vectors(x):
    u, s, vh = np.linalg.svd(D + np.outer(x, x))
    return np.sum(u[:, 0] * vh[0]) + np.sum(u * W)


def svd_vectors_j(x):
    u, s, vh = jnp.linalg.svd(D + jnp.outer(x, x))
    return jnp.sum(u[:, 0] * vh[0]) + jnp.sum(u * W)


def svd_no_uv(x):
    return np.sum(np.linalg.svd(D + np.outer(x, x), compute_uv=False) ** 2)


def svd_no_uv_j(x):
    return jnp.sum(jnp.linalg.svd(D + jnp.outer(x, x), compute_uv=False) ** 2)


def cholesky(x):
    return np.sum(np.linalg.cholesky(np.eye(5) * 3.0 + np.outer(x, x)) * W)


def cholesky_j(x):
    return jnp.sum(jnp.linalg.cholesky(jnp.eye(5) * 3.0 + jnp.outer(x, x)) * W)


def qr(x):
    q, r = np.linalg.qr(D + np.outer(x, x))
    return np.sum(r * W) + np.sum(q[:, 0] ** 3)


def qr_j(x):
    q, r = jnp.linalg.qr(D + jnp.outer(x, x))
    return jnp.sum(r * W) + jnp.sum(q[:, 0] ** 3)


def powers(x):
    a = D + np.outer(x, x)
    return np.sum(np.linalg.matrix_power(a, 3)) + np.sum(np.linalg.matrix_power(a, -2))


def powers_j(x):
    a = D + jnp.outer(x, x)
    return jnp.sum(jnp.linalg.matrix_power(a, 3)) + jnp.sum(jnp.linalg.matrix_power(a, -2))


def chain_of_products(x):
    return np.linalg.multi_dot([x, np.outer(x, x), D, x])


def chain_of_products_j(x):
    return jnp.linalg.multi_dot([x, jnp.outer(x, x), D, x])


def fft(x):
    return np.sum(np.abs(np.fft.fft(x)) ** 2 * np.arange(5.0))


def fft_j(x):
    return jnp.sum(jnp.abs(jnp.fft.fft(x)) ** 2 * jnp.arange(5.0))


def real_ffts(x):
    return np.sum(np.abs(np.fft.rfft(x)) ** 2 * np.arange(3.0)) \
        + np.sum(np.fft.irfft(x, 8) * np.arange(8.0))


def real_ffts_j(x):
    return jnp.sum(jnp.abs(jnp.fft.rfft(x)) ** 2 * jnp.arange(3.0)) \
        + jnp.sum(jnp.fft.irfft(x, 8) * jnp.arange(8.0))


def fft2_padded(x):
    return np.sum(np.abs(np.fft.fft2(np.outer(x, x), norm="ortho")) * W) \
        + np.sum(np.real(np.fft.ifft(x, 7)) * np.arange(7.0))


def fft2_padded_j(x):
    return jnp.sum(jnp.abs(jnp.fft.fft2(jnp.outer(x, x), norm="ortho")) * W) \
        + jnp.sum(jnp.real(jnp.fft.ifft(x, 7)) * jnp.arange(7.0))


CASES = [det, det_singular, eigh_values, eigh_vectors, eigvalsh, svd_values, svd_vectors,
         svd_no_uv, cholesky, qr, powers, chain_of_products, fft, real_ffts, fft2_padded]


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_gradient_under_jit_equals_jax_grad(f):
    x = RNG.normal(size=5) * 0.5
    assert pb.source(f, x).splitlines()[1].startswith("# jax.jit: traceable")
    fj = globals()[f.__name__ + "_j"]
    want = jax.grad(fj)(jnp.asarray(x))
    value, got = jax.jit(pb.value_and_grad(f))(jnp.asarray(x))
    assert isinstance(got, jax.Array) and got.dtype == want.dtype
    scale = max(1.0, float(jnp.max(jnp.abs(want))))
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12, atol=1e-12 * scale)
    np.testing.assert_allclose(float(value), float(fj(jnp.asarray(x))), rtol=1e-12)
    np.testing.assert_allclose(pb.grad(f)(x), np.asarray(want), rtol=1e-12, atol=1e-12 * scale)


def lower_triangle(a):
    return np.sum(np.linalg.eigh(a)[0] * np.arange(3.0)) \
        + np.sum(np.linalg.cholesky(a + 5.0 * np.eye(3)) * np.arange(9.0).reshape(3, 3))


def upper_triangle(a):
    return np.sum(eigvalsh_by_name(a, "U") * np.arange(3.0))


@pytest.mark.parametrize("f", [lower_triangle, upper_triangle], ids=lambda f: f.__name__)
def test_a_matrix_that_is_not_symmetric_reads_the_triangle_numpy_reads(f):
    a = np.array([[2.0, 5.0, -1.0], [0.3, 3.0, 0.7], [0.2, -2.0, 4.0]])
    want_value, want = pb.value_and_grad(f)(a)
    assert want[0, 1] == 0.0 if f is lower_triangle else want[1, 0] == 0.0
    value, got = jax.jit(pb.value_and_grad(f))(jnp.asarray(a))
    np.testing.assert_allclose(float(value), want_value, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)
