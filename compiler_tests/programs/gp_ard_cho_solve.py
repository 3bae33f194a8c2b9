"""Gaussian-process regression with an ARD squared-exponential kernel, fitted
by its log marginal likelihood the SciPy way: ``scipy.linalg.cho_factor`` and
``cho_solve`` for the solve, the log-determinant from the factor's diagonal,
pairwise distances by broadcasting, hyperparameters as logs in a dict read
with ``.values()`` unpacking."""
import numpy as np
from scipy import linalg
import jax.numpy as jnp
import jax.scipy.linalg as jlinalg


def ard_kernel(X1, X2, log_lengthscales, log_variance):
    ls = np.exp(log_lengthscales)
    diff = X1[:, None, :] / ls - X2[None, :, :] / ls
    return np.exp(log_variance) * np.exp(-0.5 * np.sum(diff ** 2, axis=-1))


def log_marginal_likelihood(hyper, X, y):
    log_lengthscales, log_noise, log_variance = hyper.values()
    K = ard_kernel(X, X, log_lengthscales, log_variance)
    K = K + (np.exp(log_noise) + 1e-8) * np.eye(len(X))
    factor, lower = linalg.cho_factor(K, lower=True)
    alpha = linalg.cho_solve((factor, lower), y)
    log_det = 2.0 * np.sum(np.log(np.diag(factor)))
    return -0.5 * y @ alpha - 0.5 * log_det - 0.5 * len(X) * np.log(2 * np.pi)


def negative_lml(hyper, X, y):
    return -log_marginal_likelihood(hyper, X, y)


def make_inputs(rng):
    X = rng.standard_normal((9, 2))
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] + 0.1 * rng.standard_normal(9)
    hyper = {"log_lengthscales": np.log(np.array([1.0, 1.5])), "log_noise": float(np.log(0.05)),
             "log_variance": 0.1}     # in sorted order, as jax.tree_util rebuilds a dict
    return hyper, X, y


fun = negative_lml
argnums = (0, 1, 2)


def jax_fun(hyper, X, y):
    ls = jnp.exp(hyper["log_lengthscales"])
    diff = X[:, None, :] / ls - X[None, :, :] / ls
    K = jnp.exp(hyper["log_variance"]) * jnp.exp(-0.5 * jnp.sum(diff ** 2, axis=-1))
    K = K + (jnp.exp(hyper["log_noise"]) + 1e-8) * jnp.eye(len(X))
    L = jnp.linalg.cholesky(K)
    alpha = jlinalg.cho_solve((L, True), y)
    return -(-0.5 * y @ alpha - jnp.sum(jnp.log(jnp.diag(L))) - 0.5 * len(X) * jnp.log(2 * jnp.pi))
