"""Gray-Scott reaction-diffusion on a periodic grid: the Laplacian is a
five-point stencil of ``np.roll`` shifts, the time loop updates two fields
with explicit Euler, and the loss compares the final pattern with a target;
differentiated with respect to the feed and kill rates (Python floats), the
diffusion coefficients (a tuple) and the initial field."""
import numpy as np
import jax.numpy as jnp

N_STEPS, DT = 12, 0.5


def laplacian(a):
    return (np.roll(a, 1, axis=0) + np.roll(a, -1, axis=0)
            + np.roll(a, 1, axis=1) + np.roll(a, -1, axis=1) - 4.0 * a)


def gray_scott_step(u, v, feed, kill, diffusion):
    du, dv = diffusion
    uvv = u * v * v
    u_next = u + DT * (du * laplacian(u) - uvv + feed * (1.0 - u))
    v_next = v + DT * (dv * laplacian(v) + uvv - (feed + kill) * v)
    return u_next, v_next


def pattern_loss(feed, kill, diffusion, v0, target):
    u = np.ones_like(v0) - v0
    v = v0
    for _ in range(N_STEPS):
        u, v = gray_scott_step(u, v, feed, kill, diffusion)
    return np.sum((v - target) ** 2) / v.size


def make_inputs(rng):
    v0 = 0.25 * rng.random((6, 6))
    return 0.037, 0.06, (0.2, 0.1), v0, 0.2 * rng.random((6, 6))


fun = pattern_loss
argnums = (0, 1, 2, 3)
jax_jit = False             # XLA takes minutes to compile the unrolled loop


def jax_fun(feed, kill, diffusion, v0, target):
    def lap(a):
        return (jnp.roll(a, 1, axis=0) + jnp.roll(a, -1, axis=0)
                + jnp.roll(a, 1, axis=1) + jnp.roll(a, -1, axis=1) - 4.0 * a)
    du, dv = diffusion
    u, v = jnp.ones_like(v0) - v0, v0
    for _ in range(N_STEPS):
        uvv = u * v * v
        u, v = (u + DT * (du * lap(u) - uvv + feed * (1.0 - u)),
                v + DT * (dv * lap(v) + uvv - (feed + kill) * v))
    return jnp.sum((v - target) ** 2) / v.size
