"""An Elman RNN over a long-ish sequence where the cell is wrapped in
``pb.checkpoint`` to save memory (recompute the cell's internals in the
backward pass), as one does with ``jax.checkpoint``; the readout is a
sequence-level regression on the mean hidden state."""
import numpy as np
import jax
import jax.numpy as jnp

import pullback as pb


def cell(params, h, x):
    pre = h @ params["Wh"] + x @ params["Wx"] + params["b"]
    return np.tanh(pre)


checkpointed_cell = pb.checkpoint(cell)


def rnn_loss(params, xs, y):
    h = np.zeros(params["Wh"].shape[0])
    total = np.zeros_like(h)
    for t in range(xs.shape[0]):
        h = checkpointed_cell(params, h, xs[t])
        total = total + h
    pred = (total / xs.shape[0]) @ params["Wo"]
    return np.sum((pred - y) ** 2)


def make_inputs(rng):
    H, D, n_out, T = 4, 3, 2, 12
    params = {"Wh": 0.4 * rng.standard_normal((H, H)), "Wx": 0.5 * rng.standard_normal((D, H)),
              "b": 0.1 * rng.standard_normal(H), "Wo": rng.standard_normal((H, n_out))}
    return params, rng.standard_normal((T, D)), rng.standard_normal(n_out)


fun = rnn_loss
argnums = (0, 1)


def jax_fun(params, xs, y):
    @jax.checkpoint
    def jcell(params, h, x):
        return jnp.tanh(h @ params["Wh"] + x @ params["Wx"] + params["b"])
    h = jnp.zeros(params["Wh"].shape[0])
    total = jnp.zeros_like(h)
    for t in range(xs.shape[0]):
        h = jcell(params, h, xs[t])
        total = total + h
    return jnp.sum(((total / xs.shape[0]) @ params["Wo"] - y) ** 2)
