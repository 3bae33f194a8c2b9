"""Learning-to-rank losses for a linear scorer: a pairwise RankNet loss
weighted by the DCG discount of the true ordering (``np.argsort`` of the
relevance labels, then fancy indexing of the scores), a ListNet
cross-entropy between softmaxes, and a top-k hinge on ``np.sort``-ed scores;
queries come as a list of ``(features, relevance)`` pairs, combined with a
dict of loss weights and ``enumerate``."""
import numpy as np
import jax.numpy as jnp


def dcg_discounts(n):
    return 1.0 / np.log2(np.arange(n) + 2.0)


def softplus(z):
    return np.logaddexp(0.0, z)


def pairwise_rank_loss(scores, relevance):
    order = np.argsort(-relevance, kind="stable")
    s = scores[order]
    disc = dcg_discounts(len(s))
    diff = s[:, None] - s[None, :]
    better = relevance[order][:, None] > relevance[order][None, :]
    weights = np.abs(disc[:, None] - disc[None, :]) * better
    return np.sum(weights * softplus(-diff)) / max(np.sum(better), 1)


def listnet_loss(scores, relevance, temperature=1.0):
    p_true = np.exp(relevance - np.max(relevance))
    p_true = p_true / np.sum(p_true)
    z = scores / temperature
    log_p = z - np.max(z) - np.log(np.sum(np.exp(z - np.max(z))))
    return -np.sum(p_true * log_p)


def topk_hinge(scores, k=2, margin=1.0):
    top = np.sort(scores)[-k:]
    rest = np.sort(scores)[:-k]
    return np.sum(np.maximum(0.0, margin - (top[:, None] - rest[None, :]))) if rest.size else 0.0


def ranking_objective(w, queries, loss_weights):
    total = 0.0
    for q, (features, relevance) in enumerate(queries):
        scores = features @ w
        parts = {"pairwise": pairwise_rank_loss(scores, relevance),
                 "listnet": listnet_loss(scores, relevance, temperature=0.5),
                 "hinge": topk_hinge(scores)}
        total = total + sum(loss_weights[name] * value for name, value in parts.items())
    return total / len(queries)


def make_inputs(rng):
    # graded relevance from click-through rates: distinct values, no ties
    queries = [(rng.standard_normal((n, 4)), rng.uniform(0.0, 3.0, size=n)) for n in (5, 7, 4)]
    return rng.standard_normal(4), queries, {"pairwise": 1.0, "listnet": 0.5, "hinge": 0.1}


fun = ranking_objective
argnums = (0, 1)


def jax_fun(w, queries, loss_weights):
    total = 0.0
    for features, relevance in queries:
        s = features @ w
        order = jnp.argsort(-relevance, stable=True)
        so, ro = s[order], relevance[order]
        disc = 1.0 / jnp.log2(jnp.arange(len(so)) + 2.0)
        better = ro[:, None] > ro[None, :]
        weights = jnp.abs(disc[:, None] - disc[None, :]) * better
        pair = jnp.sum(weights * jnp.logaddexp(0.0, -(so[:, None] - so[None, :]))) / max(int(jnp.sum(better)), 1)
        p_true = jnp.exp(relevance - jnp.max(relevance))
        p_true = p_true / jnp.sum(p_true)
        z = s / 0.5
        listnet = -jnp.sum(p_true * (z - jnp.max(z) - jnp.log(jnp.sum(jnp.exp(z - jnp.max(z))))))
        srt = jnp.sort(s)
        hinge = jnp.sum(jnp.maximum(0.0, 1.0 - (srt[-2:][:, None] - srt[:-2][None, :])))
        total = total + loss_weights["pairwise"] * pair + loss_weights["listnet"] * listnet \
            + loss_weights["hinge"] * hinge
    return total / len(queries)


jax_jit = False
