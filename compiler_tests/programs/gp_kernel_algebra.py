"""Gaussian-process regression with a kernel algebra written like GPy's or
scikit-learn's: an ``abc.ABC`` base class with an abstract ``__call__``,
``Sum``/``Product`` kernels holding other kernels (scikit-learn's
``Sum(k1, k2)`` spelling), ``RBF`` and ``Periodic`` subclasses, a
kernel expression built from a dict of
log-hyperparameters inside the loss, and the negative log marginal likelihood
by ``scipy.linalg.cholesky`` and ``solve_triangular`` (twice, as the
textbook's Algorithm 2.1 writes it). Differentiated with respect to the dict
of hyperparameters and the noise."""
import abc

import numpy as np
import scipy.linalg
import jax.numpy as jnp
import jax.scipy.linalg


class Kernel(abc.ABC):
    @abc.abstractmethod
    def __call__(self, X1, X2):
        ...

    def diag(self, X):
        return np.diag(self(X, X))


class Sum(Kernel):
    def __init__(self, a, b):
        self.a, self.b = a, b

    def __call__(self, X1, X2):
        return self.a(X1, X2) + self.b(X1, X2)


class Product(Kernel):
    def __init__(self, a, b):
        self.a, self.b = a, b

    def __call__(self, X1, X2):
        return self.a(X1, X2) * self.b(X1, X2)


class RBF(Kernel):
    def __init__(self, lengthscale, variance=1.0):
        self.lengthscale = lengthscale
        self.variance = variance

    def __call__(self, X1, X2):
        d2 = (X1[:, None] - X2[None, :]) ** 2
        return self.variance * np.exp(-0.5 * d2 / self.lengthscale ** 2)


class Periodic(Kernel):
    def __init__(self, period, lengthscale):
        self.period = period
        self.lengthscale = lengthscale

    def __call__(self, X1, X2):
        s = np.sin(np.pi * np.abs(X1[:, None] - X2[None, :]) / self.period)
        return np.exp(-2.0 * s ** 2 / self.lengthscale ** 2)


def build_kernel(log_params):
    p = {k: np.exp(v) for k, v in log_params.items()}
    trend = RBF(p["trend_ls"], p["trend_var"])
    seasonal = Product(Periodic(p["period"], p["per_ls"]), RBF(p["decay_ls"]))
    return Sum(trend, seasonal)


def neg_log_marginal_likelihood(log_params, noise, X, y):
    kernel = build_kernel(log_params)
    K = kernel(X, X) + noise ** 2 * np.eye(len(X))
    L = scipy.linalg.cholesky(K, lower=True)
    v = scipy.linalg.solve_triangular(L, y, lower=True)
    alpha = scipy.linalg.solve_triangular(L.T, v, lower=False)
    nll = 0.5 * y @ alpha + np.sum(np.log(np.diag(L))) + 0.5 * len(X) * np.log(2.0 * np.pi)
    return nll + 0.01 * np.mean(kernel.diag(X))


def make_inputs(rng):
    X = np.sort(rng.uniform(0.0, 6.0, size=12))
    y = np.sin(2.0 * X) + 0.3 * X + 0.1 * rng.standard_normal(12)
    log_params = {"trend_ls": 0.8, "trend_var": 0.1, "period": 1.1, "per_ls": 0.2, "decay_ls": 1.2}
    return log_params, 0.3, X, y


fun = neg_log_marginal_likelihood
argnums = (0, 1)


def jax_fun(log_params, noise, X, y):
    p = {k: jnp.exp(v) for k, v in log_params.items()}
    d = X[:, None] - X[None, :]
    trend = p["trend_var"] * jnp.exp(-0.5 * d ** 2 / p["trend_ls"] ** 2)
    per = jnp.exp(-2.0 * jnp.sin(jnp.pi * jnp.abs(d) / p["period"]) ** 2 / p["per_ls"] ** 2)
    K = trend + per * jnp.exp(-0.5 * d ** 2 / p["decay_ls"] ** 2) + noise ** 2 * jnp.eye(len(X))
    L = jnp.linalg.cholesky(K)
    v = jax.scipy.linalg.solve_triangular(L, y, lower=True)
    alpha = jax.scipy.linalg.solve_triangular(L.T, v, lower=False)
    nll = 0.5 * y @ alpha + jnp.sum(jnp.log(jnp.diag(L))) + 0.5 * len(X) * jnp.log(2.0 * jnp.pi)
    return nll + 0.01 * jnp.mean(jnp.diag(K - noise ** 2 * jnp.eye(len(X))))
