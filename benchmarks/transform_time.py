"""Transform time of a 20-line function, and its gradient's cost against the
primal (issue: core compiler).  Run: .venv/bin/python benchmarks/transform_time.py
"""
import time

import numpy as np

import pullback as pb
from pullback.api import Derivative


def model(w1, b1, w2, b2, x, y):
    z1 = x @ w1 + b1
    h1 = np.tanh(z1)
    z2 = h1 @ w2 + b2
    m = np.max(z2, axis=1, keepdims=True)
    e = np.exp(z2 - m)
    s = np.sum(e, axis=1, keepdims=True)
    logp = z2 - m - np.log(s)
    nll = -np.mean(np.sum(logp * y, axis=1))
    reg1 = np.sum(w1 * w1)
    reg2 = np.sum(w2 * w2)
    reg = 0.5 * 1e-3 * (reg1 + reg2)
    ent = -np.mean(np.sum(np.exp(logp) * logp, axis=1))
    conf = np.mean(np.max(logp, axis=1))
    act = np.mean(h1 ** 2)
    sparsity = np.mean(np.abs(h1))
    loss = nll + reg + 0.01 * ent
    loss = loss + 1e-4 * act + 1e-4 * sparsity
    loss = loss - 0.0 * conf
    loss = loss * 1.0
    return loss


def best(f, repeat=50):
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return min(ts)


def main():
    rng = np.random.default_rng(0)
    args = (rng.normal(size=(64, 32)) * 0.1, np.zeros(32), rng.normal(size=(32, 10)) * 0.1,
            np.zeros(10), rng.normal(size=(128, 64)), np.eye(10)[rng.integers(0, 10, 128)])
    ts = []
    for _ in range(20):
        d = Derivative(model)
        t = time.perf_counter()
        d.specialize(args, (0, 1, 2, 3))
        ts.append(time.perf_counter() - t)
    g = pb.grad(model, argnums=(0, 1, 2, 3))
    g(*args)
    primal = best(lambda: model(*args))
    grad = best(lambda: g(*args))
    print(f"transform time (20-line function, median of 20): {np.median(ts) * 1e3:.1f} ms")
    print(f"primal {primal * 1e6:.0f} us, value_and_grad {grad * 1e6:.0f} us, "
          f"ratio {grad / primal:.2f}")


if __name__ == "__main__":
    main()
