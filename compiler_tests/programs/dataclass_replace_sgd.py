"""Unrolled SGD on a frozen dataclass of parameters, updated functionally
with ``dataclasses.replace`` the way JAX-style NumPy code does, the per-field
gradient written by hand and gathered with ``dataclasses.fields``; the outer
loss (held-out error after the steps) is differentiated with respect to the
initial parameters (a dataclass: its gradient is one) and the step size."""
import dataclasses

import numpy as np
import jax
import jax.numpy as jnp


@jax.tree_util.register_dataclass     # so jax (and the checks) see its leaves
@dataclasses.dataclass(frozen=True)
class Params:
    w: np.ndarray
    b: float
    log_noise: float


def residuals(p, X, y):
    return (X @ p.w + p.b - y) / np.exp(p.log_noise)


def grad_by_hand(p, X, y):
    r = residuals(p, X, y)
    scale = np.exp(p.log_noise)
    n = len(y)
    return Params(w=X.T @ r / (n * scale), b=float(np.sum(r)) / (n * scale), log_noise=0.0)


def sgd_step(p, g, lr):
    updates = {f.name: getattr(p, f.name) - lr * getattr(g, f.name)
               for f in dataclasses.fields(p) if f.name != "log_noise"}
    return dataclasses.replace(p, **updates)


def held_out_loss(p, lr, X, y, X_val, y_val, n_steps=5):
    for _ in range(n_steps):
        p = sgd_step(p, grad_by_hand(p, X, y), lr)
    return 0.5 * np.mean(residuals(p, X_val, y_val) ** 2) + p.log_noise


def make_inputs(rng):
    w_true = np.array([0.5, -1.0, 2.0])
    X, X_val = rng.standard_normal((8, 3)), rng.standard_normal((5, 3))
    p = Params(w=rng.standard_normal(3), b=0.1, log_noise=0.2)
    return p, 0.1, X, X @ w_true - 0.3, X_val, X_val @ w_true - 0.3


fun = held_out_loss
argnums = (0, 1)


def jax_fun(p, lr, X, y, X_val, y_val):
    for _ in range(5):
        scale = jnp.exp(p.log_noise)
        r = (X @ p.w + p.b - y) / scale
        p = Params(w=p.w - lr * X.T @ r / (len(y) * scale), b=p.b - lr * jnp.sum(r) / (len(y) * scale),
                   log_noise=p.log_noise)
    return 0.5 * jnp.mean(((X_val @ p.w + p.b - y_val) / jnp.exp(p.log_noise)) ** 2) + p.log_noise
