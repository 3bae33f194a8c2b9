"""Indexing reads, NumPy's write semantics, and in-place accumulation that is
proven safe: exact values, bitwise agreement of the two accumulation paths,
and memory that grows linearly."""
import gc
import math
import re
import tracemalloc

import numpy as np
import pytest

import pullback as pb
from test_gradients import CASES as GRADIENT_CASES
from test_gradients import check

rng = np.random.default_rng(11)
X = rng.normal(size=(4, 5))


def scatter(index, g, shape=(4, 5)):
    out = np.zeros(shape)
    np.add.at(out, index, g)
    return out


READS = {
    "scalar": ((2, 3),),
    "negative": ((-1, -2),),
    "slice": ((slice(1, 3),),),
    "start_only": ((slice(1, None),),),       # x[1:], once printed as slice(1) (= x[:1])
    "stop_only": ((slice(None, 2), slice(3, None)),),
    "strided": ((slice(None, None, 2), slice(4, 0, -2)),),
    "ellipsis": ((Ellipsis, 1),),
    "newaxis": ((None, 1, slice(None)),),
    "mask": ((X > 0,),),
    "repeated": ((np.array([0, 2, 0, 0]),),),
    "pairs": ((np.array([1, 1, 3]), np.array([0, 0, 4])),),
}


@pytest.mark.parametrize("name", list(READS))
def test_index_reads(name):
    (index,) = READS[name]

    def f(x):
        return np.sum(np.sin(x[index]))
    g = pb.grad(f)(X)
    np.testing.assert_allclose(g, scatter(index, np.cos(X[index])))


def test_take():
    idx = np.array([3, 0, 3])
    g = pb.grad(lambda x: np.sum(np.take(x, idx) ** 2))(np.arange(5.0))
    np.testing.assert_allclose(g, [0.0, 0.0, 0.0, 12.0, 0.0])


# -- writes, with NumPy's semantics -----------------------------------------------

def writes(x, v):
    y = np.zeros(6)
    y[0] = x[0]
    y[1:3] = v[:2] * x[1]
    y[np.array([3, 3, 4])] = v            # repeated: the last write wins
    y[np.array([5, 5])] += v[:2]          # buffered: one add lands
    np.add.at(y, np.array([0, 0]), v[:2])  # unbuffered: both add
    return np.sum(y * np.arange(1.0, 7.0))


def test_writes_follow_numpy():
    x, v = np.array([2.0, 3.0]), np.array([1.0, 2.0, 4.0])
    y = np.zeros(6)
    y[0] = x[0]
    y[1:3] = v[:2] * x[1]
    y[[3, 3, 4]] = v
    y[[5, 5]] += v[:2]
    np.add.at(y, [0, 0], v[:2])
    assert writes(x, v) == np.sum(y * np.arange(1.0, 7.0))
    gx, gv = pb.grad(writes, argnums=(0, 1))(x, v)
    np.testing.assert_allclose(gx, [1.0, 2.0 * v[0] + 3.0 * v[1]])
    # v[0]: y[1:3] (2*x1) + y[3] lost + y[5] lost (the buffered add kept v[1]) + add.at (1)
    np.testing.assert_allclose(gv, [2.0 * x[1] + 1.0, 3.0 * x[1] + 4.0 + 6.0 + 1.0, 5.0])


def overwritten_but_needed(x):
    y = x * 1.0
    w = y * y
    y += 1.0
    return np.sum(w + y)


def overwritten_element(x):
    y = x * 2.0
    w = y * y
    y[0] = 5.0
    return np.sum(w * y)


def test_values_a_later_write_changes_are_saved():
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(pb.grad(overwritten_but_needed)(x), 2 * x + 1)
    check(overwritten_element, x)


def recurrence(a, n):
    y = np.zeros(n)
    y[0] = 1.0
    for i in range(1, n):
        y[i] = y[i - 1] * a + np.sin(y[i - 1])
    return np.sum(y ** 2)


def test_array_filled_in_a_loop():
    check(recurrence, 0.7, 6)


# -- safety: no gradient aliases, nothing of the caller's is written ------------------

def assert_separate(*arrays):
    arrays = [a for a in arrays if isinstance(a, np.ndarray)]
    for i, a in enumerate(arrays):
        for b in arrays[i + 1:]:
            assert not np.shares_memory(a, b)


