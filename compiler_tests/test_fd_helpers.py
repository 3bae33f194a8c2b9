"""The shared finite-difference oracle (fd_helpers) against exact gradients:
real and complex arguments, 0-d ones, and a function writing into what it
is given (the point must not move)."""
import numpy as np

from fd_helpers import central, central_differences


def test_central_matches_exact_gradients():
    x = np.array([[0.3, -1.2], [2.0, 0.7]])
    np.testing.assert_allclose(central(lambda v: np.sum(np.sin(v) * v), x),
                               np.cos(x) * x + np.sin(x), rtol=1e-8, atol=1e-9)
    np.testing.assert_allclose(central(lambda v: 3.0 * v ** 2, 2), 12.0, rtol=1e-8)   # an int: as a float


def test_a_wrong_gradient_is_told_apart():
    x = np.linspace(-1.0, 1.0, 5)
    fd = central(lambda v: np.sum(np.exp(v)), x)
    np.testing.assert_allclose(fd, np.exp(x), rtol=1e-8)
    assert not np.allclose(fd, 1.001 * np.exp(x), rtol=1e-6, atol=1e-7)


def test_complex_argument_follows_jax_convention():
    # L = |z|^2 = re^2 + im^2: dL/dRe - i dL/dIm = 2 conj(z)
    z = np.array([1.0 + 2.0j, -0.5 + 0.25j])
    np.testing.assert_allclose(central(lambda v: np.sum(np.abs(v) ** 2), z), 2 * np.conj(z),
                               rtol=1e-8)


def test_the_function_never_gets_the_point_itself():
    x = np.array([1.0, 2.0, 3.0])

    def writes(v):
        out = np.sum(v ** 2)
        v[:] = 0.0
        return out
    np.testing.assert_allclose(central(writes, x), 2 * x, rtol=1e-8)
    np.testing.assert_array_equal(x, [1.0, 2.0, 3.0])


def test_central_differences_takes_one_argument_of_several():
    a, b = np.array([1.0, 2.0]), 3.0
    f = lambda u, w: np.sum(u ** 2) * w  # noqa: E731
    np.testing.assert_allclose(central_differences(f, (a, b), 0), 2 * a * b, rtol=1e-8)
    np.testing.assert_allclose(central_differences(f, (a, b), 1), np.sum(a ** 2), rtol=1e-8)
