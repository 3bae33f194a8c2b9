"""Robust curve fitting with a loss written for one number and lifted to
arrays with ``np.vectorize``, as a statistician writes it from the
textbook's case definition: ``huber(r, delta)`` with an ``if abs(r) <=
delta`` branch, vectorised once at module level, applied to the residuals of
a damped oscillation model ``a * exp(-b t) * cos(w t + phi)``; the scale of
the loss is a parameter too. Differentiated with respect to the model's
parameters."""
import numpy as np
import jax.numpy as jnp


def huber_scalar(r, delta):
    if abs(r) <= delta:
        return 0.5 * r * r
    return delta * (abs(r) - 0.5 * delta)


huber = np.vectorize(huber_scalar)


def model(theta, t):
    a, b, w, phi = theta
    return a * np.exp(-b * t) * np.cos(w * t + phi)


def robust_loss(theta, t, y, delta=0.3):
    residual = y - model(theta, t)
    return np.mean(huber(residual, delta))


def make_inputs(rng):
    t = np.linspace(0.0, 4.0, 25)
    truth = np.array([1.5, 0.4, 2.0, 0.3])
    y = model(truth, t) + 0.1 * rng.standard_normal(25)
    y[::6] += 1.5                                       # outliers
    theta = truth + 0.2 * rng.standard_normal(4)
    return theta, t, y


fun = robust_loss
argnums = (0,)


def jax_fun(theta, t, y, delta=0.3):
    a, b, w, phi = theta
    r = y - a * jnp.exp(-b * t) * jnp.cos(w * t + phi)
    return jnp.mean(jnp.where(jnp.abs(r) <= delta, 0.5 * r * r, delta * (jnp.abs(r) - 0.5 * delta)))
