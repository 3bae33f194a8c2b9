"""Fitting an SIR epidemic model to case counts, in the style of
``scipy.integrate.odeint`` users who then write their own stepper: the
right-hand side has odeint's signature ``f(y, t, *args)``, the integrator
is a default argument that is a function (Heun's method, with explicit
Euler as the alternative), the trajectory is collected in a list and
stacked, and the loss is a Poisson deviance of the new infections.
Differentiated with respect to the transmission and recovery rates and the
initial infected fraction."""
from typing import Callable, Sequence

import numpy as np
import jax.numpy as jnp


def sir_rhs(y: np.ndarray, t: float, beta: float, gamma: float) -> np.ndarray:
    susceptible, infected, _ = y
    new_inf = beta * susceptible * infected
    return np.array([-new_inf, new_inf - gamma * infected, gamma * infected])


def euler_step(f: Callable, y, t, dt, args=()):
    return y + dt * f(y, t, *args)


def heun_step(f: Callable, y, t, dt, args=()):
    k1 = f(y, t, *args)
    k2 = f(y + dt * k1, t + dt, *args)
    return y + 0.5 * dt * (k1 + k2)


def integrate(f: Callable, y0: np.ndarray, ts: Sequence[float], args=(), step=heun_step):
    ys = [y0]
    for t0, t1 in zip(ts[:-1], ts[1:]):
        ys.append(step(f, ys[-1], t0, t1 - t0, args=args))
    return np.stack(ys)


def poisson_deviance(beta, gamma, i0, cases, population=1000.0):
    y0 = np.array([1.0 - i0, i0, 0.0])
    ts = np.linspace(0.0, 20.0, 21)
    traj = integrate(sir_rhs, y0, ts, args=(beta, gamma))
    susceptible = traj[::2, 0]
    expected = population * (susceptible[:-1] - susceptible[1:])
    return 2.0 * np.sum(cases * np.log(cases / expected) - (cases - expected))


def make_inputs(rng):
    cases = np.array([4.0, 9, 17, 30, 44, 50, 44, 33, 21, 13]) + rng.integers(0, 3, 10)
    return 0.9, 0.35, 0.01, cases


fun = poisson_deviance
argnums = (0, 1, 2)
jax_jit = False          # XLA takes minutes to compile the unrolled steps


def jax_fun(beta, gamma, i0, cases):
    y = jnp.array([1.0 - i0, i0, 0.0])
    ts = np.linspace(0.0, 20.0, 21)

    def f(y):
        new_inf = beta * y[0] * y[1]
        return jnp.stack([-new_inf, new_inf - gamma * y[1], gamma * y[1]])
    S = [y[0]]
    for t0, t1 in zip(ts[:-1], ts[1:]):
        dt = t1 - t0
        k1 = f(y)
        k2 = f(y + dt * k1)
        y = y + 0.5 * dt * (k1 + k2)
        S.append(y[0])
    S = jnp.stack(S)[::2]
    expected = 1000.0 * (S[:-1] - S[1:])
    return 2.0 * jnp.sum(cases * jnp.log(cases / expected) - (cases - expected))
