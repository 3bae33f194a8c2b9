"""An LSTM over a sequence: one fused gate matrix sliced into the four gates,
the cell returns (h, c) as a tuple, and the last hidden state is read out
into a logistic classification loss."""
import numpy as np
import jax.numpy as jnp

N_IN, H, T = 3, 4, 6


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def lstm_cell(params, x, state):
    h, c = state
    z = np.concatenate([x, h]) @ params["W"] + params["b"]
    i = sigmoid(z[:H])
    f = sigmoid(z[H:2 * H] + 1.0)      # forget-gate bias of one, as usual
    o = sigmoid(z[2 * H:3 * H])
    g = np.tanh(z[3 * H:])
    c = f * c + i * g
    h = o * np.tanh(c)
    return h, c


def lstm_loss(params, xs, label):
    state = (np.zeros(H), np.zeros(H))
    for x in xs:
        state = lstm_cell(params, x, state)
    h_final = state[0]
    logit = h_final @ params["w_out"] + params["b_out"]
    return np.logaddexp(0.0, -label * logit)


def make_inputs(rng):
    params = {
        "W": 0.5 * rng.standard_normal((N_IN + H, 4 * H)),
        "b": 0.1 * rng.standard_normal(4 * H),
        "w_out": rng.standard_normal(H),
        "b_out": 0.2,
    }
    return params, rng.standard_normal((T, N_IN)), 1.0


fun = lstm_loss
argnums = (0, 1)


def jax_fun(params, xs, label):
    sig = lambda v: 1.0 / (1.0 + jnp.exp(-v))
    h, c = jnp.zeros(H), jnp.zeros(H)
    for x in xs:
        z = jnp.concatenate([x, h]) @ params["W"] + params["b"]
        i, f, o = sig(z[:H]), sig(z[H:2 * H] + 1.0), sig(z[2 * H:3 * H])
        c = f * c + i * jnp.tanh(z[3 * H:])
        h = o * jnp.tanh(c)
    logit = h @ params["w_out"] + params["b_out"]
    return jnp.logaddexp(0.0, -label * logit)
