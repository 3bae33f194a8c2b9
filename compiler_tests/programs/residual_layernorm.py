"""A stack of pre-norm residual MLP blocks (a transformer's feed-forward
half): a layer-norm helper with gain and bias, blocks named in a dict and
visited in a loop over their names, and a linear read-out."""
import numpy as np
import jax.numpy as jnp

D, D_FF = 4, 8
BLOCKS = ("block0", "block1")


def layer_norm(x, gain, bias, eps=1e-5):
    mean = np.mean(x, axis=-1, keepdims=True)
    var = np.var(x, axis=-1, keepdims=True)
    return gain * (x - mean) / np.sqrt(var + eps) + bias


def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))


def feed_forward(p, x):
    h = layer_norm(x, p["gain"], p["bias"])
    return x + gelu(h @ p["W1"] + p["b1"]) @ p["W2"]


def network_loss(params, x, y):
    for name in BLOCKS:
        x = feed_forward(params[name], x)
    pred = x @ params["readout"]
    return np.mean((pred - y) ** 2)


def make_inputs(rng):
    params = {name: {"gain": 1.0 + 0.1 * rng.standard_normal(D), "bias": 0.1 * rng.standard_normal(D),
                     "W1": rng.standard_normal((D, D_FF)) * 0.5, "b1": 0.1 * rng.standard_normal(D_FF),
                     "W2": rng.standard_normal((D_FF, D)) * 0.3}
              for name in BLOCKS}
    params["readout"] = rng.standard_normal(D)
    return params, rng.standard_normal((6, D)), rng.standard_normal(6)


fun = network_loss
argnums = (0, 1)


def jax_fun(params, x, y):
    for name in BLOCKS:
        p = params[name]
        mean = jnp.mean(x, axis=-1, keepdims=True)
        h = p["gain"] * (x - mean) / jnp.sqrt(jnp.var(x, axis=-1, keepdims=True) + 1e-5) + p["bias"]
        u = h @ p["W1"] + p["b1"]
        x = x + (0.5 * u * (1.0 + jnp.tanh(0.7978845608 * (u + 0.044715 * u ** 3)))) @ p["W2"]
    return jnp.mean((x @ params["readout"] - y) ** 2)
