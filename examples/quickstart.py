"""Quickstart: the gradient of a small NumPy model, and the code pullback wrote.

Run with `make demo` (or `python examples/quickstart.py` inside the venv).
"""
import numpy as np

import pullback as pb


@pb.differentiable
def loss(w, x, y):
    h = np.tanh(x @ w)
    return np.mean((h - y) ** 2)


def main():
    rng = np.random.default_rng(0)
    w = rng.normal(size=(3, 2))
    x = rng.normal(size=(5, 3))
    y = rng.normal(size=(5, 2))

    value, g = pb.value_and_grad(loss)(w, x, y)
    print(f"loss = {value:.6f}")
    print("d loss / d w =")
    print(g)

    # Check one entry against a central finite difference.
    eps = 1e-6
    dw = np.zeros_like(w)
    dw[1, 0] = eps
    fd = (loss(w + dw, x, y) - loss(w - dw, x, y)) / (2 * eps)
    print(f"finite difference for w[1, 0]: {fd:.8f} (pullback: {g[1, 0]:.8f})")

    print("\nThe generated primal and adjoint (pb.source(loss)):\n")
    print(pb.source(loss, w, x, y, argnums=0))


if __name__ == "__main__":
    main()
