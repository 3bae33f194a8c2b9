"""Fitting a Lotka-Volterra model: a classic fixed-step RK4 integrator that
takes the vector field as a function argument, a trajectory collected in a
list, and a squared error against observations."""
import numpy as np
import jax.numpy as jnp


def lotka_volterra(state, t, theta):
    prey, predator = state[0], state[1]
    alpha, beta, gamma, delta = theta
    return np.array([alpha * prey - beta * prey * predator,
                     delta * prey * predator - gamma * predator])


def rk4_step(f, y, t, dt, theta):
    k1 = f(y, t, theta)
    k2 = f(y + 0.5 * dt * k1, t + 0.5 * dt, theta)
    k3 = f(y + 0.5 * dt * k2, t + 0.5 * dt, theta)
    k4 = f(y + dt * k3, t + dt, theta)
    return y + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)


def odeint_rk4(f, y0, t0, t1, n_steps, theta):
    dt = (t1 - t0) / n_steps
    y, t = y0, t0
    trajectory = [y0]
    for _ in range(n_steps):
        y = rk4_step(f, y, t, dt, theta)
        t = t + dt
        trajectory.append(y)
    return np.stack(trajectory)


def fit_loss(theta, y0, observed):
    traj = odeint_rk4(lotka_volterra, y0, 0.0, 2.0, 20, theta)
    return np.mean((traj - observed) ** 2)


def make_inputs(rng):
    theta = np.array([1.1, 0.4, 0.4, 0.1]) + 0.05 * rng.standard_normal(4)
    y0 = np.array([10.0, 5.0]) + rng.standard_normal(2)
    observed = np.abs(rng.standard_normal((21, 2))) * 5.0
    return theta, y0, observed


fun = fit_loss
argnums = (0, 1)
jax_jit = False             # XLA takes minutes to compile this unrolled loop


def jax_fun(theta, y0, observed):
    def field(state, t, th):
        alpha, beta, gamma, delta = th
        return jnp.array([alpha * state[0] - beta * state[0] * state[1],
                          delta * state[0] * state[1] - gamma * state[1]])
    dt = 2.0 / 20
    y, t, traj = y0, 0.0, [y0]
    for _ in range(20):
        k1 = field(y, t, theta)
        k2 = field(y + 0.5 * dt * k1, t + 0.5 * dt, theta)
        k3 = field(y + 0.5 * dt * k2, t + 0.5 * dt, theta)
        k4 = field(y + dt * k3, t + dt, theta)
        y = y + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        t = t + dt
        traj.append(y)
    return jnp.mean((jnp.stack(traj) - observed) ** 2)
