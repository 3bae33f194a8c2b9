"""A scikit-learn-flavoured regressor: a class holding its hyperparameters
and activation, with forward and loss methods; the user differentiates the
bound method, pb.grad(model.loss)."""
import numpy as np
import jax.numpy as jnp


class TwoLayerRegressor:
    def __init__(self, n_hidden, l2=1e-2, activation=np.tanh):
        self.n_hidden = n_hidden
        self.l2 = l2
        self.activation = activation

    def init_params(self, rng, n_in):
        return {"W1": rng.standard_normal((n_in, self.n_hidden)) / np.sqrt(n_in),
                "b1": 0.1 * rng.standard_normal(self.n_hidden),
                "w2": rng.standard_normal(self.n_hidden) / np.sqrt(self.n_hidden),
                "b2": 0.0}

    def forward(self, params, x):
        h = self.activation(x @ params["W1"] + params["b1"])
        return h @ params["w2"] + params["b2"]

    def penalty(self, params):
        return self.l2 * (np.sum(params["W1"] ** 2) + np.sum(params["w2"] ** 2))

    def loss(self, params, x, y):
        residual = self.forward(params, x) - y
        return np.mean(residual ** 2) + self.penalty(params)


model = TwoLayerRegressor(n_hidden=6)


def make_inputs(rng):
    x = rng.standard_normal((10, 3))
    return model.init_params(rng, 3), x, np.sin(x[:, 0]) + 0.1 * rng.standard_normal(10)


fun = model.loss
argnums = (0, 1)


def jax_fun(params, x, y):
    h = jnp.tanh(x @ params["W1"] + params["b1"])
    residual = h @ params["w2"] + params["b2"] - y
    penalty = 1e-2 * (jnp.sum(params["W1"] ** 2) + jnp.sum(params["w2"] ** 2))
    return jnp.mean(residual ** 2) + penalty
