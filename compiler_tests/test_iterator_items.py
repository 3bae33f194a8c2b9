"""Items read out of an iterator a library call returned (``list(filter(None, x))``;
``list(iter(x))``, ``tuple(reversed(x))`` and ``list(itertools.accumulate(xs))``
are read by index since issue 13): the cotangent of
each item goes back to the value the iterator held only when the item *is*
that value; an item the iterator made (a number read out of an array, a sum
the library computed) has no route back, and is refused (was a silent zero
gradient). Items that are the values given (an iterator over a list of the
user's values) still route exactly."""
import itertools

import numpy as np
import pytest

import pullback as pb

X = np.array([1.0, 2.0, 3.0])


def last_of_iter(x):
    return list(iter(x))[-1] * 2.0


def last_kept(x):
    return list(filter(None, x))[-1] * 2.0


def first_reversed(x):
    return tuple(reversed(x))[0]


def accumulated(x):
    return list(itertools.accumulate([x[0], x[1], x[2]]))[-1] * x[0]


@pytest.mark.parametrize("f", [last_kept])
def test_new_items_are_refused_not_zero(f):
    with pytest.raises(pb.PullbackError, match="none of the values it was given"):
        pb.grad(f)(X)


@pytest.mark.parametrize("f", [last_kept])
def test_new_items_are_refused_in_forward_mode(f):
    with pytest.raises(pb.PullbackError):
        pb.jvp(f, (X,), (np.ones(3),))


def test_reversed_and_iter_read_into_a_list_are_read_by_index():
    # tuple(reversed(x)), list(iter(x)): the list of x[::-1]'s (x's) items
    # (frontend.desugar_calls, since issue 13): x[-1], 2 x[-1]
    np.testing.assert_array_equal(pb.grad(first_reversed)(X), [0.0, 0.0, 1.0])
    assert pb.jvp(first_reversed, (X,), (np.array([1.0, 2.0, 5.0]),)) == (3.0, 5.0)
    np.testing.assert_array_equal(pb.grad(last_of_iter)(X), [0.0, 0.0, 2.0])
    assert pb.jvp(last_of_iter, (X,), (np.array([1.0, 2.0, 5.0]),)) == (6.0, 10.0)


def test_accumulate_is_the_loop_it_runs():
    """``list(itertools.accumulate(xs))`` is followed since issue 13
    (frontend.itertools_rows): (x0 + x1 + x2) * x0."""
    np.testing.assert_allclose(pb.grad(accumulated)(X), [7.0, 1.0, 1.0], rtol=1e-13)
    value, dot = pb.jvp(accumulated, (X,), (np.ones(3),))
    assert value == accumulated(X) and dot == pytest.approx(9.0, rel=1e-13)


def items_of_a_list_iterator(x):
    a, b = x[0] * 3.0, x[1] * x[2]
    return list(iter([a, b]))[1] + list(itertools.chain([a], [b]))[0]


def test_items_that_are_the_values_given_route_exactly():
    g = pb.grad(items_of_a_list_iterator)(X)
    np.testing.assert_allclose(g, [3.0, 3.0, 2.0], rtol=0, atol=0)


def test_the_refusal_names_the_line():
    with pytest.raises(pb.PullbackError) as err:
        pb.grad(last_kept)(X)
    assert "list(filter(None, x))" in str(err.value)
