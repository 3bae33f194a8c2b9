"""A chain of masses joined by springs to a wall, integrated with velocity
Verlet; the per-spring stiffnesses and the initial positions are fitted so
the last mass ends near a target. The simulator is a small class."""
import numpy as np
import jax.numpy as jnp


class SpringChain:
    def __init__(self, masses, rest_length=1.0, damping=0.05):
        self.masses = masses
        self.rest_length = rest_length
        self.damping = damping

    def forces(self, x, v, k):
        left = np.concatenate([np.zeros(1), x[:-1]])
        stretch = x - left - self.rest_length
        tension = k * stretch
        from_right = np.concatenate([tension[1:], np.zeros(1)])
        return -tension + from_right - self.damping * v

    def simulate(self, x, v, k, dt=0.05, n_steps=30):
        a = self.forces(x, v, k) / self.masses
        for _ in range(n_steps):
            x = x + dt * v + 0.5 * dt ** 2 * a
            v_half = v + 0.5 * dt * a
            a = self.forces(x, v_half, k) / self.masses
            v = v_half + 0.5 * dt * a
        return x, v


CHAIN = SpringChain(masses=np.array([1.0, 2.0, 1.5, 0.5]))


def target_loss(k, x0, target):
    x, v = CHAIN.simulate(x0, np.zeros_like(x0), k)
    return (x[-1] - target) ** 2 + 0.1 * np.sum(v ** 2)


def make_inputs(rng):
    k = 2.0 + rng.uniform(size=4)
    x0 = np.arange(1.0, 5.0) * 1.1 + 0.1 * rng.standard_normal(4)
    return k, x0, 4.5


fun = target_loss
argnums = (0, 1, 2)
jax_jit = False             # XLA takes far longer to compile this unrolled loop than to run it


def jax_fun(k, x0, target):
    masses, rest, damping, dt = jnp.array([1.0, 2.0, 1.5, 0.5]), 1.0, 0.05, 0.05

    def forces(x, v):
        stretch = x - jnp.concatenate([jnp.zeros(1), x[:-1]]) - rest
        tension = k * stretch
        return -tension + jnp.concatenate([tension[1:], jnp.zeros(1)]) - damping * v
    x, v = x0, jnp.zeros_like(x0)
    a = forces(x, v) / masses
    for _ in range(30):
        x = x + dt * v + 0.5 * dt ** 2 * a
        v_half = v + 0.5 * dt * a
        a = forces(x, v_half) / masses
        v = v_half + 0.5 * dt * a
    return (x[-1] - target) ** 2 + 0.1 * jnp.sum(v ** 2)
