"""``pb.stop_gradient``: JAX's ``jax.lax.stop_gradient`` for pullback (a
value that carries no gradient), in reverse and forward mode and under a
Hessian, against JAX."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pullback as pb

jax.config.update("jax_enable_x64", True)

X = np.array([0.5, -1.0, 2.0])


def centered_cube(x):
    c = pb.stop_gradient(np.mean(x))
    return np.sum((x - c) ** 2 * x)


def centered_cube_j(x):
    c = jax.lax.stop_gradient(jnp.mean(x))
    return jnp.sum((x - c) ** 2 * x)


def target_network(params):
    # a frozen copy of the parameters (a DQN target): a dict walked
    frozen = pb.stop_gradient(params)
    return np.sum((params["w"] - 2.0 * frozen["w"]) ** 2) + params["b"] * frozen["b"]


def test_gradient_tangent_and_hessian_equal_jax():
    np.testing.assert_allclose(pb.grad(centered_cube)(X), jax.grad(centered_cube_j)(X),
                               rtol=1e-14)
    _, t = pb.jvp(centered_cube, (X,), (np.array([1.0, 0.5, -2.0]),))
    _, jt = jax.jvp(centered_cube_j, (X,), (jnp.array([1.0, 0.5, -2.0]),))
    np.testing.assert_allclose(t, jt, rtol=1e-14)
    np.testing.assert_allclose(pb.hessian(centered_cube)(X), jax.hessian(centered_cube_j)(X),
                               rtol=1e-14, atol=1e-15)


def test_structures_are_walked():
    p = {"w": np.array([1.0, -2.0]), "b": 3.0}
    g = pb.grad(target_network)(p)
    # d/dw (w - 2 w0)^2 = 2 (w - 2 w0) at w0 = w: -2 w; d/db b b0 = b0
    np.testing.assert_allclose(g["w"], -2 * p["w"], rtol=1e-14)
    assert g["b"] == pytest.approx(3.0)


def test_the_value_is_read_only_and_not_a_copy():
    v = pb.stop_gradient(X)
    assert np.shares_memory(v, X) and not v.flags.writeable
    assert X.flags.writeable
