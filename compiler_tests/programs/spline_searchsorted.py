"""A natural cubic spline fitted by least squares, evaluated the way
interpolation code does it: the interval of each query point found with
``np.searchsorted`` and clipped into range, the second derivatives at the
knots from a tridiagonal system solved with ``np.linalg.solve``, and the
cubic on each interval from gathered knot values. Differentiated with
respect to the knot values and the query points (a calibration curve)."""
import numpy as np
import jax.numpy as jnp

KNOTS = np.array([0.0, 0.4, 1.1, 1.5, 2.3, 3.0])


def second_derivatives(x, y):
    """Natural spline: M[0] = M[-1] = 0, continuity of the first derivative."""
    n = len(x)
    h = np.diff(x)
    A = np.zeros((n, n))
    A[0, 0] = A[-1, -1] = 1.0
    rhs = np.zeros(n)
    for i in range(1, n - 1):
        A[i, i - 1] = h[i - 1]
        A[i, i] = 2.0 * (h[i - 1] + h[i])
        A[i, i + 1] = h[i]
    rhs[1:-1] = 6.0 * ((y[2:] - y[1:-1]) / h[1:] - (y[1:-1] - y[:-2]) / h[:-1])
    return np.linalg.solve(A, rhs)


def evaluate(x, y, M, query):
    i = np.searchsorted(x, query, side="right") - 1
    i = np.clip(i, 0, len(x) - 2)
    x0, x1 = x[i], x[i + 1]
    h = x1 - x0
    a, b = (x1 - query) / h, (query - x0) / h
    return (a * y[i] + b * y[i + 1]
            + ((a ** 3 - a) * M[i] + (b ** 3 - b) * M[i + 1]) * h ** 2 / 6.0)


def calibration_loss(y, query, targets):
    M = second_derivatives(KNOTS, y)
    pred = evaluate(KNOTS, y, M, query)
    return np.mean((pred - targets) ** 2) + 1e-3 * np.sum(M ** 2)


def make_inputs(rng):
    y = np.sin(KNOTS) + 0.1 * rng.standard_normal(len(KNOTS))
    # away from the knots, so central differences do not cross an interval
    query = np.array([0.15, 0.7, 0.95, 1.3, 1.9, 2.05, 2.6, 2.85])
    query = query + 0.02 * rng.standard_normal(len(query))
    return y, query, np.sin(query) + 0.05 * rng.standard_normal(len(query))


fun = calibration_loss
argnums = (0, 1)


def jax_fun(y, query, targets):
    x = jnp.asarray(KNOTS)
    n = len(x)
    h = np.diff(KNOTS)
    A = np.zeros((n, n))
    A[0, 0] = A[-1, -1] = 1.0
    for i in range(1, n - 1):
        A[i, i - 1], A[i, i], A[i, i + 1] = h[i - 1], 2.0 * (h[i - 1] + h[i]), h[i]
    rhs = jnp.zeros(n).at[1:-1].set(
        6.0 * ((y[2:] - y[1:-1]) / h[1:] - (y[1:-1] - y[:-2]) / h[:-1]))
    M = jnp.linalg.solve(A, rhs)
    i = jnp.clip(jnp.searchsorted(x, query, side="right") - 1, 0, n - 2)
    x0, x1 = x[i], x[i + 1]
    hh = x1 - x0
    a, b = (x1 - query) / hh, (query - x0) / hh
    pred = (a * y[i] + b * y[i + 1]
            + ((a ** 3 - a) * M[i] + (b ** 3 - b) * M[i + 1]) * hh ** 2 / 6.0)
    return jnp.mean((pred - targets) ** 2) + 1e-3 * jnp.sum(M ** 2)
