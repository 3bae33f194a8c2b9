"""A single-head causal self-attention layer with plain matmuls (no einsum):
projections from a parameter dict, scaled scores, a causal mask applied with
np.where, a stable softmax helper, an output projection and a residual."""
import numpy as np
import jax.numpy as jnp

T, D, D_K = 5, 4, 3


def softmax(z, axis=-1):
    z = z - np.max(z, axis=axis, keepdims=True)
    e = np.exp(z)
    return e / np.sum(e, axis=axis, keepdims=True)


def attention(params, X, causal=True):
    Q = X @ params["Wq"]
    K = X @ params["Wk"]
    V = X @ params["Wv"]
    scores = Q @ K.T / np.sqrt(K.shape[-1])
    if causal:
        mask = np.tril(np.ones((X.shape[0], X.shape[0]), dtype=bool))
        scores = np.where(mask, scores, -1e9)
    weights = softmax(scores, axis=-1)
    return X + (weights @ V) @ params["Wo"]


def attention_loss(params, X, target):
    out = attention(params, X)
    return np.sum((out - target) ** 2) / X.shape[0]


def make_inputs(rng):
    params = {"Wq": rng.standard_normal((D, D_K)), "Wk": rng.standard_normal((D, D_K)),
              "Wv": rng.standard_normal((D, D_K)), "Wo": rng.standard_normal((D_K, D)) * 0.5}
    return params, rng.standard_normal((T, D)), rng.standard_normal((T, D))


fun = attention_loss
argnums = (0, 1)


def jax_fun(params, X, target):
    Q, K, V = X @ params["Wq"], X @ params["Wk"], X @ params["Wv"]
    scores = Q @ K.T / jnp.sqrt(K.shape[-1])
    scores = jnp.where(jnp.tril(jnp.ones((X.shape[0], X.shape[0]), dtype=bool)), scores, -1e9)
    scores = scores - jnp.max(scores, axis=-1, keepdims=True)
    w = jnp.exp(scores) / jnp.sum(jnp.exp(scores), axis=-1, keepdims=True)
    return jnp.sum((X + (w @ V) @ params["Wo"] - target) ** 2) / X.shape[0]
