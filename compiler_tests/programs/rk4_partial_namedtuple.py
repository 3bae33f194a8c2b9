"""A damped, driven Duffing oscillator integrated by a hand-written RK4 whose
right-hand side is handed over as ``functools.partial(duffing, forcing=...,
omega=...)`` (the constants bound once), the physical parameters passed on
through ``**params``; the state is a namedtuple advanced with ``_replace``
and unpacked by field; the loss fits the trajectory to observations."""
import collections
import functools

import numpy as np
import jax.numpy as jnp

State = collections.namedtuple("State", ["q", "p", "t"])


def duffing(q, p, t, alpha, beta, delta, forcing=0.0, omega=1.0):
    dq = p
    dp = -delta * p - alpha * q - beta * q ** 3 + forcing * np.cos(omega * t)
    return dq, dp


def rk4(rhs, state, dt, **params):
    q, p, t = state
    k1q, k1p = rhs(q, p, t, **params)
    k2q, k2p = rhs(q + 0.5 * dt * k1q, p + 0.5 * dt * k1p, t + 0.5 * dt, **params)
    k3q, k3p = rhs(q + 0.5 * dt * k2q, p + 0.5 * dt * k2p, t + 0.5 * dt, **params)
    k4q, k4p = rhs(q + dt * k3q, p + dt * k3p, t + dt, **params)
    return state._replace(q=q + dt / 6.0 * (k1q + 2 * k2q + 2 * k3q + k4q),
                          p=p + dt / 6.0 * (k1p + 2 * k2p + 2 * k3p + k4p),
                          t=t + dt)


def trajectory_loss(alpha, beta, delta, q0, observed, dt=0.1):
    rhs = functools.partial(duffing, forcing=0.3, omega=1.2)
    state = State(q=q0, p=0.0, t=0.0)
    loss = 0.0
    for q_obs in observed:
        state = rk4(rhs, state, dt, alpha=alpha, beta=beta, delta=delta)
        loss = loss + (state.q - q_obs) ** 2
    return loss / len(observed)


def make_inputs(rng):
    return (-1.0 + 0.1 * rng.standard_normal(), 1.0 + 0.1 * rng.standard_normal(), 0.3, 0.8,
            np.cos(np.linspace(0.1, 2.0, 20)) + 0.05 * rng.standard_normal(20))


fun = trajectory_loss
argnums = (0, 1, 2, 3, 4)
jax_jit = False             # XLA takes minutes to compile the unrolled loop


def jax_fun(alpha, beta, delta, q0, observed):
    def f(q, p, t):
        return p, -delta * p - alpha * q - beta * q ** 3 + 0.3 * jnp.cos(1.2 * t)
    q, p, t, dt, loss = q0, 0.0, 0.0, 0.1, 0.0
    for q_obs in observed:
        k1q, k1p = f(q, p, t)
        k2q, k2p = f(q + 0.5 * dt * k1q, p + 0.5 * dt * k1p, t + 0.5 * dt)
        k3q, k3p = f(q + 0.5 * dt * k2q, p + 0.5 * dt * k2p, t + 0.5 * dt)
        k4q, k4p = f(q + dt * k3q, p + dt * k3p, t + dt)
        q, p, t = (q + dt / 6.0 * (k1q + 2 * k2q + 2 * k3q + k4q),
                   p + dt / 6.0 * (k1p + 2 * k2p + 2 * k3p + k4p), t + dt)
        loss = loss + (q - q_obs) ** 2
    return loss / len(observed)
