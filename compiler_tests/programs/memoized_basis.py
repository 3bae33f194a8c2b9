"""Spline-free smoothing with a cached design matrix: a hand-written
``memoize`` decorator (a dict keyed by the arguments, ``functools.wraps``)
caches a Chebyshev basis evaluated on a fixed grid, and
``functools.lru_cache`` caches a second-difference penalty matrix; the loss
fits basis coefficients to noisy samples with a roughness penalty, called
twice so the second call reads the cached arrays."""
import functools

import numpy as np
import jax.numpy as jnp


def memoize(fn):
    cache = {}

    @functools.wraps(fn)
    def wrapper(*args):
        if args not in cache:
            cache[args] = fn(*args)
        return cache[args]
    wrapper.cache = cache
    return wrapper


@memoize
def chebyshev_basis(n_points, degree):
    t = np.linspace(-1.0, 1.0, n_points)
    columns = [np.ones_like(t), t]
    for _ in range(2, degree + 1):
        columns.append(2.0 * t * columns[-1] - columns[-2])
    return np.stack(columns[:degree + 1], axis=1)


@functools.lru_cache(maxsize=None)
def difference_penalty(size, order=2):
    D = np.eye(size)
    for _ in range(order):
        D = D[1:] - D[:-1]
    return D.T @ D


def smoothing_loss(coeffs, samples, lam=0.1):
    n, degree = len(samples), len(coeffs) - 1
    B = chebyshev_basis(n, degree)
    fit = B @ coeffs
    roughness = coeffs @ difference_penalty(len(coeffs)) @ coeffs
    return np.mean((fit - samples) ** 2) + lam * roughness


def two_fits(coeffs, samples):
    first = smoothing_loss(coeffs, samples)
    second = smoothing_loss(coeffs * 0.5, samples[::-1].copy(), lam=0.2)
    return first + second


def make_inputs(rng):
    t = np.linspace(-1.0, 1.0, 11)
    return rng.standard_normal(5), np.sin(2.5 * t) + 0.1 * rng.standard_normal(11)


fun = two_fits
argnums = (0, 1)


def jax_fun(coeffs, samples):
    B = np.asarray(chebyshev_basis(len(samples), len(coeffs) - 1))
    P = np.asarray(difference_penalty(len(coeffs)))

    def loss(c, s, lam):
        return jnp.mean((B @ c - s) ** 2) + lam * (c @ P @ c)
    return loss(coeffs, samples, 0.1) + loss(coeffs * 0.5, samples[::-1], 0.2)
