"""A Kepler-like implicit equation solved by Newton's method written with an
assignment expression in the loop test (``while abs(step := g / dg) > tol``),
a ``max_iter`` guard with ``for ... else`` raising when it does not
converge, and the solved anomalies fed into a radial-velocity model fit by
least squares. The gradient is the one of the unrolled iteration (the
iteration count is fixed by the inputs), differentiated with respect to the
eccentricity, the amplitude and the phase offsets."""
import numpy as np
import jax.numpy as jnp


def solve_anomaly(M, e, tol=1e-12, max_iter=50):
    E = M + e * np.sin(M)
    for _ in range(max_iter):
        if abs(step := (E - e * np.sin(E) - M) / (1.0 - e * np.cos(E))) < tol:
            break
        E = E - step
    else:
        raise RuntimeError("Newton did not converge")
    return E


def radial_velocity(t, e, K, phase, period=3.0):
    rv = []
    for ti in t:
        E = solve_anomaly(2.0 * np.pi * ti / period + phase, e)
        nu = 2.0 * np.arctan2(np.sqrt(1.0 + e) * np.sin(E / 2.0), np.sqrt(1.0 - e) * np.cos(E / 2.0))
        rv.append(K * (np.cos(nu) + e))
    return np.array(rv)


def loss(e, K, phase, t, observed):
    return np.sum((radial_velocity(t, e, K, phase) - observed) ** 2)


def make_inputs(rng):
    t = np.sort(rng.uniform(0.0, 6.0, size=9))
    return 0.3, 1.7, 0.4, t, rng.standard_normal(9)


fun = loss
argnums = (0, 1, 2)
jax_jit = False             # Python control flow on the iterate
fd_step = 1e-6


def jax_fun(e, K, phase, t, observed):
    rv = []
    for ti in t:
        M = 2.0 * jnp.pi * ti / 3.0 + phase
        E = M + e * jnp.sin(M)
        for _ in range(50):
            step = (E - e * jnp.sin(E) - M) / (1.0 - e * jnp.cos(E))
            if abs(step) < 1e-12:
                break
            E = E - step
        nu = 2.0 * jnp.arctan2(jnp.sqrt(1.0 + e) * jnp.sin(E / 2.0), jnp.sqrt(1.0 - e) * jnp.cos(E / 2.0))
        rv.append(K * (jnp.cos(nu) + e))
    return jnp.sum((jnp.array(rv) - observed) ** 2)
