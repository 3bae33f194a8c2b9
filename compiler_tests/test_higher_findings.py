"""Findings of the forward-mode and higher-order probe (probe2, 2026-12-02)
whose fix lies in another engineer's files: each the smallest reproduction,
marked xfail(strict=True) so that it turns into a failure the moment the fix
lands (remove the mark then).  No silently wrong number was found (96 corpus
programs: jvp, vjp, jacfwd, jacrev, jvp(grad), vjp(grad) against JAX)."""
import numpy as np
import pytest

import pullback as pb

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402


def with_default(x, scale=2.0):
    return np.sum(np.sin(x) * scale)


def test_vjp_fills_defaults():
    x = np.array([0.1, 0.7])
    out, back = pb.vjp(with_default, x)
    (g,) = back(1.5)          # one cotangent per primal given, as JAX's vjp
    np.testing.assert_allclose(g, 1.5 * 2.0 * np.cos(x), rtol=1e-12)
    out, back = pb.vjp(with_default, x, 3.0)
    assert np.allclose(back(1.0)[1], np.sum(np.sin(x)))


def spread_inner(x, s):
    return np.sum(np.tanh(x) * s)


def star_call(x):
    args = (x, 3.0)
    return spread_inner(*args) ** 2


def test_hessian_through_a_starred_call():
    x = np.array([0.3, -0.4])
    want = jax.hessian(lambda x: jnp.sum(jnp.tanh(x) * 3.0) ** 2)(x)
    np.testing.assert_allclose(pb.hessian(star_call)(x), want, rtol=1e-10)


def logsumexp_rows(a, axis=None):
    m = np.max(a, axis=axis, keepdims=True)
    return np.squeeze(np.log(np.sum(np.exp(a - m), axis=axis, keepdims=True)) + m, axis=axis)


def lse_loss(x):
    return np.sum(logsumexp_rows(x, 1) ** 2)


def test_hessian_of_a_helper_taking_axis():
    x = np.arange(6.0).reshape(2, 3) / 5

    def jf(x):
        return jnp.sum(jax.scipy.special.logsumexp(x, axis=1) ** 2)
    np.testing.assert_allclose(pb.hessian(lse_loss)(x), jax.hessian(jf)(x), rtol=1e-10)
