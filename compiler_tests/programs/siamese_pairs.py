"""A siamese network trained on labelled pairs, written twice over as
metric-learning code often is: a loop over ``enumerate(zip(left, right,
same))`` with tuple unpacking that adds the logistic loss
``np.logaddexp(0, -logit)`` or ``np.logaddexp(0, logit)`` by an ``if`` on
the pair's label, and a batch term over all embeddings with
``np.where(labels[:, None] == labels[None, :], ...)`` broadcasting a
``(n, 1)`` against a ``(1, n)`` mask and ``np.triu_indices`` picking each
pair once. Differentiated with respect to the embedding weights and the
learned margin."""
import numpy as np
import jax.numpy as jnp


def embed(params, x):
    W, b = params
    return np.tanh(x @ W + b)


def pair_term(params, margin, left, right, same):
    total = 0.0
    for i, (a, b, s) in enumerate(zip(left, right, same)):
        d2 = np.sum((embed(params, a) - embed(params, b)) ** 2)
        logit = margin - d2
        if s:
            total += np.logaddexp(0.0, -logit)
        else:
            total += np.logaddexp(0.0, logit)
    return total / len(left)


def batch_term(params, margin, points, labels):
    e = embed(params, points)
    d2 = np.sum((e[:, None, :] - e[None, :, :]) ** 2, axis=-1)
    logits = margin - d2
    losses = np.where(labels[:, None] == labels[None, :],
                      np.logaddexp(0.0, -logits), np.logaddexp(0.0, logits))
    iu = np.triu_indices(len(points), k=1)
    return np.mean(losses[iu])


def loss(params, margin, left, right, same, points, labels):
    return pair_term(params, margin, left, right, same) + batch_term(params, margin, points, labels)


def make_inputs(rng):
    params = (0.5 * rng.standard_normal((4, 3)), 0.1 * rng.standard_normal(3))
    left, right = rng.standard_normal((6, 4)), rng.standard_normal((6, 4))
    same = [True, False, True, True, False, False]
    return params, 1.0, left, right, same, rng.standard_normal((7, 4)), rng.integers(0, 3, 7)


fun = loss
argnums = (0, 1)


def jax_fun(params, margin, left, right, same, points, labels):
    W, b = params
    total = 0.0
    for a, c, s in zip(left, right, same):
        logit = margin - jnp.sum((jnp.tanh(a @ W + b) - jnp.tanh(c @ W + b)) ** 2)
        total += jnp.logaddexp(0.0, -logit) if s else jnp.logaddexp(0.0, logit)
    e = jnp.tanh(points @ W + b)
    logits = margin - jnp.sum((e[:, None, :] - e[None, :, :]) ** 2, axis=-1)
    losses = jnp.where(labels[:, None] == labels[None, :],
                       jnp.logaddexp(0.0, -logits), jnp.logaddexp(0.0, logits))
    iu = np.triu_indices(points.shape[0], k=1)
    return total / len(left) + jnp.mean(losses[iu])


jax_jit = False                 # `same` (a list of bools) steers Python branches
