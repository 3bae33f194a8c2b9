"""Word2vec's skip-gram with negative sampling, in the loop-over-pairs style
of from-scratch tutorials: (center, context) pairs from a sliding window
over a token list, embedding rows looked up by integer indexing (the same
word appears many times, so gradients of repeated rows must add up),
negative samples drawn once from a fixed table and stacked into a matrix
read by fancy indexing, and a log-sigmoid loss via ``np.logaddexp``.
Differentiated with respect to the input and output embedding matrices."""
import numpy as np
import jax.numpy as jnp

VOCAB, DIM, WINDOW, NEGATIVES = 7, 4, 2, 3


def log_sigmoid(z):
    return -np.logaddexp(0.0, -z)


def skipgram_pairs(tokens, window=WINDOW):
    pairs = []
    for i, center in enumerate(tokens):
        for j in range(max(0, i - window), min(len(tokens), i + window + 1)):
            if j != i:
                pairs.append((center, tokens[j]))
    return pairs


def sgns_loss(W_in, W_out, tokens, negatives):
    total = 0.0
    pairs = skipgram_pairs(tokens)
    for k, (center, context) in enumerate(pairs):
        v = W_in[center]
        positive = log_sigmoid(W_out[context] @ v)
        negative = np.sum(log_sigmoid(-(W_out[negatives[k]] @ v)))
        total -= positive + negative
    return total / len(pairs)


def make_inputs(rng):
    tokens = [int(t) for t in rng.integers(0, VOCAB, 8)]
    n_pairs = len(skipgram_pairs(tokens))
    negatives = rng.integers(0, VOCAB, (n_pairs, NEGATIVES))
    return (0.3 * rng.standard_normal((VOCAB, DIM)), 0.3 * rng.standard_normal((VOCAB, DIM)),
            tokens, negatives)


fun = sgns_loss
argnums = (0, 1)
jax_jit = False          # the tokens are Python ints that index


def jax_fun(W_in, W_out, tokens, negatives):
    pairs = skipgram_pairs(tokens)
    centers = np.array([c for c, _ in pairs])
    contexts = np.array([c for _, c in pairs])
    v = W_in[centers]
    ls = lambda z: -jnp.logaddexp(0.0, -z)   # noqa: E731
    positive = ls(jnp.sum(W_out[contexts] * v, axis=1))
    negative = jnp.sum(ls(-jnp.einsum("pkd,pd->pk", W_out[negatives], v)), axis=1)
    return -jnp.sum(positive + negative) / len(pairs)
