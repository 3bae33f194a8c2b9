"""Equal shapes proven at transform time (issue 17): the gradient of an
operand of elementwise arithmetic is not unbroadcast when every other operand
is a scalar or has that operand's shape (``x[1:] - x[:-1]``, ``2.0 * d``,
``d + e`` for ``d`` and ``e`` of one class), and what the adjoint then reads
only for that shape is not saved.  Counted on the generated source; values
an earlier loop iteration may have left keep the unbroadcast, checked against
central differences."""
import sys
from pathlib import Path

import numpy as np
import pytest

import pullback as pb
from pullback.testing import function_from_source

from fd_helpers import central as _central

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import problems as P  # noqa: E402

rng = np.random.default_rng(17)


def test_differences_of_neighbours_are_not_unbroadcast():
    f = function_from_source("""
def f(x, y):
    d = x[1:] - x[:-1]
    e = 3.0 * d * d + d
    return np.sum(e * y)
""")
    x, y = rng.normal(size=6), rng.normal(size=5)
    adjoint = pb.source(f, x, y).split("def f_adjoint")[1]
    # only e * y: y is a parameter of unknown length
    assert adjoint.count("unbroadcast(") == 2, adjoint
    gx, gy = pb.grad(f, argnums=(0, 1))(x, y)
    d = x[1:] - x[:-1]
    gd = (6.0 * d + 1.0) * y
    want = np.zeros(6)
    want[1:] += gd
    want[:-1] -= gd
    np.testing.assert_allclose(gx, want, rtol=1e-13)
    np.testing.assert_allclose(gy, 3.0 * d * d + d, rtol=1e-15)
    # y of length one broadcasts: still summed
    g1 = pb.grad(f, argnums=1)(x, np.array([2.0]))
    np.testing.assert_allclose(g1, [np.sum(3.0 * d * d + d)], rtol=1e-13)


def test_the_fpu_chain_unbroadcasts_six_times_a_step_not_fourteen():
    p = P.BY_NAME["fpu_chain"]
    args = p.inputs(50)
    text = pb.source(p.fn, *args, argnums=p.argnums)
    loop = text.split("def fpu_chain_adjoint")[1].split("for t in reversed")[1]
    # (unbroadcast_to: of the shape the tape kept, test_loop_perf)
    assert loop.count("unbroadcast(") + loop.count("unbroadcast_to(") == 6, loop
    primal = text.split("def fpu_chain_adjoint")[0]
    tape = [ln for ln in primal.splitlines() if "tape.append" in ln][0]
    assert tape.count("meta(") == 6, tape
    value, grads = pb.value_and_grad(p.fn, argnums=p.argnums)(*args)
    hv, hg = p.hand(*args)
    assert value == hv
    for g, h in zip(grads, hg):
        np.testing.assert_allclose(g, h, rtol=1e-12, atol=1e-15)


def test_a_value_an_earlier_iteration_left_is_still_unbroadcast():
    f = function_from_source("""
def f(w, n):
    s = 0.0
    for i in range(n):
        x = w[:i + 2] * 1.5
        if i == 0:
            t1 = x[1:]
        t2 = x[:-1]
        z = t1 * t2
        s = s + np.sum(z * z)
    return s
""")
    w = rng.normal(size=6)
    g = pb.grad(f)(w, 4)
    np.testing.assert_allclose(g, _central(lambda v: f(v, 4), w), rtol=1e-7, atol=1e-9)


def test_a_value_left_by_a_loop_that_broke_is_still_unbroadcast():
    f = function_from_source("""
def f(w, n):
    for i in range(n):
        x = w[:i + 2] * 1.5
        t1 = x[1:]
        if i == 1:
            break
        t2 = x[:-1]
    return np.sum(t1 * t2)
""")
    w = rng.normal(size=6)
    g = pb.grad(f)(w, 5)
    np.testing.assert_allclose(g, _central(lambda v: f(v, 5), w), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("n", [0, 1, 3])
def test_a_while_loop_gives_no_facts(n):
    f = function_from_source("""
def f(w, n):
    x = w * 1.0
    t = x[1:] * 1.0
    i = 0
    while i < n:
        x = x[1:] * 0.5
        i = i + 1
    return np.sum(x[1:] * x[:-1]) + np.sum(t * t)
""")
    w = rng.normal(size=7)
    g = pb.grad(f)(w, n)
    np.testing.assert_allclose(g, _central(lambda v: f(v, n), w), rtol=1e-7, atol=1e-9)
