"""Reverse mode of ``pb.custom_jvp`` functions (``custom_rules.TransposedJVP``):
as JAX's, ``pb.grad`` and ``pb.vjp`` use the rule's tangent map transposed
(computed by reverse mode of the user's rule itself, with respect to the
tangents).  Once refused: "reverse mode cannot use it yet"."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pullback as pb

jax.config.update("jax_enable_x64", True)

X = np.array([0.5, -1.0, 2.0])


@pb.custom_jvp
def softplus(v):
    return np.log1p(np.exp(v))


@softplus.defjvp
def softplus_jvp(primals, tangents):
    (v,), (t,) = primals, tangents
    return softplus(v), t / (1 + np.exp(-v))


@jax.custom_jvp
def jsoftplus(v):
    return jnp.log1p(jnp.exp(v))


@jsoftplus.defjvp
def jsoftplus_jvp(primals, tangents):
    (v,), (t,) = primals, tangents
    return jsoftplus(v), t / (1 + jnp.exp(-v))


@pb.custom_jvp
def scaled_pow(a, k, s):
    return s * a ** k


@scaled_pow.defjvp
def scaled_pow_jvp(primals, tangents):
    a, k, s = primals
    ta, _, ts = tangents
    return s * a ** k, s * k * a ** (k - 1) * ta + a ** k * ts


def loss(x, s):
    h = x
    for _ in range(3):
        h = softplus(h * 0.5) - 0.3
    return np.sum(h ** 2) + np.sum(scaled_pow(x, 3, s))


def jloss(x, s):
    h = x
    for _ in range(3):
        h = jsoftplus(h * 0.5) - 0.3
    return jnp.sum(h ** 2) + jnp.sum(s * x ** 3)


def test_grad_and_vjp_equal_jax():
    np.testing.assert_allclose(pb.grad(lambda v: np.sum(softplus(v)))(X),
                               jax.grad(lambda v: jnp.sum(jsoftplus(v)))(X), rtol=1e-14)
    assert pb.grad(softplus)(0.3) == pytest.approx(float(jax.grad(jsoftplus)(0.3)), rel=1e-14)
    (ct,) = pb.vjp(softplus, X)[1](np.array([1.0, 2.0, -1.0]))
    (jct,) = jax.vjp(jsoftplus, X)[1](jnp.array([1.0, 2.0, -1.0]))
    np.testing.assert_allclose(ct, jct, rtol=1e-14)


def test_in_a_loop_with_an_integer_argument_and_a_keyword_cotangent():
    g = pb.grad(loss, argnums=(0, 1))(X, 1.5)
    jg = jax.grad(jloss, argnums=(0, 1))(X, 1.5)
    np.testing.assert_allclose(g[0], jg[0], rtol=1e-13)
    assert g[1] == pytest.approx(float(jg[1]), rel=1e-13)
    v, _ = pb.value_and_grad(loss)(X, 1.5)
    assert v == pytest.approx(float(jloss(X, 1.5)), rel=1e-14)


def test_hessian_is_refused_naming_the_function():
    with pytest.raises(pb.PullbackError, match="softplus"):
        pb.hessian(loss)(X, 1.5)
