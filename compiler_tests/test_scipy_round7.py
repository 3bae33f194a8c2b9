"""SciPy, round 7: forward mode through the SciPy rules (``pb.jvp``,
``pb.jacfwd``, ``pb.hessian``'s forward over reverse) and the new rules
(``lu_factor``/``lu_solve``, ``qr``, ``kv``/``kve``, ``loggamma``,
``expon``, ``laplace``), whole programs checked against ``jax`` (float64)
where ``jax.scipy`` has the function, else against central differences.
"""
import numpy as np
import pytest

import pullback as pb

pytest.importorskip("scipy")
import scipy.linalg as sla  # noqa: E402
import scipy.special as sps  # noqa: E402
import scipy.stats as sst  # noqa: E402

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import jax.scipy.linalg as jla  # noqa: E402
import jax.scipy.special as jsp  # noqa: E402
import jax.scipy.stats as jst  # noqa: E402

RNG = np.random.default_rng(7)
X = np.abs(RNG.normal(size=4)) + 0.3
T = RNG.normal(size=4)
A = np.array([[0.5, 2.0, 0.1, 0.3], [3.0, 0.2, 0.4, 0.1],
              [0.2, 0.1, 0.3, 2.5], [0.4, 0.3, 2.2, 0.6]])   # partial pivoting swaps rows


def close(a, b, rtol=1e-7, atol=1e-9):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


def fd_jvp(f, x, t, h=1e-6):
    return (np.asarray(f(x + h * t)) - np.asarray(f(x - h * t))) / (2 * h)


def both_modes(f, fj, x=X, t=T, hessian=True):
    """grad, jvp, jacfwd (and hessian) of ``f`` against jax's of ``fj``."""
    close(pb.grad(f)(x), jax.grad(fj)(x))
    out, dot = pb.jvp(f, (x,), (t,))
    jout, jdot = jax.jvp(fj, (x,), (t,))
    close(out, jout)
    close(dot, jdot)
    close(pb.jacfwd(f)(x), jax.jacfwd(fj)(x))
    if hessian:
        close(pb.hessian(f)(x), jax.hessian(fj)(x), rtol=1e-6, atol=1e-8)


# --- distributions ------------------------------------------------------------------


STATS = {
    "norm": (lambda x: np.sum(sst.norm.logpdf(x, 0.3, 1.5)),
             lambda x: jnp.sum(jst.norm.logpdf(x, 0.3, 1.5))),
    "norm_scale": (lambda x: np.sum(sst.norm.logpdf(1.0, 0.2, x) + sst.norm.logcdf(x, 0.5)),
                   lambda x: jnp.sum(jst.norm.logpdf(1.0, 0.2, x) + jst.norm.logcdf(x, 0.5))),
    "gamma": (lambda x: np.sum(sst.gamma.logpdf(x, 2.5, 0.0, 1.3) + sst.gamma.logpdf(1.2, x)),
              lambda x: jnp.sum(jst.gamma.logpdf(x, 2.5, 0.0, 1.3) + jst.gamma.logpdf(1.2, x))),
    "beta": (lambda x: np.sum(sst.beta.logpdf(0.3, x, 2.0) + sst.beta.pdf(x / 3.0, 2.0, 1.5)),
             lambda x: jnp.sum(jst.beta.logpdf(0.3, x, 2.0) + jst.beta.pdf(x / 3.0, 2.0, 1.5))),
    "t": (lambda x: np.sum(sst.t.logpdf(x, 3.0, 0.1, 2.0) + sst.t.logpdf(0.5, x + 1.0)),
          lambda x: jnp.sum(jst.t.logpdf(x, 3.0, 0.1, 2.0) + jst.t.logpdf(0.5, x + 1.0))),
    "chi2": (lambda x: np.sum(sst.chi2.logpdf(x, 3.0)), lambda x: jnp.sum(jst.chi2.logpdf(x, 3.0))),
    "expon": (lambda x: np.sum(sst.expon.logpdf(x, scale=2.0) + sst.expon.logpdf(1.5, 0.1, x)),
              lambda x: jnp.sum(jst.expon.logpdf(x, scale=2.0) + jst.expon.logpdf(1.5, 0.1, x))),
    "laplace": (lambda x: np.sum(sst.laplace.logpdf(x, 0.1, x) + sst.laplace.cdf(x, 0.5, 2.0)),
                lambda x: jnp.sum(jst.laplace.logpdf(x, 0.1, x) + jst.laplace.cdf(x, 0.5, 2.0))),
    "poisson": (lambda x: np.sum(sst.poisson.logpmf(np.array([0, 1, 3, 6]), x)),
                lambda x: jnp.sum(jst.poisson.logpmf(jnp.array([0, 1, 3, 6]), x))),
    "mvn": (lambda x: sst.multivariate_normal.logpdf(x, np.arange(4.0) * 0.1, np.diag(X) + 1.0),
            lambda x: jst.multivariate_normal.logpdf(x, jnp.arange(4.0) * 0.1,
                                                     jnp.diag(jnp.asarray(X)) + 1.0)),
    "mvn_mean": (lambda x: sst.multivariate_normal.logpdf(np.ones(4), x, np.eye(4) * 2.0),
                 lambda x: jst.multivariate_normal.logpdf(jnp.ones(4), x, jnp.eye(4) * 2.0)),
}


