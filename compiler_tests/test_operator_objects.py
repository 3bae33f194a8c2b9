"""Operators on objects of the user's classes: ``a + b`` of a value the
transform cannot prove a number is checked when it runs
(``analyses.operator_guards``), so a class whose ``__add__`` computes
something else is refused, never differentiated as arithmetic; the method
called as a method is followed into."""
import dataclasses

import numpy as np
import pytest

import pullback as pb
from pullback.errors import UnsupportedSyntaxError

X = np.array([0.3, -1.2, 2.0, 0.8])


@dataclasses.dataclass
class Params:
    w: np.ndarray

    def __add__(self, other):          # not a sum: a product
        return Params(self.w * other.w)

    def __neg__(self):
        return Params(self.w ** 3)


class Vec:
    def __init__(self, v):
        self.v = v

    def __mul__(self, s):
        return Vec(self.v ** s)

    __rmul__ = __mul__


def added(x):
    return np.sum((Params(x) + Params(x + 1.0)).w)


def negated(x):
    return np.sum((-Params(x)).w)


def scaled(x):
    return np.sum((2.0 * Vec(np.sin(x))).v)


@pytest.mark.parametrize("fn, symbol, cls", [(added, "+", "Params"), (negated, "-", "Params"),
                                             (scaled, "*", "Vec")])
def test_operator_of_an_object_is_refused_in_both_modes(fn, symbol, cls):
    for run in (lambda: pb.grad(fn)(X), lambda: pb.jvp(fn, (X,), (np.ones(4),))):
        with pytest.raises(UnsupportedSyntaxError) as err:
            run()
        text = str(err.value)
        # refused where the transform sees the object made (analyses.operator_objects)
        # or where the operator runs (analyses.operator_guards)
        assert f"`{symbol}" in text and cls in text and "__" in text
        assert "_x" not in text.split("\n")[0]       # no name of the normal form's
        assert "test_operator_objects.py" in text


def test_the_method_called_as_a_method_is_followed():
    # d/dx sum(x * (x + 1)) = 2x + 1; d/dx sum(x^3) = 3x^2; d/dx sum(sin(x)^2)
    assert np.allclose(pb.grad(lambda x: np.sum(Params(x).__add__(Params(x + 1.0)).w))(X),
                       2 * X + 1, rtol=1e-12)
    assert np.allclose(pb.grad(lambda x: np.sum(Params(x).__neg__().w))(X), 3 * X ** 2,
                       rtol=1e-12)
    assert np.allclose(pb.grad(lambda x: np.sum(Vec(np.sin(x)).__mul__(2.0).v))(X),
                       2 * np.sin(X) * np.cos(X), rtol=1e-12)


def mlp(params, x):
    h = x
    for W, b in params:        # items of a list: kinds unknown, checked when they run
        h = np.tanh(h @ W + b)
    return np.sum(h ** 2)


def test_arrays_of_unknown_kind_pass_the_check_and_keep_their_gradient():
    rng = np.random.default_rng(0)
    params = [(rng.normal(size=(3, 4)), rng.normal(size=4)),
              (rng.normal(size=(4, 2)), rng.normal(size=2))]
    x = rng.normal(size=(5, 3))
    g = pb.grad(mlp, argnums=1)(params, x)
    eps = 1e-6
    fd = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        fd[i] = (mlp(params, x + e) - mlp(params, x - e)) / (2 * eps)
    assert np.allclose(g, fd, rtol=1e-6, atol=1e-8)
    text = pb.source(mlp, argnums=1)
    assert "plain_operands('@', h_1, W)" in text and "jax.jit: traceable" in text


def test_lists_and_tuples_still_join():
    def f(x):
        parts = [x[0], x[1]]
        more = parts + [x[2] * 2.0]
        return more[0] * more[2] + more[1]
    assert np.allclose(pb.grad(f)(X), [2 * X[2], 1.0, 2 * X[0], 0.0])


def test_rows_of_a_matrix_given_to_a_library_call_leave_the_input_writable():
    # zip(*M) hands the rows of M (views of M, a view of x) to a library call,
    # each made read-only while it runs; restoring them used to fail on a row
    # whose base was still read-only
    def f(x):
        M = x.reshape(2, 2)
        cols = list(zip(*M))
        return sum(c[0] * c[1] for c in cols)
    x = X.copy()
    # (list(zip(*M)) is read by index since issue 13: x0 x2 + x1 x3)
    np.testing.assert_array_equal(pb.grad(f)(x), x[[2, 3, 0, 1]])
    assert x.flags.writeable
    x[0] = 1.0

