"""A variational autoencoder: encoder and decoder MLPs as lists of layer
tuples in a dict, the reparameterisation trick with the noise passed in as
an argument, a Bernoulli likelihood on logits and the Gaussian KL term."""
import numpy as np
import jax.numpy as jnp

D_X, D_H, D_Z, BATCH = 6, 5, 2, 4


def init_mlp(rng, sizes, scale=0.3):
    return [(scale * rng.standard_normal((m, n)), np.zeros(n)) for m, n in zip(sizes[:-1], sizes[1:])]


def mlp(layers, x):
    for W, b in layers[:-1]:
        x = np.tanh(x @ W + b)
    W, b = layers[-1]
    return x @ W + b


def encode(params, x):
    out = mlp(params["encoder"], x)
    return out[:, :D_Z], out[:, D_Z:]          # mean, log variance


def reparameterise(mu, log_var, eps):
    return mu + np.exp(0.5 * log_var) * eps


def bernoulli_log_likelihood(logits, x):
    return np.sum(x * logits - np.logaddexp(0.0, logits), axis=1)


def negative_elbo(params, x, eps):
    mu, log_var = encode(params, x)
    z = reparameterise(mu, log_var, eps)
    logits = mlp(params["decoder"], z)
    kl = 0.5 * np.sum(np.exp(log_var) + mu ** 2 - 1.0 - log_var, axis=1)
    return np.mean(kl - bernoulli_log_likelihood(logits, x))


def make_inputs(rng):
    params = {"encoder": init_mlp(rng, [D_X, D_H, 2 * D_Z]),
              "decoder": init_mlp(rng, [D_Z, D_H, D_X])}
    for layers in params.values():
        for i, (W, b) in enumerate(layers):
            layers[i] = (W, 0.1 * rng.standard_normal(b.shape))
    x = (rng.uniform(size=(BATCH, D_X)) < 0.5).astype(float)
    eps = rng.standard_normal((BATCH, D_Z))
    return params, x, eps


fun = negative_elbo
argnums = (0, 2)


def _jax_mlp(layers, x):
    for W, b in layers[:-1]:
        x = jnp.tanh(x @ W + b)
    W, b = layers[-1]
    return x @ W + b


def jax_fun(params, x, eps):
    out = _jax_mlp(params["encoder"], x)
    mu, log_var = out[:, :D_Z], out[:, D_Z:]
    z = mu + jnp.exp(0.5 * log_var) * eps
    logits = _jax_mlp(params["decoder"], z)
    kl = 0.5 * jnp.sum(jnp.exp(log_var) + mu ** 2 - 1.0 - log_var, axis=1)
    ll = jnp.sum(x * logits - jnp.logaddexp(0.0, logits), axis=1)
    return jnp.mean(kl - ll)
