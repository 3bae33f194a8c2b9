"""``super().method(...)`` in a method of the user's class (frontend.super_calls):
the object's gradient flows into the base class's method.  Was: ``super()``
looked like a call with no arguments, a constant, and the gradient of
``self`` through ``super().f(x)`` was zero (reverse and forward mode) with no
error."""
import numpy as np
import pytest

import pullback as pb


class Base:
    def __init__(self, w):
        self.w = w

    def f(self, x):
        return x * self.w

    def __call__(self, x):
        return self.f(x)


class Tanh(Base):
    def f(self, x):
        return np.tanh(super().f(x))


class Explicit(Base):
    def f(self, x):
        return np.tanh(super(Explicit, self).f(x))


class Twice(Tanh):
    def f(self, x):
        return 2.0 * super().f(x) + self.w


# a diamond: Left.f's super() is Right.f for a Both, Base.f for a Left
class Left(Base):
    def f(self, x):
        return super().f(x) ** 2


class Right(Base):
    def f(self, x):
        return super().f(x) + 1.0


class Both(Left, Right):
    pass


class Static(Base):
    @staticmethod
    def g(x):
        return x


class CallsStatic(Static):
    def f(self, x):
        return super().g(x) * self.w


class Stores(Base):
    def f(self, x):
        s = super()
        return s.f(x)


W = np.array([0.3, -0.2, 0.7])
X = np.array([1.0, 2.0, -0.5])


def loss(cls, w, x):
    return np.sum(cls(w)(x))


def central(f, w, x, h=1e-6):
    out = np.zeros_like(w)
    for i in range(w.size):
        e = np.zeros_like(w)
        e[i] = h
        out[i] = (f(w + e, x) - f(w - e, x)) / (2 * h)
    return out


@pytest.mark.parametrize("cls, exact_w", [
    (Tanh, lambda w, x: (1 - np.tanh(x * w) ** 2) * x),
    (Explicit, lambda w, x: (1 - np.tanh(x * w) ** 2) * x),
    (Twice, lambda w, x: 2 * (1 - np.tanh(x * w) ** 2) * x + 1.0),
    (Left, lambda w, x: 2 * x * w * x),
    (Both, lambda w, x: 2 * (x * w + 1.0) * x),
])
def test_super_method_gradient(cls, exact_w):
    def f(w, x):
        return loss(cls, w, x)
    gw, gx = pb.grad(f, argnums=(0, 1))(W, X)
    np.testing.assert_allclose(gw, exact_w(W, X), rtol=1e-12)
    np.testing.assert_allclose(gx, central(lambda x, w: f(w, x), X, W), rtol=1e-7)
    t = np.array([0.5, -1.0, 2.0])
    _, dot = pb.jvp(f, (W, X), (t, np.zeros(3)))
    np.testing.assert_allclose(dot, exact_w(W, X) @ t, rtol=1e-12)


def test_super_through_the_object_given():
    def f(obj, x):
        return np.sum(obj(x))
    g = pb.grad(f)(Twice(W), X)
    np.testing.assert_allclose(g.w, 2 * (1 - np.tanh(X * W) ** 2) * X + 1.0, rtol=1e-12)


def test_super_of_a_staticmethod_is_refused():
    def f(w, x):
        return loss(CallsStatic, w, x)
    assert f(W, X) == np.sum(X * W)
    with pytest.raises(pb.PullbackError, match=r"Static\.g\(\.\.\.\)") as info:
        pb.grad(f)(W, X)
    assert "staticmethod" in str(info.value) and "test_super_calls.py" in str(info.value)


def test_super_object_kept_in_a_name_is_refused():
    def f(w, x):
        return loss(Stores, w, x)
    with pytest.raises(pb.PullbackError, match="use of `super`") as info:
        pb.grad(f)(W, X)
    assert "s = super()" in str(info.value) and "Base.method(self, ...)" in str(info.value)
