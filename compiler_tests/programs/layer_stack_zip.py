"""A deep linear-tanh network whose layers come as a list of ``(W, b)``
pairs, transposed into a tuple of weights and a tuple of biases with the
idiomatic ``weights, biases = zip(*layers)``, then run with ``zip`` again;
the penalty is a spectral-ish weight decay over ``weights`` only."""
import numpy as np
import jax.numpy as jnp


def forward(weights, biases, x):
    for W, b in zip(weights[:-1], biases[:-1]):
        x = np.tanh(x @ W + b)
    return x @ weights[-1] + biases[-1]


def loss(layers, x, y, decay=1e-2):
    weights, biases = zip(*layers)
    pred = forward(weights, biases, x)
    penalty = sum(np.sum(W.T @ W) for W in weights)
    return np.mean((pred - y) ** 2) + decay * penalty


def make_inputs(rng):
    sizes = [3, 5, 4, 1]
    layers = [(rng.standard_normal((m, n)) / np.sqrt(m), 0.1 * rng.standard_normal(n))
              for m, n in zip(sizes[:-1], sizes[1:])]
    return layers, rng.standard_normal((6, 3)), rng.standard_normal((6, 1))


fun = loss
argnums = (0, 1)


def jax_fun(layers, x, y):
    for W, b in layers[:-1]:
        x = jnp.tanh(x @ W + b)
    W, b = layers[-1]
    pred = x @ W + b
    return jnp.mean((pred - y) ** 2) + 1e-2 * sum(jnp.sum(W.T @ W) for W, _ in layers)
