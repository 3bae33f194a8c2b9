"""An MLP whose layers live in a dict keyed ``"layer_<i>"`` (the order a
checkpoint file gives them in, not the order they run in); the forward pass
walks ``sorted(layers.items(), key=lambda kv: int(kv[0].split("_")[1]))``
so ``layer_10`` comes after ``layer_2``, each value a ``(W, b)`` tuple, and
the regulariser picks the largest weight norm with ``max(..., key=...)``."""
import numpy as np
import jax.numpy as jnp


def layer_index(item):
    return int(item[0].split("_")[1])


def forward(layers, x):
    ordered = sorted(layers.items(), key=lambda kv: int(kv[0].split("_")[1]))
    for i, (name, (W, b)) in enumerate(ordered):
        x = x @ W + b
        if i < len(ordered) - 1:
            x = np.tanh(x)
    return x


def loss(layers, x, y, alpha=0.05):
    pred = forward(layers, x)
    last_name, _ = max(layers.items(), key=layer_index)
    W_last, _ = layers[last_name]
    return np.mean((pred - y) ** 2) + alpha * np.sum(W_last ** 2)


def make_inputs(rng):
    sizes = [3, 4, 4, 2]
    layers = {}
    for i in (10, 2, 0):
        k = {0: 0, 2: 1, 10: 2}[i]
        layers[f"layer_{i}"] = (0.5 * rng.standard_normal((sizes[k], sizes[k + 1])),
                                0.1 * rng.standard_normal(sizes[k + 1]))
    return layers, rng.standard_normal((6, 3)), rng.standard_normal((6, 2))


fun = loss
argnums = (0, 1)


def jax_fun(layers, x, y):
    order = ["layer_0", "layer_2", "layer_10"]
    for i, name in enumerate(order):
        W, b = layers[name]
        x = x @ W + b
        if i < 2:
            x = jnp.tanh(x)
    return jnp.mean((x - y) ** 2) + 0.05 * jnp.sum(layers["layer_10"][0] ** 2)
