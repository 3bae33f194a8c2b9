"""A per-example loss turned into a batch loss by a functools.wraps decorator
whose wrapper has an explicit signature and loops over the examples, plus a
second decorator that scales the result (stacked decorators)."""
import functools

import numpy as np
import jax.numpy as jnp


def batch_mean(example_loss):
    @functools.wraps(example_loss)
    def wrapper(w, X, Y):
        total = 0.0
        for x, y in zip(X, Y):
            total = total + example_loss(w, x, y)
        return total / len(X)
    return wrapper


def scaled(factor):
    def decorator(fn):
        @functools.wraps(fn)
        def wrapper(w, X, Y):
            return factor * fn(w, X, Y)
        return wrapper
    return decorator


@scaled(2.0)
@batch_mean
def hinge_squared(w, x, y):
    margin = 1.0 - y * np.dot(w, x)
    return np.maximum(margin, 0.0) ** 2


def make_inputs(rng):
    X = rng.standard_normal((8, 3))
    return rng.standard_normal(3), X, np.sign(rng.standard_normal(8))


fun = hinge_squared
argnums = (0, 1)


def jax_fun(w, X, Y):
    return 2.0 * jnp.mean(jnp.maximum(1.0 - Y * (X @ w), 0.0) ** 2)
