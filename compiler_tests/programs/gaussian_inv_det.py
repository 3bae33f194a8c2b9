"""A multivariate normal log-likelihood written the textbook way, with
``np.linalg.inv`` and ``np.linalg.det`` instead of a Cholesky factor, a
covariance built as ``L @ L.T + eps * I`` from a lower-triangular factor
(``np.tril``), ``np.trace`` in a Wishart prior, and a condition-number
penalty from ``np.linalg.eigvalsh``. Differentiated with respect to the
mean, the factor and the prior's scale."""
import numpy as np
import jax.numpy as jnp


def log_likelihood(mu, L_raw, scale, X):
    d = len(mu)
    L = np.tril(L_raw)
    cov = L @ L.T + 1e-3 * np.eye(d)
    prec = np.linalg.inv(cov)
    diff = X - mu
    maha = np.einsum("ni,ij,nj->n", diff, prec, diff)
    log_norm = -0.5 * (d * np.log(2.0 * np.pi) + np.log(np.linalg.det(cov)))
    ll = np.sum(log_norm - 0.5 * maha)
    prior = -0.5 * np.trace(prec) / scale - d * np.log(scale)
    eig = np.linalg.eigvalsh(cov)
    return -(ll + prior) + 0.1 * np.log(eig[-1] / eig[0])


def make_inputs(rng):
    d = 3
    L = np.eye(d) + 0.3 * rng.standard_normal((d, d))
    X = rng.standard_normal((20, d)) @ np.array([[1.0, 0.0, 0.0], [0.5, 0.8, 0.0], [0.1, -0.3, 0.6]])
    return 0.1 * rng.standard_normal(d), L, 1.5, X


fun = log_likelihood
argnums = (0, 1, 2)


def jax_fun(mu, L_raw, scale, X):
    d = len(mu)
    L = jnp.tril(L_raw)
    cov = L @ L.T + 1e-3 * jnp.eye(d)
    prec = jnp.linalg.inv(cov)
    diff = X - mu
    maha = jnp.einsum("ni,ij,nj->n", diff, prec, diff)
    ll = jnp.sum(-0.5 * (d * jnp.log(2.0 * jnp.pi) + jnp.log(jnp.linalg.det(cov))) - 0.5 * maha)
    prior = -0.5 * jnp.trace(prec) / scale - d * jnp.log(scale)
    eig = jnp.linalg.eigvalsh(cov)
    return -(ll + prior) + 0.1 * jnp.log(eig[-1] / eig[0])
