"""A Keras-like ``Sequential`` container: layer objects kept in a list
attribute, each with its own parameters and a ``__call__``; the model's
``__call__`` runs them in order.  The loss is a bound method of the model,
differentiated with respect to the input batch and the parameters read off
the layers (the layers are rebuilt from a parameter list, as in a
functional-style training step)."""
import numpy as np
import jax.numpy as jnp


class Dense:
    def __init__(self, W, b, activation=None):
        self.W = W
        self.b = b
        self.activation = activation

    def __call__(self, x):
        z = x @ self.W + self.b
        if self.activation is not None:
            z = self.activation(z)
        return z


def relu(z):
    return np.maximum(z, 0.0)


class Sequential:
    def __init__(self, layers):
        self.layers = list(layers)

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def build(params):
    acts = [np.tanh, relu, None]
    return Sequential([Dense(W, b, act) for (W, b), act in zip(params, acts)])


def mse(params, x, y):
    model = build(params)
    return np.mean((model(x) - y) ** 2)


def make_inputs(rng):
    sizes = [3, 6, 5, 2]
    params = [(rng.standard_normal((m, n)) / np.sqrt(m), 0.1 * rng.standard_normal(n) + 0.05)
              for m, n in zip(sizes[:-1], sizes[1:])]
    return params, rng.standard_normal((7, 3)), rng.standard_normal((7, 2))


fun = mse
argnums = (0, 1)


def jax_fun(params, x, y):
    (W1, b1), (W2, b2), (W3, b3) = params
    h = jnp.tanh(x @ W1 + b1)
    h = jnp.maximum(h @ W2 + b2, 0.0)
    return jnp.mean((h @ W3 + b3 - y) ** 2)
