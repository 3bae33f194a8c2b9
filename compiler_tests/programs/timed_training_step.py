"""Training code instrumented the way people instrument it: a small timing
context manager (a class with ``__enter__``/``__exit__``) that appends to a
module-level log, a ``with`` block around the forward pass, and a
``try/finally`` that counts calls even when the model raises."""
import time

import numpy as np
import jax.numpy as jnp

TIMINGS = []
CALLS = {"n": 0}


class Timer:
    def __init__(self, label):
        self.label = label

    def __enter__(self):
        self.start = time.perf_counter()
        return self

    def __exit__(self, exc_type, exc, tb):
        TIMINGS.append((self.label, time.perf_counter() - self.start))
        return False


def forward(W1, b1, W2, x):
    h = np.tanh(x @ W1 + b1)
    return h @ W2


def loss(W1, b1, W2, x, y):
    try:
        with Timer("forward"):
            logits = forward(W1, b1, W2, x)
        with Timer("loss"):
            logits = logits - logits.max(axis=1, keepdims=True)
            logp = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
            nll = -np.mean(np.sum(y * logp, axis=1))
    finally:
        CALLS["n"] += 1
    return nll


def make_inputs(rng):
    y = np.eye(3)[rng.integers(0, 3, size=6)]
    return (0.5 * rng.standard_normal((4, 5)), 0.1 * rng.standard_normal(5),
            0.5 * rng.standard_normal((5, 3)), rng.standard_normal((6, 4)), y)


fun = loss
argnums = (0, 1, 2)


def jax_fun(W1, b1, W2, x, y):
    logits = jnp.tanh(x @ W1 + b1) @ W2
    logits = logits - logits.max(axis=1, keepdims=True)
    logp = logits - jnp.log(jnp.exp(logits).sum(axis=1, keepdims=True))
    return -jnp.mean(jnp.sum(y * logp, axis=1))
