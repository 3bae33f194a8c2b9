"""The loss function of Karpathy's minimal character-level RNN, in its
famous style: per-time-step dicts ``xs, hs, ys, ps = {}, {}, {}, {}``
filled in the loop, ``hs[-1] = np.copy(hprev)``, one-hot inputs built
with ``np.zeros((vocab_size, 1))`` and an item store, column-vector
matmuls, and the cross-entropy of the target character read with
``ps[t][targets[t], 0]``. Differentiated with respect to all five
parameters and the previous hidden state."""
import numpy as np
import jax.numpy as jnp

VOCAB, HIDDEN = 5, 6


def loss_fun(Wxh, Whh, Why, bh, by, hprev, inputs, targets):
    xs, hs, ys, ps = {}, {}, {}, {}
    hs[-1] = np.copy(hprev)
    loss = 0
    for t in range(len(inputs)):
        xs[t] = np.zeros((VOCAB, 1))
        xs[t][inputs[t]] = 1
        hs[t] = np.tanh(np.dot(Wxh, xs[t]) + np.dot(Whh, hs[t - 1]) + bh)
        ys[t] = np.dot(Why, hs[t]) + by
        ps[t] = np.exp(ys[t]) / np.sum(np.exp(ys[t]))
        loss += -np.log(ps[t][targets[t], 0])
    return loss


def make_inputs(rng):
    Wxh = 0.3 * rng.standard_normal((HIDDEN, VOCAB))
    Whh = 0.3 * rng.standard_normal((HIDDEN, HIDDEN))
    Why = 0.3 * rng.standard_normal((VOCAB, HIDDEN))
    bh, by = np.zeros((HIDDEN, 1)), np.zeros((VOCAB, 1))
    hprev = 0.1 * rng.standard_normal((HIDDEN, 1))
    text = [int(c) for c in rng.integers(0, VOCAB, 9)]
    return Wxh, Whh, Why, bh, by, hprev, text[:-1], text[1:]


fun = loss_fun
argnums = (0, 1, 2, 3, 4, 5)


def jax_fun(Wxh, Whh, Why, bh, by, hprev, inputs, targets):
    h, loss = hprev, 0.0
    for t in range(len(inputs)):
        x = jnp.zeros((VOCAB, 1)).at[inputs[t]].set(1.0)
        h = jnp.tanh(Wxh @ x + Whh @ h + bh)
        y = Why @ h + by
        p = jnp.exp(y) / jnp.sum(jnp.exp(y))
        loss += -jnp.log(p[targets[t], 0])
    return loss
