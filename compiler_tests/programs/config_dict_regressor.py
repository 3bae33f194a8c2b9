"""A regression script driven by a string-keyed config dict, as experiment
code passes one through every layer: the activation looked up by name among
``@staticmethod``s of an ``Activations`` namespace class with ``getattr``,
the loss chosen by ``config["loss"]`` from a dict of functions and called
with the options the config holds (``**config["loss_options"]``), a
``config.get`` with a default for the weight decay, and the hidden widths read
from ``config["hidden"]`` to split a flat parameter vector into layers.
Differentiated with respect to the flat parameter vector."""
import numpy as np
import jax.numpy as jnp

CONFIG = {
    "activation": "softplus",
    "hidden": [4, 3],
    "loss": "huber",
    "loss_options": {"delta": 0.5},
    "weight_decay": 1e-2,
}


class Activations:
    @staticmethod
    def softplus(z):
        return np.logaddexp(0.0, z)

    @staticmethod
    def swish(z):
        return z / (1.0 + np.exp(-z))


def huber(residual, delta=1.0):
    a = np.abs(residual)
    return np.mean(np.where(a <= delta, 0.5 * residual ** 2, delta * (a - 0.5 * delta)))


def squared(residual):
    return np.mean(residual ** 2)


LOSSES = {"huber": huber, "squared": squared}


def unflatten(theta, sizes):
    layers, start = [], 0
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        W = theta[start:start + n_in * n_out].reshape(n_in, n_out)
        start += n_in * n_out
        b = theta[start:start + n_out]
        start += n_out
        layers.append((W, b))
    return layers


def predict(theta, x, config):
    sizes = [x.shape[1]] + config["hidden"] + [1]
    act = getattr(Activations, config["activation"])
    h = x
    layers = unflatten(theta, sizes)
    for W, b in layers[:-1]:
        h = act(h @ W + b)
    W, b = layers[-1]
    return (h @ W + b)[:, 0]


def objective(theta, x, y, config=CONFIG):
    residual = predict(theta, x, config) - y
    loss = LOSSES[config["loss"]](residual, **config["loss_options"])
    return loss + config.get("weight_decay", 0.0) * np.sum(theta ** 2)


def n_params(n_in, hidden):
    sizes = [n_in] + hidden + [1]
    return sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:]))


def make_inputs(rng):
    x = rng.standard_normal((10, 2))
    y = np.sin(x[:, 0]) + 0.5 * x[:, 1]
    return 0.5 * rng.standard_normal(n_params(2, CONFIG["hidden"])), x, y


fun = objective
argnums = (0,)


def jax_fun(theta, x, y):
    sizes = [2, 4, 3, 1]
    h, start = x, 0
    for k, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        W = theta[start:start + n_in * n_out].reshape(n_in, n_out)
        start += n_in * n_out
        b = theta[start:start + n_out]
        start += n_out
        h = h @ W + b
        if k < len(sizes) - 2:
            h = jnp.logaddexp(0.0, h)
    r = h[:, 0] - y
    a = jnp.abs(r)
    loss = jnp.mean(jnp.where(a <= 0.5, 0.5 * r ** 2, 0.5 * (a - 0.25)))
    return loss + 1e-2 * jnp.sum(theta ** 2)
