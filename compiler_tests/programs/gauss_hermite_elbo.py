"""Variational Bayesian logistic regression with a mean-field Gaussian
posterior: the expected log-likelihood of each observation is a
one-dimensional Gaussian expectation computed by Gauss-Hermite quadrature
(nodes and weights from ``np.polynomial.hermite.hermgauss``), and the ELBO
subtracts the closed-form KL to the prior; a generic ``expectation(fn,
mean, var, degree=...)`` helper takes the integrand as a function."""
import numpy as np
import jax.numpy as jnp


def expectation(fn, mean, var, *fn_args, degree=20):
    """E[fn(z, *fn_args)] for z ~ N(mean, var), elementwise over mean and var."""
    nodes, weights = np.polynomial.hermite.hermgauss(degree)
    z = mean[..., None] + np.sqrt(2.0 * var)[..., None] * nodes
    return np.sum(weights * fn(z, *fn_args), axis=-1) / np.sqrt(np.pi)


def bernoulli_log_lik(logit, label):
    return label[..., None] * logit - np.logaddexp(0.0, logit)


def kl_to_standard_normal(mu, log_sigma):
    return 0.5 * np.sum(mu ** 2 + np.exp(2 * log_sigma) - 1.0 - 2 * log_sigma)


def negative_elbo(variational, X, y, prior_scale=1.0):
    mu, log_sigma = variational["mu"], variational["log_sigma"]
    mean = X @ mu
    var = (X ** 2) @ np.exp(2 * log_sigma)
    expected = expectation(bernoulli_log_lik, mean, var, y)
    kl = kl_to_standard_normal(mu / prior_scale, log_sigma - np.log(prior_scale))
    return -(np.sum(expected) - kl)


def make_inputs(rng):
    X = rng.standard_normal((15, 3))
    y = (X @ np.array([1.5, -1.0, 0.5]) + 0.3 * rng.standard_normal(15) > 0).astype(float)
    variational = {"mu": 0.3 * rng.standard_normal(3), "log_sigma": -1.0 + 0.1 * rng.standard_normal(3)}
    return variational, X, y


fun = negative_elbo
argnums = (0, 1)


def jax_fun(variational, X, y):
    nodes, weights = np.polynomial.hermite.hermgauss(20)
    mu, log_sigma = variational["mu"], variational["log_sigma"]
    z = (X @ mu)[:, None] + jnp.sqrt(2.0 * ((X ** 2) @ jnp.exp(2 * log_sigma)))[:, None] * nodes
    expected = jnp.sum(weights * (y[:, None] * z - jnp.logaddexp(0.0, z)), axis=-1) / jnp.sqrt(jnp.pi)
    kl = 0.5 * jnp.sum(mu ** 2 + jnp.exp(2 * log_sigma) - 1.0 - 2 * log_sigma)
    return -(jnp.sum(expected) - kl)
