"""Loop cost (issue 17): a range loop's adjoint reads ``x[i]`` again from a
saved ``x`` instead of taping it, when ``i`` is the loop's index and nothing
assigns or writes into ``x``; everywhere else the value is taped."""
import numpy as np
import pytest

import pullback as pb
from pullback.testing import function_from_source

from fd_helpers import central as _central

rng = np.random.default_rng(3)


def _split(f, *args):
    primal, adjoint = pb.source(f, *args).split("def f_adjoint")
    return primal, adjoint


def test_scalar_index_loop_tapes_nothing():
    f = function_from_source("""
def f(x):
    s = 0.0
    for i in range(len(x)):
        s = s + x[i] ** 2
    return s
""")
    x = rng.normal(size=6)
    primal, adjoint = _split(f, x)
    assert "tape" not in primal, primal
    assert "x_item = x[i]" in adjoint, adjoint
    np.testing.assert_array_equal(pb.grad(f)(x), 2.0 * x)


def test_column_loop_reads_the_column_again():
    f = function_from_source("""
def f(X):
    total = 0.0
    for j in range(X.shape[1]):
        c = X[:, j]
        total = total + np.sum(np.sin(c) * c)
    return total
""")
    X = rng.normal(size=(4, 5))
    primal, adjoint = _split(f, X)
    assert "tape.append((sin_c, meta(sin_c_c)))" in primal, primal
    assert "c = X[:, j]" in adjoint, adjoint
    g = pb.grad(f)(X)
    np.testing.assert_allclose(g, np.cos(X) * X + np.sin(X), rtol=1e-14)
    np.testing.assert_array_equal(g, pb.grad(f, inplace=False)(X))


CASES = {
    # the array is written in the loop: x[i] is taped (its value when read)
    "written": """
def f(x):
    y = x * 1.0
    s = 0.0
    for i in range(3):
        t = y[i]
        y[i] = t * 2.0
        s = s + t * t * y[i]
    return s
""",
    # the array is assigned in the loop: each iteration reads another one
    "assigned": """
def f(x):
    s = 0.0
    for i in range(3):
        t = x[i]
        s = s + t * t
        x = x * 0.5
    return s
""",
    # the index is not the loop's
    "other_index": """
def f(x):
    s = 0.0
    for i in range(3):
        k = i + 1
        t = x[k]
        s = s + np.sin(t) * t
    return s
""",
    # not a range loop: no index to read with again
    "while": """
def f(x):
    s = 0.0
    i = 0
    while i < 3:
        t = x[i]
        s = s + t * t * t
        i = i + 1
    return s
""",
}


@pytest.mark.parametrize("name", list(CASES))
def test_values_that_may_change_are_taped(name):
    f = function_from_source(CASES[name])
    x = rng.normal(size=5)
    primal, adjoint = _split(f, x)
    assert "tape.append(" in primal, primal
    assert "t = x[" not in adjoint and "t = y[" not in adjoint, adjoint
    np.testing.assert_allclose(pb.grad(f)(x), _central(f, x), rtol=1e-6, atol=1e-9)
