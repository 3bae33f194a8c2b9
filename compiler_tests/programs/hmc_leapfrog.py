"""The leapfrog integrator of Hamiltonian Monte Carlo, with the potential and
its gradient handed in as functions (the potential's gradient written by hand
for a correlated Gaussian), and the final Hamiltonian as the objective, as when
one tunes the step size by differentiating the energy error."""
import numpy as np
import jax.numpy as jnp

PRECISION = np.array([[2.0, 0.6], [0.6, 1.0]])


def gaussian_potential(q):
    return 0.5 * q @ PRECISION @ q


def gaussian_potential_grad(q):
    return PRECISION @ q


def leapfrog(q, p, grad_U, step_size, n_steps):
    p = p - 0.5 * step_size * grad_U(q)
    for i in range(n_steps):
        q = q + step_size * p
        if i != n_steps - 1:
            p = p - step_size * grad_U(q)
    p = p - 0.5 * step_size * grad_U(q)
    return q, -p


def energy_error(q0, p0, step_size, U=gaussian_potential, grad_U=gaussian_potential_grad):
    q, p = leapfrog(q0, p0, grad_U, step_size, n_steps=10)
    h0 = U(q0) + 0.5 * p0 @ p0
    h1 = U(q) + 0.5 * p @ p
    return (h1 - h0) ** 2


def make_inputs(rng):
    return rng.standard_normal(2), rng.standard_normal(2), 0.3


fun = energy_error
argnums = (0, 1, 2)


def jax_fun(q0, p0, step_size):
    U = lambda q: 0.5 * q @ PRECISION @ q
    q, p = q0, p0 - 0.5 * step_size * (PRECISION @ q0)
    for i in range(10):
        q = q + step_size * p
        if i != 9:
            p = p - step_size * (PRECISION @ q)
    p = -(p - 0.5 * step_size * (PRECISION @ q))
    return (U(q) + 0.5 * p @ p - U(q0) - 0.5 * p0 @ p0) ** 2
