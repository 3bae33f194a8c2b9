"""Online hard-example mining for a linear classifier, written with
Python's ``sorted``: the per-example losses (``np.logaddexp(0, -margin)``)
are collected in a list of ``(loss, index)`` tuples from
``enumerate(zip(X, y))``, sorted with ``key=lambda pair: pair[0]`` in
reverse, and the mean of the ``k`` hardest is the loss; prototype vectors
are ordered by their norm with ``sorted(prototypes, key=np.linalg.norm)``
and the nearest-by-rank prototype pulls the weights. Differentiated with
respect to the weights and the prototypes."""
import numpy as np
import jax.numpy as jnp


def hardest_losses(w, X, y, k):
    per_example = []
    for i, (xi, yi) in enumerate(zip(X, y)):
        margin = yi * (xi @ w)
        per_example.append((np.logaddexp(0.0, -margin), i))
    ranked = sorted(per_example, key=lambda pair: pair[0], reverse=True)
    return [loss for loss, _ in ranked[:k]]


def prototype_penalty(w, prototypes):
    ordered = sorted(prototypes, key=np.linalg.norm)
    weights = np.linspace(1.0, 0.2, len(ordered))
    return sum(c * np.sum((w - p) ** 2) for c, p in zip(weights, ordered))


def loss(w, prototypes, X, y, k=4):
    hard = hardest_losses(w, X, y, k)
    return sum(hard) / k + 0.05 * prototype_penalty(w, prototypes)


def make_inputs(rng):
    X = rng.standard_normal((12, 3))
    y = np.sign(X @ np.array([1.0, -2.0, 0.5]) + 0.5 * rng.standard_normal(12))
    return 0.3 * rng.standard_normal(3), rng.standard_normal((4, 3)), X, y


fun = loss
argnums = (0, 1)


def jax_fun(w, prototypes, X, y, k=4):
    losses = jnp.logaddexp(0.0, -y * (X @ w))
    hard = jnp.sum(losses[jnp.argsort(-losses, stable=True)[:k]]) / k
    rank = jnp.argsort(jnp.linalg.norm(prototypes, axis=1), stable=True)
    weights = jnp.linspace(1.0, 0.2, prototypes.shape[0])
    return hard + 0.05 * jnp.sum(weights * jnp.sum((w - prototypes[rank]) ** 2, axis=1))
