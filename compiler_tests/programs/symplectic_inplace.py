"""A symplectic Euler integrator for a particle in a quartic double well, in
the style of a physics notebook: ``step`` updates the momentum and position
arrays in place (``p -= ...``, ``q += ...``) and the driver calls it in a loop
on copies of the initial state.  The objective is a distance of the end
point from a target, as when one fits initial conditions by shooting."""
import numpy as np
import jax.numpy as jnp

DT = 0.05
N_STEPS = 40


def grad_V(q, a=1.0, b=0.25):
    # V(q) = b q^4 - a q^2 / 2 per coordinate, plus a weak coupling
    return 4.0 * b * q ** 3 - a * q + 0.1 * (q - q.mean())


def step(q, p, dt):
    p -= dt * grad_V(q)
    q += dt * p


def simulate(q0, p0, dt=DT, n_steps=N_STEPS):
    q = q0.copy()
    p = p0.copy()
    for _ in range(n_steps):
        step(q, p, dt)
    return q, p


def shooting_loss(q0, p0, target):
    q, p = simulate(q0, p0)
    return np.sum((q - target) ** 2) + 0.01 * np.sum(p ** 2)


def make_inputs(rng):
    return rng.standard_normal(3), 0.5 * rng.standard_normal(3), rng.standard_normal(3)


fun = shooting_loss
argnums = (0, 1)


def jax_fun(q0, p0, target):
    def gV(q):
        return 4.0 * 0.25 * q ** 3 - 1.0 * q + 0.1 * (q - q.mean())
    q, p = q0, p0
    for _ in range(N_STEPS):
        p = p - DT * gV(q)
        q = q + DT * p
    return jnp.sum((q - target) ** 2) + 0.01 * jnp.sum(p ** 2)
