"""Gaussian-process regression with composable kernels: kernels are plain
functions of ``(x1, x2, **hyper)``, specialised with ``functools.partial``
(the lengthscale comes from the log-parameter being fitted) and combined by a
``sum_kernel(*kernels)`` factory; the loss is the held-out squared error of
the posterior mean, differentiated with respect to the log-hyperparameters
and the training targets."""
import functools

import numpy as np
import jax.numpy as jnp


def squared_distances(x1, x2):
    return np.sum((x1[:, None, :] - x2[None, :, :]) ** 2, axis=-1)


def rbf(x1, x2, lengthscale=1.0, variance=1.0):
    return variance * np.exp(-0.5 * squared_distances(x1, x2) / lengthscale ** 2)


def rational_quadratic(x1, x2, lengthscale=1.0, alpha=2.0):
    return (1.0 + squared_distances(x1, x2) / (2.0 * alpha * lengthscale ** 2)) ** (-alpha)


def sum_kernel(*kernels):
    def kernel(x1, x2):
        return sum(k(x1, x2) for k in kernels)
    return kernel


def posterior_mean(kernel, X, y, X_star, noise):
    K = kernel(X, X) + noise * np.eye(len(X))
    return kernel(X_star, X) @ np.linalg.solve(K, y)


def heldout_error(log_hyper, X, y, X_test, y_test):
    ls_rbf, ls_rq, log_noise = log_hyper
    kernel = sum_kernel(functools.partial(rbf, lengthscale=np.exp(ls_rbf)),
                        functools.partial(rational_quadratic, lengthscale=np.exp(ls_rq), alpha=1.5))
    mean = posterior_mean(kernel, X, y, X_test, noise=np.exp(log_noise))
    return np.mean((mean - y_test) ** 2)


def make_inputs(rng):
    X = rng.uniform(-2, 2, size=(9, 2))
    X_test = rng.uniform(-2, 2, size=(5, 2))
    f = lambda Z: np.sin(Z[:, 0]) * np.cos(Z[:, 1])
    return np.array([0.1, -0.3, np.log(0.05)]), X, f(X), X_test, f(X_test)


fun = heldout_error
argnums = (0, 2)


def jax_fun(log_hyper, X, y, X_test, y_test):
    def kernel(a, b):
        d2 = jnp.sum((a[:, None, :] - b[None, :, :]) ** 2, axis=-1)
        l1, l2 = jnp.exp(log_hyper[0]), jnp.exp(log_hyper[1])
        return jnp.exp(-0.5 * d2 / l1 ** 2) + (1.0 + d2 / (3.0 * l2 ** 2)) ** (-1.5)
    K = kernel(X, X) + jnp.exp(log_hyper[2]) * jnp.eye(len(X))
    mean = kernel(X_test, X) @ jnp.linalg.solve(K, y)
    return jnp.mean((mean - y_test) ** 2)
