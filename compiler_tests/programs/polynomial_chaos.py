"""A polynomial chaos surrogate, as uncertainty-quantification tutorials
build one: probabilists' Hermite polynomials from ``np.polynomial``'s
``HermiteE`` class (``HermiteE.basis(k)`` called on the samples), a
design matrix stacked column by column, the coefficients fitted by ridge
least squares with ``np.linalg.solve``, and the surrogate's mean and
variance read off the coefficients (``math.factorial`` norms). The loss
matches the surrogate's moments to targets and is differentiated with
respect to the model outputs and the sample points."""
import math

import numpy as np
from numpy.polynomial import HermiteE
import jax.numpy as jnp

DEGREE = 4


def design_matrix(xi, degree=DEGREE):
    columns = [HermiteE.basis(k)(xi) for k in range(degree + 1)]
    return np.stack(columns, axis=1)


def fit_coefficients(xi, y, ridge=1e-6):
    Psi = design_matrix(xi)
    return np.linalg.solve(Psi.T @ Psi + ridge * np.eye(Psi.shape[1]), Psi.T @ y)


def moments(coefficients):
    norms = np.array([float(math.factorial(k)) for k in range(len(coefficients))])
    mean = coefficients[0]
    variance = np.sum(coefficients[1:] ** 2 * norms[1:])
    return mean, variance


def moment_loss(y, xi, target_mean=1.0, target_var=0.5):
    c = fit_coefficients(xi, y)
    mean, var = moments(c)
    return (mean - target_mean) ** 2 + (var - target_var) ** 2 + 1e-2 * np.sum(c[2:] ** 2)


def make_inputs(rng):
    xi = rng.standard_normal(20)
    y = 1.0 + 0.6 * xi + 0.2 * (xi ** 2 - 1.0) + 0.05 * rng.standard_normal(20)
    return y, xi


fun = moment_loss
argnums = (0, 1)


def jax_fun(y, xi):
    # He_0..He_4 written out
    Psi = jnp.stack([jnp.ones_like(xi), xi, xi ** 2 - 1.0, xi ** 3 - 3.0 * xi,
                     xi ** 4 - 6.0 * xi ** 2 + 3.0], axis=1)
    c = jnp.linalg.solve(Psi.T @ Psi + 1e-6 * jnp.eye(5), Psi.T @ y)
    norms = jnp.array([1.0, 1.0, 2.0, 6.0, 24.0])
    mean, var = c[0], jnp.sum(c[1:] ** 2 * norms[1:])
    return (mean - 1.0) ** 2 + (var - 0.5) ** 2 + 1e-2 * jnp.sum(c[2:] ** 2)
