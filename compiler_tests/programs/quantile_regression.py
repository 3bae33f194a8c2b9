"""Robust and quantile regression losses as a forecasting library writes
them: a pinball loss for several quantile levels (``np.where`` on the sign
of the residual), a median-absolute-deviation scale (``np.median``), a
trimmed loss keeping the smallest residuals by ``np.argsort`` and
``np.take_along_axis``, and a ``np.percentile`` calibration term.
Differentiated with respect to the per-quantile weights and the
intercepts."""
import numpy as np
import jax.numpy as jnp

LEVELS = np.array([0.1, 0.5, 0.9])


def pinball(resid, tau):
    return np.where(resid >= 0.0, tau * resid, (tau - 1.0) * resid)


def forecast_loss(W, b, X, y):
    preds = X @ W + b                                  # (n, 3): one column per level
    resid = y[:, None] - preds
    loss = np.mean(pinball(resid, LEVELS))
    med = preds[:, 1]
    mad = np.median(np.abs(y - med))
    order = np.argsort(np.abs(resid), axis=0)
    kept = np.take_along_axis(resid, order[:-2], axis=0)
    trimmed = np.mean(kept ** 2)
    spread = np.percentile(preds[:, 2] - preds[:, 0], 75.0)
    return loss + 0.1 * mad + 0.05 * trimmed + 0.01 * spread


def make_inputs(rng):
    X = rng.standard_normal((13, 2))
    y = X @ np.array([1.0, -0.5]) + rng.standard_normal(13)
    W = np.array([[1.0, 1.0, 1.0], [-0.5, -0.5, -0.5]]) + 0.1 * rng.standard_normal((2, 3))
    return W, np.array([-1.0, 0.0, 1.0]) + 0.05 * rng.standard_normal(3), X, y


fun = forecast_loss
argnums = (0, 1)


def jax_fun(W, b, X, y):
    preds = X @ W + b
    resid = y[:, None] - preds
    tau = jnp.asarray(LEVELS)
    loss = jnp.mean(jnp.where(resid >= 0.0, tau * resid, (tau - 1.0) * resid))
    mad = jnp.median(jnp.abs(y - preds[:, 1]))
    order = jnp.argsort(jnp.abs(resid), axis=0)
    trimmed = jnp.mean(jnp.take_along_axis(resid, order[:-2], axis=0) ** 2)
    spread = jnp.percentile(preds[:, 2] - preds[:, 0], 75.0)
    return loss + 0.1 * mad + 0.05 * trimmed + 0.01 * spread
