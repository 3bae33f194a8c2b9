"""``np.vectorize`` objects called on arrays (``rules.numpy_vectorize``): the
user's scalar function differentiated per element, in both modes, checked
against JAX (float64) with NumPy's broadcasting, ``otypes``, ``excluded``,
keyword arguments, several outputs and 0-d results; what stays refused
is refused naming the user's line."""
import numpy as np
import pytest

import pullback as pb
from pullback.testing import function_from_source

from test_more_rules import both_modes, jax, jnp


def huber(r, d):
    if abs(r) <= d:
        return 0.5 * r * r
    return d * (abs(r) - 0.5 * d)


def jax_huber(r, d):
    return jnp.where(jnp.abs(r) <= d, 0.5 * r * r, d * (jnp.abs(r) - 0.5 * d))


def affine(r, w):                  # w is excluded: the whole array at every call
    return np.tanh(w[0] * r + w[1])


def polar(r, t):                   # two outputs
    return r * np.cos(t), r * np.sin(t)


NAMESPACE = {"hub": np.vectorize(huber), "aff": np.vectorize(affine, excluded={1}),
             "pol": np.vectorize(polar, otypes=[float, float]),
             "hub_f": np.vectorize(huber, otypes=[float])}
X = np.array([[-1.5, -0.2, 0.1], [0.4, 0.9, 2.5]])


def test_two_arrays_broadcast_against_each_other():
    d = np.array([[0.3], [1.0]])           # (2, 1) against x's (2, 3): d's cotangent summed
    both_modes('''
def f(x, d):
    return np.sum(hub(x, d) * np.arange(1.0, 7.0).reshape(2, 3))
''', lambda x, d: jnp.sum(jax_huber(x, d) * jnp.arange(1.0, 7.0).reshape(2, 3)), (X, d),
        namespace=NAMESPACE)


def test_otypes_and_a_constant_keyword_argument():
    both_modes('''
def f(x):
    return np.sum(hub_f(x * x, d=0.5) ** 2)
''', lambda x: jnp.sum(jax_huber(x * x, 0.5) ** 2), (X,), namespace=NAMESPACE)


def test_an_excluded_array_gets_the_sum_over_the_calls():
    both_modes('''
def f(x, w):
    return np.sum(aff(x, w) ** 2)
''', lambda x, w: jnp.sum(jnp.tanh(w[0] * x + w[1]) ** 2), (X, np.array([0.7, -0.3])),
        namespace=NAMESPACE)


def test_several_outputs_and_a_0d_result():
    both_modes('''
def f(r, t, s):
    a, b = pol(r, t)
    return np.sum(a * b) + float(hub(s, 1.0)) ** 2
''', lambda r, t, s: jnp.sum(r * jnp.cos(t) * r * jnp.sin(t)) + jax_huber(s, 1.0) ** 2,
        (np.array([0.5, 1.5, 2.0]), np.array([0.1, -0.4, 1.2]), 0.6), namespace=NAMESPACE)


def test_matches_jax_vmap_of_grad():
    # per element, the derivative is the scalar function's own: jax.vmap(jax.grad(...))
    f = function_from_source("def f(x):\n    return np.sum(hub(x, 0.3))\n", NAMESPACE)
    x = np.linspace(-1.0, 1.0, 9)
    want = jax.vmap(jax.grad(lambda r: jax_huber(r, 0.3)))(jnp.asarray(x))
    np.testing.assert_allclose(pb.grad(f)(x), np.asarray(want), rtol=1e-12)


def test_signature_is_refused():
    g = np.vectorize(huber, signature="(),()->()")
    f = function_from_source("def f(x):\n    return np.sum(g(x, 0.5))\n", {"g": g})
    for run in (lambda: pb.grad(f)(X), lambda: pb.jvp(f, (X,), (X,))):
        with pytest.raises(pb.NonDifferentiableError) as err:
            run()
        assert "signature='(),()->()'" in str(err.value) and "np.stack" in str(err.value)


def test_made_inside_with_excluded_and_keywords():
    # np.vectorize(g, excluded=...) and keyword calls made in the function reach the rule
    both_modes('''
def f(x, w):
    v = np.vectorize(affine, excluded=[1])
    u = np.vectorize(huber)
    return np.sum(v(x, w) ** 2) + np.sum(u(x, d=0.5))
''', lambda x, w: jnp.sum(jnp.tanh(w[0] * x + w[1]) ** 2) + jnp.sum(jax_huber(x, 0.5)),
        (X, np.array([0.7, -0.3])), namespace={"affine": affine, "huber": huber})


@pytest.mark.parametrize("text,shown", [
    ("np.vectorize(lambda t: huber(t, a))(x)", "np.vectorize(lambda t: huber(t, a))(x)"),
    ("hub(x, d=0.5 * a)", "return np.sum(hub(x, d=0.5 * a))"),
])
def test_a_differentiated_value_the_rule_cannot_follow_is_refused(text, shown):
    # a lambda holding `a`, or `a` passed by keyword, would lose its gradient: refused
    # on the user's line (a keyword that depends on the inputs: pass it by position)
    f = function_from_source(f"def f(x, a):\n    return np.sum({text})\n",
                             {"huber": huber, **NAMESPACE})
    x = np.array([-1.0, 0.5, 2.0])
    for run in (lambda: pb.grad(f, argnums=(0, 1))(x, 2.0),
                lambda: pb.jvp(f, (x, 2.0), (x, 1.0))):
        with pytest.raises(pb.PullbackError) as err:
            run()
        assert shown in str(err.value)
