"""A lambda (or def) returning a lambda that captures the outer one's
parameters: ``mk = lambda a: (lambda v: a * v)``.  The inner function was
lifted capturing only the enclosing function's own names, so its reads of
``a`` failed ("name 'a' is not defined", "The name `g` is not defined")."""
import jax
import jax.numpy as jnp
import numpy as np

import pullback as pb

jax.config.update("jax_enable_x64", True)

X = np.array([0.3, -1.2, 0.8, 0.5])
T = np.array([1.0, 0.5, -2.0, 0.25])


def scaled(x):
    mk = lambda a: (lambda v: a * v)            # noqa: E731
    return np.sum(mk(x[0])(x) ** 2)


def composed(x):
    comp = lambda f, g: lambda v: f(g(v))       # noqa: E731
    return np.sum(comp(np.sin, np.exp)(x) * x)


def scaled_j(x):
    return jnp.sum((x[0] * x) ** 2)


def composed_j(x):
    return jnp.sum(jnp.sin(jnp.exp(x)) * x)


def test_gradients_tangents_and_hessians_equal_jax():
    for f, jf in ((scaled, scaled_j), (composed, composed_j)):
        want = np.asarray(jax.grad(jf)(X))
        np.testing.assert_allclose(pb.grad(f)(X), want, rtol=1e-13)
        _, t = pb.jvp(f, (X,), (T,))
        np.testing.assert_allclose(t, want @ T, rtol=1e-13)
        np.testing.assert_allclose(pb.hessian(f)(X), jax.hessian(jf)(X), rtol=1e-12, atol=1e-13)
