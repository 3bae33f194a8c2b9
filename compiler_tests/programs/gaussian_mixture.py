"""The log-likelihood of a diagonal Gaussian mixture: a logsumexp written by
hand with np.max, mixing weights from unconstrained logits, log standard
deviations as parameters, all in a dict."""
import numpy as np
import jax.numpy as jnp

K, D, N = 3, 2, 15


def logsumexp(a, axis=None):
    a_max = np.max(a, axis=axis, keepdims=True)
    out = np.log(np.sum(np.exp(a - a_max), axis=axis, keepdims=True)) + a_max
    return np.squeeze(out, axis=axis)


def component_log_densities(X, means, log_stds):
    diff = X[:, None, :] - means[None, :, :]                # (N, K, D)
    z = diff / np.exp(log_stds)[None, :, :]
    per_dim = -0.5 * z ** 2 - log_stds[None, :, :] - 0.5 * np.log(2 * np.pi)
    return np.sum(per_dim, axis=2)                          # (N, K)


def gmm_log_likelihood(params, X):
    log_weights = params["logits"] - logsumexp(params["logits"])
    log_p = component_log_densities(X, params["means"], params["log_stds"])
    return np.sum(logsumexp(log_p + log_weights, axis=1))


def make_inputs(rng):
    params = {"logits": rng.standard_normal(K),
              "means": 2.0 * rng.standard_normal((K, D)),
              "log_stds": 0.3 * rng.standard_normal((K, D))}
    return params, rng.standard_normal((N, D)) * 2.0


fun = gmm_log_likelihood
argnums = (0, 1)


def jax_fun(params, X):
    from jax.scipy.special import logsumexp as lse
    log_weights = params["logits"] - lse(params["logits"])
    diff = X[:, None, :] - params["means"][None, :, :]
    z = diff / jnp.exp(params["log_stds"])[None, :, :]
    per_dim = -0.5 * z ** 2 - params["log_stds"][None, :, :] - 0.5 * jnp.log(2 * jnp.pi)
    return jnp.sum(lse(jnp.sum(per_dim, axis=2) + log_weights, axis=1))
