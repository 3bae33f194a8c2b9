"""A loop over a name bound to an ``itertools`` iterator
(``p = itertools.combinations(range(n), 2)`` then ``for i, j in p:``):
followed where its items are indices, in both modes (exact values); refused
as a ``pb.PullbackError`` naming the file and the line otherwise."""
import itertools

import numpy as np
import pytest

import pullback as pb


def pairs(x):
    n = x.shape[0]
    p = itertools.combinations(range(n), 2)
    s = 0.0
    for i, j in p:
        s = s + x[i] * x[j] ** 2
    return s


def pairs_grad(x):
    """d/dx of sum over i < j of x_i x_j^2."""
    n = len(x)
    g = np.zeros(n)
    for i, j in itertools.combinations(range(n), 2):
        g[i] += x[j] ** 2
        g[j] += 2 * x[i] * x[j]
    return g


X = np.array([1.0, -2.0, 3.0, 0.5])


def test_reverse_loop_over_iterator_name():
    np.testing.assert_allclose(pb.grad(pairs)(X), pairs_grad(X), rtol=1e-13)


def test_forward_loop_over_iterator_name():
    t = np.array([0.5, 1.0, -1.0, 2.0])
    value, out = pb.jvp(pairs, (X,), (t,))
    assert value == pytest.approx(pairs(X), rel=1e-13)
    assert out == pytest.approx(pairs_grad(X) @ t, rel=1e-13)


def test_iterator_name_inside_an_outer_loop():
    """Bound and read in the same pass of an outer loop: a fresh iterator each pass."""
    def f(x):
        t = 0.0
        for k in range(2):
            q = itertools.pairwise(range(3))
            for i, j in q:
                t = t + (k + 1) * x[i] * x[j]
        return t
    x = np.array([1.0, 2.0, 3.0])
    # t = 3 (x0 x1 + x1 x2)
    np.testing.assert_allclose(pb.grad(f)(x), 3 * np.array([x[1], x[0] + x[2], x[1]]),
                               rtol=1e-13)


def _refused(f, x, line_text):
    with pytest.raises(pb.PullbackError) as info:
        pb.grad(f)(x)
    message = str(info.value)
    assert __file__ in message and line_text in message, message
    return message


def test_iterator_bound_outside_an_outer_loop_is_refused():
    """Python's second pass finds the iterator spent: not read into a list."""
    def f(x):
        p = itertools.pairwise(range(3))
        t = 0.0
        for _ in range(2):
            for i, j in p:
                t = t + x[i] * x[j]
        return t
    message = _refused(f, np.ones(3), "for i, j in p:")
    assert "runs over a pairwise" in message and "list(it)" in message


def test_iterator_read_by_next_then_a_loop_is_followed():
    # (was refused: 'runs over a list_iterator'; frontend.next_calls since issue 13)
    def f(x):
        it = iter([0, 1, 2])
        first = next(it)
        t = x[first] * 2.0
        for i in it:
            t = t + x[i]
        return t
    np.testing.assert_array_equal(pb.grad(f)(np.ones(3)), [2.0, 1.0, 1.0])


def test_iterator_of_floats_read_right_after():
    """Nothing but `t = 0.0` between the binding and the loop: its items
    are read where it is bound (frontend.itertools_rows)."""
    def f(x):
        p = itertools.accumulate([1.0, 2.0])
        t = 0.0
        for v in p:
            t = t + v * x
        return t
    assert pb.grad(f)(1.5) == pytest.approx(4.0, rel=1e-15)


def test_iterator_of_floats_is_refused():
    def f(x):
        p = itertools.accumulate([1.0, 2.0])
        t = np.sin(x)
        for v in p:
            t = t + v * x
        return t
    message = _refused(f, 1.0, "p = itertools.accumulate")
    assert "ints (indices)" in message and "for a, b in itertools.pairwise(x):" in message
