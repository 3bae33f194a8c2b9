"""A multilayer perceptron whose parameters are a list of (W, b) tuples, as
most NumPy tutorials write it. The widths change from layer to layer
(5 -> 1 -> 3), so the loop's carried `inputs` changes shape every iteration."""
import numpy as np
import jax.numpy as jnp

LAYER_SIZES = [5, 1, 3]


def init_params(rng, sizes, scale=0.5):
    """One (weights, biases) tuple per layer."""
    return [(scale * rng.standard_normal((m, n)), scale * rng.standard_normal(n))
            for m, n in zip(sizes[:-1], sizes[1:])]


def predict(params, inputs):
    for W, b in params:
        outputs = inputs @ W + b
        inputs = np.tanh(outputs)
    return outputs


def loss(params, inputs, targets):
    preds = predict(params, inputs)
    return np.mean((preds - targets) ** 2)


def make_inputs(rng):
    params = init_params(rng, LAYER_SIZES)
    x = rng.standard_normal((4, LAYER_SIZES[0]))
    y = rng.standard_normal((4, LAYER_SIZES[-1]))
    return params, x, y


fun = loss
argnums = (0, 1)


def jax_predict(params, inputs):
    for W, b in params:
        outputs = inputs @ W + b
        inputs = jnp.tanh(outputs)
    return outputs


def jax_fun(params, inputs, targets):
    return jnp.mean((jax_predict(params, inputs) - targets) ** 2)
