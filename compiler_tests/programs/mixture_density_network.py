"""A mixture density network: an MLP maps each input to the logits, means and
log standard deviations of a K-component Gaussian mixture over a scalar
target; the negative log-likelihood is computed stably with
``scipy.special.logsumexp`` over components, with ``**kwargs`` passed through
to the network and an entropy bonus on the mixing weights."""
import numpy as np
from scipy.special import logsumexp
import jax.numpy as jnp
import jax.scipy.special as jsp


def mlp(params, x, activation=np.tanh):
    h = x
    for W, b in params[:-1]:
        h = activation(h @ W + b)
    W, b = params[-1]
    return h @ W + b


def mixture_heads(out, n_components):
    logits = out[:, :n_components]
    means = out[:, n_components:2 * n_components]
    log_sigmas = np.clip(out[:, 2 * n_components:], -5.0, 5.0)
    log_weights = logits - logsumexp(logits, axis=1, keepdims=True)
    return log_weights, means, log_sigmas


def gaussian_log_pdf(y, mean, log_sigma):
    return -0.5 * ((y - mean) / np.exp(log_sigma)) ** 2 - log_sigma - 0.5 * np.log(2 * np.pi)


def mdn_loss(params, x, y, n_components=3, entropy_weight=0.01, **net_kwargs):
    log_w, means, log_s = mixture_heads(mlp(params, x, **net_kwargs), n_components)
    log_lik = logsumexp(log_w + gaussian_log_pdf(y[:, None], means, log_s), axis=1)
    entropy = -np.sum(np.exp(log_w) * log_w, axis=1)
    return -np.mean(log_lik) - entropy_weight * np.mean(entropy)


def make_inputs(rng):
    sizes = [2, 8, 9]
    params = [(rng.standard_normal((m, n)) / np.sqrt(m), 0.1 * rng.standard_normal(n))
              for m, n in zip(sizes[:-1], sizes[1:])]
    x = rng.standard_normal((12, 2))
    return params, x, np.sin(2 * x[:, 0]) + 0.2 * rng.standard_normal(12)


fun = mdn_loss
argnums = (0, 1, 2)


def jax_fun(params, x, y):
    (W1, b1), (W2, b2) = params
    out = jnp.tanh(x @ W1 + b1) @ W2 + b2
    logits, means, log_s = out[:, :3], out[:, 3:6], jnp.clip(out[:, 6:], -5.0, 5.0)
    log_w = logits - jsp.logsumexp(logits, axis=1, keepdims=True)
    log_pdf = -0.5 * ((y[:, None] - means) / jnp.exp(log_s)) ** 2 - log_s - 0.5 * jnp.log(2 * jnp.pi)
    entropy = -jnp.sum(jnp.exp(log_w) * log_w, axis=1)
    return -jnp.mean(jsp.logsumexp(log_w + log_pdf, axis=1)) - 0.01 * jnp.mean(entropy)
