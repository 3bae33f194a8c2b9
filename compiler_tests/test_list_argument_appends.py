"""``lst.append(v)`` on a list the function is given (a parameter, or a list a
nested function captures, which becomes its argument when lifted) changes the
caller's list. pullback's transforms never change a caller's values, and the
grown-list machinery follows only lists the function builds itself: such an
append is refused, naming the line. Before, a helper ``push(lst, v)`` called
for its effect was run as a constant (gradient [0, 0, 0] where [12, 0, 4] is
right), and ``xs.append(...)`` on the differentiated list itself returned a
gradient of the grown list and changed the caller's list."""
import numpy as np
import pytest

import pullback as pb

X = np.array([1.0, 2.0, 3.0])


def push(lst, v):
    lst.append(v * 2)


def through_a_helper(x):
    out = []
    for i in range(3):
        push(out, x[i])
    return out[0] * out[2]


def through_a_captured_list(x):
    out = []

    def add(v):
        out.append(v * 2)

    for i in range(3):
        add(x[i])
    return out[0] * out[2]


def into_its_own_argument(xs):
    xs.append(xs[0] * 2)
    return xs[0] * xs[-1]


def built_here(x):
    out = []
    for i in range(3):
        out.append(x[i] * 2)
    return out[0] * out[2]


@pytest.mark.parametrize("f", [through_a_helper, through_a_captured_list])
def test_appends_to_a_callers_list_are_refused(f):
    with pytest.raises(pb.PullbackError, match=r"out\.append|lst\.append"):
        pb.grad(f)(X)
    with pytest.raises(pb.PullbackError):
        pb.jvp(f, (X,), (np.ones(3),))


def test_append_to_the_differentiated_list_is_refused_and_leaves_it():
    xs = [1.0, 3.0]
    with pytest.raises(pb.PullbackError, match=r"xs\.append"):
        pb.grad(into_its_own_argument)(xs)
    assert xs == [1.0, 3.0]


def test_a_list_built_here_is_followed():
    np.testing.assert_array_equal(pb.grad(built_here)(X), [4 * X[2], 0.0, 4 * X[0]])


def test_a_captured_variable_named_out_is_not_numpys_out():
    def f(x):
        out = x * 2.0

        def scaled(v):
            return v * out

        return np.sum(scaled(x))
    np.testing.assert_allclose(pb.grad(f)(X), 4.0 * X, rtol=1e-14)


def log_length(log, n):
    log.append(n)


def logged(x, log):
    log_length(log, x.shape[0])
    log.append("called")
    return np.sum(x * x)


def test_appends_that_carry_no_gradient_still_run_as_python():
    log = []
    np.testing.assert_array_equal(pb.grad(logged)(X, log), 2 * X)
    assert log == [3, "called"]
