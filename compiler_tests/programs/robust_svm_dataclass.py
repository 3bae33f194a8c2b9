"""A linear model whose parameters live in a ``@dataclass`` with a
``predict`` method, fitted with piecewise losses: a Huber loss written with
``np.where``, a squared hinge with ``np.maximum`` for an auxiliary
classification head, and scores clipped with ``np.clip`` before a logistic
calibration term (margins chosen away from the kinks)."""
from dataclasses import dataclass

import numpy as np
import jax
import jax.numpy as jnp


@jax.tree_util.register_dataclass     # so jax (and the checks) see its leaves
@dataclass
class LinearParams:
    w: np.ndarray
    b: float
    v: np.ndarray

    def predict(self, X):
        return X @ self.w + self.b

    def score(self, X):
        return X @ self.v


def huber(r, delta=1.0):
    a = np.abs(r)
    return np.where(a <= delta, 0.5 * r ** 2, delta * (a - 0.5 * delta))


def squared_hinge(margin):
    return np.maximum(0.0, 1.0 - margin) ** 2


def objective(params, X, y, labels):
    reg = np.mean(huber(params.predict(X) - y, delta=0.8))
    s = params.score(X)
    cls = np.mean(squared_hinge(labels * s))
    calib = np.mean(np.log1p(np.exp(-labels * np.clip(s, -2.5, 2.5))))
    return reg + 0.5 * cls + 0.1 * calib + 1e-2 * (params.w @ params.w)


def make_inputs(rng):
    X = rng.standard_normal((12, 3))
    y = X @ np.array([0.5, -1.0, 2.0]) + rng.standard_t(2, size=12)
    labels = np.where(X[:, 0] + 0.3 * rng.standard_normal(12) > 0, 1.0, -1.0)
    params = LinearParams(w=0.3 * rng.standard_normal(3), b=0.1, v=0.4 * rng.standard_normal(3))
    return params, X, y, labels


fun = objective
argnums = (0,)


def jax_fun(params, X, y, labels):
    w, b, v = params.w, params.b, params.v
    r = X @ w + b - y
    a = jnp.abs(r)
    reg = jnp.mean(jnp.where(a <= 0.8, 0.5 * r ** 2, 0.8 * (a - 0.4)))
    s = X @ v
    cls = jnp.mean(jnp.maximum(0.0, 1.0 - labels * s) ** 2)
    calib = jnp.mean(jnp.log1p(jnp.exp(-labels * jnp.clip(s, -2.5, 2.5))))
    return reg + 0.5 * cls + 0.1 * calib + 1e-2 * (w @ w)
