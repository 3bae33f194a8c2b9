"""A listwise learning-to-rank objective as IR code writes it: documents
scored by a linear model, a differentiable "soft rank" from pairwise
sigmoids, and a DCG whose positions come from ``enumerate(..., start=1)``
(rank 1 is the top) over the relevance labels sorted by the scores, plus a
ListNet cross-entropy over the top-k; the queries are walked with
``enumerate(zip(...), 1)``."""
import numpy as np
import jax.numpy as jnp


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def soft_ranks(scores, temperature):
    diff = (scores[None, :] - scores[:, None]) / temperature
    return 1.0 + np.sum(sigmoid(diff), axis=1) - 0.5


def soft_dcg(scores, relevance, temperature=0.5):
    ranks = soft_ranks(scores, temperature)
    gains = (2.0 ** relevance - 1.0) / np.log2(1.0 + ranks)
    return np.sum(gains)


def ideal_dcg(relevance):
    total = 0.0
    for position, rel in enumerate(sorted(relevance, reverse=True), start=1):
        total += (2.0 ** rel - 1.0) / np.log2(1.0 + position)
    return total


def listnet(scores, relevance, k=3):
    top = np.argsort(-relevance)[:k]
    p_true = np.exp(relevance[top]) / np.sum(np.exp(relevance[top]))
    log_p = scores[top] - np.log(np.sum(np.exp(scores[top])))
    return -np.sum(p_true * log_p)


def ranking_loss(w, features, relevance, alpha=0.3):
    loss = 0.0
    for q, (X, rel) in enumerate(zip(features, relevance), 1):
        scores = X @ w
        ndcg = soft_dcg(scores, rel) / ideal_dcg(list(rel))
        loss += (1.0 - ndcg) / q + alpha * listnet(scores, rel)
    return loss


def make_inputs(rng):
    features = [rng.standard_normal((5, 3)) for _ in range(3)]
    relevance = [rng.integers(0, 4, 5).astype(float) for _ in range(3)]
    return 0.5 * rng.standard_normal(3), features, relevance


fun = ranking_loss
argnums = (0, 1)


def jax_fun(w, features, relevance):
    loss = 0.0
    for q, (X, rel) in enumerate(zip(features, relevance), 1):
        s = X @ w
        ranks = 1.0 + jnp.sum(1.0 / (1.0 + jnp.exp(-(s[None, :] - s[:, None]) / 0.5)), axis=1) - 0.5
        dcg = jnp.sum((2.0 ** rel - 1.0) / jnp.log2(1.0 + ranks))
        ideal = sum((2.0 ** r - 1.0) / np.log2(1.0 + p)
                    for p, r in enumerate(sorted(np.asarray(rel), reverse=True), start=1))
        top = np.argsort(-np.asarray(rel))[:3]
        p_true = jnp.exp(rel[top]) / jnp.sum(jnp.exp(rel[top]))
        log_p = s[top] - jnp.log(jnp.sum(jnp.exp(s[top])))
        loss += (1.0 - dcg / ideal) / q + 0.3 * -jnp.sum(p_true * log_p)
    return loss


jax_jit = False             # the ideal DCG sorts the labels in Python
