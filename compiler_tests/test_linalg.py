"""End-to-end tests of the linear algebra, contraction and layout rules
(issue 14): small functions a user would write, differentiated with
``pb.grad`` and checked against central differences and against
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


def gauss_loglik(L, mu, X):
    """Gaussian log-likelihood with covariance L L^T + I/2 (slogdet and solve)."""
    S = L @ L.T + 0.5 * np.eye(L.shape[0])
    sign, logdet = np.linalg.slogdet(S)
    D = X - mu
    sol = np.linalg.solve(S, D.T)
    return -0.5 * np.sum(D.T * sol) - 0.5 * X.shape[0] * logdet


def attention(Q, K, V):
    """Softmax attention written with einsum (batched)."""
    s = np.einsum("bqd,bkd->bqk", Q, K) / np.sqrt(Q.shape[-1])
    s = s - np.max(s, axis=-1, keepdims=True)
    w = np.exp(s)
    w = w / np.sum(w, axis=-1, keepdims=True)
    out = np.einsum("bqk,bkd->bqd", w, V)
    return np.sum(out ** 2) + np.einsum("bii->", w[:, :, :4])


def pinv_least_squares(A, y):
    """Ridge-penalized least squares through the pseudo-inverse."""
    x = np.linalg.pinv(A) @ y
    r = A @ x - y
    return np.sum(r ** 2) + 0.1 * np.sum(x ** 2)


def cholesky_logdet(B, C):
    S = B @ B.T + np.eye(B.shape[0])
    L = np.linalg.cholesky(S)
    return 2.0 * np.sum(np.log(np.diag(L))) + np.trace(np.linalg.inv(S) @ C)


def spectral(B, c):
    """A function of eigenvalues and of (sign-free) eigenvector entries."""
    S = B + B.T
    w, v = np.linalg.eigh(S)
    return np.sum(np.exp(0.3 * w)) + np.sum(v[:, 0] * v[:, 0] * c) + np.sum(np.linalg.eigvalsh(S) ** 3)


def singular(A, B):
    s = np.linalg.svd(A, compute_uv=False)
    u, s2, vh = np.linalg.svd(A, full_matrices=False)
    top = u[:, 0:1] * vh[0:1, :]           # the top singular pair, sign-free
    return np.sum(s ** 2) + np.sum(top * B) + np.sum(np.log(s2))


def orthogonal(A, B):
    q, r = np.linalg.qr(A)
    return np.sum((q @ q.T) * B) + np.sum(r ** 2) + np.sum(np.linalg.qr(A, mode="r") ** 4)


def norms(A, x):
    return (np.linalg.norm(A, "nuc") + np.linalg.norm(A, 2) + np.linalg.norm(A, "fro")
            + np.linalg.norm(A, 1) + np.linalg.norm(A, np.inf) + np.linalg.norm(x, 3)
            + np.linalg.norm(x) + np.sum(np.linalg.norm(A, axis=0)))


def matrix_functions(M, B, x):
    return (np.linalg.det(M) + np.sum(np.linalg.inv(M) * B)
            + np.sum(np.linalg.matrix_power(M, 3) * B) + np.linalg.multi_dot([x, M, B, x])
            + np.sum(np.linalg.matrix_power(M, -2)))


def batched(A, b, B):
    return (np.sum(np.linalg.solve(A, b) ** 2) + np.sum(np.linalg.slogdet(A)[1])
            + np.sum(np.linalg.inv(A) * B) + np.sum(np.linalg.det(A))
            + np.sum(np.linalg.svd(A, compute_uv=False)))


def products(A, B, u, v):
    return (np.sum(np.kron(A, B) ** 2) + np.sum(np.tensordot(A, B, axes=([0], [1])))
            + np.sum(np.cross(u, v) ** 2) + np.trace(A @ B) + np.sum(np.diag(u) @ A)
            + np.sum(np.tril(A @ B, -1) * 2.0) + np.sum(np.triu(B @ A)))


def layout(x, w):
    y = np.pad(x, 2, mode="reflect")
    z = np.roll(np.tile(y, 2), 3)
    t = np.repeat(x, 2) * w[:x.shape[0] * 2]
    return (np.sum(np.sort(z) * w) + np.sum(np.cumprod(x[:4])) + np.sum(np.diff(x, 2) ** 2)
            + np.sum(t ** 2) + np.sum(np.flip(x) * x) + np.sum(np.sinc(x)))


def statistics(X):
    C = np.cov(X)
    return (np.sum(C ** 2) + np.sum(np.corrcoef(X) ** 3) + np.sum(np.ptp(X, axis=1))
            + np.average(X, axis=1, weights=np.arange(1.0, X.shape[1] + 1)).sum())


def interleaved_einsum(A, B, C):
    """einsum's (operand, sublist) form, with '...' and an implicit output."""
    return (np.sum(np.einsum(A, [0, 1], B, [1, 2], [0, 2]) ** 2)
            + np.sum(np.einsum(C, [Ellipsis, 0, 1], B, [1, 2], [Ellipsis, 0, 2]) ** 2)
            + np.einsum(A, [0, 1], A, [0, 1]) + np.sum(np.einsum(C, [2, 1, 0])))


