"""A loss decorated with a functools.wraps decorator factory that adds an L2
penalty over every parameter in the dict, the way training code bolts
regularisation onto an existing loss."""
import functools

import numpy as np
import jax.numpy as jnp


def l2_penalised(weight):
    def decorator(loss_fn):
        @functools.wraps(loss_fn)
        def wrapper(params, *args, **kwargs):
            penalty = sum(np.sum(p ** 2) for p in params.values())
            return loss_fn(params, *args, **kwargs) + weight * penalty
        return wrapper
    return decorator


@l2_penalised(0.05)
def regression_loss(params, x, y):
    """Mean squared error of a linear model with a softplus output."""
    pred = np.logaddexp(0.0, x @ params["w"] + params["b"])
    return np.mean((pred - y) ** 2)


def make_inputs(rng):
    params = {"w": rng.standard_normal(3), "b": np.array(0.3)}
    x = rng.standard_normal((12, 3))
    return params, x, np.abs(rng.standard_normal(12))


fun = regression_loss
argnums = (0, 1)


def jax_fun(params, x, y):
    pred = jnp.logaddexp(0.0, x @ params["w"] + params["b"])
    penalty = sum(jnp.sum(p ** 2) for p in params.values())
    return jnp.mean((pred - y) ** 2) + 0.05 * penalty
