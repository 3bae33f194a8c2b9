"""L1-regularised logistic regression written defensively, as in a Kaggle
notebook's utility cell: ``assert`` statements on shapes with f-string
messages, a ``ValueError`` with an f-string in an error path, an early
``return`` when the penalty weight is zero, the L1 term via ``np.abs``
(weights kept away from zero), class weights looked up from a dict by the
label, and a numerically stable log-sigmoid via ``np.logaddexp``."""
from typing import Dict, Optional

import numpy as np
import jax.numpy as jnp

CLASS_WEIGHTS: Dict[int, float] = {0: 1.0, 1: 3.0}


def log_sigmoid(z: np.ndarray) -> np.ndarray:
    return -np.logaddexp(0.0, -z)


def data_term(w: np.ndarray, b: float, X: np.ndarray, y: np.ndarray) -> float:
    assert X.ndim == 2, f"X must be a matrix, got shape {X.shape}"
    assert X.shape[1] == w.shape[0], f"{X.shape[1]} features but {w.shape[0]} weights"
    z = X @ w + b
    weights = np.array([CLASS_WEIGHTS[int(label)] for label in y])
    nll = -(y * log_sigmoid(z) + (1.0 - y) * log_sigmoid(-z))
    return np.sum(weights * nll) / np.sum(weights)


def objective(w: np.ndarray, b: float, X: np.ndarray, y: np.ndarray,
              l1: float = 0.05, l2: Optional[float] = None) -> float:
    if l1 < 0:
        raise ValueError(f"l1 must be non-negative, got {l1}")
    loss = data_term(w, b, X, y)
    if l2 is not None:
        loss = loss + 0.5 * l2 * np.dot(w, w)
    if l1 == 0:
        return loss
    return loss + l1 * np.sum(np.abs(w))


def training_objective(w, b, X, y):
    return objective(w, b, X, y, l1=0.05) + objective(w, b, X, y, l1=0.0, l2=0.1)


def make_inputs(rng):
    X = rng.standard_normal((16, 4))
    y = (X @ np.array([1.0, -2.0, 0.5, 0.0]) + 0.5 * rng.standard_normal(16) > 0).astype(float)
    w = np.array([0.8, -1.2, 0.4, 0.3]) + 0.05 * rng.standard_normal(4)
    return w, 0.1, X, y


fun = training_objective
argnums = (0, 1, 2)


def jax_fun(w, b, X, y):
    ls = lambda z: -jnp.logaddexp(0.0, -z)   # noqa: E731
    z = X @ w + b
    cw = jnp.where(y == 1.0, 3.0, 1.0)
    data = jnp.sum(cw * -(y * ls(z) + (1.0 - y) * ls(-z))) / jnp.sum(cw)
    return 2.0 * data + 0.05 * jnp.sum(jnp.abs(w)) + 0.5 * 0.1 * jnp.dot(w, w)
