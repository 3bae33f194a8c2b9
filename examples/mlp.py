"""A two-layer perceptron fitted to a sine curve, gradients by pullback.

`loss` calls `dense`, another differentiable function, so each has its own
primal and adjoint; `WEIGHT_DECAY` is a module global that the generated
code reads, as the original does.  Run with `python examples/mlp.py`.
"""
import numpy as np

import pullback as pb

WEIGHT_DECAY = 1e-4


@pb.differentiable
def dense(x, w, b):
    """One tanh layer."""
    return np.tanh(x @ w + b)


@pb.differentiable
def loss(w1, b1, w2, b2, x, y):
    """Mean squared error of the network, plus weight decay."""
    h = dense(x, w1, b1)
    pred = h @ w2 + b2
    penalty = WEIGHT_DECAY * (np.sum(w1 ** 2) + np.sum(w2 ** 2))
    return np.mean((pred - y) ** 2) + penalty


def main():
    rng = np.random.default_rng(0)
    x = np.linspace(-3.0, 3.0, 64).reshape(-1, 1)
    y = np.sin(x)
    params = [rng.normal(0.0, 1.0, size=(1, 16)), np.zeros(16),
              rng.normal(0.0, 0.25, size=(16, 1)), np.zeros(1)]
    step = pb.value_and_grad(loss, argnums=(0, 1, 2, 3))
    for it in range(2001):
        value, grads = step(*params, x, y)
        params = [p - 0.05 * g for p, g in zip(params, grads)]
        if it % 500 == 0:
            print(f"step {it:4d}  loss = {value:.5f}")


if __name__ == "__main__":
    main()
