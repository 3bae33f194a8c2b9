"""Control flow: branches, loops, early exits, recursion and comprehensions,
each checked against exact gradients or central differences."""
import math

import numpy as np
import pytest

import pullback as pb
from test_gradients import check

rng = np.random.default_rng(3)


def piecewise(x):
    if x > 1.0:
        y = x * x
    elif x > -1.0:
        y = 2.0 * x + 3.0
    else:
        y = -x
    return y * x


@pytest.mark.parametrize("x", [2.5, 0.3, -4.0])
def test_if_elif_else(x):
    expected = {2.5: 3 * x * x, 0.3: 4 * x + 3.0, -4.0: -2 * x}[x]
    assert pb.grad(piecewise)(x) == pytest.approx(expected)


def selects(x, y):
    a = x if x > y else y
    b = (x > 0 and y) or x
    return a * b


@pytest.mark.parametrize("x, y", [(3.0, 2.0), (-1.0, 2.0), (1.0, 0.5), (-2.0, -3.0)])
def test_conditional_expression_and_boolean_values(x, y):
    check(selects, x, y)


def early_return(x, n):
    for i in range(n):
        if x > 10.0:
            return x * i
        x = x * 1.5
    return -x


@pytest.mark.parametrize("x, n", [(1.0, 10), (1.0, 3), (20.0, 4)])
def test_early_return_inside_a_loop(x, n):
    check(early_return, x, n)


def loop_features(xs, w):
    s = 0.0
    for i, v in enumerate(xs):
        if v < 0.0:
            continue
        if s > 5.0:
            break
        s = s + w * v * i
    else:
        s = s * 2.0
    for a, b in zip(xs, reversed(xs)):
        s = s + a * b
    return s


@pytest.mark.parametrize("scale", [0.5, 3.0])
def test_break_continue_else_enumerate_zip_reversed(scale):
    xs = np.array([0.5, -1.0, 1.5, 2.0, 0.7]) * scale
    check(loop_features, xs, 0.8)


def rows(X, v):
    total = 0.0
    for row in X:
        total = total + np.sum(np.tanh(row * v))
    return total


def test_for_over_array_rows():
    check(rows, rng.normal(size=(4, 3)), rng.normal(size=3))


def nested(X):
    s = 0.0
    for i in range(X.shape[0]):
        for j in range(i + 1):
            s = s + X[i, j] * X[j, i]
    return s


def test_nested_loops_with_dependent_bounds():
    X = rng.normal(size=(4, 4))
    expected = np.zeros_like(X)
    for i in range(4):
        for j in range(i + 1):
            expected[i, j] += X[j, i]
            expected[j, i] += X[i, j]
    np.testing.assert_allclose(pb.grad(nested)(X), expected)


def halve(x):
    k = 0.0
    while x > 1.0:
        x = x / 2.0
        k = k + x
    return x + k


@pytest.mark.parametrize("x", [0.5, 3.0, 100.0])
def test_while_with_data_dependent_trip_count(x):
    check(halve, x)


def rnn(W, h, xs):
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + xs[t])
    return np.sum(h ** 2)


def test_array_state_carried_through_a_loop():
    W = rng.normal(size=(3, 3)) * 0.5
    check(rnn, W, rng.normal(size=3), rng.normal(size=(5, 3)))


def evalpoly(x, p):
    ex = p[len(p) - 1]
    for i in range(len(p) - 2, -1, -1):
        ex = x * ex + p[i]
    return ex


def test_evalpoly_exact():
    p = rng.normal(size=50)
    x = 0.9
    gx, gp = pb.grad(evalpoly, argnums=(0, 1))(x, p)
    assert gx == pytest.approx(np.polyval(np.polyder(p[::-1]), x))
    np.testing.assert_allclose(gp, x ** np.arange(50))


def power(x, n):
    if n == 0:
        return 1.0
    return x * power(x, n - 1)


def collatz_like(x, k):
    if k > 20 or x < 1e-3:
        return x
    if x > 1.0:
        return collatz_like(x / 3.0, k + 1) + x
    return collatz_like(x * x, k + 1)


