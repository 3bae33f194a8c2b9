"""Fitting a Keplerian orbit to radial-velocity data, as exoplanet
notebooks do: Kepler's equation ``E - e sin E = M`` solved per epoch by a
Newton iteration in a ``while`` loop with a tolerance and an iteration cap
(vectorised, stopping when the largest step is small), the true anomaly
from ``np.arctan2``, and a Gaussian log-likelihood with a jitter term.
Differentiated with respect to the semi-amplitude, the eccentricity, the
argument of periastron and the phase through the unrolled iterations."""
import math

import numpy as np
import jax.numpy as jnp

PERIOD = 3.7


def solve_kepler(M, e, tol=1e-13, max_iter=50):
    E = M + e * np.sin(M)
    it = 0
    while True:
        step = (E - e * np.sin(E) - M) / (1.0 - e * np.cos(E))
        E = E - step
        it += 1
        if np.max(np.abs(step)) < tol or it >= max_iter:
            break
    return E


def radial_velocity(t, K, e, omega, phase):
    M = 2.0 * math.pi * t / PERIOD + phase
    E = solve_kepler(M, e)
    nu = 2.0 * np.arctan2(np.sqrt(1.0 + e) * np.sin(E / 2.0), np.sqrt(1.0 - e) * np.cos(E / 2.0))
    return K * (np.cos(nu + omega) + e * np.cos(omega))


def neg_log_likelihood(K, e, omega, phase, t, rv, sigma):
    model = radial_velocity(t, K, e, omega, phase)
    var = sigma ** 2 + 0.1 ** 2
    return 0.5 * np.sum((rv - model) ** 2 / var + np.log(2.0 * math.pi * var))


def make_inputs(rng):
    t = np.sort(rng.uniform(0.0, 10.0, 14))
    sigma = 0.5 + 0.1 * rng.random(14)
    rv = 12.0 * np.cos(2.0 * math.pi * t / PERIOD) + sigma * rng.standard_normal(14)
    return 11.0, 0.3, 0.7, 0.2, t, rv, sigma


fun = neg_log_likelihood
argnums = (0, 1, 2, 3)
fd_step = 1e-6


def jax_fun(K, e, omega, phase, t, rv, sigma):
    M = 2.0 * math.pi * t / PERIOD + phase
    E = M + e * jnp.sin(M)
    for _ in range(20):         # converged: further steps change nothing
        E = E - (E - e * jnp.sin(E) - M) / (1.0 - e * jnp.cos(E))
    nu = 2.0 * jnp.arctan2(jnp.sqrt(1.0 + e) * jnp.sin(E / 2.0),
                           jnp.sqrt(1.0 - e) * jnp.cos(E / 2.0))
    model = K * (jnp.cos(nu + omega) + e * jnp.cos(omega))
    var = sigma ** 2 + 0.1 ** 2
    return 0.5 * jnp.sum((rv - model) ** 2 / var + jnp.log(2.0 * math.pi * var))
