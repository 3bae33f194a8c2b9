"""A two-layer graph convolutional network on an edge list: symmetric degree
normalisation from ``np.bincount``, messages gathered with integer index
arrays and scattered with the unbuffered ``np.add.at``, self loops added by
concatenating index arrays, and a masked node-classification cross-entropy
read with ``logp[np.arange(n), labels]``."""
import numpy as np
import jax
import jax.numpy as jnp


def add_self_loops(src, dst, n):
    loops = np.arange(n)
    return np.concatenate([src, loops]), np.concatenate([dst, loops])


def gcn_layer(h, W, src, dst, n):
    deg = np.bincount(dst, minlength=n).astype(float)
    norm = 1.0 / np.sqrt(deg[src] * deg[dst])
    messages = (h @ W)[src] * norm[:, None]
    out = np.zeros((n, W.shape[1]))
    np.add.at(out, dst, messages)
    return out


def log_softmax(z):
    z = z - np.max(z, axis=1, keepdims=True)
    return z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))


def node_classification_loss(params, features, edges, labels, train_mask):
    n = features.shape[0]
    src, dst = add_self_loops(edges[0], edges[1], n)
    h = np.maximum(gcn_layer(features, params["W1"], src, dst, n), 0.0)
    logp = log_softmax(gcn_layer(h, params["W2"], src, dst, n))
    picked = logp[np.arange(n), labels]
    return -np.sum(picked * train_mask) / np.sum(train_mask)


def make_inputs(rng):
    n = 7
    pairs = [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 6), (0, 3), (2, 5), (1, 6)]
    edges = np.array(pairs + [(j, i) for i, j in pairs]).T
    params = {"W1": rng.standard_normal((3, 5)) / np.sqrt(3), "W2": rng.standard_normal((5, 2)) / np.sqrt(5)}
    labels = np.array([0, 1, 0, 1, 1, 0, 1])
    mask = np.array([1.0, 1.0, 0.0, 1.0, 0.0, 1.0, 1.0])
    return params, rng.standard_normal((n, 3)), edges, labels, mask


fun = node_classification_loss
argnums = (0, 1)


def jax_fun(params, features, edges, labels, train_mask):
    n = features.shape[0]
    src = jnp.concatenate([edges[0], jnp.arange(n)])
    dst = jnp.concatenate([edges[1], jnp.arange(n)])
    deg = jnp.bincount(dst, length=n).astype(float)
    norm = 1.0 / jnp.sqrt(deg[src] * deg[dst])

    def layer(h, W):
        return jnp.zeros((n, W.shape[1])).at[dst].add((h @ W)[src] * norm[:, None])
    h = jnp.maximum(layer(features, params["W1"]), 0.0)
    logp = jax.nn.log_softmax(layer(h, params["W2"]), axis=1)
    return -jnp.sum(logp[jnp.arange(n), labels] * train_mask) / jnp.sum(train_mask)