def test_same_array_twice():
    a = np.array([1.0, 2.0])
    a0 = a.copy()
    g1, g2 = pb.grad(lambda x, y: np.sum(x * y), argnums=(0, 1))(a, a)
    np.testing.assert_array_equal(g1, a0)
    np.testing.assert_array_equal(g2, a0)
    assert_separate(g1, g2, a)
    np.testing.assert_array_equal(a, a0)


def test_alias_and_pass_through_under_vjp():
    x = np.array([1.0, 2.0])
    ct = np.array([1.0, -1.0])
    ct0 = ct.copy()

    def f(x):
        y = x
        return y + 2.0 * x
    _, back = pb.vjp(f, x)
    (g,) = back(ct)
    np.testing.assert_array_equal(g, 3.0 * ct0)
    assert_separate(g, ct, x)

    _, back = pb.vjp(lambda x: x + x, x)
    (g,) = back(ct)
    np.testing.assert_array_equal(g, 2.0 * ct0)
    assert_separate(g, ct)
    np.testing.assert_array_equal(ct, ct0)


def test_same_value_returned_twice():
    x = np.array([1.0, 2.0])

    def f(x):
        y = x * 3.0
        return y, y
    _, back = pb.vjp(f, x)
    c1, c2 = np.array([1.0, 0.0]), np.array([0.0, 2.0])
    (g,) = back((c1, c2))
    np.testing.assert_array_equal(g, [3.0, 6.0])
    assert_separate(g, c1, c2, x)
    np.testing.assert_array_equal(c1, [1.0, 0.0])


def test_containers_holding_one_array_twice():
    a = np.array([1.0, 2.0])

    def f(pair):
        return np.sum(pair[0] * pair[1])
    (ga, gb) = pb.grad(f)((a, a))
    np.testing.assert_array_equal(ga, a)
    np.testing.assert_array_equal(gb, a)
    assert_separate(ga, gb, a)
    la, lb = pb.grad(f)([a, a])
    np.testing.assert_array_equal(la, a)
    assert_separate(la, lb, a)

    def g(x):
        t = (x, x)
        return np.sum(t[0] * 2.0 + t[1])
    np.testing.assert_array_equal(pb.grad(g)(a), [3.0, 3.0])


def test_pass_through_then_indexed_add():
    x = np.array([1.0, 2.0, 3.0])
    ct = np.array([1.0, 1.0, 1.0])

    def f(x, y):
        s = x + y                 # s_bar reaches x_bar and y_bar as one object
        return s + x[0]           # then x_bar[0] += ... must not change y_bar
    _, back = pb.vjp(f, x, x * 2.0)
    gx, gy = back(ct)
    np.testing.assert_array_equal(gx, [4.0, 1.0, 1.0])
    np.testing.assert_array_equal(gy, [1.0, 1.0, 1.0])
    assert_separate(gx, gy, ct)
    np.testing.assert_array_equal(ct, [1.0, 1.0, 1.0])


# -- in place and out of place agree, value for value --------------------------------

def complex_into_real(x, c):
    s = 0.0
    for i in range(len(x)):
        s = s + np.real(x[i] * c[i]) + np.abs(x[i] * c[i]) ** 2
    return s


def mixed_precision(x):
    s = np.float32(0.0)
    for i in range(len(x)):
        s = s + x[i] * np.float64(0.1) + x[i] ** 2
    return s


AGREEMENT = dict(GRADIENT_CASES)
AGREEMENT.update({
    "writes": (writes, np.array([2.0, 3.0]), np.array([1.0, 2.0, 4.0])),
    "recurrence": (recurrence, 0.7, 6),
    "complex_into_real": (complex_into_real, rng.normal(size=4),
                          rng.normal(size=4) + 1j * rng.normal(size=4)),
    "float32": (mixed_precision, rng.normal(size=5).astype(np.float32)),
    "column_loop": (lambda X: sum(np.sum(X[:, j] ** 2) for j in range(X.shape[1])),
                    rng.normal(size=(3, 4))),
})


@pytest.mark.parametrize("name", list(AGREEMENT))
def test_in_place_and_out_of_place_agree(name):
    f, *args = AGREEMENT[name]
    argnums = tuple(i for i, a in enumerate(args)
                    if np.issubdtype(np.result_type(a), np.inexact))
    fast = pb.grad(f, argnums=argnums, inplace=True)(*args)
    slow = pb.grad(f, argnums=argnums, inplace=False)(*args)
    for a, b in zip(fast, slow):
        assert np.result_type(a) == np.result_type(b)
        np.testing.assert_array_equal(a, b)


