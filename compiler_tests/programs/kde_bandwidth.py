"""Bandwidth selection for a Gaussian kernel density estimate by leave-one-out
log-likelihood: pairwise differences by broadcasting (``x[:, None, :] -
x[None, :, :]``), a per-dimension bandwidth from its log, the diagonal
removed with a boolean mask from ``~np.eye(n, dtype=bool)``, and the density
of a held-out set with ``np.newaxis``; the objective also rewards agreeing
with a reference sample's mean."""
import numpy as np
import jax.numpy as jnp


def gaussian_kernel(diff, bandwidth):
    z = diff / bandwidth
    d = diff.shape[-1]
    norm = (2 * np.pi) ** (d / 2) * np.prod(bandwidth)
    return np.exp(-0.5 * np.sum(z * z, axis=-1)) / norm


def loo_log_likelihood(x, bandwidth):
    n = x.shape[0]
    K = gaussian_kernel(x[:, None, :] - x[None, :, :], bandwidth)
    off_diagonal = ~np.eye(n, dtype=bool)
    density = np.sum(np.where(off_diagonal, K, 0.0), axis=1) / (n - 1)
    return np.mean(np.log(density))


def heldout_log_density(x_train, x_test, bandwidth):
    K = gaussian_kernel(x_test[:, np.newaxis, :] - x_train[np.newaxis, :, :], bandwidth)
    return np.log(np.mean(K, axis=1))


def kde_objective(log_bandwidth, x, x_test):
    bandwidth = np.exp(log_bandwidth)
    score = loo_log_likelihood(x, bandwidth) + 0.5 * np.mean(heldout_log_density(x, x_test, bandwidth))
    return -score


def make_inputs(rng):
    x = np.concatenate([rng.normal(-1.0, 0.5, size=(8, 2)), rng.normal(1.5, 0.8, size=(6, 2))])
    return np.log(np.array([0.4, 0.6])), x, rng.normal(0.0, 1.0, size=(5, 2))


fun = kde_objective
argnums = (0, 1, 2)


def jax_fun(log_bandwidth, x, x_test):
    bw = jnp.exp(log_bandwidth)

    def kern(diff):
        z = diff / bw
        return jnp.exp(-0.5 * jnp.sum(z * z, axis=-1)) / ((2 * jnp.pi) ** (diff.shape[-1] / 2) * jnp.prod(bw))
    n = x.shape[0]
    K = kern(x[:, None, :] - x[None, :, :])
    loo = jnp.mean(jnp.log(jnp.sum(jnp.where(~jnp.eye(n, dtype=bool), K, 0.0), axis=1) / (n - 1)))
    held = jnp.mean(jnp.log(jnp.mean(kern(x_test[:, None, :] - x[None, :, :]), axis=1)))
    return -(loo + 0.5 * held)
