"""A value written into an integer or boolean array is cast (NumPy truncates
or tests it), so none of its derivative reaches the array: ``y =
np.zeros(3, dtype=int); y[:] = 10 * x`` gave d/dx of ``sum(y * x)`` as
``2 * 10 * x`` (the cast ignored) where ``y`` is right, in both modes; a
boolean array's tangent crashed forward mode.  Reverse mode checks the dtype
when the adjoint runs where it was not known when transforming
(``written_grad``'s ``into``), forward mode before the tangent's write
(``takes_tangent``)."""
import numpy as np
import pytest

import pullback as pb

X = np.array([1.0, 2.0, 3.0])
T = np.array([1.0, 10.0, 100.0])


def into_integers(x):
    y = np.zeros(3, dtype=int)
    y[:] = x * 10
    return (y * x).sum()


def into_booleans(x):
    y = np.zeros(3, dtype=bool)
    y[1] = x[0]
    z = np.zeros(3)
    z[0] = x[1] * 2
    return (y * x).sum() + z.sum() * x[2]


def into_a_float_copy_of_integers(x):
    y = np.arange(3).astype(float)
    y[1:] = x[:2] * 3.0
    return (y * y).sum()


CASES = [
    (into_integers, np.array([10.0, 20.0, 30.0])),
    (into_booleans, np.array([0.0, 1.0 + 2 * X[2], 2 * X[1]])),
    (into_a_float_copy_of_integers, np.array([18 * X[0], 18 * X[1], 0.0])),
]


@pytest.mark.parametrize("f,exact", CASES, ids=lambda v: getattr(v, "__name__", ""))
def test_reverse(f, exact):
    np.testing.assert_allclose(pb.grad(f)(X), exact, rtol=1e-14)


@pytest.mark.parametrize("f,exact", CASES, ids=lambda v: getattr(v, "__name__", ""))
def test_forward(f, exact):
    value, tangent = pb.jvp(f, (X,), (T,))
    assert value == f(X)
    np.testing.assert_allclose(tangent, exact @ T, rtol=1e-14)
