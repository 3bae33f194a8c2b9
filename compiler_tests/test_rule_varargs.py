"""A rule's ``*args`` left unbound at a call site (``a.item()``) stands for an
empty tuple, as in Python, in the reverse and the forward rule (it stood for
``None``: ``x[1].item()`` crashed with a TypeError inside the adjoint)."""
import numpy as np

import pullback as pb

X = np.array([1.0, 2.0, 3.0])
M = np.arange(6.0).reshape(2, 3)


def item_of_element(x):
    return x[1].item() * x[0]


def items_by_position(m):
    return m.item(1, 2) * m.item((0, 1)) + m.item(4) ** 2


def test_item_without_arguments():
    np.testing.assert_array_equal(pb.grad(item_of_element)(X), [2.0, 1.0, 0.0])
    assert pb.jvp(item_of_element, (X,), (np.array([1.0, 10.0, 100.0]),))[1] == 2.0 + 10.0


def test_item_with_positions():
    np.testing.assert_array_equal(pb.grad(items_by_position)(M),
                                  [[0.0, 5.0, 0.0], [0.0, 8.0, 1.0]])
    t = np.arange(1.0, 7.0).reshape(2, 3)
    assert pb.jvp(items_by_position, (M,), (t,))[1] == 5.0 * 2.0 + 1.0 * 6.0 + 8.0 * 5.0
