"""Variational inference with a planar normalizing flow (Rezende & Mohamed
2015): base samples pushed through K planar layers composed with
``functools.reduce`` over a list of (u, w, b) tuples, each step carrying the
pair (z, accumulated log-determinant); the objective is the Monte Carlo
reverse KL to an unnormalised banana-shaped target."""
import functools

import numpy as np
import jax.numpy as jnp


def planar(state, params):
    z, logdet = state
    u, w, b = params
    a = np.tanh(z @ w + b)                       # (n,)
    z_new = z + np.outer(a, u)
    psi = (1.0 - a ** 2)[:, None] * w[None, :]   # (n, d)
    logdet = logdet + np.log(np.abs(1.0 + psi @ u))
    return z_new, logdet


def log_target(z):
    x, y = z[:, 0], z[:, 1]
    return -0.5 * x ** 2 / 4.0 - 0.5 * (y - 0.5 * x ** 2 + 1.0) ** 2


def reverse_kl(flow, eps):
    log_q0 = -0.5 * np.sum(eps ** 2, axis=1) - np.log(2 * np.pi)
    zK, logdet = functools.reduce(planar, flow, (eps, np.zeros(eps.shape[0])))
    return np.mean(log_q0 - logdet - log_target(zK))


def make_inputs(rng):
    flow = [(0.5 * rng.standard_normal(2), rng.standard_normal(2), 0.1 * rng.standard_normal())
            for _ in range(3)]
    # keep u.w > -1 so each layer is invertible (log|.| away from 0)
    flow = [(u if u @ w > -0.5 else -u, w, b) for u, w, b in flow]
    return flow, rng.standard_normal((16, 2))


fun = reverse_kl
argnums = (0,)


def jax_fun(flow, eps):
    z, logdet = eps, jnp.zeros(eps.shape[0])
    for u, w, b in flow:
        a = jnp.tanh(z @ w + b)
        logdet = logdet + jnp.log(jnp.abs(1.0 + ((1.0 - a ** 2)[:, None] * w[None, :]) @ u))
        z = z + jnp.outer(a, u)
    log_q0 = -0.5 * jnp.sum(eps ** 2, axis=1) - jnp.log(2 * jnp.pi)
    return jnp.mean(log_q0 - logdet - log_target_jax(z))


def log_target_jax(z):
    x, y = z[:, 0], z[:, 1]
    return -0.5 * x ** 2 / 4.0 - 0.5 * (y - 0.5 * x ** 2 + 1.0) ** 2
