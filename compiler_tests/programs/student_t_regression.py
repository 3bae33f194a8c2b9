"""Robust Bayesian linear regression: a Student-t likelihood written with
``scipy.special.gammaln`` (degrees of freedom learned through a softplus),
a Gaussian prior on the weights from ``scipy.stats.norm.logpdf`` and a
half-Cauchy-ish prior on the log scale; the objective is the negative log
posterior, as handed to a MAP optimiser."""
import numpy as np
from scipy import special, stats
import jax.numpy as jnp
import jax.scipy.special as jspecial
import jax.scipy.stats as jstats


def softplus(x):
    return np.log1p(np.exp(x))


def student_t_logpdf(r, nu, scale):
    return (special.gammaln((nu + 1) / 2) - special.gammaln(nu / 2)
            - 0.5 * np.log(nu * np.pi) - np.log(scale)
            - (nu + 1) / 2 * np.log1p((r / scale) ** 2 / nu))


def neg_log_posterior(w, log_scale, raw_nu, X, y):
    nu = softplus(raw_nu) + 1.0
    scale = np.exp(log_scale)
    resid = y - X @ w
    loglik = np.sum(student_t_logpdf(resid, nu, scale))
    logprior = np.sum(stats.norm.logpdf(w, loc=0.0, scale=2.0))
    logprior = logprior - np.log1p(scale ** 2)
    return -(loglik + logprior)


def make_inputs(rng):
    X = rng.standard_normal((10, 3))
    y = X @ np.array([1.0, -0.5, 0.3]) + 0.2 * rng.standard_t(3, size=10)
    return rng.standard_normal(3) * 0.3, -1.0, 0.7, X, y


fun = neg_log_posterior
argnums = (0, 1, 2)


def jax_fun(w, log_scale, raw_nu, X, y):
    nu = jnp.log1p(jnp.exp(raw_nu)) + 1.0
    scale = jnp.exp(log_scale)
    r = y - X @ w
    ll = (jspecial.gammaln((nu + 1) / 2) - jspecial.gammaln(nu / 2)
          - 0.5 * jnp.log(nu * jnp.pi) - jnp.log(scale)
          - (nu + 1) / 2 * jnp.log1p((r / scale) ** 2 / nu))
    lp = jnp.sum(jstats.norm.logpdf(w, loc=0.0, scale=2.0)) - jnp.log1p(scale ** 2)
    return -(jnp.sum(ll) + lp)
