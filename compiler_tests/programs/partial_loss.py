"""A loss specialised with functools.partial (the activation and the weight
decay fixed), the partial object itself handed to pb.grad, as optimiser code
does with `partial(loss, ...)`."""
import functools

import numpy as np
import jax.numpy as jnp


def softplus(x):
    return np.logaddexp(0.0, x)


def mlp_loss(params, x, y, activation=np.tanh, weight_decay=0.0):
    W1, b1, W2, b2 = params
    h = activation(x @ W1 + b1)
    pred = h @ W2 + b2
    err = np.mean((pred - y) ** 2)
    return err + weight_decay * (np.sum(W1 ** 2) + np.sum(W2 ** 2))


loss = functools.partial(mlp_loss, activation=softplus, weight_decay=1e-2)


def make_inputs(rng):
    params = (rng.standard_normal((3, 5)), rng.standard_normal(5),
              rng.standard_normal((5, 2)), rng.standard_normal(2))
    return params, rng.standard_normal((6, 3)), rng.standard_normal((6, 2))


fun = loss
argnums = (0, 1)


def jax_fun(params, x, y):
    W1, b1, W2, b2 = params
    pred = jnp.logaddexp(0.0, x @ W1 + b1) @ W2 + b2
    return jnp.mean((pred - y) ** 2) + 1e-2 * (jnp.sum(W1 ** 2) + jnp.sum(W2 ** 2))
