"""A GRU encoder over a sequence whose hidden states are appended to a list,
stacked, and mean-pooled into a regression head; parameters in a dict, the
cell's gates each a small helper call."""
import numpy as np
import jax.numpy as jnp

N_IN, H, T = 2, 4, 5


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def gate(params, name, x, h):
    return x @ params["W_" + name] + h @ params["U_" + name] + params["b_" + name]


def gru_cell(params, x, h):
    z = sigmoid(gate(params, "z", x, h))
    r = sigmoid(gate(params, "r", x, h))
    h_tilde = np.tanh(x @ params["W_h"] + (r * h) @ params["U_h"] + params["b_h"])
    return (1.0 - z) * h + z * h_tilde


def gru_loss(params, xs, target):
    h = np.zeros(H)
    states = []
    for x in xs:
        h = gru_cell(params, x, h)
        states.append(h)
    pooled = np.mean(np.stack(states), axis=0)
    return (pooled @ params["w_out"] - target) ** 2


def make_inputs(rng):
    params = {}
    for name in ("z", "r", "h"):
        params["W_" + name] = 0.5 * rng.standard_normal((N_IN, H))
        params["U_" + name] = 0.5 * rng.standard_normal((H, H))
        params["b_" + name] = 0.1 * rng.standard_normal(H)
    params["w_out"] = rng.standard_normal(H)
    return params, rng.standard_normal((T, N_IN)), 0.7


fun = gru_loss
argnums = (0, 1)


def jax_fun(params, xs, target):
    sig = lambda v: 1.0 / (1.0 + jnp.exp(-v))
    h, states = jnp.zeros(H), []
    for x in xs:
        z = sig(x @ params["W_z"] + h @ params["U_z"] + params["b_z"])
        r = sig(x @ params["W_r"] + h @ params["U_r"] + params["b_r"])
        h_tilde = jnp.tanh(x @ params["W_h"] + (r * h) @ params["U_h"] + params["b_h"])
        h = (1.0 - z) * h + z * h_tilde
        states.append(h)
    return (jnp.mean(jnp.stack(states), axis=0) @ params["w_out"] - target) ** 2
