"""An Elman RNN run over a sequence, its parameters in a dict, predicting the
next value at every step; the loss is averaged over the sequence."""
import numpy as np
import jax.numpy as jnp

N_IN, N_HIDDEN, N_OUT, T = 3, 6, 2, 7


def init_rnn(rng, n_in, n_hidden, n_out, scale=0.4):
    return {
        "W_xh": scale * rng.standard_normal((n_in, n_hidden)),
        "W_hh": scale * rng.standard_normal((n_hidden, n_hidden)),
        "b_h": np.zeros(n_hidden),
        "W_hy": scale * rng.standard_normal((n_hidden, n_out)),
        "b_y": np.zeros(n_out),
    }


def rnn_step(params, h, x_t):
    return np.tanh(x_t @ params["W_xh"] + h @ params["W_hh"] + params["b_h"])


def sequence_loss(params, xs, ys):
    h = np.zeros(params["W_hh"].shape[0])
    total = 0.0
    for x_t, y_t in zip(xs, ys):
        h = rnn_step(params, h, x_t)
        y_hat = h @ params["W_hy"] + params["b_y"]
        total = total + np.sum((y_hat - y_t) ** 2)
    return total / len(xs)


def make_inputs(rng):
    params = init_rnn(rng, N_IN, N_HIDDEN, N_OUT)
    params["b_h"] = 0.1 * rng.standard_normal(N_HIDDEN)
    xs = rng.standard_normal((T, N_IN))
    ys = rng.standard_normal((T, N_OUT))
    return params, xs, ys


fun = sequence_loss
argnums = (0, 1)


def jax_fun(params, xs, ys):
    h = jnp.zeros(params["W_hh"].shape[0])
    total = 0.0
    for x_t, y_t in zip(xs, ys):
        h = jnp.tanh(x_t @ params["W_xh"] + h @ params["W_hh"] + params["b_h"])
        y_hat = h @ params["W_hy"] + params["b_y"]
        total = total + jnp.sum((y_hat - y_t) ** 2)
    return total / len(xs)
