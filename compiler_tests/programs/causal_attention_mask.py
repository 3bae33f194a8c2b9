"""A decoder-only attention block written by hand the way tutorials write it:
a causal mask from ``np.triu`` filled with ``-np.inf`` through ``np.where``,
a numerically stable softmax subtracting the row maximum, heads split with
``reshape``/``transpose`` and contracted with ``np.einsum``, a residual and a
layer norm using ``var``; the loss is a next-token regression error."""
import numpy as np
import jax.numpy as jnp

T, D, N_HEADS = 5, 8, 2


def softmax(scores, axis=-1):
    shifted = scores - scores.max(axis=axis, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=axis, keepdims=True)


def layer_norm(x, gamma, beta, eps=1e-5):
    mu = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return gamma * (x - mu) / np.sqrt(var + eps) + beta


def split_heads(x):
    t, d = x.shape
    return x.reshape(t, N_HEADS, d // N_HEADS).transpose(1, 0, 2)


def causal_self_attention(x, Wq, Wk, Wv, Wo):
    q, k, v = split_heads(x @ Wq), split_heads(x @ Wk), split_heads(x @ Wv)
    d_head = q.shape[-1]
    scores = np.einsum("hqd,hkd->hqk", q, k) / np.sqrt(d_head)
    mask = np.triu(np.ones((T, T), dtype=bool), k=1)
    scores = np.where(mask, -np.inf, scores)
    weights = softmax(scores)
    heads = np.einsum("hqk,hkd->hqd", weights, v)
    merged = heads.transpose(1, 0, 2).reshape(T, D)
    return merged @ Wo


def block_loss(x, Wq, Wk, Wv, Wo, gamma, beta, targets):
    h = layer_norm(x + causal_self_attention(x, Wq, Wk, Wv, Wo), gamma, beta)
    preds = h[:-1]
    return np.mean((preds - targets[1:]) ** 2)


def make_inputs(rng):
    W = [rng.standard_normal((D, D)) / np.sqrt(D) for _ in range(4)]
    return (rng.standard_normal((T, D)), *W, 1.0 + 0.1 * rng.standard_normal(D),
            0.1 * rng.standard_normal(D), rng.standard_normal((T, D)))


fun = block_loss
argnums = (0, 1, 2, 3, 4, 5, 6)


def jax_fun(x, Wq, Wk, Wv, Wo, gamma, beta, targets):
    def heads(a):
        return a.reshape(T, N_HEADS, D // N_HEADS).transpose(1, 0, 2)
    q, k, v = heads(x @ Wq), heads(x @ Wk), heads(x @ Wv)
    scores = jnp.einsum("hqd,hkd->hqk", q, k) / jnp.sqrt(D // N_HEADS)
    scores = jnp.where(jnp.triu(jnp.ones((T, T), dtype=bool), k=1), -jnp.inf, scores)
    scores = scores - scores.max(axis=-1, keepdims=True)
    w = jnp.exp(scores) / jnp.exp(scores).sum(axis=-1, keepdims=True)
    out = jnp.einsum("hqk,hkd->hqd", w, v).transpose(1, 0, 2).reshape(T, D) @ Wo
    y = x + out
    mu, var = y.mean(axis=-1, keepdims=True), y.var(axis=-1, keepdims=True)
    h = gamma * (y - mu) / jnp.sqrt(var + 1e-5) + beta
    return jnp.mean((h[:-1] - targets[1:]) ** 2)
