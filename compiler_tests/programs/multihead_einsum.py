"""Multi-head attention written with ``np.einsum`` the way transformer
code is: projection weights shaped (d_model, heads, d_head), scores by
``'qhd,khd->hqk'``, a softmax over keys, values mixed by ``'hqk,khd->qhd'``
and merged back by ``'qhd,hdm->qm'``; followed by a bilinear scoring head
``'bi,ij,bj->b'`` against a set of candidate embeddings."""
import numpy as np
import jax.numpy as jnp

T, D, H, DH = 4, 6, 2, 3


def softmax(x, axis=-1):
    x = x - x.max(axis=axis, keepdims=True)
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


def multihead(params, x):
    q = np.einsum("td,dhk->thk", x, params["Wq"])
    k = np.einsum("td,dhk->thk", x, params["Wk"])
    v = np.einsum("td,dhk->thk", x, params["Wv"])
    scores = np.einsum("qhd,khd->hqk", q, k) / np.sqrt(DH)
    attn = softmax(scores, axis=-1)
    mixed = np.einsum("hqk,khd->qhd", attn, v)
    return np.einsum("qhd,hdm->qm", mixed, params["Wo"])


def bilinear_scores(params, x, candidates):
    pooled = multihead(params, x).mean(axis=0)
    return np.einsum("i,ij,bj->b", pooled, params["B"], candidates)


def ranking_loss(params, x, candidates, label):
    s = bilinear_scores(params, x, candidates)
    return np.log(np.sum(np.exp(s - s.max()))) + s.max() - s[label]


def make_inputs(rng):
    params = {"Wq": rng.standard_normal((D, H, DH)) / 2, "Wk": rng.standard_normal((D, H, DH)) / 2,
              "Wv": rng.standard_normal((D, H, DH)) / 2, "Wo": rng.standard_normal((H, DH, D)) / 2,
              "B": rng.standard_normal((D, 5)) / 2}
    return params, rng.standard_normal((T, D)), rng.standard_normal((3, 5)), 1


fun = ranking_loss
argnums = (0, 1, 2)


def jax_fun(params, x, candidates, label):
    q = jnp.einsum("td,dhk->thk", x, params["Wq"])
    k = jnp.einsum("td,dhk->thk", x, params["Wk"])
    v = jnp.einsum("td,dhk->thk", x, params["Wv"])
    scores = jnp.einsum("qhd,khd->hqk", q, k) / np.sqrt(DH)
    scores = scores - scores.max(axis=-1, keepdims=True)
    attn = jnp.exp(scores) / jnp.exp(scores).sum(axis=-1, keepdims=True)
    out = jnp.einsum("qhd,hdm->qm", jnp.einsum("hqk,khd->qhd", attn, v), params["Wo"])
    s = jnp.einsum("i,ij,bj->b", out.mean(axis=0), params["B"], candidates)
    return jnp.log(jnp.sum(jnp.exp(s - s.max()))) + s.max() - s[label]
