"""A damped pendulum stepped with semi-implicit Euler in a while loop over
time, on Python floats with the math module; the loss compares the final
angle with a target and penalises the energy left."""
import math

import numpy as np
import jax.numpy as jnp

G = 9.81


def pendulum_rhs(theta, omega, length, damping):
    return omega, -(G / length) * math.sin(theta) - damping * omega


def simulate(theta0, omega0, length, damping, dt=0.01, t_end=0.6):
    theta, omega, t = theta0, omega0, 0.0
    while t < t_end - 1e-12:
        dtheta, domega = pendulum_rhs(theta, omega, length, damping)
        omega = omega + dt * domega
        theta = theta + dt * omega
        t += dt
    return theta, omega


def energy(theta, omega, length):
    return 0.5 * (length * omega) ** 2 + G * length * (1.0 - math.cos(theta))


def swing_loss(length, damping, theta0, target=0.2):
    theta, omega = simulate(theta0, 0.0, length, damping)
    return (theta - target) ** 2 + 0.01 * energy(theta, omega, length)


def make_inputs(rng):
    return 1.0 + 0.2 * rng.uniform(), 0.1 + 0.05 * rng.uniform(), 0.8 + 0.1 * rng.uniform()


fun = swing_loss
argnums = (0, 1, 2)


def jax_fun(length, damping, theta0, target=0.2):
    theta, omega, t = theta0, 0.0, 0.0
    while t < 0.6 - 1e-12:
        omega = omega + 0.01 * (-(G / length) * jnp.sin(theta) - damping * omega)
        theta = theta + 0.01 * omega
        t += 0.01
    e = 0.5 * (length * omega) ** 2 + G * length * (1.0 - jnp.cos(theta))
    return (theta - target) ** 2 + 0.01 * e
