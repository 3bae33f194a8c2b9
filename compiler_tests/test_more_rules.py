"""Issue 13: NumPy and ``math`` functions real programs call that had no
rule.  Each rule is also in ``test_rules``' table (the randomized dot-product
check against central differences, both modes through ``test_forward``);
here whole functions that call them are checked against ``jax.grad`` and
``jax.jvp`` (float64), and what stays refused is refused with a message
that names the user's own expression.
"""
import numpy as np
import pytest

import pullback as pb
from pullback.testing import function_from_source

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402


def both_modes(text, jax_fn, args, rtol=1e-9, namespace=None):
    """pb.grad and pb.jvp of the NumPy function ``text`` against JAX's at ``args``."""
    f = function_from_source(text, namespace or {})
    jargs = tuple(jnp.asarray(a) for a in args)
    wrt = tuple(range(len(args)))
    before = [np.copy(a) for a in args]
    got = pb.grad(f, argnums=wrt)(*args)
    want = jax.grad(jax_fn, argnums=wrt)(*jargs)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, np.asarray(w), rtol=rtol, atol=1e-12)
    rng = np.random.default_rng(0)
    tangents = tuple(rng.standard_normal(np.shape(a)) for a in args)
    _, dot = pb.jvp(f, tuple(args), tangents)
    _, jdot = jax.jvp(jax_fn, jargs, tuple(jnp.asarray(t) for t in tangents))
    np.testing.assert_allclose(dot, np.asarray(jdot), rtol=rtol, atol=1e-12)
    for b, a in zip(before, args):
        np.testing.assert_array_equal(a, b)


# -- np.diff's prepend= and append= ----------------------------------------------------


def test_diff_append_of_the_differenced_array():
    # tv_denoising's forward differences with a replicated last column
    both_modes('''
def f(u):
    dx = np.diff(u, axis=1, append=u[:, -1:])
    dy = np.diff(u, axis=0, prepend=u[:1, :] * 2.0)
    return np.sum(np.sin(dx) * dy)
''', lambda u: jnp.sum(jnp.sin(jnp.diff(u, axis=1, append=u[:, -1:]))
                       * jnp.diff(u, axis=0, prepend=u[:1, :] * 2.0)),
        (np.random.default_rng(1).standard_normal((4, 5)),))


def test_diff_of_a_constant_with_active_ends():
    both_modes('''
def f(a, b):
    return np.sum(np.diff(np.arange(4.0), n=2, prepend=a, append=b) ** 2)
''', lambda a, b: jnp.sum(jnp.diff(jnp.arange(4.0), n=2, prepend=a, append=b) ** 2),
        (0.7, np.array([1.5, -0.5])))


def test_a_static_argument_is_named_as_the_user_wrote_it():
    # the value is `x[0] * 2` in the message, not the temporary `x_item_2`
    f = function_from_source('''
def f(x):
    return np.sum(np.interp(np.linspace(-1.0, 2.0, 5), np.array([0.0, 1.0]), x,
                            left=x[0] * 2))
''')
    with pytest.raises(pb.NonDifferentiableError) as err:
        pb.grad(f)(np.array([1.0, 2.0]))
    text = str(err.value)
    assert "The `left` argument of np.interp carries no gradient, but `x[0] * 2`" in text
    assert "x_item" not in text and "line 2" in text
