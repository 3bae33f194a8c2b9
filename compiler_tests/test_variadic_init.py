"""A user class whose ``__init__`` takes ``*args`` / ``**kwargs``
(``Sequential(*layers)``), built inside the differentiated function from
values being differentiated: the gradient flows into the objects stored from
``args`` and ``kwargs``, in both modes (exact values)."""
import numpy as np
import pytest

import pullback as pb


class Scale:
    def __init__(self, w):
        self.w = w

    def __call__(self, x):
        return self.w * x


class Chain:
    def __init__(self, *layers, bias=0.0, **extra):
        self.layers = layers
        self.bias = bias
        self.extra = extra

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x + self.bias + self.extra["shift"]


def chained(a, b, c, x):
    net = Chain(Scale(a), Scale(b), bias=c, shift=2.0 * c)
    return np.sum(net(x) ** 2)


def expected(a, b, c, x):
    """d/d(a, b, c, x) of sum((a b x + 3c)^2)."""
    r = 2 * (a * b * x + 3 * c)
    return np.sum(r * b * x), np.sum(r * a * x), np.sum(3 * r), r * a * b


ARGS = (1.5, -0.5, 0.25, np.array([1.0, 2.0, -3.0]))


def test_reverse_variadic_init():
    got = pb.grad(chained, argnums=(0, 1, 2, 3))(*ARGS)
    for g, e in zip(got, expected(*ARGS)):
        np.testing.assert_allclose(g, e, rtol=1e-13)


@pytest.mark.parametrize("i", range(4))
def test_forward_variadic_init(i):
    tangents = [0.0, 0.0, 0.0, np.zeros(3)]
    tangents[i] = 1.0 if i < 3 else np.array([1.0, -2.0, 0.5])
    _, out = pb.jvp(chained, ARGS, tuple(tangents))
    e = expected(*ARGS)[i]
    want = e if i < 3 else np.dot(e, tangents[3])
    np.testing.assert_allclose(out, want, rtol=1e-13)


def test_layer_count_varies():
    """One transform per number of layers: three layers after two."""
    def three(a, x):
        return np.sum(Chain(Scale(a), Scale(a), Scale(a), shift=0.0)(x))
    x = np.array([1.0, 2.0])
    assert pb.grad(chained, argnums=0)(*ARGS) == pytest.approx(expected(*ARGS)[0], rel=1e-13)
    assert pb.grad(three)(2.0, x) == pytest.approx(3 * 4.0 * 3.0, rel=1e-13)
