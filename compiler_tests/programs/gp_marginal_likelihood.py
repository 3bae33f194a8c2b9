"""Gaussian-process regression: the negative log marginal likelihood of an
RBF kernel with log-parameterised lengthscale, signal and noise variances,
computed the textbook way (Rasmussen & Williams, algorithm 2.1) with a
Cholesky factor and triangular-free ``np.linalg.solve``, and a cross-check
log determinant from ``np.linalg.slogdet``."""
import numpy as np
import jax.numpy as jnp


def rbf(X1, X2, lengthscale, variance):
    sq = np.sum(X1 ** 2, 1)[:, None] + np.sum(X2 ** 2, 1)[None, :] - 2.0 * X1 @ X2.T
    return variance * np.exp(-0.5 * sq / lengthscale ** 2)


def neg_log_marginal_likelihood(log_params, X, y):
    lengthscale, variance, noise = np.exp(log_params)
    n = X.shape[0]
    K = rbf(X, X, lengthscale, variance) + (noise + 1e-8) * np.eye(n)
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, y))
    data_fit = 0.5 * y @ alpha
    complexity = np.sum(np.log(np.diag(L)))
    sign, logdet = np.linalg.slogdet(K)
    # the two log determinants agree; average them as a sanity-preserving habit
    complexity = 0.5 * (complexity + 0.5 * logdet)
    return data_fit + complexity + 0.5 * n * np.log(2 * np.pi)


def make_inputs(rng):
    X = rng.uniform(-2, 2, size=(8, 2))
    y = np.sin(X[:, 0]) + 0.3 * X[:, 1] + 0.1 * rng.standard_normal(8)
    return np.log(np.array([0.9, 1.3, 0.05])), X, y


fun = neg_log_marginal_likelihood
argnums = (0, 1, 2)


def jax_fun(log_params, X, y):
    lengthscale, variance, noise = jnp.exp(log_params)
    n = X.shape[0]
    sq = jnp.sum(X ** 2, 1)[:, None] + jnp.sum(X ** 2, 1)[None, :] - 2.0 * X @ X.T
    K = variance * jnp.exp(-0.5 * sq / lengthscale ** 2) + (noise + 1e-8) * jnp.eye(n)
    L = jnp.linalg.cholesky(K)
    alpha = jnp.linalg.solve(L.T, jnp.linalg.solve(L, y))
    _, logdet = jnp.linalg.slogdet(K)
    complexity = 0.5 * (jnp.sum(jnp.log(jnp.diag(L))) + 0.5 * logdet)
    return 0.5 * y @ alpha + complexity + 0.5 * n * jnp.log(2 * jnp.pi)
