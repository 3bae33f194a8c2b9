"""The InfoNCE / NT-Xent contrastive loss of SimCLR, written as in the
paper's reference pseudo-code translated to NumPy: a projection head
(``Dense`` layers in a list, a ReLU kept away from its kink by a bias),
L2 normalisation with ``np.linalg.norm(..., axis=1, keepdims=True)``,
the ``2N x 2N`` similarity matrix with its diagonal masked out by
``np.where(np.eye(...) ...)``, positives picked with fancy indexing, and a
log-sum-exp from ``scipy.special``. Differentiated with respect to the
head's weights and the two views' embeddings."""
import numpy as np
from scipy.special import logsumexp
import jax.numpy as jnp
from jax.scipy.special import logsumexp as jlogsumexp


class Dense:
    def __init__(self, W, b, activation=None):
        self.W, self.b, self.activation = W, b, activation

    def __call__(self, x):
        z = x @ self.W + self.b
        return z if self.activation is None else self.activation(z)


def relu(z):
    return np.maximum(z, 0.0)


def project(params, h):
    layers = [Dense(params[0], params[1], relu), Dense(params[2], params[3])]
    for layer in layers:
        h = layer(h)
    return h


def nt_xent(params, view_a, view_b, temperature=0.5):
    z = np.concatenate([project(params, view_a), project(params, view_b)], axis=0)
    z = z / np.linalg.norm(z, axis=1, keepdims=True)
    n = view_a.shape[0]
    sim = z @ z.T / temperature
    sim = np.where(np.eye(2 * n, dtype=bool), -np.inf, sim)
    positives = np.concatenate([np.arange(n, 2 * n), np.arange(n)])
    log_prob = sim[np.arange(2 * n), positives] - logsumexp(sim, axis=1)
    return -np.mean(log_prob)


def make_inputs(rng):
    params = [0.5 * rng.standard_normal((4, 6)), np.full(6, 2.0),
              0.5 * rng.standard_normal((6, 3)), np.zeros(3)]
    base = rng.standard_normal((5, 4))
    return params, base + 0.1 * rng.standard_normal((5, 4)), base + 0.1 * rng.standard_normal((5, 4))


fun = nt_xent
argnums = (0, 1, 2)


def jax_fun(params, view_a, view_b):
    def proj(h):
        return jnp.maximum(h @ params[0] + params[1], 0.0) @ params[2] + params[3]
    z = jnp.concatenate([proj(view_a), proj(view_b)], axis=0)
    z = z / jnp.linalg.norm(z, axis=1, keepdims=True)
    n = view_a.shape[0]
    sim = jnp.where(np.eye(2 * n, dtype=bool), -jnp.inf, z @ z.T / 0.5)
    positives = np.concatenate([np.arange(n, 2 * n), np.arange(n)])
    return -jnp.mean(sim[np.arange(2 * n), positives] - jlogsumexp(sim, axis=1))
