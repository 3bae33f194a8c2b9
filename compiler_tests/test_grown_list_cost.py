"""Lists grown in a loop (issue 17): the RNN pattern ``hs.append(f(hs[t]))``.
Each read ``hs[t]`` in the adjoint built a list of zeros as long as ``hs``
(``unindex``) and added it to ``hs_bar``: O(n^2) for n steps (n = 4,000: three
minutes).  Its entry of ``hs_bar`` is now updated in place (``index_add``):
O(n), counted in lines run, so a loaded machine cannot change the figure.

Checked against jax (x64); in place and out of place (``PULLBACK_INPLACE=0``)
agree bit for bit."""

import numpy as np
import pytest

import pullback as pb
from line_counts import lines_run

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy


def rnn(x, n):
    hs = [x]
    for t in range(n):
        hs.append(np.tanh(hs[t] * 1.1 + 0.2))
    return np.sum(hs[n - 1] ** 2)


def jax_rnn(x, n):
    h = x
    for _ in range(n - 1):
        h = jnp.tanh(h * 1.1 + 0.2)
    return jnp.sum(h ** 2)


def mixed(x, n):
    """Reads by item, from the end and by slice, of a list grown in a loop."""
    hs = [x, x * 0.5]
    total = 0.0
    for t in range(n):
        hs.append(np.sin(hs[t] + hs[-1] * 0.3))
        total = total + np.sum(hs[t + 1] * hs[-2])
    return total + sum(np.sum(h) for h in hs[1:4])


def jax_mixed(x, n):
    hs = [x, x * 0.5]
    total = 0.0
    for t in range(n):
        hs.append(jnp.sin(hs[t] + hs[-1] * 0.3))
        total = total + jnp.sum(hs[t + 1] * hs[-2])
    return total + sum(jnp.sum(h) for h in hs[1:4])


def later_append(x):
    """A read between two appends: the second append's adjoint comes first."""
    hs = [x]
    hs.append(x * 2.0)
    z = hs[1]
    hs.append(x * 3.0)
    return z * x


X = np.array([0.3, -0.2, 0.5])


@pytest.mark.parametrize("f, jf, n", [(rnn, jax_rnn, 7), (mixed, jax_mixed, 5)])
def test_gradients_match_jax(f, jf, n, monkeypatch):
    expected = np.asarray(jax.grad(jf)(jnp.asarray(X), n))
    fast = pb.grad(f)(X, n)
    np.testing.assert_allclose(fast, expected, rtol=1e-12)
    monkeypatch.setenv("PULLBACK_INPLACE", "0")
    slow = pb.grad(f)(X, n)
    assert np.array_equal(fast, slow), (fast, slow)
    assert np.array_equal(X, [0.3, -0.2, 0.5])


def test_forward_mode_matches_jax():
    t = np.array([1.0, 0.5, -2.0])
    out, tangent = pb.jvp(lambda x: mixed(x, 5), (X,), (t,))
    jout, jtangent = jax.jvp(lambda x: jax_mixed(x, 5), (jnp.asarray(X),), (jnp.asarray(t),))
    assert out == pytest.approx(float(jout), rel=1e-13)
    assert tangent == pytest.approx(float(jtangent), rel=1e-12)


def test_a_read_between_appends(monkeypatch):
    # d/dx (2x * x) = 4x; the read of hs[1] got the last item's zero before (0.0)
    assert pb.grad(later_append)(1.5) == pytest.approx(6.0)
    monkeypatch.setenv("PULLBACK_INPLACE", "0")
    assert pb.grad(later_append)(1.5) == pytest.approx(6.0)


def test_a_gradient_through_a_list_grown_in_a_loop_is_linear():
    x = np.array([0.3, 0.5])
    g = pb.grad(rnn)
    g(x, 3)                                         # (transformed once, before counting)
    small, large = lines_run(g, x, 200), lines_run(g, x, 800)
    # four times the steps: four times the lines (was sixteen)
    assert large < 4.5 * small, (small, large)
    f = pb.jvp
    f(rnn, (x, 3), (np.ones(2), 0))                 # (transformed once)
    small = lines_run(f, rnn, (x, 200), (np.ones(2), 0))
    large = lines_run(f, rnn, (x, 800), (np.ones(2), 0))
    assert large < 4.5 * small, (small, large)
