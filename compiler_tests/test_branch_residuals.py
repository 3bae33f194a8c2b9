"""Branches outside loops (issue 17): a branch that runs at most once keeps
the values its adjoint reads as plain residuals, not on a tape (no list, no
append, no copy, no pop); inside a loop a branch still tapes one tuple per
run.  Counted on the generated source, checked against exact derivatives."""
import sys
from pathlib import Path

import numpy as np
import pytest

import pullback as pb
from pullback.testing import function_from_source

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import problems as P  # noqa: E402


def _split(f, *args, argnums=None):
    text = pb.source(f, *args, argnums=argnums)
    primal, adjoint = text.split("_adjoint", 1)
    return primal, adjoint


def test_a_branch_outside_loops_tapes_nothing():
    f = function_from_source("""
def f(x, c):
    y = x * x
    if c > 0:
        z = math.sin(y) * x
    else:
        z = y * 3.0
    return z * x
""")
    primal, adjoint = _split(f, 0.7, 1.0, argnums=0)
    assert "tape" not in primal and "tape" not in adjoint, primal + adjoint
    for x in (0.7, -1.3):
        y = x * x
        want = np.cos(y) * 2 * x * x * x + 2 * np.sin(y) * x
        assert pb.grad(f)(x, 1.0) == pytest.approx(want, rel=1e-14)
        assert pb.grad(f)(x, -1.0) == pytest.approx(9.0 * x * x, rel=1e-15)


def test_nested_branches_outside_loops_tape_nothing():
    f = function_from_source("""
def f(x, a, b):
    if a > 0:
        if b > 0:
            y = x * x * x
        else:
            y = np.exp(x) * x
        w = y * y
    else:
        w = x * 2.0
    return w
""")
    primal, adjoint = _split(f, 1.5, 1.0, 1.0, argnums=0)
    assert "tape" not in primal, primal
    x = 1.5
    assert pb.grad(f)(x, 1.0, 1.0) == pytest.approx(6 * x ** 5, rel=1e-14)
    e = np.exp(x)
    assert pb.grad(f)(x, 1.0, -1.0) == pytest.approx(2 * (e * x) * (e * x + e), rel=1e-14)
    assert pb.grad(f)(x, -1.0, 1.0) == 2.0


def test_a_branch_inside_a_loop_still_tapes_one_entry_per_run():
    f = function_from_source("""
def f(x, n):
    s = 0.0
    for i in range(n):
        if i % 2 == 0:
            t = np.sin(x)
            s = s + t * x
        else:
            s = s * x
    return s
""")
    primal, _ = _split(f, 0.4, 4, argnums=0)
    assert "tape.append" in primal, primal
    x, h = 0.4, 1e-6
    fd = (f(x + h, 5) - f(x - h, 5)) / (2 * h)
    assert pb.grad(f)(x, 5) == pytest.approx(fd, rel=1e-8)


def test_the_adjoint_of_a_branch_can_run_twice():
    f = function_from_source("""
def f(x, c):
    if c > 0:
        y = np.sin(x) * x
    else:
        y = x
    return np.sum(y * y)
""")
    x = np.linspace(0.1, 1.0, 5)
    out, back = pb.vjp(f, x, 1.0)
    first = back(1.0)[0].copy()
    np.testing.assert_array_equal(back(1.0)[0], first)
    want = 2 * np.sin(x) * x * (np.cos(x) * x + np.sin(x))
    np.testing.assert_allclose(first, want, rtol=1e-14)


def test_recursive_adaptive_simpson_tapes_nothing_and_matches_the_hand_gradient():
    primal, adjoint = _split(P.adapt, 1.0, 0.0, 4.0, 1.0, 1.0, 1.0, 1.0, 1e-6, 40,
                             argnums=(0, 3, 4, 5, 6))
    assert "tape" not in primal and "tape" not in adjoint, primal
    a, tol = 0.8, 1e-7
    got = pb.value_and_grad(P.quadrature)(a, tol)
    value, (want,) = P.quadrature_hand(a, tol)
    assert got[0] == value
    assert got[1] == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("c", [1.0, -1.0])
def test_a_loop_inside_a_branch_outside_loops(c):
    """The branch's adjoint reads a value its loop carries: returned as a
    residual, bound (to None) when the other branch ran."""
    f = function_from_source("""
def f(x, c, n):
    h = x * 1.0
    if c > 0:
        for i in range(n):
            h = np.tanh(h) * x
        y = h * h
    else:
        y = x * 3.0
    return np.sum(y)
""")
    x = np.linspace(-0.5, 0.7, 4)

    def ref(v):
        h = v * 1.0
        if c > 0:
            for _ in range(3):
                h = np.tanh(h) * v
            return np.sum(h * h)
        return np.sum(v * 3.0)
    g = pb.grad(f)(x, c, 3)
    want = np.zeros_like(x)
    for i in range(4):
        up, down = x.copy(), x.copy()
        up[i] += 1e-6
        down[i] -= 1e-6
        want[i] = (ref(up) - ref(down)) / 2e-6
    np.testing.assert_allclose(g, want, rtol=1e-7, atol=1e-9)
