"""A loss that defines its per-term helper inside, with a default argument
taken from the call's own argument (`def term(r, s=scale)`), and a
weighting lambda over the loop index: Python evaluates the default each time
the def runs, so every call must see its own `scale` (issue 12, item 6)."""
import numpy as np
import jax.numpy as jnp


def weighted_residual_loss(w, xs, ys, scale):
    def term(r, s=scale):
        return s * np.sum(r ** 2) / (1.0 + s)
    weight = lambda k: 1.0 / (1.0 + k)
    total = 0.0
    for k, (x, y) in enumerate(zip(xs, ys)):
        residual = np.tanh(x @ w) - y
        total = total + weight(k) * term(residual)
    return total


def make_inputs(rng):
    return (rng.standard_normal(3), rng.standard_normal((4, 5, 3)),
            rng.standard_normal((4, 5)), float(rng.uniform(0.5, 3.0)))


fun = weighted_residual_loss
argnums = (0, 1, 3)


def variants():
    yield "another scale"
    yield "a third scale"


def jax_fun(w, xs, ys, scale):
    total = 0.0
    for k in range(xs.shape[0]):
        r = jnp.tanh(xs[k] @ w) - ys[k]
        total = total + (1.0 / (1.0 + k)) * scale * jnp.sum(r ** 2) / (1.0 + scale)
    return total
