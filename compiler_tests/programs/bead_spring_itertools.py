"""A bead-spring polymer relaxed by a few damped steps, written with
``itertools`` as a physicist would: bonds between consecutive beads from
``itertools.pairwise``, the repulsion between beads not bonded from
``itertools.combinations`` of the indices (forces accumulated into an array
with ``F[i] += f; F[j] -= f``), the relaxation step repeated with
``itertools.repeat``, and the contour length of the relaxed chain from
``itertools.accumulate`` of the bond lengths. The loss asks the relaxed
chain's end-to-end distance and contour length to match targets;
differentiated with respect to the initial positions and the spring
constant."""
import itertools

import numpy as np
import jax.numpy as jnp


def spring_forces(x, k, r0):
    F = np.zeros_like(x)
    for i, j in itertools.pairwise(range(len(x))):
        d = x[j] - x[i]
        r = np.sqrt(np.sum(d * d))
        f = k * (r - r0) * d / r
        F[i] += f
        F[j] -= f
    return F


def repulsion_forces(x, eps):
    F = np.zeros_like(x)
    for i, j in itertools.combinations(range(len(x)), 2):
        if j - i < 2:
            continue
        d = x[i] - x[j]
        r2 = np.sum(d * d)
        f = 6.0 * eps * d / r2 ** 4
        F[i] += f
        F[j] -= f
    return F


def relax(x, k, r0=1.0, eps=0.05, step=0.05, n_steps=4):
    for _ in itertools.repeat(None, n_steps):
        x = x + step * (spring_forces(x, k, r0) + repulsion_forces(x, eps))
    return x


def contour(x):
    lengths = [np.linalg.norm(b - a) for a, b in itertools.pairwise(x)]
    return list(itertools.accumulate(lengths))


def loss(x0, k, target_end=3.0, target_contour=4.5):
    x = relax(x0, k)
    end_to_end = np.linalg.norm(x[-1] - x[0])
    return (end_to_end - target_end) ** 2 + (contour(x)[-1] - target_contour) ** 2


def make_inputs(rng):
    n = 6
    x0 = np.cumsum(np.ones((n, 2)) * [0.8, 0.3], axis=0) + 0.1 * rng.standard_normal((n, 2))
    return x0, 1.3


fun = loss
argnums = (0, 1)


def jax_fun(x0, k, target_end=3.0, target_contour=4.5):
    n = x0.shape[0]
    x = x0
    for _ in range(4):
        F = jnp.zeros_like(x)
        for i in range(n - 1):
            d = x[i + 1] - x[i]
            r = jnp.sqrt(jnp.sum(d * d))
            f = k * (r - 1.0) * d / r
            F = F.at[i].add(f).at[i + 1].add(-f)
        for i in range(n):
            for j in range(i + 2, n):
                d = x[i] - x[j]
                f = 6.0 * 0.05 * d / jnp.sum(d * d) ** 4
                F = F.at[i].add(f).at[j].add(-f)
        x = x + 0.05 * F
    total = sum(jnp.linalg.norm(x[i + 1] - x[i]) for i in range(n - 1))
    return (jnp.linalg.norm(x[-1] - x[0]) - target_end) ** 2 + (total - target_contour) ** 2
