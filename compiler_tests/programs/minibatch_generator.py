"""A training-epoch loss as people write it around a data loader: a
generator yields minibatches, ``sum`` consumes it, the per-batch loss is a
``def loss(params, *batch, **opts)`` forwarding its arguments to the model,
and the model runs a helper over a list of (W, b) layers."""
import numpy as np
import jax.numpy as jnp


def batches(X, Y, batch_size):
    for start in range(0, X.shape[0], batch_size):
        yield X[start:start + batch_size], Y[start:start + batch_size]


def layer(h, Wb):
    W, b = Wb
    return np.tanh(h @ W + b)


def mlp(layers, x):
    h = x
    for Wb in layers:
        h = layer(h, Wb)
    return h


def batch_loss(layers, *batch, weight_decay=0.0, **opts):
    x, y = batch
    pred = mlp(layers, x)
    reduction = opts.get("reduction", "mean")
    err = np.sum((pred - y) ** 2, axis=1)
    data = err.mean() if reduction == "mean" else err.sum()
    return data + weight_decay * sum(np.sum(W ** 2) for W, _ in layers)


def epoch_loss(layers, X, Y, **opts):
    n_batches = -(-X.shape[0] // 4)
    return sum(batch_loss(layers, *b, **opts) for b in batches(X, Y, 4)) / n_batches


def train_objective(layers, X, Y):
    return epoch_loss(layers, X, Y, weight_decay=1e-3, reduction="mean")


def make_inputs(rng):
    sizes = [3, 5, 2]
    layers = [(rng.standard_normal((m, n)) / np.sqrt(m), 0.1 * rng.standard_normal(n))
              for m, n in zip(sizes[:-1], sizes[1:])]
    return layers, rng.standard_normal((10, 3)), rng.standard_normal((10, 2))


fun = train_objective
argnums = (0, 1)


def jax_fun(layers, X, Y):
    total = 0.0
    starts = range(0, X.shape[0], 4)
    for s in starts:
        h = X[s:s + 4]
        for W, b in layers:
            h = jnp.tanh(h @ W + b)
        total = total + jnp.sum((h - Y[s:s + 4]) ** 2, axis=1).mean() \
            + 1e-3 * sum(jnp.sum(W ** 2) for W, _ in layers)
    return total / len(starts)
