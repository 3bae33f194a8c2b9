"""The 1-D heat equation with an explicit finite-difference scheme: the
Laplacian from slices, fixed boundaries re-attached with np.concatenate, and
a source term; the initial profile and the diffusivity are fitted to a
measured final profile."""
import numpy as np
import jax.numpy as jnp


def laplacian(u, dx):
    return (u[2:] - 2.0 * u[1:-1] + u[:-2]) / dx ** 2


def heat_step(u, alpha, dt, dx, source):
    interior = u[1:-1] + dt * (alpha * laplacian(u, dx) + source[1:-1])
    return np.concatenate([u[:1], interior, u[-1:]])


def solve_heat(u0, alpha, source, n_steps=25, length=1.0):
    n = u0.shape[0]
    dx = length / (n - 1)
    dt = 0.2 * dx ** 2           # stable for alpha below 2.5
    u = u0
    for _ in range(n_steps):
        u = heat_step(u, alpha, dt, dx, source)
    return u


def misfit(u0, alpha, source, measured):
    return np.sum((solve_heat(u0, alpha, source) - measured) ** 2)


def make_inputs(rng):
    x = np.linspace(0.0, 1.0, 12)
    return np.sin(np.pi * x) + 0.1 * rng.standard_normal(12), 0.8, 0.5 * rng.standard_normal(12), \
        0.5 * np.sin(np.pi * x)


fun = misfit
argnums = (0, 1, 2)
jax_jit = False             # XLA takes far longer to compile this unrolled loop than to run it


def jax_fun(u0, alpha, source, measured):
    dx = 1.0 / (u0.shape[0] - 1)
    dt = 0.2 * dx ** 2
    u = u0
    for _ in range(25):
        interior = u[1:-1] + dt * (alpha * (u[2:] - 2.0 * u[1:-1] + u[:-2]) / dx ** 2 + source[1:-1])
        u = jnp.concatenate([u[:1], interior, u[-1:]])
    return jnp.sum((u - measured) ** 2)
