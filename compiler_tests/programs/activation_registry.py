"""A configurable network: activations looked up by name in a dict of
functions, the configuration a default argument, and a swish helper defined
by the user."""
import numpy as np
import jax.numpy as jnp


def swish(x, beta=1.0):
    return x / (1.0 + np.exp(-beta * x))


def softplus(x):
    return np.logaddexp(0.0, x)


ACTIVATIONS = {"tanh": np.tanh, "softplus": softplus, "swish": swish, "sin": np.sin}
CONFIG = {"hidden": ["swish", "sin"], "output": "softplus"}


def forward(params, x, config=CONFIG):
    h = x
    for (W, b), name in zip(params[:-1], config["hidden"]):
        h = ACTIVATIONS[name](h @ W + b)
    W, b = params[-1]
    return ACTIVATIONS[config["output"]](h @ W + b)


def loss(params, x, y):
    return np.mean((forward(params, x) - y) ** 2)


def make_inputs(rng):
    sizes = [3, 5, 5, 2]
    params = [(rng.standard_normal((m, n)) * 0.7, rng.standard_normal(n) * 0.1)
              for m, n in zip(sizes[:-1], sizes[1:])]
    return params, rng.standard_normal((6, 3)), rng.uniform(size=(6, 2))


fun = loss
argnums = (0, 1)


def jax_fun(params, x, y):
    acts = [lambda v: v / (1.0 + jnp.exp(-v)), jnp.sin]
    h = x
    for (W, b), act in zip(params[:-1], acts):
        h = act(h @ W + b)
    W, b = params[-1]
    return jnp.mean((jnp.logaddexp(0.0, h @ W + b) - y) ** 2)
