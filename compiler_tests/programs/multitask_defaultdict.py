"""A multi-task regression loss whose bookkeeping uses the collections
module the way training scripts do: a ``defaultdict(float)`` of per-task
losses summed over a list of ``(task, X, y)`` examples, ``setdefault`` to
group residuals by task, a ``Counter`` of examples per task for averaging,
and the total as ``sum(weights[k] * v for k, v in losses.items())``.
Differentiated with respect to the shared trunk, the dict of per-task heads
and the task weights."""
from collections import Counter, defaultdict

import numpy as np
import jax.numpy as jnp


def multitask_loss(trunk, heads, weights, batch):
    losses = defaultdict(float)
    residuals = {}
    counts = Counter(task for task, _, _ in batch)
    for task, x, y in batch:
        h = np.tanh(x @ trunk)
        r = h @ heads[task] - y
        losses[task] += np.sum(r ** 2) / counts[task]
        residuals.setdefault(task, []).append(r)
    spread = sum(np.var(np.concatenate(rs)) for rs in residuals.values())
    return sum(weights[k] * v for k, v in losses.items()) + 0.1 * spread


def make_inputs(rng):
    trunk = 0.5 * rng.standard_normal((4, 3))
    heads = {"price": rng.standard_normal(3), "volume": rng.standard_normal(3),
             "churn": rng.standard_normal(3)}
    weights = {"price": 1.0, "volume": 0.5, "churn": 2.0}
    names = ["price", "volume", "price", "churn", "volume", "price", "churn"]
    batch = [(t, rng.standard_normal((3, 4)), rng.standard_normal(3)) for t in names]
    return trunk, heads, weights, batch


fun = multitask_loss
argnums = (0, 1, 2)


def jax_fun(trunk, heads, weights, batch):
    counts = {}
    for task, _, _ in batch:
        counts[task] = counts.get(task, 0) + 1
    losses, residuals = {}, {}
    for task, x, y in batch:
        r = jnp.tanh(x @ trunk) @ heads[task] - y
        losses[task] = losses.get(task, 0.0) + jnp.sum(r ** 2) / counts[task]
        residuals.setdefault(task, []).append(r)
    spread = sum(jnp.var(jnp.concatenate(rs)) for rs in residuals.values())
    return sum(weights[k] * v for k, v in losses.items()) + 0.1 * spread


jax_jit = False             # the batch holds task names
