"""A Poisson generalised linear model whose inverse link is a lambda given as a
default argument, with an offset (log exposure) and a negative log-likelihood
that drops the constant log(y!) term."""
import numpy as np
import jax.numpy as jnp


def poisson_nll(beta, intercept, X, counts, log_exposure, inverse_link=lambda eta: np.exp(eta)):
    eta = X @ beta + intercept + log_exposure
    rate = inverse_link(eta)
    return np.sum(rate - counts * np.log(rate)) / len(counts)


def make_inputs(rng):
    X = rng.standard_normal((18, 3)) * 0.5
    counts = rng.poisson(2.0, size=18).astype(float)
    return rng.standard_normal(3) * 0.2, 0.5, X, counts, np.log(rng.uniform(0.5, 2.0, size=18))


fun = poisson_nll
argnums = (0, 1, 2)


def jax_fun(beta, intercept, X, counts, log_exposure):
    eta = X @ beta + intercept + log_exposure
    rate = jnp.exp(eta)
    return jnp.sum(rate - counts * jnp.log(rate)) / len(counts)
