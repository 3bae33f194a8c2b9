"""A hand-written conjugate-gradient solver (the textbook algorithm, as in
Shewchuk's notes) used inside a least-squares design problem: a ``while``
loop on the residual norm with a tolerance and a ``break`` on the
iteration count, in-place updates ``x += alpha * p`` and ``r -= alpha * Ap``
on arrays the solver made, the matrix applied through a function passed as
an argument, and a quadratic loss of the solution. Differentiated through
the iterations with respect to the matrix factor and the right-hand side."""
import numpy as np
import jax.numpy as jnp


def conjugate_gradient(apply_A, b, tol=1e-12, max_iter=50):
    x = np.zeros_like(b)
    r = b.copy()
    p = r.copy()
    rs_old = r @ r
    k = 0
    while np.sqrt(rs_old) > tol:
        Ap = apply_A(p)
        alpha = rs_old / (p @ Ap)
        x += alpha * p
        r -= alpha * Ap
        rs_new = r @ r
        p = r + (rs_new / rs_old) * p
        rs_old = rs_new
        k += 1
        if k >= max_iter:
            break
    return x


def design_loss(L, b, target):
    def apply_A(v):
        return L @ (L.T @ v) + 0.5 * v
    x = conjugate_gradient(apply_A, b)
    return np.sum((x - target) ** 2)


def make_inputs(rng):
    n = 5
    return (np.eye(n) + 0.3 * rng.standard_normal((n, n)), rng.standard_normal(n),
            rng.standard_normal(n))


fun = design_loss
argnums = (0, 1)
fd_step = 1e-6


def jax_fun(L, b, target):
    # CG in exact arithmetic solves in n steps; the solve is its limit
    x = jnp.linalg.solve(L @ L.T + 0.5 * jnp.eye(len(b)), b)
    return jnp.sum((x - target) ** 2)
