"""Lambdas found in their file's source: several on one line are told apart
by the columns of their code's instructions (``frontend.parse``)."""
import numpy as np

import pullback as pb

X = np.array([0.3, -1.2, 2.0, 0.8])


def test_lambdas_sharing_a_line_are_told_apart_by_column():
    f, g = (lambda x: np.sum(x ** 2)), (lambda x: np.sum(np.sin(x)))
    assert np.allclose(pb.grad(f)(X), 2 * X) and np.allclose(pb.grad(g)(X), np.cos(X))
    h = lambda x: np.sum((lambda y: y * x)(x) ** 2)      # noqa: E731 (one inside another)
    assert np.allclose(pb.grad(h)(X), 4 * X ** 3)


def test_a_lambda_calling_grad_of_another_on_its_line():
    k = lambda x: pb.grad(lambda y: np.sum(y ** 3))(x).sum() + np.sum(x)      # noqa: E731
    assert np.allclose(pb.grad(k)(X), 6 * X + 1)
