"""The log-likelihood of a constant-velocity Kalman filter on scalar
observations: predict and update steps as helpers returning (mean, cov), a
Python-float process and observation noise, differentiated with respect to the
transition matrix and the noises."""
import numpy as np
import jax.numpy as jnp

H = np.array([[1.0, 0.0]])


def predict(x, P, F, q):
    return F @ x, F @ P @ F.T + q * np.eye(2)


def update(x, P, z, r):
    S = (H @ P @ H.T)[0, 0] + r
    innovation = z - (H @ x)[0]
    K = (P @ H.T)[:, 0] / S
    x = x + K * innovation
    P = P - np.outer(K, (H @ P)[0])
    log_lik = -0.5 * (np.log(2.0 * np.pi * S) + innovation ** 2 / S)
    return x, P, log_lik


def kalman_log_likelihood(F, q, r, observations, x0, P0):
    x, P = x0, P0
    total = 0.0
    for z in observations:
        x, P = predict(x, P, F, q)
        x, P, ll = update(x, P, z, r)
        total += ll
    return total


def make_inputs(rng):
    F = np.array([[1.0, 0.1], [0.0, 1.0]]) + 0.02 * rng.standard_normal((2, 2))
    obs = np.cumsum(0.1 + 0.2 * rng.standard_normal(12))
    return F, 0.05, 0.3, obs, np.zeros(2), np.eye(2)


fun = kalman_log_likelihood
argnums = (0, 1, 2, 3)


def jax_fun(F, q, r, observations, x0, P0):
    Hj = jnp.array([[1.0, 0.0]])
    x, P, total = x0, P0, 0.0
    for z in observations:
        x, P = F @ x, F @ P @ F.T + q * jnp.eye(2)
        S = (Hj @ P @ Hj.T)[0, 0] + r
        innovation = z - (Hj @ x)[0]
        K = (P @ Hj.T)[:, 0] / S
        x, P = x + K * innovation, P - jnp.outer(K, (Hj @ P)[0])
        total += -0.5 * (jnp.log(2.0 * jnp.pi * S) + innovation ** 2 / S)
    return total
