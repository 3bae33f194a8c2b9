"""A damped fixed-point iteration for the equilibrium of a small recurrent
network, written with an early ``return`` from inside the loop when the
update is below a tolerance (and a fall-through return when the iteration
budget runs out), the iteration count returned alongside; a ``while`` loop
with a tolerance normalises the equilibrium by power iteration for the
readout direction. Differentiated (through the unrolled iterations) with
respect to the coupling matrix, the input and the readout."""
import numpy as np
import jax
import jax.numpy as jnp


def equilibrium(W, u, damping=0.5, tol=1e-13, max_iter=500):
    x = np.zeros_like(u)
    for it in range(max_iter):
        x_new = (1.0 - damping) * x + damping * np.tanh(W @ x + u)
        if np.max(np.abs(x_new - x)) < tol:
            return x_new, it
        x = x_new
    return x, max_iter


def leading_direction(M, tol=1e-12):
    v = np.ones(M.shape[0]) / np.sqrt(M.shape[0])
    change = 1.0
    while change > tol:
        w = M @ v
        w = w / np.linalg.norm(w)
        change = np.linalg.norm(w - v)
        v = w
    return v


def loss(W, u, readout):
    x, n_iter = equilibrium(W, u)
    direction = leading_direction(readout.T @ readout + np.eye(readout.shape[1]))
    return np.sum((readout @ x) ** 2) + (direction @ x) ** 2


def make_inputs(rng):
    n = 5
    W = 0.3 * rng.standard_normal((n, n)) / np.sqrt(n)
    return W, rng.standard_normal(n), rng.standard_normal((3, n))


fun = loss
argnums = (0, 1, 2)


def jax_fun(W, u, readout):
    # the NumPy loops' iterations, unrolled to a fixed count with the state frozen
    # once the tolerance is met (the same arithmetic, so the same gradient)
    def fixed_point(k, state):
        x, done = state
        x_new = 0.5 * x + 0.5 * jnp.tanh(W @ x + u)
        return jnp.where(done, x, x_new), done | (jnp.max(jnp.abs(x_new - x)) < 1e-13)
    x, _ = jax.lax.fori_loop(0, 500, fixed_point, (jnp.zeros_like(u), False))
    M = readout.T @ readout + jnp.eye(readout.shape[1])

    def power(k, state):
        v, done = state
        w = M @ v
        w = w / jnp.linalg.norm(w)
        return jnp.where(done, v, w), done | (jnp.linalg.norm(w - v) <= 1e-12)
    v0 = jnp.ones(M.shape[0]) / jnp.sqrt(M.shape[0])
    v, _ = jax.lax.fori_loop(0, 2000, power, (v0, False))
    return jnp.sum((readout @ x) ** 2) + (v @ x) ** 2
