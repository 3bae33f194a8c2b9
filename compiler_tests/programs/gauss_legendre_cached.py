"""Expected utility by Gauss-Legendre quadrature, with the nodes and weights
cached by ``functools.lru_cache`` on a helper taking the order (an int) and
the interval mapped inside the integrand's caller; a ``functools.wraps``
decorator that counts calls in a module-level dict wraps the integrand. The
integrals are over a truncated range of a Gaussian-weighted CRRA utility
and are differentiated with respect to the mean, the scale and the
risk-aversion (a Python float)."""
import functools
from typing import Callable, Tuple

import numpy as np
import jax.numpy as jnp

CALLS = {"integrand": 0}


@functools.lru_cache(maxsize=None)
def gauss_legendre(order: int) -> Tuple[np.ndarray, np.ndarray]:
    nodes, weights = np.polynomial.legendre.leggauss(order)
    return nodes, weights


def counted(fn: Callable) -> Callable:
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        CALLS[fn.__name__] = CALLS.get(fn.__name__, 0) + 1
        return fn(*args, **kwargs)
    return wrapper


def integrate(f: Callable, a: float, b: float, order: int = 16) -> float:
    nodes, weights = gauss_legendre(order)
    x = 0.5 * (b - a) * nodes + 0.5 * (b + a)
    return 0.5 * (b - a) * np.sum(weights * f(x))


@counted
def integrand(c, mu, sigma, gamma):
    density = np.exp(-0.5 * ((c - mu) / sigma) ** 2) / (sigma * np.sqrt(2.0 * np.pi))
    utility = (c ** (1.0 - gamma) - 1.0) / (1.0 - gamma)
    return density * utility


def expected_utility(mu, sigma, gamma, lower=0.2, upper=4.0):
    mass = integrate(lambda c: integrand(c, mu, sigma, 0.0), lower, upper, order=12)
    value = integrate(lambda c: integrand(c, mu, sigma, gamma), lower, upper)
    return value / mass


def make_inputs(rng):
    return 1.5 + 0.1 * rng.standard_normal(), 0.6, 2.5


fun = expected_utility
argnums = (0, 1, 2)


def jax_fun(mu, sigma, gamma):
    def quad(gam, order):
        nodes, weights = np.polynomial.legendre.leggauss(order)
        c = 0.5 * 3.8 * nodes + 0.5 * 4.2
        density = jnp.exp(-0.5 * ((c - mu) / sigma) ** 2) / (sigma * jnp.sqrt(2.0 * jnp.pi))
        return 0.5 * 3.8 * jnp.sum(weights * density * (c ** (1.0 - gam) - 1.0) / (1.0 - gam))
    return quad(gamma, 16) / quad(0.0, 12)
