"""An unrolled projected-gradient solver for box-constrained least squares
(a "learned ISTA"-style layer), written the way NumPy code clamps: each
iteration takes a gradient step with its own step size, then
``x[x < 0] = 0.0`` and ``x[x > upper] = upper`` project onto the box, and
``x[active] *= shrink`` damps the coordinates that moved most. The loss
compares the solver's output with a target; differentiated with respect to
the step sizes, the upper bound and the matrix."""
import numpy as np
import jax.numpy as jnp


def solve(A, b, steps, upper, shrink=0.9):
    x = np.zeros(A.shape[1])
    for lr in steps:
        g = A.T @ (A @ x - b)
        x_new = x - lr * g
        x_new[x_new < 0] = 0.0
        x_new[x_new > upper] = upper
        active = np.abs(x_new - x) > 0.5
        x_new[active] *= shrink
        x = x_new
    return x


def loss(steps, upper, A, b, target):
    x = solve(A, b, steps, upper)
    return np.sum((x - target) ** 2) + 0.1 * np.sum(x)


def make_inputs(rng):
    A = rng.standard_normal((8, 5)) / np.sqrt(8)
    b = A @ np.array([0.8, -0.5, 1.7, 0.3, 1.1]) + 0.05 * rng.standard_normal(8)
    steps = rng.uniform(0.3, 0.6, 6)
    return steps, 1.2, A, b, np.array([0.7, 0.0, 1.2, 0.3, 1.0])


fun = loss
argnums = (0, 1, 2)
fd_step = 1e-7


def jax_fun(steps, upper, A, b, target):
    x = jnp.zeros(A.shape[1])
    for k in range(steps.shape[0]):
        x_new = x - steps[k] * (A.T @ (A @ x - b))
        x_new = jnp.where(x_new < 0, 0.0, x_new)
        x_new = jnp.where(x_new > upper, upper, x_new)
        x_new = jnp.where(jnp.abs(x_new - x) > 0.5, x_new * 0.9, x_new)
        x = x_new
    return jnp.sum((x - target) ** 2) + 0.1 * jnp.sum(x)
