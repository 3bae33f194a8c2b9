"""Experiment code that switches the activation between runs: a module-level
ACTIVATION rebound by a setter, and a nonlinearity fetched with getattr(np, ...)
from a config dict that is edited between runs. The second and third runs must
use the new functions (issue 12, item 6)."""
import numpy as np
import jax.numpy as jnp

ACTIVATION = np.tanh
CONFIG = {"output": "sin"}


def softsign(x):
    return x / (1.0 + np.abs(x))


def set_activation(fn):
    global ACTIVATION
    ACTIVATION = fn


def loss(W1, W2, x, y):
    h = ACTIVATION(x @ W1)
    out = getattr(np, CONFIG["output"])(h @ W2)
    return np.mean((out - y) ** 2)


def make_inputs(rng):
    return rng.standard_normal((3, 4)), rng.standard_normal((4, 2)), \
        rng.standard_normal((5, 3)), rng.standard_normal((5, 2))


fun = loss
argnums = (0, 1, 2)


def variants():
    """Rebind between calls; restored afterwards."""
    try:
        set_activation(softsign)
        yield "softsign hidden"
        CONFIG["output"] = "cos"
        set_activation(np.sin)
        yield "sin hidden, cos output"
    finally:
        set_activation(np.tanh)
        CONFIG["output"] = "sin"


JAX_OF = {np.tanh: jnp.tanh, np.sin: jnp.sin, softsign: lambda v: v / (1.0 + jnp.abs(v))}


def jax_fun(W1, W2, x, y):
    h = JAX_OF[ACTIVATION](x @ W1)
    return jnp.mean((getattr(jnp, CONFIG["output"])(h @ W2) - y) ** 2)
