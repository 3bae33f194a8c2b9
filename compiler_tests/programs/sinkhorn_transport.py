"""Entropic optimal transport between two point clouds by log-domain
Sinkhorn iterations, as in the POT library's tutorials: a squared-Euclidean
cost matrix by broadcasting, dual potentials updated with
``scipy.special.logsumexp`` for a fixed number of iterations, the transport
plan recovered with ``np.exp``, and the Sinkhorn cost; differentiated with
respect to both clouds' positions and the source weights' logits."""
import numpy as np
from scipy.special import logsumexp
import jax.numpy as jnp
from jax.scipy.special import logsumexp as jlogsumexp


def cost_matrix(x, y):
    return np.sum((x[:, None, :] - y[None, :, :]) ** 2, axis=-1)


def softmax(logits):
    e = np.exp(logits - np.max(logits))
    return e / e.sum()


def sinkhorn(a, b, C, eps=0.5, n_iter=30):
    log_a, log_b = np.log(a), np.log(b)
    f = np.zeros_like(a)
    g = np.zeros_like(b)
    for _ in range(n_iter):
        f = eps * log_a - eps * logsumexp((g[None, :] - C) / eps, axis=1)
        g = eps * log_b - eps * logsumexp((f[:, None] - C) / eps, axis=0)
    return np.exp((f[:, None] + g[None, :] - C) / eps)


def transport_cost(x, y, logits):
    a = softmax(logits)
    b = np.full(len(y), 1.0 / len(y))
    C = cost_matrix(x, y)
    P = sinkhorn(a, b, C)
    return np.sum(P * C)


def make_inputs(rng):
    x = rng.standard_normal((6, 2))
    y = rng.standard_normal((5, 2)) + np.array([1.0, 0.5])
    return x, y, 0.3 * rng.standard_normal(6)


fun = transport_cost
argnums = (0, 1, 2)


def jax_fun(x, y, logits):
    e = jnp.exp(logits - jnp.max(logits))
    a = e / e.sum()
    b = jnp.full(len(y), 1.0 / len(y))
    C = jnp.sum((x[:, None, :] - y[None, :, :]) ** 2, axis=-1)
    f, g = jnp.zeros_like(a), jnp.zeros_like(b)
    for _ in range(30):
        f = 0.5 * jnp.log(a) - 0.5 * jlogsumexp((g[None, :] - C) / 0.5, axis=1)
        g = 0.5 * jnp.log(b) - 0.5 * jlogsumexp((f[:, None] - C) / 0.5, axis=0)
    P = jnp.exp((f[:, None] + g[None, :] - C) / 0.5)
    return jnp.sum(P * C)
