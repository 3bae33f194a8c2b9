"""A softened gravitational N-body simulation in 2-D with leapfrog steps:
pairwise differences by broadcasting, masses as parameters, the loss the
distance of the final positions from targets plus the final kinetic energy."""
import numpy as np
import jax.numpy as jnp


def accelerations(pos, masses, G=1.0, softening=0.1):
    diff = pos[None, :, :] - pos[:, None, :]            # r_j - r_i, (N, N, 2)
    dist2 = np.sum(diff ** 2, axis=-1) + softening ** 2
    inv_d3 = dist2 ** -1.5
    return G * np.sum(diff * (inv_d3 * masses[None, :])[:, :, None], axis=1)


def leapfrog(pos, vel, masses, dt, n_steps):
    acc = accelerations(pos, masses)
    for step in range(n_steps):
        vel = vel + 0.5 * dt * acc
        pos = pos + dt * vel
        acc = accelerations(pos, masses)
        vel = vel + 0.5 * dt * acc
    return pos, vel


def kinetic_energy(vel, masses):
    return 0.5 * np.sum(masses * np.sum(vel ** 2, axis=1))


def loss(masses, pos0, vel0, targets):
    pos, vel = leapfrog(pos0, vel0, masses, dt=0.02, n_steps=15)
    return np.sum((pos - targets) ** 2) + kinetic_energy(vel, masses)


def make_inputs(rng):
    n = 4
    return (1.0 + rng.uniform(size=n), rng.standard_normal((n, 2)),
            0.3 * rng.standard_normal((n, 2)), rng.standard_normal((n, 2)))


fun = loss
argnums = (0, 1, 2)


def jax_fun(masses, pos0, vel0, targets):
    def acc_of(pos):
        diff = pos[None, :, :] - pos[:, None, :]
        inv_d3 = (jnp.sum(diff ** 2, axis=-1) + 0.1 ** 2) ** -1.5
        return jnp.sum(diff * (inv_d3 * masses[None, :])[:, :, None], axis=1)
    pos, vel, dt = pos0, vel0, 0.02
    acc = acc_of(pos)
    for _ in range(15):
        vel = vel + 0.5 * dt * acc
        pos = pos + dt * vel
        acc = acc_of(pos)
        vel = vel + 0.5 * dt * acc
    return jnp.sum((pos - targets) ** 2) + 0.5 * jnp.sum(masses * jnp.sum(vel ** 2, axis=1))
