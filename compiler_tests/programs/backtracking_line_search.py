"""Gradient descent with an Armijo backtracking line search on a logistic
loss, where the gradient is written by hand: the search halves the step in a
``for ... else`` loop with an early ``break``, the outer loop stops early
(``return``) once the gradient norm is small, and the final loss is
differentiated with respect to the data and the initial weights (the
accepted step sizes are piecewise constant)."""
import numpy as np
import jax.numpy as jnp


def logistic_loss(w, X, y, l2=1e-2):
    z = X @ w
    return np.mean(np.logaddexp(0.0, z) - y * z) + 0.5 * l2 * w @ w


def logistic_grad(w, X, y, l2=1e-2):
    p = 1.0 / (1.0 + np.exp(-(X @ w)))
    return X.T @ (p - y) / len(y) + l2 * w


def armijo_step(w, X, y, g, t0=1.0, shrink=0.5, c=1e-4, max_halvings=20):
    f0 = logistic_loss(w, X, y)
    t = t0
    for _ in range(max_halvings):
        if logistic_loss(w - t * g, X, y) <= f0 - c * t * (g @ g):
            break
        t = t * shrink
    else:
        t = 0.0
    return w - t * g


def fit(w0, X, y, n_iter=6, tol=1e-8):
    w = w0
    for it in range(n_iter):
        g = logistic_grad(w, X, y)
        if np.sqrt(g @ g) < tol:
            return logistic_loss(w, X, y)
        w = armijo_step(w, X, y, g)
    return logistic_loss(w, X, y)


def make_inputs(rng):
    X = rng.standard_normal((20, 3))
    y = (X @ np.array([1.0, -2.0, 0.5]) + 0.5 * rng.standard_normal(20) > 0).astype(float)
    return 0.1 * rng.standard_normal(3), X, y


fun = fit
argnums = (0, 1)
jax_jit = False


def jax_fun(w0, X, y):
    def loss(w):
        z = X @ w
        return jnp.mean(jnp.logaddexp(0.0, z) - y * z) + 0.5 * 1e-2 * w @ w
    w = w0
    for _ in range(6):
        g = X.T @ (1.0 / (1.0 + jnp.exp(-(X @ w))) - y) / len(y) + 1e-2 * w
        f0, t = loss(w), 1.0
        for _ in range(20):
            if loss(w - t * g) <= f0 - 1e-4 * t * (g @ g):
                break
            t = t * 0.5
        else:
            t = 0.0
        w = w - t * g
    return loss(w)
