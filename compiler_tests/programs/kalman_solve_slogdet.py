"""The exact log-likelihood of a linear-Gaussian state space model with a
two-dimensional observation, filtered step by step: the innovation covariance
is inverted through ``np.linalg.solve`` (never ``inv``), its log-determinant
by ``np.linalg.slogdet``, the covariance kept symmetric by hand; the noise
scales are parametrised by their logs and the transition by a rotation angle
and a damping factor."""
import numpy as np
import jax.numpy as jnp


def transition(theta, damping):
    c, s = np.cos(theta), np.sin(theta)
    return damping * np.array([[c, -s], [s, c]])


def gaussian_log_density(innovation, S):
    sign, logdet = np.linalg.slogdet(S)
    quad = innovation @ np.linalg.solve(S, innovation)
    return -0.5 * (logdet + quad + len(innovation) * np.log(2 * np.pi))


def filter_log_likelihood(theta, damping, log_q, log_r, H, Y):
    F = transition(theta, damping)
    Q = np.exp(log_q) * np.eye(2)
    R = np.exp(log_r) * np.eye(H.shape[0])
    m = np.zeros(2)
    P = np.eye(2)
    total = 0.0
    for t in range(Y.shape[0]):
        m = F @ m
        P = F @ P @ F.T + Q
        innovation = Y[t] - H @ m
        S = H @ P @ H.T + R
        total = total + gaussian_log_density(innovation, S)
        K = np.linalg.solve(S, H @ P).T
        m = m + K @ innovation
        P = (np.eye(2) - K @ H) @ P
        P = 0.5 * (P + P.T)
    return total


def make_inputs(rng):
    H = np.array([[1.0, 0.0], [0.5, 1.0]]) + 0.1 * rng.standard_normal((2, 2))
    Y = rng.standard_normal((10, 2))
    return 0.3, 0.95, np.log(0.1), np.log(0.5), H, Y


fun = filter_log_likelihood
argnums = (0, 1, 2, 3, 4, 5)


def jax_fun(theta, damping, log_q, log_r, H, Y):
    c, s = jnp.cos(theta), jnp.sin(theta)
    F = damping * jnp.array([[c, -s], [s, c]])
    Q, R = jnp.exp(log_q) * jnp.eye(2), jnp.exp(log_r) * jnp.eye(2)
    m, P, total = jnp.zeros(2), jnp.eye(2), 0.0
    for t in range(Y.shape[0]):
        m = F @ m
        P = F @ P @ F.T + Q
        e = Y[t] - H @ m
        S = H @ P @ H.T + R
        total = total - 0.5 * (jnp.linalg.slogdet(S)[1] + e @ jnp.linalg.solve(S, e)
                               + 2 * jnp.log(2 * jnp.pi))
        K = jnp.linalg.solve(S, H @ P).T
        m = m + K @ e
        P = (jnp.eye(2) - K @ H) @ P
        P = 0.5 * (P + P.T)
    return total