def test_in_place_switch_changes_the_code():
    f = GRADIENT_CASES["mlp"][0]
    assert "x_bar[" not in pb.source(f, *GRADIENT_CASES["mlp"][1:])
    src_in = pb.source(recurrence, 0.7, 6)
    assert re.search(r"y_bar\[\w+\] \+=", src_in) or "index_add(" in src_in



def test_callees_follow_the_callers_setting(monkeypatch):
    """`inplace=False` holds for the functions a function calls too: no
    gradient buffer anywhere, and the same gradient as in place."""
    from pullback import runtime
    from pullback.testing import function_from_source
    outer = function_from_source("""
    def outer(x):
        return inner(x) * 2.0 + x[1]

    def inner(x):
        return x[0] * x[2] + x[1] ** 2
    """)
    x = np.array([0.5, -1.5, 2.0])
    buffers = []
    real = runtime.owned_zeros
    monkeypatch.setattr(runtime, "owned_zeros", lambda v: buffers.append(v) or real(v))
    slow = pb.grad(outer, inplace=False)(x)
    assert buffers == []           # no buffer to add into, in outer or in inner
    fast = pb.grad(outer, inplace=True)(x)
    assert buffers                 # (which the in-place code has)
    np.testing.assert_array_equal(fast, [4.0, -5.0, 1.0])
    np.testing.assert_array_equal(slow, fast)

# -- complexity -------------------------------------------------------------------

def peak_bytes(f, *args):
    gc.collect()
    tracemalloc.start()
    f(*args)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def column_loop(X):
    s = 0.0
    for j in range(X.shape[1]):
        s = s + np.sum(X[:, j] ** 2)
    return s


def test_column_loop_memory_is_linear():
    X = rng.normal(size=(100, 1000))
    g = pb.grad(column_loop)
    np.testing.assert_allclose(g(X), 2 * X)
    assert peak_bytes(g, X) < 10 * X.nbytes


def squares(x):
    return sum([x[i] ** 2 for i in range(len(x))])


def test_scalar_index_loop_memory_grows_linearly():
    g = pb.grad(squares)
    small, large = rng.normal(size=1000), rng.normal(size=10000)
    g(small), g(large)
    ratio = peak_bytes(g, large) / peak_bytes(g, small)
    assert ratio < 15, ratio


def shifted_products(x):
    s = 0.0
    for i in range(2):
        s = s + np.sum(x[2:] * x[:-2])
    return s


def test_open_ended_slices_in_a_loop():
    np.testing.assert_array_equal(pb.grad(shifted_products)(np.arange(1.0, 5.0)),
                                  [6.0, 8.0, 2.0, 4.0])


def _by_sorted_keys(d):
    total = 0.0
    for i, k in enumerate(sorted(d)):
        total = total + np.sum(np.sin(d[k])) * (i + 1.0)
    return total


def _by_int_index(W):
    inds = (np.abs(W[:, 0]) * 3).astype(int) % W.shape[0]
    return np.sum(W[inds] ** 2)


def _log_base_from_input(x):
    return math.log(3.0, x)


def test_an_index_derived_from_the_inputs_is_discrete():
    # a key or an integer index computed from differentiated values is piecewise
    # constant: its derivative is zero, and indexing with it is differentiated
    # (both were refused as a lost gradient; autograd's test_dict/test_cast_to_int)
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=3), rng.normal(size=(2, 2))
    g = pb.grad(_by_sorted_keys)({"b": y, "a": x})
    np.testing.assert_array_equal(g["a"], np.cos(x))
    np.testing.assert_array_equal(g["b"], 2 * np.cos(y))
    W = rng.normal(size=(5, 3))
    inds = (np.abs(W[:, 0]) * 3).astype(int) % 5
    want = np.zeros_like(W)
    np.add.at(want, inds, 2 * W[inds])
    np.testing.assert_array_equal(pb.grad(_by_int_index)(W), want)


def test_a_static_argument_derived_from_the_inputs_is_still_refused():
    # math.log's ``base`` is continuous: a value from the inputs there would lose
    # its gradient, so it is refused
    with pytest.raises(pb.NonDifferentiableError, match="`base` argument"):
        pb.grad(_log_base_from_input)(2.0)
