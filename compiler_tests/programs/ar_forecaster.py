"""An autoregressive AR(p) model fitted by conditional likelihood and
checked by a multi-step forecast, written as a time-series course writes
it: the lagged design matrix built by a list comprehension of slices
stacked with ``np.stack``, the Gaussian negative log-likelihood of the
one-step residuals with a log-variance parameter, and a recursive forecast
that appends each prediction to a Python list ``history`` and feeds the
last ``p`` values back through ``np.array(history[-p:])``. Differentiated
with respect to the AR coefficients, the intercept and the log-variance."""
import numpy as np
import jax.numpy as jnp


def design(y, p):
    rows = [y[t - p:t][::-1] for t in range(p, len(y))]
    return np.stack(rows)


def nll(phi, c, log_var, y):
    p = len(phi)
    X = design(y, p)
    resid = y[p:] - (X @ phi + c)
    return 0.5 * np.sum(resid ** 2) / np.exp(log_var) + 0.5 * len(resid) * log_var


def forecast(phi, c, y, horizon):
    p = len(phi)
    history = list(y[-p:])
    for _ in range(horizon):
        lags = np.array(history[-p:])[::-1]
        history.append(phi @ lags + c)
    return history[p:]


def objective(phi, c, log_var, y, future):
    preds = forecast(phi, c, y, len(future))
    return nll(phi, c, log_var, y) + sum((f - yhat) ** 2 for f, yhat in zip(future, preds))


def make_inputs(rng):
    n = 40
    y = np.zeros(n + 5)
    for t in range(2, n + 5):
        y[t] = 0.6 * y[t - 1] - 0.2 * y[t - 2] + 0.1 + 0.3 * rng.standard_normal()
    return np.array([0.5, -0.1, 0.05]), 0.05, -1.0, y[:n], y[n:]


fun = objective
argnums = (0, 1, 2)


def jax_fun(phi, c, log_var, y, future):
    p = phi.shape[0]
    X = jnp.stack([y[t - p:t][::-1] for t in range(p, y.shape[0])])
    resid = y[p:] - (X @ phi + c)
    total = 0.5 * jnp.sum(resid ** 2) / jnp.exp(log_var) + 0.5 * resid.shape[0] * log_var
    history = list(y[-p:])
    for f in future:
        nxt = phi @ jnp.stack(history[-p:])[::-1] + c
        history.append(nxt)
        total = total + (f - nxt) ** 2
    return total
