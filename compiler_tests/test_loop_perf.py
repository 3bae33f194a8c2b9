"""Issue 17's loop adjoints near the primal: what the generated adjoint no
longer does, counted on ``pb.source``, with gradients bit for bit those of
the out-of-place path (``inplace=False``) and of the code generated before
each change (a mirror of its order of operations, or the digest of its
bytes); never timed."""
import hashlib
import sys
from pathlib import Path

import numpy as np
import pytest

import pullback as pb
from pullback.runtime import distinct_indices
from pullback.testing import function_from_source

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import problems as P  # noqa: E402

rng = np.random.default_rng(1717)


def _bytes(value, grads):
    return b"".join(np.ascontiguousarray(np.asarray(x, dtype=np.float64)).tobytes()
                    for x in (value,) + tuple(grads))


def _both_paths(f, args, argnums):
    got = [pb.value_and_grad(f, argnums=argnums, inplace=ip)(*args) for ip in (True, False)]
    assert _bytes(*got[0]) == _bytes(*got[1])
    return got[0]


def _central(f, x, h=1e-6):
    out = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += h
        down[i] -= h
        out[i] = (f(up) - f(down)) / (2 * h)
    return out


# -- a fresh buffer written once per index: a store, not an add --------------------

def test_evalpoly_stores_each_coefficient_gradient_once():
    p = P.BY_NAME["evalpoly"]
    args = p.inputs(200)
    adjoint = pb.source(p.fn, *args, argnums=p.argnums).split("def evalpoly_adjoint")[1]
    loop = adjoint.split("for i in reversed")[1].split("# line")[0]
    assert "distinct_indices(" in adjoint
    assert "+= " not in loop and "+ 0.0 if distinct" in loop, loop
    value, (gx, gp) = _both_paths(p.fn, args, p.argnums)
    # the order of operations of the adjoint generated before: p_bar[i] += g
    x, coef = args
    n = len(coef)
    saved, ex = [], coef[n - 1]
    for i in range(n - 2, -1, -1):
        saved.append(ex)
        ex = x * ex + coef[i]
    want_p, want_x, g = np.zeros(n), 0.0, 1.0
    for i in range(0, n - 1):
        want_p[i] += g
        want_x = want_x + g * saved.pop()
        g = g * x
    want_p[n - 1] += g
    assert value == ex
    assert gx == want_x and np.array_equal(gp, want_p)


@pytest.mark.parametrize("r", [range(5), range(4, -1, -1), range(-1, -6, -1), range(-3, 3),
                               range(0), range(2, 9, 3), range(-1, 2)])
def test_distinct_indices(r):
    # True exactly when the range is all of one sign; then, for every length
    # the indices are valid for, they reach distinct elements
    assert distinct_indices(r) == (not r or min(r) >= 0 or max(r) < 0)
    if distinct_indices(r):
        for n in range(max([abs(i) + (i >= 0) for i in r], default=0), 12):
            hit = [i % n for i in r] if n else []
            assert len(set(hit)) == len(hit)


@pytest.mark.parametrize("lo, hi", [(0, 5), (-5, 0), (-2, 3), (-1, 2)])
def test_a_range_that_reaches_one_element_twice_still_adds(lo, hi):
    f = function_from_source("""
def f(w, lo, hi):
    s = 0.0
    for i in range(lo, hi):
        s = s * 0.5 + np.sin(w[i])
    return s
""")
    w = rng.normal(size=5)
    src = pb.source(f, w, lo, hi)
    assert "distinct_indices(" in src
    g = pb.grad(f)(w, lo, hi)
    np.testing.assert_allclose(g, _central(lambda v: f(v, lo, hi), w), rtol=1e-7, atol=1e-9)
    _both_paths(f, (w, lo, hi), 0)


def test_a_buffer_read_twice_in_the_body_keeps_its_adds():
    f = function_from_source("""
def f(w, n):
    s = 0.0
    for i in range(n):
        s = s + w[i] * w[i + 1]
    return s
""")
    w = rng.normal(size=6)
    assert "distinct_indices(" not in pb.source(f, w, 5)
    np.testing.assert_allclose(pb.grad(f)(w, 5), _central(lambda v: f(v, 5), w),
                               rtol=1e-7, atol=1e-9)


def test_a_buffer_with_gradient_from_after_the_loop_keeps_its_adds():
    f = function_from_source("""
def f(w, n):
    s = 0.0
    for i in range(n):
        s = s * 0.9 + w[i]
    return s * np.sum(w * w)
""")
    w = rng.normal(size=6)
    src = pb.source(f, w, 6)
    assert "distinct_indices(" not in src
    np.testing.assert_allclose(pb.grad(f)(w, 6), _central(lambda v: f(v, 6), w),
                               rtol=1e-7, atol=1e-9)
    _both_paths(f, (w, 6), 0)


def test_an_inner_loop_buffer_owned_by_the_outer_loop_keeps_its_adds():
    f = function_from_source("""
def f(w, n):
    s = 0.0
    for j in range(2):
        for i in range(n):
            s = s * 0.9 + w[i] * w[i]
    return s
""")
    w = rng.normal(size=4)
    np.testing.assert_allclose(pb.grad(f)(w, 4), _central(lambda v: f(v, 4), w),
                               rtol=1e-7, atol=1e-9)
    _both_paths(f, (w, 4), 0)


def test_rows_of_a_matrix_are_stored_once():
    f = function_from_source("""
def f(W, n):
    s = np.zeros(3)
    for i in range(n - 1, -1, -1):
        s = np.sin(s) + W[i] * 2.0
    return np.sum(s * s)
""")
    W = rng.normal(size=(5, 3))
    assert "distinct_indices(" in pb.source(f, W, 5)
    np.testing.assert_allclose(pb.grad(f)(W, 5), _central(lambda v: f(v, 5), W),
                               rtol=1e-7, atol=1e-9)
    _both_paths(f, (W, 5), 0)


# -- the benchmark problems: bit for bit the gradients of the code before ---------

# sha256 of value and gradients (float64 bytes) from the adjoints generated
# before issue 17's loop changes (commit 4c80518), NumPy 2.4; under another
# NumPy only the two accumulation paths are compared
BEFORE = {("evalpoly", 1000): "2f46899c9d9fe866", ("fpu_chain", 1000): "065f538d6b2c94e5",
          ("sum_squares_list", 1000): "8f8c12943cc141f9",
          ("sum_squares_gen", 1000): "8f8c12943cc141f9", ("column_loop", 50): "8b0d37213fa9eed0"}


@pytest.mark.parametrize("name, n", sorted(BEFORE))
def test_benchmark_gradients_are_bitwise_those_of_before(name, n):
    p = P.BY_NAME[name]
    value, grads = _both_paths(p.fn, p.inputs(n), p.argnums)
    if np.__version__.startswith("2.4."):
        assert hashlib.sha256(_bytes(value, grads)).hexdigest()[:16] == BEFORE[name, n]
