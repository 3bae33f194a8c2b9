"""Polynomial regression: a design matrix built from a list comprehension of
powers, a degree given as a default argument, and a ridge penalty that spares
the intercept."""
import numpy as np
import jax.numpy as jnp


def design_matrix(x, degree=3):
    return np.stack([x ** k for k in range(degree + 1)], axis=1)


def predict(coeffs, x):
    return design_matrix(x, degree=len(coeffs) - 1) @ coeffs


def ridge_polynomial_loss(coeffs, x, y, lam=1e-2):
    residuals = predict(coeffs, x) - y
    return np.mean(residuals ** 2) + lam * np.sum(coeffs[1:] ** 2)


def make_inputs(rng):
    x = rng.uniform(-1.5, 1.5, size=14)
    y = 1.0 - 2.0 * x + 0.5 * x ** 3 + 0.1 * rng.standard_normal(14)
    return rng.standard_normal(4), x, y


fun = ridge_polynomial_loss
argnums = (0, 1)


def jax_fun(coeffs, x, y, lam=1e-2):
    X = jnp.stack([x ** k for k in range(len(coeffs))], axis=1)
    return jnp.mean((X @ coeffs - y) ** 2) + lam * jnp.sum(coeffs[1:] ** 2)
