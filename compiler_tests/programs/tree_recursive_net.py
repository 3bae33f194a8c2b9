"""A recursive neural network over a binary parse tree given as nested
tuples of word indices: a recursive encode helper, an embedding table read by
index, and a sentiment logistic loss on the root vector."""
import numpy as np
import jax.numpy as jnp

TREE = ((0, (1, 2)), (3, (2, 4)))
D = 3


def encode(tree, params):
    if isinstance(tree, int):
        return params["embeddings"][tree]
    left, right = tree
    children = np.concatenate([encode(left, params), encode(right, params)])
    return np.tanh(children @ params["W"] + params["b"])


def sentiment_loss(params, label, tree=TREE):
    root = encode(tree, params)
    logit = root @ params["w_out"]
    return np.logaddexp(0.0, -label * logit)


def make_inputs(rng):
    params = {"embeddings": rng.standard_normal((5, D)), "W": rng.standard_normal((2 * D, D)) * 0.6,
              "b": 0.1 * rng.standard_normal(D), "w_out": rng.standard_normal(D)}
    return params, -1.0


fun = sentiment_loss
argnums = (0,)


def _jax_encode(tree, params):
    if isinstance(tree, int):
        return params["embeddings"][tree]
    children = jnp.concatenate([_jax_encode(tree[0], params), _jax_encode(tree[1], params)])
    return jnp.tanh(children @ params["W"] + params["b"])


def jax_fun(params, label):
    return jnp.logaddexp(0.0, -label * (_jax_encode(TREE, params) @ params["w_out"]))
