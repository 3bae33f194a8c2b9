"""End-to-end gradients of composite functions against central differences.

For a complex input z = a + ib the expected gradient (JAX's convention) is
df/da - i df/db."""
import math

import numpy as np
import pytest

import pullback as pb

from fd_helpers import central_differences as numeric_grad

rng = np.random.default_rng(1)


def check(f, *args, rtol=1e-6, atol=1e-8):
    argnums = tuple(i for i, a in enumerate(args) if np.issubdtype(np.result_type(a), np.inexact))
    grads = pb.grad(f, argnums=argnums)(*args)
    for i, g in zip(argnums, grads):
        np.testing.assert_allclose(g, numeric_grad(f, args, i), rtol=rtol, atol=atol)
        assert np.shape(g) == np.shape(args[i])


def mlp(w1, b1, w2, x, y):
    h = np.tanh(x @ w1 + b1)
    out = h @ w2
    return np.mean((out - y) ** 2)


def softplus_logistic(w, x, y):
    z = x @ w
    return np.sum(np.log1p(np.exp(-y * z))) / y.shape[0]


def mixed_scalar(x, y):
    a = math.exp(x) * y - math.atan2(y, x)
    b = a ** 3 / (1.0 + x * x)
    return math.sqrt(b * b + 1.0) + abs(x - y)


def stats(x):
    m = x.mean(axis=0)
    s = x.std(axis=0, keepdims=True)
    return np.sum(((x - m) / s) ** 3) + np.max(x, axis=1).sum() + np.prod(x[0])


def shapes(x, v):
    a = np.concatenate([x, x * 2.0], axis=1)  # (2, 4)
    b = np.stack([v, v ** 2])
    c = a.reshape(-1, 2).T @ b.T[::-1]
    d = np.expand_dims(np.squeeze(c[:, :1]), 0)
    return np.sum(np.outer(d, v)) + np.dot(v, v) + np.inner(v, v) + np.sum(np.transpose(a))


def complex_mix(x, z):
    w = z * x + np.conj(z) * 2.0
    r = np.real(w) * np.imag(w)
    return np.sum(r ** 2) + np.sum(np.abs(w * z))


def helper_sq(a):
    return a * a


def calls(x, y):
    u = helper_sq(x) + y
    v = helper_sq(u)
    return np.sum(v * x)


CASES = {
    "mlp": (mlp, rng.normal(size=(3, 4)), rng.normal(size=4), rng.normal(size=(4, 2)),
            rng.normal(size=(5, 3)), rng.normal(size=(5, 2))),
    "logistic": (softplus_logistic, rng.normal(size=3), rng.normal(size=(6, 3)),
                 np.sign(rng.normal(size=6))),
    "mixed_scalar": (mixed_scalar, 0.7, 1.3),
    "stats": (stats, rng.normal(size=(4, 3)) + 2.0),
    "shapes": (shapes, rng.normal(size=(2, 2)), rng.normal(size=4)),
    "complex_mix": (complex_mix, rng.normal(size=3),
                    rng.normal(size=3) + 1j * rng.normal(size=3)),
    "calls": (calls, rng.normal(size=3), rng.normal(size=3)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_against_finite_differences(name):
    f, *args = CASES[name]
    check(f, *args)


def test_float32_end_to_end_keeps_dtype_and_is_close():
    w1, b1, w2, x, y = (a.astype(np.float32) for a in CASES["mlp"][1:])
    grads = pb.grad(mlp, argnums=(0, 1, 2))(w1, b1, w2, x, y)
    assert all(g.dtype == np.float32 for g in grads)
    ref = pb.grad(mlp, argnums=(0, 1, 2))(*(a.astype(np.float64) for a in (w1, b1, w2, x, y)))
    for g, r in zip(grads, ref):
        np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-5)
