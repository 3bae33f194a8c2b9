"""A mixture cure model for censored survival times, written as a
biostatistician does with ``scipy.special``: a probit cure fraction with
``log_ndtr`` (both tails, for stability), a Weibull latency distribution
whose log-density uses ``xlogy`` for ``(k - 1) log t``, censored rows
contributing ``np.logaddexp`` of the cured and the not-yet-failed parts,
events selected with a boolean mask, and a Gamma prior on the shape with
``gammaln``. Differentiated with respect to the regression coefficients and
the Weibull's log-shape and log-scale."""
import numpy as np
from scipy import special
import jax.numpy as jnp
from jax.scipy import special as jspecial


def weibull_log_terms(t, log_k, log_lam):
    k, lam = np.exp(log_k), np.exp(log_lam)
    z = (t / lam) ** k
    log_pdf = log_k - log_lam + special.xlogy(k - 1.0, t / lam) - z
    return log_pdf, -z                                   # log f, log S


def log_likelihood(beta, log_k, log_lam, X, t, event, a=2.0, b=1.0):
    eta = X @ beta
    log_cured, log_uncured = special.log_ndtr(eta), special.log_ndtr(-eta)
    log_pdf, log_surv = weibull_log_terms(t, log_k, log_lam)
    ll_event = log_uncured[event] + log_pdf[event]
    ll_censored = np.logaddexp(log_cured[~event], log_uncured[~event] + log_surv[~event])
    k = np.exp(log_k)
    log_prior = special.xlogy(a - 1.0, k) - b * k - special.gammaln(a) + a * np.log(b)
    return np.sum(ll_event) + np.sum(ll_censored) + log_prior


def neg_log_posterior(beta, log_k, log_lam, X, t, event):
    return -log_likelihood(beta, log_k, log_lam, X, t, event)


def make_inputs(rng):
    n = 20
    X = np.column_stack([np.ones(n), rng.standard_normal((n, 2))])
    t = rng.weibull(1.5, n) * 2.0
    event = rng.uniform(size=n) < 0.6
    return 0.3 * rng.standard_normal(3), 0.3, 0.5, X, t, event


fun = neg_log_posterior
argnums = (0, 1, 2)


def jax_fun(beta, log_k, log_lam, X, t, event):
    eta = X @ beta
    k, lam = jnp.exp(log_k), jnp.exp(log_lam)
    z = (t / lam) ** k
    log_pdf = log_k - log_lam + jspecial.xlogy(k - 1.0, t / lam) - z
    lc, lu = jspecial.log_ndtr(eta), jspecial.log_ndtr(-eta)
    ll = jnp.sum(jnp.where(event, lu + log_pdf, 0.0)) \
        + jnp.sum(jnp.where(event, 0.0, jnp.logaddexp(lc, lu - z)))
    prior = jspecial.xlogy(1.0, k) - k - jspecial.gammaln(2.0)
    return -(ll + prior)
