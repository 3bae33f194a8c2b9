"""A physics-informed loss for the viscous Burgers equation, written the way
PINN tutorials write it when autodiff of the network is not available: a
small tanh MLP (a class holding its weights, ``typing`` annotations on every
signature) evaluated on a space-time grid, the PDE residual
``u_t + u u_x - nu u_xx`` from finite-difference stencils taken by slicing,
and boundary and initial-condition penalties; differentiated with respect to
the weights and the viscosity."""
from typing import List, Tuple

import numpy as np
import jax.numpy as jnp

Array = np.ndarray


class TanhMLP:
    def __init__(self, weights: List[Tuple[Array, Array]]) -> None:
        self.weights = weights

    def __call__(self, inputs: Array) -> Array:
        h: Array = inputs
        for i, (W, b) in enumerate(self.weights):
            h = h @ W + b
            if i < len(self.weights) - 1:
                h = np.tanh(h)
        return h[..., 0]


def grid(nx: int, nt: int) -> Tuple[Array, Array, float, float]:
    x = np.linspace(-1.0, 1.0, nx)
    t = np.linspace(0.0, 0.5, nt)
    return x, t, float(x[1] - x[0]), float(t[1] - t[0])


def residual(u: Array, dx: float, dt: float, nu: float) -> Array:
    """u has shape (nt, nx); central differences on the interior points."""
    u_t = (u[2:, 1:-1] - u[:-2, 1:-1]) / (2.0 * dt)
    u_x = (u[1:-1, 2:] - u[1:-1, :-2]) / (2.0 * dx)
    u_xx = (u[1:-1, 2:] - 2.0 * u[1:-1, 1:-1] + u[1:-1, :-2]) / dx ** 2
    return u_t + u[1:-1, 1:-1] * u_x - nu * u_xx


def pinn_loss(weights: List[Tuple[Array, Array]], nu: float, *, nx: int = 9, nt: int = 7,
              bc_weight: float = 10.0) -> float:
    x, t, dx, dt = grid(nx, nt)
    T, X = np.meshgrid(t, x, indexing="ij")
    points = np.stack([X, T], axis=-1)
    u = TanhMLP(weights)(points)
    pde = np.mean(residual(u, dx, dt, nu) ** 2)
    initial = np.mean((u[0, :] + np.sin(np.pi * x)) ** 2)
    boundary = np.mean(u[:, 0] ** 2) + np.mean(u[:, -1] ** 2)
    return pde + bc_weight * (initial + boundary)


def make_inputs(rng):
    sizes = [2, 6, 6, 1]
    weights = [(rng.standard_normal((m, n)) / np.sqrt(m), 0.1 * rng.standard_normal(n))
               for m, n in zip(sizes[:-1], sizes[1:])]
    return weights, 0.05


fun = pinn_loss
argnums = (0, 1)


def jax_fun(weights, nu):
    x, t, dx, dt = grid(9, 7)
    T, X = np.meshgrid(t, x, indexing="ij")
    h = jnp.stack([X, T], axis=-1)
    for i, (W, b) in enumerate(weights):
        h = h @ W + b
        if i < len(weights) - 1:
            h = jnp.tanh(h)
    u = h[..., 0]
    u_t = (u[2:, 1:-1] - u[:-2, 1:-1]) / (2.0 * dt)
    u_x = (u[1:-1, 2:] - u[1:-1, :-2]) / (2.0 * dx)
    u_xx = (u[1:-1, 2:] - 2.0 * u[1:-1, 1:-1] + u[1:-1, :-2]) / dx ** 2
    pde = jnp.mean((u_t + u[1:-1, 1:-1] * u_x - nu * u_xx) ** 2)
    initial = jnp.mean((u[0, :] + jnp.sin(jnp.pi * x)) ** 2)
    boundary = jnp.mean(u[:, 0] ** 2) + jnp.mean(u[:, -1] ** 2)
    return pde + 10.0 * (initial + boundary)
