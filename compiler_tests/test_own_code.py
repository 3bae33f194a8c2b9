"""pullback never transforms its own code (issue 13): its machinery
(``runtime.control.attempt``, the dispatcher, the API) is a rule or a known
run-time call, and reaching its source is refused; a ``try`` body in a
function differentiated twice goes through the body's own derivatives
(``higher.attempt_forward``).  Checked against JAX (float64) and exact values."""
import math

import numpy as np
import pytest

import pullback as pb
from pullback.forward.calls import forward_of
from pullback.own_code import is_own, is_source_helper, refuse_own
from pullback.runtime import control, rule_support
from pullback.testing import function_from_source

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402

TRY_TEXT = '''
def f(x, k):
    return g(x, k) * 2.0 + x

def g(x, k):
    try:
        if k > 5.0:
            raise ValueError("big")
        y = np.sin(x) * x
    except ValueError:
        y = x * x * x
    return y
'''


def _jax_f(taken):
    if taken == "body":
        return lambda x: (jnp.sin(x) * x) * 2.0 + x
    return lambda x: (x * x * x) * 2.0 + x


@pytest.mark.parametrize("k,taken", [(1.0, "body"), (9.0, "handler")])
def test_grad_of_grad_through_a_try_body_matches_jax(k, taken):
    f = function_from_source(TRY_TEXT)
    ref = _jax_f(taken)
    for x in (0.3, 1.7):
        assert math.isclose(pb.grad(f)(x, k), float(jax.grad(ref)(x)), rel_tol=1e-12)
        got = pb.grad(pb.grad(f))(x, k)
        assert math.isclose(got, float(jax.grad(jax.grad(ref))(x)), rel_tol=1e-10), got


def test_hessian_through_a_try_body_with_arrays_matches_jax():
    text = '''
def h(x):
    try:
        y = np.sum(np.tanh(x) * x[::-1])
    except FloatingPointError:
        y = np.sum(x)
    return y * y
'''
    h = function_from_source(text)
    x = np.array([0.3, -0.8, 1.1])

    def ref(x):
        y = jnp.sum(jnp.tanh(x) * x[::-1])
        return y * y
    np.testing.assert_allclose(pb.hessian(h)(x), jax.hessian(ref)(x), rtol=1e-10, atol=1e-12)
    v = np.array([1.0, 0.5, -2.0])
    _, hv = pb.jvp(pb.grad(h), (x,), (v,))
    np.testing.assert_allclose(hv, jax.jvp(jax.grad(ref), (x,), (v,))[1], rtol=1e-10)


def test_pullback_machinery_is_refused_not_transformed():
    assert is_own(control.attempt) and not is_source_helper(control.attempt)
    assert is_source_helper(rule_support.prod_grad)
    assert refuse_own(rule_support.prod_grad) is None
    assert refuse_own(np.sin) is None and refuse_own(_jax_f) is None
    with pytest.raises(pb.NonDifferentiableError, match="does not transform its own code: "
                       "pullback.runtime.control.attempt"):
        refuse_own(control.attempt)
    with pytest.raises(pb.NonDifferentiableError, match="own code"):
        pb.grad(control.attempt, argnums=1)(np.sin, 1.0)
    with pytest.raises(pb.NonDifferentiableError, match="own code"):
        forward_of(control.caught_exception)
