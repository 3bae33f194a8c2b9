"""A function whose code is replaced in place (IPython's ``%autoreload``
assigns ``f.__code__`` when the file changes): the transforms of it, and of
the functions that call it, are made again.  A gradient function made before
kept the old code's derivative, silently (3 expected, 1 given)."""
import numpy as np

import pullback as pb
from pullback.testing import function_from_source

X = np.array([1.0, 2.0])


def test_the_differentiated_function_replaced():
    f = function_from_source("def f(x):\n    return np.sum(x)\n")
    g = pb.grad(f)
    np.testing.assert_array_equal(g(X), [1.0, 1.0])
    f.__code__ = function_from_source("def f(x):\n    return np.sum(3.0 * x)\n").__code__
    np.testing.assert_array_equal(g(X), [3.0, 3.0])
    _, t = pb.jvp(f, (X,), (np.ones(2),))
    assert t == 6.0


def test_a_callee_replaced():
    act = function_from_source("def act(v):\n    return v * v\n")
    loss = function_from_source("def loss(x):\n    return np.sum(act(x))\n", {"act": act})
    g = pb.grad(loss)
    np.testing.assert_array_equal(g(X), 2 * X)
    act.__code__ = function_from_source("def act(v):\n    return np.sin(v)\n").__code__
    np.testing.assert_allclose(g(X), np.cos(X), rtol=1e-15)
