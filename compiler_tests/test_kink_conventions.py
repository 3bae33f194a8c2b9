"""What pullback returns where a function has no derivative, in both modes:
a subgradient, never a NaN made by 0/0.  ``np.abs`` and ``np.linalg.norm``
at 0 give 0 (autograd's and PyTorch's choice; JAX gives 1 for abs, NaN for
norm); ``np.maximum`` splits a tie (JAX's).  ``np.hypot`` at the origin was
NaN, unlike ``np.linalg.norm`` of the same two numbers."""
import math

import numpy as np
import pytest

import pullback as pb


@pytest.mark.parametrize("f", [
    lambda x: np.hypot(x[0], x[1]),
    lambda x: math.hypot(x[0], x[1]),
    lambda x: np.linalg.norm(x),
    lambda x: np.sum(np.abs(x)),
], ids=["np.hypot", "math.hypot", "norm", "abs"])
def test_zero_at_the_origin(f):
    x = np.zeros(2)
    np.testing.assert_array_equal(pb.grad(f)(x), [0.0, 0.0])
    assert pb.jvp(f, (x,), (np.ones(2),))[1] == 0.0


def test_hypot_away_from_the_origin():
    x = np.array([3.0, -4.0])
    np.testing.assert_allclose(pb.grad(lambda x: np.hypot(x[0], x[1]))(x), [0.6, -0.8],
                               rtol=1e-15)


def test_maximum_splits_a_tie():
    np.testing.assert_array_equal(pb.grad(lambda x: np.maximum(x[0], x[1]))(np.ones(2)),
                                  [0.5, 0.5])