@pytest.mark.parametrize("name", sorted(STATS))
def test_distributions_both_modes(name):
    both_modes(*STATS[name])


def test_mvn_covariance_forward_equals_jax_for_symmetric_tangents():
    x, m = np.array([0.3, -0.2, 0.5]), np.array([0.1, 0.0, -0.1])
    c0 = np.array([[2.0, 0.3, 0.1], [0.3, 1.5, 0.2], [0.1, 0.2, 1.0]])
    dc = np.array([[0.5, 0.1, -0.2], [0.1, 0.3, 0.4], [-0.2, 0.4, 0.2]])

    def f(c):
        return sst.multivariate_normal.logpdf(x, m, c) + sst.multivariate_normal.entropy(m, c)

    def fj(c):
        return jst.multivariate_normal.logpdf(x, m, c) + 0.5 * jnp.linalg.slogdet(
            2 * jnp.pi * jnp.e * c)[1]

    close(pb.jvp(f, (c0,), (dc,))[1], jax.jvp(fj, (c0,), (dc,))[1])
    # SciPy reads the lower triangle: an upper-only tangent moves nothing
    close(pb.jvp(f, (c0,), (np.triu(dc, 1),))[1], 0.0)


def test_dirichlet_forward_against_differences():
    x = np.array([0.2, 0.5, 0.3])

    def f(a):
        return sst.dirichlet.logpdf(x, a) + sst.dirichlet.pdf(x, a)

    a, t = np.array([1.5, 2.0, 3.0]), np.array([0.3, -0.2, 0.5])
    close(pb.jvp(f, (a,), (t,))[1], fd_jvp(f, a, t), rtol=1e-6)


# --- scipy.special --------------------------------------------------------------------


def test_kv_kve_against_differences_both_modes():
    def f(x):
        return np.sum(sps.kv(1.5, x) * sps.kve(0.5, 2.0 * x) + sps.kv(np.array([0.0, 1.0, 2.0,
                                                                                3.5]), x))

    g = pb.grad(f)(X)
    d = fd_jvp(f, X, T)
    close(np.dot(g, T), d, rtol=1e-6)
    close(pb.jvp(f, (X,), (T,))[1], d, rtol=1e-6)
    # K'_0 = -K_1 exactly
    close(pb.grad(lambda x: np.sum(sps.kv(0, x)))(X), -sps.kv(1, X), rtol=1e-12)


def test_loggamma_real_against_jax_and_complex_against_differences():
    both_modes(lambda x: np.sum(sps.loggamma(x) * x), lambda x: jnp.sum(jsp.gammaln(x) * x))
    z = np.array([1.5 + 0.7j, 2.0 - 1.2j, 0.6 + 0.3j])
    dz = np.array([0.3 - 0.1j, -0.2 + 0.4j, 0.5 + 0.2j])
    out, dot = pb.jvp(lambda v: sps.loggamma(v) * 2.0, (z,), (dz,))
    close(dot, fd_jvp(lambda v: sps.loggamma(v) * 2.0, z, dz), rtol=1e-6)
    # holomorphic: the complex-unconjugated cotangent is g * psi(z) (JAX's convention)
    _, back = pb.vjp(lambda v: sps.loggamma(v), z)
    close(back(np.ones(3))[0], sps.digamma(z), rtol=1e-12)


# --- scipy.linalg -----------------------------------------------------------------------


