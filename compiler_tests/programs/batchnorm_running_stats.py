"""A PyTorch-style MLP with batch normalisation written in NumPy: a
``BatchNorm`` layer object that, in training mode, normalises with the batch
statistics and updates its running mean and variance as a side effect of
``__call__``; a ``Sequential``-like container of layers calls each in turn,
and the loss is evaluated in training mode, as a training step does."""
import numpy as np
import jax.numpy as jnp


class Linear:
    def __init__(self, W, b):
        self.W, self.b = W, b

    def __call__(self, x):
        return x @ self.W + self.b


class BatchNorm:
    def __init__(self, gamma, beta, momentum=0.1, eps=1e-5):
        self.gamma, self.beta = gamma, beta
        self.momentum, self.eps = momentum, eps
        self.running_mean = np.zeros_like(gamma)
        self.running_var = np.ones_like(gamma)
        self.training = True

    def __call__(self, x):
        if self.training:
            mean, var = x.mean(axis=0), x.var(axis=0)
            self.running_mean = (1 - self.momentum) * self.running_mean + self.momentum * mean
            self.running_var = (1 - self.momentum) * self.running_var + self.momentum * var
        else:
            mean, var = self.running_mean, self.running_var
        return self.gamma * (x - mean) / np.sqrt(var + self.eps) + self.beta


class Tanh:
    def __call__(self, x):
        return np.tanh(x)


def build(params):
    return [Linear(params["W1"], params["b1"]), BatchNorm(params["gamma"], params["beta"]),
            Tanh(), Linear(params["W2"], params["b2"])]


def training_loss(params, x, y):
    h = x
    for layer in build(params):
        h = layer(h)
    return np.mean((h[:, 0] - y) ** 2)


def make_inputs(rng):
    params = {"W1": rng.standard_normal((3, 6)) / np.sqrt(3), "b1": 0.1 * rng.standard_normal(6),
              "gamma": 1.0 + 0.1 * rng.standard_normal(6), "beta": 0.1 * rng.standard_normal(6),
              "W2": rng.standard_normal((6, 1)) / np.sqrt(6), "b2": np.zeros(1)}
    x = rng.standard_normal((10, 3))
    return params, x, np.sin(x[:, 0]) + 0.5 * x[:, 1]


fun = training_loss
argnums = (0, 1)


def jax_fun(params, x, y):
    h = x @ params["W1"] + params["b1"]
    h = params["gamma"] * (h - h.mean(axis=0)) / jnp.sqrt(h.var(axis=0) + 1e-5) + params["beta"]
    h = jnp.tanh(h) @ params["W2"] + params["b2"]
    return jnp.mean((h[:, 0] - y) ** 2)
