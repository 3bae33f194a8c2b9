"""The log-likelihood of a mixture of Student-t distributions (robust
clustering), with the component densities from ``scipy.special.gammaln``, the
mixture weights from unconstrained logits via ``scipy.special.log_softmax``
and the sum over components by ``scipy.special.logsumexp``; the degrees of
freedom are a parameter too (``softplus`` of a raw value)."""
import numpy as np
from scipy import special
import jax.numpy as jnp
import jax.scipy.special as jspecial


def softplus(x):
    return np.logaddexp(0.0, x)


def student_t_logpdf(x, loc, scale, df):
    z = (x - loc) / scale
    return (special.gammaln((df + 1) / 2) - special.gammaln(df / 2)
            - 0.5 * np.log(df * np.pi) - np.log(scale)
            - (df + 1) / 2 * np.log1p(z ** 2 / df))


def mixture_nll(logits, locs, log_scales, raw_df, x):
    log_w = special.log_softmax(logits)
    df = softplus(raw_df) + 1.0
    comp = student_t_logpdf(x[:, None], locs[None, :], np.exp(log_scales)[None, :], df)
    return -np.sum(special.logsumexp(comp + log_w, axis=1))


def make_inputs(rng):
    x = np.concatenate([rng.standard_t(3, 8) - 2.0, rng.standard_t(3, 8) + 2.0])
    return (0.1 * rng.standard_normal(3), np.array([-2.0, 0.0, 2.0]) + 0.1 * rng.standard_normal(3),
            0.1 * rng.standard_normal(3), 1.5, x)


fun = mixture_nll
argnums = (0, 1, 2, 3, 4)


def jax_fun(logits, locs, log_scales, raw_df, x):
    log_w = logits - jspecial.logsumexp(logits)
    df = jnp.logaddexp(0.0, raw_df) + 1.0
    scale = jnp.exp(log_scales)[None, :]
    z = (x[:, None] - locs[None, :]) / scale
    comp = (jspecial.gammaln((df + 1) / 2) - jspecial.gammaln(df / 2)
            - 0.5 * jnp.log(df * jnp.pi) - jnp.log(scale) - (df + 1) / 2 * jnp.log1p(z ** 2 / df))
    return -jnp.sum(jspecial.logsumexp(comp + log_w, axis=1))
