"""A function with a rule given to the API directly, as JAX's
``jax.grad(jnp.sin)``: ``pb.grad(np.sin)``, ``pb.jvp(np.tanh, ...)``,
``pb.hessian(np.linalg.norm)`` (was SourceUnavailableError, "not a Python
function")."""
import math

import numpy as np
import pytest

import pullback as pb


X = np.array([0.5, -1.0, 2.0])


def test_grad_of_numpy_and_math_functions():
    assert pb.grad(np.sin)(1.0) == pytest.approx(math.cos(1.0), rel=1e-15)
    assert pb.grad(math.exp)(1.0) == pytest.approx(math.e, rel=1e-15)
    np.testing.assert_array_equal(pb.grad(np.sum)(X), np.ones(3))
    np.testing.assert_allclose(pb.grad(np.linalg.norm)(X), X / np.linalg.norm(X), rtol=1e-15)


def test_other_transforms_of_a_rule():
    _, t = pb.jvp(np.tanh, (X,), (np.ones(3),))
    np.testing.assert_allclose(t, 1 - np.tanh(X) ** 2, rtol=1e-14)
    np.testing.assert_allclose(pb.jacfwd(np.tanh)(X), np.diag(1 - np.tanh(X) ** 2), rtol=1e-14)
    (ct,) = pb.vjp(np.exp, X)[1](np.ones(3))
    np.testing.assert_allclose(ct, np.exp(X), rtol=1e-15)