def hermitian_spectral(Z, c):
    """A real function of a complex Hermitian matrix (phase-free)."""
    H = Z @ np.conj(Z.T) + np.eye(Z.shape[0])
    w, v = np.linalg.eigh(H)
    return np.sum(np.log(w) * c) + np.sum(np.abs(v[:, -1]) ** 2 * c)


def complex_slogdet(Z):
    sign, logdet = np.linalg.slogdet(Z)
    return logdet + np.real(sign) * 0.3 + np.imag(sign)


def complex_decompositions(Z, W):
    s = np.linalg.svd(Z, compute_uv=False)
    L = np.linalg.cholesky(Z @ np.conj(Z.T) + np.eye(Z.shape[0]))
    x = np.linalg.solve(Z, W[:, 0])
    return (np.sum(s ** 2) + np.sum(np.abs(L) ** 2) + np.sum(np.abs(x) ** 2)
            + np.linalg.norm(Z, "nuc") + np.abs(np.einsum("ij,ji->", Z, W)) ** 2)


# --- inputs and checks -------------------------------------------------------------


def _inputs(seed):
    rng = np.random.default_rng(seed)

    def n(*shape):
        return rng.normal(size=shape)

    def c(*shape):
        return rng.normal(size=shape) + 1j * rng.normal(size=shape)

    well = 2.0 * np.eye(3) + 0.4 * n(3, 3)
    return {
        gauss_loglik: (n(3, 3), n(3), n(5, 3)),
        attention: (n(2, 4, 3), n(2, 5, 3), n(2, 5, 3)),
        pinv_least_squares: (n(6, 3), n(6)),
        cholesky_logdet: (n(3, 3), n(3, 3)),
        spectral: (n(4, 4), n(4)),
        singular: (n(4, 3), n(4, 3)),
        orthogonal: (n(5, 3), n(5, 5)),
        norms: (n(3, 4), n(5)),
        matrix_functions: (well, n(3, 3), n(3)),
        batched: (2.0 * np.eye(3) + 0.4 * n(2, 3, 3), n(2, 3, 2), n(2, 3, 3)),
        products: (n(3, 3), n(3, 3), n(3), n(3)),
        layout: (n(5), n(18)),
        statistics: (n(3, 6),),
        interleaved_einsum: (n(2, 3), n(3, 4), n(2, 2, 3)),
        hermitian_spectral: (c(3, 3), n(3)),
        complex_slogdet: (2.0 * np.eye(3) + 0.4 * c(3, 3),),
        complex_decompositions: (2.0 * np.eye(3) + 0.4 * c(3, 3), c(3, 3)),
    }


def jax_version(f):
    """The same source, run with jax.numpy as ``np``."""
    namespace = {"np": jnp}
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


def test_float32_stays_float32():
    rng = np.random.default_rng(1)
    A = (2.0 * np.eye(3) + 0.4 * rng.normal(size=(3, 3))).astype(np.float32)
    b = rng.normal(size=3).astype(np.float32)
    for f, args in [(matrix_functions, (A, A, b)), (cholesky_logdet, (A, A)),
                    (norms, (A, b)), (products, (A, A, b, b))]:
        g32 = pb.grad(f, argnums=(0, 1))(*args)
        g64 = pb.grad(f, argnums=(0, 1))(*[x.astype(np.float64) for x in args])
        for x, y in zip(g32, g64):
            assert x.dtype == np.float32
            np.testing.assert_allclose(x, y, rtol=2e-3, atol=2e-3 * np.max(np.abs(y)))


# --- conventions --------------------------------------------------------------------


def test_norm_at_zero_is_zero():
    def f(x):
        return np.linalg.norm(x) + np.linalg.norm(x, 1) + np.linalg.norm(x, 3)
    np.testing.assert_array_equal(pb.grad(f)(np.zeros(3)), np.zeros(3))
    np.testing.assert_array_equal(pb.grad(lambda a: np.linalg.norm(a, "fro"))(np.zeros((2, 2))),
                                  np.zeros((2, 2)))


def test_norm_ties_split_equally():
    # as JAX: the inf-norm's tied entries and the 2-norm's tied singular values share g
    np.testing.assert_allclose(pb.grad(lambda x: np.linalg.norm(x, np.inf))(
        np.array([0.0, 2.0, -2.0])), [0, 0.5, -0.5])
    np.testing.assert_allclose(pb.grad(lambda a: np.linalg.norm(a, 2))(np.eye(2)),
                               0.5 * np.eye(2), atol=1e-12)