def test_lu_pair_against_jax_both_modes():
    def f(x):
        lu, piv = sla.lu_factor(A + np.diag(x))
        return np.sum(sla.lu_solve((lu, piv), x) ** 2) + np.sum(sla.lu_solve((lu, piv), x,
                                                                            trans=1))

    def fj(x):
        lu, piv = jla.lu_factor(A + jnp.diag(x))
        return jnp.sum(jla.lu_solve((lu, piv), x) ** 2) + jnp.sum(jla.lu_solve((lu, piv), x,
                                                                               trans=1))

    both_modes(f, fj)


def test_lu_factor_alone_against_jax():
    # the packed factors themselves (same pivoting as jax's getrf)
    def f(x):
        return np.sum(sla.lu_factor(A * x[:, None])[0] * np.arange(16.0).reshape(4, 4))

    def fj(x):
        return jnp.sum(jla.lu_factor(A * x[:, None])[0] * jnp.arange(16.0).reshape(4, 4))

    both_modes(f, fj, hessian=False)


@pytest.mark.parametrize("mode", ["full", "economic", "r"])
def test_qr_against_jax_both_modes(mode):
    B = RNG.normal(size=(5, 4)) if mode != "full" else A

    def f(x):
        out = np.sum(np.tanh(sla.qr(B * x, mode=mode)[-1]))
        if mode != "r":
            out = out + np.sum(sla.qr(B * x, mode=mode)[0][:, :2] ** 3)
        return out

    def fj(x):
        out = jnp.sum(jnp.tanh(jla.qr(B * x, mode=mode)[-1]))
        if mode != "r":
            out = out + jnp.sum(jla.qr(B * x, mode=mode)[0][:, :2] ** 3)
        return out

    both_modes(f, fj)


def test_cholesky_expm_forward_against_jax():
    S = A @ A.T + 4.0 * np.eye(4)

    def f(x):
        c = sla.cho_factor(S + np.diag(x))
        return (np.sum(sla.cho_solve(c, x)) + np.sum(sla.expm(0.1 * np.outer(x, x) + 0.1 * A))
                + np.sum(sla.cholesky(S * x[0], lower=True)))

    def fj(x):
        c = jla.cho_factor(S + jnp.diag(x))
        return (jnp.sum(jla.cho_solve(c, x)) + jnp.sum(jla.expm(0.1 * jnp.outer(x, x) + 0.1 * A))
                + jnp.sum(jla.cholesky(S * x[0], lower=True)))

    both_modes(f, fj)     # pb.hessian: forward over the adjoint's scipy_linalg_grads helpers


def test_solves_forward_against_jax():
    S = A @ A.T + 4.0 * np.eye(4)

    def f(x):
        m = A + np.diag(x)
        return (np.sum(sla.solve(m, x)) + np.sum(sla.solve_triangular(m, x, lower=True))
                + np.sum(sla.inv(m)) + np.sum(sla.solve(S, x * x, assume_a="pos")))

    def fj(x):
        m = A + jnp.diag(x)
        return (jnp.sum(jnp.linalg.solve(m, x))
                + jnp.sum(jla.solve_triangular(m, x, lower=True)) + jnp.sum(jnp.linalg.inv(m))
                + jnp.sum(jnp.linalg.solve(S, x * x)))

    both_modes(f, fj)

    def root(x):      # (jax has no derivative of sqrtm: central differences)
        return np.sum(sla.sqrtm(S + np.outer(x, x)) ** 2)

    close(pb.jvp(root, (X,), (T,))[1], fd_jvp(root, X, T), rtol=1e-6)


# --- refusals ---------------------------------------------------------------------------


def test_refusals_name_what_to_write():
    B = RNG.normal(size=(5, 3))
    with pytest.raises(pb.PullbackError, match="pivoting"):
        pb.grad(lambda x: np.sum(sla.qr(B * x, pivoting=True)[1]))(np.ones(3))
    with pytest.raises(pb.PullbackError, match="economic"):     # a tall full Q's extra columns
        pb.grad(lambda x: np.sum(sla.qr(B * x)[0]))(np.ones(3))
    with pytest.raises(pb.PullbackError, match="no rule"):
        pb.jvp(lambda x: np.sum(sla.qr(B * x)[0]), (np.ones(3),), (np.ones(3),))
    with pytest.raises(pb.PullbackError, match="square"):
        pb.grad(lambda x: np.sum(sla.lu_factor(np.stack([A, A]) * x[0])[0]))(np.ones(2))
