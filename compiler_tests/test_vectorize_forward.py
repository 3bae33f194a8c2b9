"""Forward mode of ``np.vectorize(f)`` on the per-element path (an ``f``
with a branch on its value, which cannot be fused): ``pb.jvp``, ``pb.jacfwd``
and ``pb.hessian`` were refused "forward mode has no rule for
np.vectorize(f), a pb.custom_vjp function" (``lowering.per_element``'s
``PerElement`` now carries a forward handle)."""
import numpy as np
import pytest

import pullback as pb
from fd_helpers import central_differences

X = np.array([0.3, -1.2, 0.8, 0.5])
Y = np.array([1.5, 0.2, -0.7, 2.0])
T = np.array([1.0, 0.5, -2.0, 0.25])


def bump(v):
    return v ** 2 if v > 0 else -v


def mix(a, b):
    return a * b ** 2 if a > b else a - 3.0 * b


def one_argument(x):
    return np.sum(np.vectorize(bump)(x) * x)


def two_arguments(x, y):
    return np.sum(np.vectorize(mix)(x, y) ** 2)


def lambda_and_scalar(x):
    return np.sum(np.vectorize(lambda v, s: v * s if v > 0 else s)(x, 2.5))


@pytest.mark.parametrize("f, args", [(one_argument, (X,)), (two_arguments, (X, Y)),
                                     (lambda_and_scalar, (X,))],
                         ids=["one_argument", "two_arguments", "lambda_and_scalar"])
def test_tangents_equal_gradients_and_finite_differences(f, args):
    grads = [pb.grad(f, argnums=k)(*args) for k in range(len(args))]
    for k, g in enumerate(grads):
        np.testing.assert_allclose(g, central_differences(f, args, k), rtol=1e-6, atol=1e-8)
    tangents = tuple(T * (k + 1) for k in range(len(args)))
    _, t = pb.jvp(f, args, tangents)
    assert t == pytest.approx(sum(g @ tk for g, tk in zip(grads, tangents)), rel=1e-12)


def test_jacfwd_of_a_per_element_map_and_its_hessian_refused():
    # f = sum(bump(x) x): x^3 where x > 0, -x^2 where not
    np.testing.assert_allclose(pb.jacfwd(one_argument)(X), pb.grad(one_argument)(X), rtol=1e-14)
    # forward over reverse would transform the per-element adjoint: refused, not wrong
    with pytest.raises(pb.PullbackError, match="bump_each"):
        pb.hessian(one_argument)(X)
