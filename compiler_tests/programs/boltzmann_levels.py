"""Fitting the temperature and level spacings of a Boltzmann distribution
to observed occupation frequencies, the way a statistical-physics homework
organises it: a ``ThermalState`` class holding the temperature in an
attribute named ``T`` (as in the physics) and the gamma prior's ``shape``
and ``rate``, built by a factory function from the raw parameters
(``make_state``), the log partition function by a stable log-sum-exp,
and a negative log-posterior: multinomial log-likelihood plus a gamma
log-prior on the temperature. Differentiated with respect to the
log-temperature, the level gaps and the prior's shape."""
import math

import numpy as np
from scipy.special import gammaln
import jax.numpy as jnp


class ThermalState:
    def __init__(self, T, levels, shape, rate):
        self.T = T                  # temperature
        self.levels = levels        # energy levels
        self.shape = shape          # gamma prior on T
        self.rate = rate


def make_state(log_T, gaps, prior_shape, prior_rate=2.0):
    levels = np.concatenate([np.zeros(1), np.cumsum(np.exp(gaps))])
    return ThermalState(np.exp(log_T), levels, prior_shape, prior_rate)


def log_partition(energies, T):
    z = -energies / T
    m = np.max(z)
    return m + np.log(np.sum(np.exp(z - m)))


def neg_log_posterior(log_T, gaps, prior_shape, counts):
    state = make_state(log_T, gaps, prior_shape)
    log_p = -state.levels / state.T - log_partition(state.levels, state.T)
    log_lik = np.sum(counts * log_p)
    log_prior = ((state.shape - 1.0) * np.log(state.T) - state.rate * state.T
                 + state.shape * math.log(state.rate) - gammaln(prior_shape))
    return -(log_lik + log_prior)


def make_inputs(rng):
    counts = np.array([40.0, 25.0, 14.0, 9.0, 5.0]) + rng.integers(0, 4, 5)
    return 0.2, np.log(np.array([0.5, 0.6, 0.4, 0.7])) + 0.05 * rng.standard_normal(4), 3.0, counts


fun = neg_log_posterior
argnums = (0, 1, 2)


def jax_fun(log_T, gaps, prior_shape, counts):
    from jax.scipy.special import gammaln
    levels = jnp.concatenate([jnp.zeros(1), jnp.cumsum(jnp.exp(gaps))])
    T = jnp.exp(log_T)
    z = -levels / T
    m = jnp.max(z)
    log_p = z - (m + jnp.log(jnp.sum(jnp.exp(z - m))))
    log_prior = ((prior_shape - 1.0) * jnp.log(T) - 2.0 * T
                 + prior_shape * math.log(2.0) - gammaln(prior_shape))
    return -(jnp.sum(counts * log_p) + log_prior)
