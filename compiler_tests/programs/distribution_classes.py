"""A small probability library in the style of a course's homework: a base
class ``Distribution`` whose ``log_prob`` calls a ``_log_unnormalised`` and
a ``_log_normaliser`` that subclasses override, ``@classmethod`` factories
(``Normal.from_natural(eta1, eta2)``, ``Gamma.from_mean_std``), a
``@staticmethod`` helper, a ``@property`` for the mean, and a KL between
two normals as a method. A variational objective (expected log-likelihood
by fixed samples, minus a KL) is differentiated with respect to the
variational and prior parameters."""
import math

import numpy as np
from scipy.special import gammaln
import jax.numpy as jnp
from jax.scipy.special import gammaln as jgammaln


class Distribution:
    def log_prob(self, x):
        return self._log_unnormalised(x) - self._log_normaliser()

    def _log_unnormalised(self, x):
        raise NotImplementedError

    def _log_normaliser(self):
        raise NotImplementedError


class Normal(Distribution):
    def __init__(self, loc, scale):
        self.loc = loc
        self.scale = scale

    @classmethod
    def from_natural(cls, eta1, eta2):
        var = -0.5 / eta2
        return cls(eta1 * var, np.sqrt(var))

    @staticmethod
    def standardise(x, loc, scale):
        return (x - loc) / scale

    @property
    def mean(self):
        return self.loc

    def _log_unnormalised(self, x):
        return -0.5 * self.standardise(x, self.loc, self.scale) ** 2

    def _log_normaliser(self):
        return np.log(self.scale) + 0.5 * math.log(2.0 * math.pi)

    def sample(self, eps):
        return self.loc + self.scale * eps

    def kl(self, other):
        return (np.log(other.scale / self.scale)
                + (self.scale ** 2 + (self.loc - other.loc) ** 2) / (2.0 * other.scale ** 2) - 0.5)


class Gamma(Distribution):
    def __init__(self, shape, rate):
        self.shape, self.rate = shape, rate

    @classmethod
    def from_mean_std(cls, mean, std):
        shape = (mean / std) ** 2
        return cls(shape, shape / mean)

    def _log_unnormalised(self, x):
        return (self.shape - 1.0) * np.log(x) - self.rate * x

    def _log_normaliser(self):
        return gammaln(self.shape) - self.shape * np.log(self.rate)


def elbo(eta1, eta2, prior_loc, noise_mean, y, eps):
    q = Normal.from_natural(eta1, eta2)
    prior = Normal(prior_loc, 1.0)
    z = q.sample(eps)                                   # samples of a positive rate
    rate = np.exp(z)
    likelihood = Gamma.from_mean_std(noise_mean, 0.5)
    ll = np.mean([np.sum(-rate_k * y + np.log(rate_k)) for rate_k in rate])
    return ll + np.sum(likelihood.log_prob(y)) - np.sum(q.kl(prior)) + 0.1 * q.mean


def make_inputs(rng):
    y = rng.gamma(2.0, 0.5, size=8)
    return 0.4, -2.0, 0.1, 1.2, y, rng.standard_normal(6)


fun = elbo
argnums = (0, 1, 2, 3)


def jax_fun(eta1, eta2, prior_loc, noise_mean, y, eps):
    var = -0.5 / eta2
    loc, scale = eta1 * var, jnp.sqrt(var)
    rate = jnp.exp(loc + scale * eps)
    ll = jnp.mean(jnp.stack([jnp.sum(-r * y + jnp.log(r)) for r in rate]))
    shape = (noise_mean / 0.5) ** 2
    g_rate = shape / noise_mean
    lp = (shape - 1.0) * jnp.log(y) - g_rate * y - (jgammaln(shape) - shape * jnp.log(g_rate))
    kl = jnp.log(1.0 / scale) + (scale ** 2 + (loc - prior_loc) ** 2) / 2.0 - 0.5
    return ll + jnp.sum(lp) - kl + 0.1 * loc
