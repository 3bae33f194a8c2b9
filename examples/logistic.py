"""Logistic regression: the negative log-likelihood and its gradient, by pullback.

Fits a linear classifier to two Gaussian blobs with plain gradient descent.
Run with `python examples/logistic.py` inside the venv.
"""
import numpy as np

import pullback as pb


@pb.differentiable
def nll(w, b, x, y):
    """Mean negative log-likelihood of labels ``y`` (0 or 1) under
    ``sigmoid(x @ w + b)``, written stably with ``logaddexp``."""
    z = x @ w + b
    return np.mean(np.logaddexp(0.0, z) - y * z)


def main():
    rng = np.random.default_rng(0)
    n = 200
    x = np.concatenate([rng.normal(-1.0, 1.0, size=(n, 2)), rng.normal(1.0, 1.0, size=(n, 2))])
    y = np.concatenate([np.zeros(n), np.ones(n)])
    w, b = np.zeros(2), 0.0
    step = pb.value_and_grad(nll, argnums=(0, 1))
    for it in range(101):
        value, (gw, gb) = step(w, b, x, y)
        w, b = w - 0.5 * gw, b - 0.5 * gb
        if it % 25 == 0:
            print(f"step {it:3d}  nll = {value:.4f}")
    accuracy = np.mean((x @ w + b > 0) == (y == 1))
    print(f"w = {w}, b = {b:.4f}, training accuracy = {accuracy:.3f}")


if __name__ == "__main__":
    main()
