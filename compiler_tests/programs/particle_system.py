"""A damped mass-spring particle system stepped with semi-implicit Euler,
written as a class that holds its state in attributes and whose methods call
each other (spring forces, total forces, a step that rebinds the state, the
kinetic energy, a run loop returning ``self``); the loss is how far the final
positions land from a target plus the energy left. No autodiff in sight: the
code is what someone writes to simulate first and fit later."""
import numpy as np
import jax.numpy as jnp


class ParticleSystem:
    gravity = np.array([0.0, -9.81])

    def __init__(self, positions, velocities, masses, springs, stiffness,
                 rest_length=1.0, drag=0.05):
        self.x = positions
        self.v = velocities
        self.m = masses
        self.springs = springs            # list of (i, j) index pairs
        self.k = stiffness
        self.rest = rest_length
        self.drag = drag
        self.t = 0.0

    def spring_forces(self):
        f = np.zeros_like(self.x)
        for n, (i, j) in enumerate(self.springs):
            d = self.x[j] - self.x[i]
            length = np.sqrt(np.sum(d ** 2))
            pull = self.k[n] * (length - self.rest) * d / length
            f[i] = f[i] + pull
            f[j] = f[j] - pull
        return f

    def forces(self):
        return self.spring_forces() + self.gravity * self.m[:, None] - self.drag * self.v

    def step(self, dt):
        a = self.forces() / self.m[:, None]
        self.v = self.v + dt * a
        self.x = self.x + dt * self.v
        self.t += dt

    def kinetic_energy(self):
        return 0.5 * np.sum(self.m * np.sum(self.v ** 2, axis=1))

    def run(self, n_steps, dt=0.01):
        for _ in range(n_steps):
            self.step(dt)
        return self


SPRINGS = [(0, 1), (1, 2), (2, 3), (0, 2)]
MASSES = np.array([1.0, 0.5, 0.8, 1.2])


def simulate_loss(x0, v0, stiffness, target):
    system = ParticleSystem(x0, v0, MASSES, SPRINGS, stiffness)
    final = system.run(15, dt=0.02)
    miss = np.sum((final.x - target) ** 2)
    return miss + 0.1 * final.kinetic_energy()


def make_inputs(rng):
    x0 = np.array([[0.0, 0.0], [1.0, 0.1], [1.9, -0.2], [3.1, 0.0]]) + 0.05 * rng.standard_normal((4, 2))
    v0 = 0.1 * rng.standard_normal((4, 2))
    stiffness = 5.0 + rng.uniform(size=4)
    target = np.array([[0.0, -0.5], [1.0, -0.6], [2.0, -0.7], [3.0, -0.8]])
    return x0, v0, stiffness, target


fun = simulate_loss
argnums = (0, 1, 2, 3)
jax_jit = False


def jax_fun(x0, v0, stiffness, target):
    x, v, m = x0, v0, jnp.asarray(MASSES)
    for _ in range(15):
        f = jnp.zeros_like(x)
        for n, (i, j) in enumerate(SPRINGS):
            d = x[j] - x[i]
            length = jnp.sqrt(jnp.sum(d ** 2))
            pull = stiffness[n] * (length - 1.0) * d / length
            f = f.at[i].add(pull).at[j].add(-pull)
        f = f + jnp.array([0.0, -9.81]) * m[:, None] - 0.05 * v
        v = v + 0.02 * f / m[:, None]
        x = x + 0.02 * v
    return jnp.sum((x - target) ** 2) + 0.1 * 0.5 * jnp.sum(m * jnp.sum(v ** 2, axis=1))