def test_recursion_fixed_and_data_dependent_depth():
    assert pb.grad(power)(1.5, 5) == pytest.approx(5 * 1.5 ** 4)
    check(collatz_like, 7.0, 0)
    check(collatz_like, 0.9, 0)


def comprehensions(x, y):
    squares = [v * v for v in x if v > 0]
    a = np.sum(np.array(squares))
    b = sum(x[i] * y for i in range(len(x)))
    c = np.stack([np.sin(v) * y for v in x])
    d = sum(map(math.exp, [v for v in x]))
    return a + b + np.sum(c) + d


def test_comprehensions_generators_map():
    x = np.array([0.5, -0.3, 1.2])
    check(comprehensions, x, 0.7)


def build_list(x, n):
    out = []
    h = x
    for i in range(n):
        h = np.sin(h) + 0.5 * h
        out.append(h)
    return np.sum(np.stack(out) ** 2)


def test_list_built_in_a_loop_then_stacked():
    check(build_list, rng.normal(size=3), 4)


def test_generated_code_does_not_grow_with_trip_count():
    src_short = pb.source(evalpoly, 0.5, np.ones(10))
    src_long = pb.source(evalpoly, 0.5, np.ones(10000))
    assert src_short == src_long
    assert src_short.count("\n") < 60


def test_only_needed_values_are_saved_per_iteration():
    # the adjoint of `ex = x * ex + p[i]` needs ex, not x or p[i] (nor i: it walks
    # the range backwards)
    src = pb.source(evalpoly, 0.5, np.ones(10))
    push = [line.strip() for line in src.splitlines() if "tape.append" in line]
    assert push == ["tape.append(ex_1)"], push   # i is recomputed from the range


def test_pullback_can_be_called_twice_with_loops():
    out, back = pb.vjp(evalpoly, 0.5, np.arange(5.0))
    g1 = back(1.0)
    g2 = back(1.0)
    assert g1[0] == g2[0]
    np.testing.assert_array_equal(g1[1], g2[1])


def defined_in_first_iteration(x, n):
    for i in range(n):
        if i == 0:
            t = x * 3.0
        x = x + t * x
    return x


def test_value_from_an_earlier_iteration():
    check(defined_in_first_iteration, 0.3, 4)


def test_enumerate_of_zip():
    def f(w, xs, ys):
        total = 0.0
        for k, (x, y) in enumerate(zip(xs, ys)):
            total = total + (k + 1.0) * np.sum((x * w - y) ** 2)
        return total
    w, xs, ys = np.array([0.5, -1.0]), np.arange(6.0).reshape(3, 2), np.ones((3, 2))
    gw, gxs, gys = pb.grad(f, argnums=(0, 1, 2))(w, xs, ys)
    r = xs * w - ys
    k = np.arange(1.0, 4.0)[:, None]
    np.testing.assert_allclose(gw, np.sum(2 * k * r * xs, axis=0), rtol=1e-12)
    np.testing.assert_allclose(gxs, 2 * k * r * w, rtol=1e-12)
    np.testing.assert_allclose(gys, -2 * k * r, rtol=1e-12)


def test_loops_over_dict_items_keys_and_values():
    def f(d, w):
        t = 0.0
        for k, v in d.items():
            t = t + np.sum(np.cos(v) * w[k])
        for k in d.keys():
            t = t + np.sum(d[k])
        return t + sum(np.sum(v ** 2) for v in d.values())
    d = {"a": np.array([0.5, 1.0]), "b": np.array([2.0, -1.0])}
    w = {"a": 1.0, "b": 3.0}
    gd, gw = pb.grad(f, argnums=(0, 1))(d, w)
    for k in d:
        np.testing.assert_allclose(gd[k], -np.sin(d[k]) * w[k] + 1 + 2 * d[k], rtol=1e-12)
        np.testing.assert_allclose(gw[k], np.sum(np.cos(d[k])), rtol=1e-12)


def test_loop_over_a_dict_by_position_is_refused():
    def f(xs):
        t = 0.0
        for x in xs:
            t = t + x * x
        return t
    assert pb.grad(f)({0: 1.0, 1: 2.0}) == {0: 0.0, 1: 0.0}     # its keys (test_dict_key_loops)
    np.testing.assert_allclose(pb.grad(f)([1.0, 2.0]), [2.0, 4.0])
