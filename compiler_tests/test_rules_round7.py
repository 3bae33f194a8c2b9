"""``np.select``'s ``default`` and ``np.average``'s ``weights`` carry
gradients (round 7; before, a differentiated default or weights was refused,
"carries no gradient").  The randomized dot-product checks are in
``rule_cases_round7``; these check whole programs against JAX."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pullback as pb

jax.config.update("jax_enable_x64", True)

X = np.array([0.3, -1.2, 0.8, 0.5, -0.4, 1.1])
T = np.array([1.0, -0.5, 0.25, 2.0, -1.0, 0.5])


def piecewise(x):
    return np.sum(np.select([x < -0.5, x > 0.5], [x ** 2, x ** 3], default=np.sin(x)))


def piecewise_j(x):
    return jnp.sum(jnp.select([x < -0.5, x > 0.5], [x ** 2, x ** 3], default=jnp.sin(x)))


def weighted(x):
    m, s = np.average(x.reshape(2, 3), axis=0, weights=x[:2] ** 2 + 1, returned=True)
    return np.sum(m * s) + np.average(x, weights=np.exp(x))


def weighted_j(x):
    m, s = jnp.average(x.reshape(2, 3), axis=0, weights=x[:2] ** 2 + 1, returned=True)
    return jnp.sum(m * s) + jnp.average(x, weights=jnp.exp(x))


@pytest.mark.parametrize("f, jf", [(piecewise, piecewise_j), (weighted, weighted_j)],
                         ids=["select_default", "average_weights"])
def test_gradient_and_tangent_against_jax(f, jf):
    want = np.asarray(jax.grad(jf)(jnp.asarray(X)))
    np.testing.assert_allclose(pb.grad(f)(X), want, rtol=1e-12, atol=1e-14)
    _, t = pb.jvp(f, (X,), (T,))
    np.testing.assert_allclose(t, want @ T, rtol=1e-12)


def test_hessian_through_select_default():
    np.testing.assert_allclose(pb.hessian(piecewise)(X), jax.hessian(piecewise_j)(jnp.asarray(X)),
                               rtol=1e-12, atol=1e-14)


def test_hessian_through_differentiated_weights_is_refused_naming_the_helper():
    with pytest.raises(pb.PullbackError, match="average_weights_grad"):
        pb.hessian(weighted)(X)
