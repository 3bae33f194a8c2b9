"""Ridge regression where the objective is a closure over the data, built by
a factory, the way people hand a one-argument objective to an optimiser."""
import numpy as np
import jax.numpy as jnp

_data_rng = np.random.default_rng(12)
X_TRAIN = _data_rng.standard_normal((25, 4))
Y_TRAIN = X_TRAIN @ np.array([0.5, -1.0, 2.0, 0.0]) + 0.1 * _data_rng.standard_normal(25)


def make_ridge_objective(X, y, lam):
    n = X.shape[0]

    def objective(w):
        resid = X @ w - y
        return resid @ resid / n + lam * (w @ w)

    return objective


def closed_form(X, y, lam):
    n, d = X.shape
    return np.linalg.solve(X.T @ X / n + lam * np.eye(d), X.T @ y / n)


objective = make_ridge_objective(X_TRAIN, Y_TRAIN, lam=0.3)


def make_inputs(rng):
    return (rng.standard_normal(4),)


fun = objective
argnums = (0,)


def jax_fun(w):
    resid = jnp.asarray(X_TRAIN) @ w - Y_TRAIN
    return resid @ resid / X_TRAIN.shape[0] + 0.3 * (w @ w)
