"""A pre-norm transformer decoder block in plain NumPy: multi-head causal
self-attention written with ``np.einsum`` (heads split by reshape and
transpose), the causal mask built with ``np.triu`` and applied with
``np.where`` before a stable softmax, a tanh-approximated GELU feed-forward
layer, residual connections, and a layer norm helper taking ``eps`` by
keyword; parameters in a nested dict, the loss a next-token regression."""
import numpy as np
import jax.numpy as jnp


def layer_norm(x, gain, bias, eps=1e-5):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return gain * (x - mu) / np.sqrt(var + eps) + bias


def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


def softmax(z, axis=-1):
    z = z - z.max(axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


def split_heads(x, n_heads):
    T, D = x.shape
    return x.reshape(T, n_heads, D // n_heads).transpose(1, 0, 2)


def causal_attention(x, p, n_heads):
    T, D = x.shape
    q, k, v = (split_heads(x @ p[name], n_heads) for name in ("Wq", "Wk", "Wv"))
    scores = np.einsum("htd,hsd->hts", q, k) / np.sqrt(D // n_heads)
    future = np.triu(np.ones((T, T), dtype=bool), k=1)
    scores = np.where(future[None, :, :], -1e9, scores)
    out = np.einsum("hts,hsd->htd", softmax(scores), v)
    return out.transpose(1, 0, 2).reshape(T, D) @ p["Wo"]


def block(x, params, n_heads=2):
    x = x + causal_attention(layer_norm(x, **params["ln1"]), params["attn"], n_heads)
    h = gelu(layer_norm(x, **params["ln2"]) @ params["mlp"]["W1"] + params["mlp"]["b1"])
    return x + h @ params["mlp"]["W2"]


def next_step_loss(params, x):
    y = block(x, params)
    return np.mean((y[:-1] - x[1:]) ** 2)


def make_inputs(rng):
    D, H = 4, 8

    def mat(m, n):
        return rng.standard_normal((m, n)) / np.sqrt(m)
    params = {"ln1": {"gain": 1.0 + 0.1 * rng.standard_normal(D), "bias": 0.1 * rng.standard_normal(D)},
              "ln2": {"gain": 1.0 + 0.1 * rng.standard_normal(D), "bias": 0.1 * rng.standard_normal(D)},
              "attn": {name: mat(D, D) for name in ("Wq", "Wk", "Wv", "Wo")},
              "mlp": {"W1": mat(D, H), "b1": 0.1 * rng.standard_normal(H), "W2": mat(H, D)}}
    return params, rng.standard_normal((5, D))


fun = next_step_loss
argnums = (0, 1)


def jax_fun(params, x):
    def ln(x, gain, bias):
        mu = x.mean(axis=-1, keepdims=True)
        return gain * (x - mu) / jnp.sqrt(((x - mu) ** 2).mean(axis=-1, keepdims=True) + 1e-5) + bias
    T, D = x.shape
    a = params["attn"]
    h = ln(x, **params["ln1"])
    q, k, v = ((h @ a[n]).reshape(T, 2, 2).transpose(1, 0, 2) for n in ("Wq", "Wk", "Wv"))
    s = jnp.einsum("htd,hsd->hts", q, k) / jnp.sqrt(2)
    s = jnp.where(jnp.triu(jnp.ones((T, T), dtype=bool), k=1)[None], -1e9, s)
    s = jnp.exp(s - s.max(axis=-1, keepdims=True))
    s = s / s.sum(axis=-1, keepdims=True)
    r = x + jnp.einsum("hts,hsd->htd", s, v).transpose(1, 0, 2).reshape(T, D) @ a["Wo"]
    z = ln(r, **params["ln2"]) @ params["mlp"]["W1"] + params["mlp"]["b1"]
    z = 0.5 * z * (1.0 + jnp.tanh(jnp.sqrt(2.0 / jnp.pi) * (z + 0.044715 * z ** 3)))
    y = r + z @ params["mlp"]["W2"]
    return jnp.mean((y[:-1] - x[1:]) ** 2)
