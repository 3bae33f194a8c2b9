"""A Tucker-decomposition fit written for ``scipy.optimize.minimize``: all
parameters in one flat vector, unpacked with ``np.split`` at offsets from
``np.cumsum`` of the sizes and ``reshape``d; the reconstruction by
successive ``np.tensordot`` with the factors, and a Kronecker-structured
smoothness penalty (``np.kron`` of two difference matrices) on the core.
Differentiated with respect to the flat vector."""
import numpy as np
import jax.numpy as jnp

SHAPES = [(2, 2, 2), (4, 2), (3, 2), (5, 2)]


def unpack(theta):
    sizes = [int(np.prod(s)) for s in SHAPES]
    parts = np.split(theta, np.cumsum(sizes)[:-1])
    return [p.reshape(s) for p, s in zip(parts, SHAPES)]


def reconstruct(core, factors):
    out = core
    for mode, U in enumerate(factors):
        out = np.moveaxis(np.tensordot(U, out, axes=([1], [mode])), 0, mode)
    return out


def tucker_loss(theta, tensor):
    core, *factors = unpack(theta)
    resid = reconstruct(core, factors) - tensor
    D = np.diff(np.eye(2), axis=0)
    smooth = np.kron(D, D) @ core.reshape(4, 2)
    return 0.5 * np.sum(resid ** 2) + 0.1 * np.sum(smooth ** 2) + 1e-3 * np.sum(theta ** 2)


def make_inputs(rng):
    n = sum(int(np.prod(s)) for s in SHAPES)
    return 0.5 * rng.standard_normal(n), rng.standard_normal((4, 3, 5))


fun = tucker_loss
argnums = (0,)


def jax_fun(theta, tensor):
    sizes = [int(np.prod(s)) for s in SHAPES]
    parts = jnp.split(theta, np.cumsum(sizes)[:-1])
    core, *factors = [p.reshape(s) for p, s in zip(parts, SHAPES)]
    out = core
    for mode, U in enumerate(factors):
        out = jnp.moveaxis(jnp.tensordot(U, out, axes=([1], [mode])), 0, mode)
    D = jnp.diff(jnp.eye(2), axis=0)
    smooth = jnp.kron(D, D) @ core.reshape(4, 2)
    return 0.5 * jnp.sum((out - tensor) ** 2) + 0.1 * jnp.sum(smooth ** 2) + 1e-3 * jnp.sum(theta ** 2)