def test_sort_ties_follow_a_stable_sort():
    # as JAX: the first of two tied elements gets the first place's cotangent
    np.testing.assert_array_equal(pb.grad(lambda x: np.sort(x)[0])(np.array([1.0, 1.0, 2.0])),
                                  [1, 0, 0])


def test_eigenvalues_of_a_repeated_spectrum():
    # sum(w^2) = |S|_F^2 for symmetric S: finite with repeated eigenvalues (the
    # eigenvector term is skipped when the eigenvectors get no cotangent)
    def f(b):
        w = np.linalg.eigvalsh(b + b.T)
        return np.sum(w ** 2)
    b = np.eye(3)
    np.testing.assert_allclose(pb.grad(f)(b), 4 * (b + b.T), atol=1e-12)


def test_triangle_numpy_reads():
    # eigh and cholesky read the lower triangle: the upper one gets no gradient
    a = np.array([[2.0, 5.0], [0.5, 3.0]])
    g = pb.grad(lambda a: np.sum(np.linalg.eigvalsh(a) ** 2))(a)
    assert g[0, 1] == 0 and np.isclose(g[1, 0], 4 * 0.5)
    g = pb.grad(lambda a: np.sum(np.linalg.cholesky(a)))(a)
    assert g[0, 1] == 0
    g = pb.grad(lambda a: np.sum(np.linalg.eigvalsh(a, UPLO="U") ** 2))(a)
    assert g[1, 0] == 0 and np.isclose(g[0, 1], 4 * 5.0)


def test_det_of_a_singular_matrix():
    a = np.array([[1.0, 2.0], [2.0, 4.0]])
    np.testing.assert_allclose(pb.grad(lambda a: np.linalg.det(a))(a), [[4.0, -2.0], [-2.0, 1.0]],
                               atol=1e-12)


def test_full_svd_of_a_rectangle():
    a = np.random.default_rng(2).normal(size=(4, 2))

    def values(a):
        u, s, vh = np.linalg.svd(a)
        return np.sum(s ** 2)

    np.testing.assert_allclose(pb.grad(values)(a), 2 * a, atol=1e-12)

    def extra_vectors(a):
        u, s, vh = np.linalg.svd(a)
        return np.sum(u[:, 3] ** 3)

    with pytest.raises(NotImplementedError, match="full_matrices"):
        pb.grad(extra_vectors)(a)


def test_einsum_repeated_and_implicit():
    a = np.arange(9.0).reshape(3, 3)
    np.testing.assert_array_equal(pb.grad(lambda a: np.einsum("ii", a))(a), np.eye(3))
    g = pb.grad(lambda a: np.sum(np.einsum("ii->i", a) * np.array([1.0, 2.0, 3.0])))(a)
    np.testing.assert_array_equal(g, np.diag([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(pb.grad(lambda a: np.sum(np.einsum("ij", a) ** 2))(a), 2 * a)


def _svd_phase_free(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return np.sum(np.abs(u) * np.arange(u.shape[-1])) + np.sum(np.abs(vh) ** 3) + np.sum(s)


def _svd_full_phase_free(a):
    u, s, vh = np.linalg.svd(a)
    k = min(a.shape[-2:])
    return np.sum(np.abs(u[..., :, :k]) ** 2 * 0.5) + np.sum(np.abs(vh[..., :k, :])) \
        + np.sum(np.real(u[..., :, :1] * vh[..., :1, :]) ** 2)


@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (4, 4), (2, 3, 4)])
@pytest.mark.parametrize("f", [_svd_phase_free, _svd_full_phase_free])
def test_singular_vectors_of_a_complex_matrix(f, shape):
    # |u|, |vh| and u[:, j] vh[j] do not depend on the vectors' phases: exact.
    # The V^H gV term was conjugated wrongly until this test (max error 0.05-0.5)
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    close(pb.grad(f)(a), central_differences(f, (a,), 0))


def test_phase_dependent_singular_vectors_are_refused():
    # Re u depends on NumPy's choice of phase, a function of a of its own: no
    # derivative that the rule and finite differences agree on
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))

    def f(a):
        u, s, vh = np.linalg.svd(a)
        return np.sum(np.real(u)) + np.sum(s)
    with pytest.raises(pb.NonDifferentiableError, match="depends on their phases"):
        pb.grad(f)(a)


def test_phase_dependent_eigenvectors_are_refused():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((4, 4))

    def f(a):
        w, v = np.linalg.eig(a)
        return np.sum(np.real(v))
    w = np.linalg.eigvals(a)
    assert np.any(np.imag(w) != 0)          # complex eigenvectors
    with pytest.raises(pb.NonDifferentiableError, match="depends on their phases"):
        pb.grad(f)(a)

    def g(a):
        w, v = np.linalg.eig(a)
        return np.sum(np.abs(v) ** 2 * np.arange(4.0)) + np.sum(np.real(w))
    close(pb.grad(g)(a), central_differences(g, (a,), 0))
