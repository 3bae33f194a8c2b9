"""A loss assembled from decorators the way research code grows: a
``@standardize`` decorator z-scores the design matrix (statistics computed
from the data, no gradient wanted through them, but the matrix itself is
differentiated), a ``@memoize_basis`` decorator caches a constant polynomial
exponent table in a closure dict keyed by the degree, a ``@scaled(weight)``
decorator factory multiplies the result, and ``functools.wraps`` keeps the
names; the features are built with ``np.power`` broadcasting."""
import functools

import numpy as np
import jax.numpy as jnp


def standardize(fn):
    @functools.wraps(fn)
    def wrapper(X, *args, **kwargs):
        mu = X.mean(axis=0)
        sigma = X.std(axis=0) + 1e-8
        return fn((X - mu) / sigma, *args, **kwargs)
    return wrapper


def memoize_basis(fn):
    cache = {}

    @functools.wraps(fn)
    def wrapper(X, w, degree=2):
        if degree not in cache:
            cache[degree] = np.arange(1, degree + 1)
        return fn(X, w, cache[degree])
    return wrapper


def scaled(weight):
    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            return weight * fn(*args, **kwargs)
        return wrapper
    return decorate


@standardize
@memoize_basis
def predict(X, w, exponents):
    feats = np.power(X[:, :, None], exponents).reshape(X.shape[0], -1)
    return feats @ w


@scaled(0.5)
def loss(w, X, y):
    return np.mean((predict(X, w, degree=3) - y) ** 2)


def make_inputs(rng):
    X = rng.standard_normal((10, 2))
    return 0.3 * rng.standard_normal(6), X, rng.standard_normal(10)


fun = loss
argnums = (0, 1, 2)


def jax_fun(w, X, y):
    Z = (X - X.mean(axis=0)) / (X.std(axis=0) + 1e-8)
    feats = jnp.power(Z[:, :, None], jnp.arange(1, 4)).reshape(X.shape[0], -1)
    return 0.5 * jnp.mean((feats @ w - y) ** 2)
