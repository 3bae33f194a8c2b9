"""A neural ODE integrated with an adaptive Bogacki-Shampine (RK23) scheme:
a ``while`` loop over time, an embedded error estimate, the step size grown
or shrunk by the usual safety-factor rule with ``min``/``max`` clipping,
rejected steps retried, the last step cut to land on ``t1``. The vector
field is a small tanh MLP whose parameters come in a dict; the loss compares
the state at ``t1`` with a target."""
import numpy as np
import jax.numpy as jnp


def mlp_field(t, y, params):
    h = np.tanh(params["W1"] @ y + params["b1"] + t * params["c"])
    return params["W2"] @ h


def rk23_step(f, t, y, h, *args):
    k1 = f(t, y, *args)
    k2 = f(t + 0.5 * h, y + 0.5 * h * k1, *args)
    k3 = f(t + 0.75 * h, y + 0.75 * h * k2, *args)
    y_new = y + h * (2.0 * k1 + 3.0 * k2 + 4.0 * k3) / 9.0
    k4 = f(t + h, y_new, *args)
    y_low = y + h * (7.0 * k1 / 24.0 + k2 / 4.0 + k3 / 3.0 + k4 / 8.0)
    return y_new, y_new - y_low


def odeint_adaptive(f, y0, t0, t1, *args, rtol=1e-3, atol=1e-6, h0=0.1, max_steps=200):
    t, y, h = t0, y0, h0
    n_steps = 0
    while t < t1 and n_steps < max_steps:
        h = min(h, t1 - t)
        y_new, err = rk23_step(f, t, y, h, *args)
        scale = atol + rtol * np.maximum(np.abs(y), np.abs(y_new))
        err_norm = np.sqrt(np.mean((err / scale) ** 2))
        if err_norm <= 1.0:
            t, y = t + h, y_new
        factor = 0.9 * err_norm ** (-1.0 / 3.0) if err_norm > 0 else 5.0
        h = h * min(5.0, max(0.2, factor))
        n_steps += 1
    return y


def node_loss(params, y0, target):
    y1 = odeint_adaptive(mlp_field, y0, 0.0, 1.0, params)
    return np.sum((y1 - target) ** 2)


def make_inputs(rng):
    params = {"W1": 0.8 * rng.standard_normal((5, 3)), "b1": 0.1 * rng.standard_normal(5),
              "c": 0.3 * rng.standard_normal(5), "W2": 0.8 * rng.standard_normal((3, 5))}
    return params, rng.standard_normal(3), rng.standard_normal(3)


fun = node_loss
argnums = (0, 1, 2)
jax_jit = False


def jax_fun(params, y0, target):
    def f(t, y):
        return params["W2"] @ jnp.tanh(params["W1"] @ y + params["b1"] + t * params["c"])
    t, y, h, n = 0.0, y0, 0.1, 0
    while t < 1.0 and n < 200:
        h = jnp.minimum(h, 1.0 - t)
        k1 = f(t, y)
        k2 = f(t + 0.5 * h, y + 0.5 * h * k1)
        k3 = f(t + 0.75 * h, y + 0.75 * h * k2)
        y_new = y + h * (2.0 * k1 + 3.0 * k2 + 4.0 * k3) / 9.0
        k4 = f(t + h, y_new)
        err = y_new - (y + h * (7.0 * k1 / 24.0 + k2 / 4.0 + k3 / 3.0 + k4 / 8.0))
        scale = 1e-6 + 1e-3 * jnp.maximum(jnp.abs(y), jnp.abs(y_new))
        err_norm = jnp.sqrt(jnp.mean((err / scale) ** 2))
        if err_norm <= 1.0:
            t, y = t + h, y_new
        factor = 0.9 * err_norm ** (-1.0 / 3.0) if err_norm > 0 else 5.0
        h = h * jnp.minimum(5.0, jnp.maximum(0.2, factor))
        n += 1
    return jnp.sum((y - target) ** 2)
