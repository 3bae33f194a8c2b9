"""A regularised objective assembled by closures that keep running state
with ``nonlocal``: an ``add_term(name, value, weight=1.0)`` helper that adds
into an enclosing total and records the names, a penalty closure counting
the active constraints, plus the functional idioms of the ``operator``
module: ``map(operator.mul, ...)``, ``filter`` of the positive
violations, ``functools.reduce(operator.add, ...)`` and ``any``.
Differentiated with respect to the weights and the penalty strength."""
import functools
import operator

import numpy as np
import jax.numpy as jnp


def objective(w, strength, X, y, bounds):
    total = 0.0
    names = []

    def add_term(name, value, weight=1.0):
        nonlocal total
        total = total + weight * value
        names.append(name)

    active = 0

    def violation(v, bound):
        nonlocal active
        gap = v - bound
        if gap > 0.0:
            active += 1
        return gap

    pred = X @ w
    add_term("data", np.mean((pred - y) ** 2))
    add_term("ridge", np.sum(w ** 2), weight=1e-2)
    gaps = list(map(violation, w, bounds))
    positive = list(filter(lambda g: g > 0.0, gaps))
    if any(g > 0.0 for g in gaps):
        add_term("bounds", functools.reduce(operator.add, map(operator.mul, positive, positive)),
                 weight=strength)
    scale = functools.reduce(operator.mul, [1.0 + 0.1 * abs(v) for v in w[:2]])
    return total * scale + 0.01 * active


def make_inputs(rng):
    X = rng.standard_normal((10, 4))
    y = X @ np.array([0.8, -0.4, 1.5, 0.2]) + 0.1 * rng.standard_normal(10)
    return np.array([0.9, -0.5, 1.3, 0.3]), 3.0, X, y, [0.5, 0.5, 1.0, 1.0]


fun = objective
argnums = (0, 1)


def jax_fun(w, strength, X, y, bounds):
    total = jnp.mean((X @ w - y) ** 2) + 1e-2 * jnp.sum(w ** 2)
    gaps = [v - b for v, b in zip(w, bounds)]
    positive = [g for g in gaps if g > 0.0]
    if positive:
        total = total + strength * sum(g * g for g in positive)
    scale = (1.0 + 0.1 * abs(w[0])) * (1.0 + 0.1 * abs(w[1]))
    return total * scale + 0.01 * len(positive)


jax_jit = False             # Python branches on the weights
