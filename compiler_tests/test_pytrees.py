"""Structured inputs and outputs: gradients mirror tuples, lists, dicts,
namedtuples and dataclasses."""
import collections
import dataclasses

import numpy as np
import pytest

import pullback as pb

Params = collections.namedtuple("Params", ["w", "b"])


@dataclasses.dataclass
class Layer:
    w: np.ndarray
    b: float


def loss_dict(params, x):
    h = np.tanh(x @ params["w"] + params["b"])
    return np.sum(h ** 2)


def loss_namedtuple(p, x):
    return np.sum((x @ p.w + p.b) ** 2)


def loss_dataclass(layer, x):
    return np.sum(np.sin(x * layer.w) + layer.b * x)


def loss_nested(ps, x):
    total = 0.0
    for p in ps:
        total = total + np.sum(p[0] * x) * p[1]
    return total


rng = np.random.default_rng(5)
x = rng.normal(size=(4, 3))


def test_dict_parameters():
    params = {"w": rng.normal(size=(3, 2)), "b": rng.normal(size=2)}
    g = pb.grad(loss_dict)(params, x)
    assert set(g) == {"w", "b"}
    h = np.tanh(x @ params["w"] + params["b"])
    d = 2 * h * (1 - h ** 2)
    np.testing.assert_allclose(g["w"], x.T @ d)
    np.testing.assert_allclose(g["b"], d.sum(0))


def test_namedtuple_parameters():
    p = Params(rng.normal(size=(3, 2)), rng.normal(size=2))
    g = pb.grad(loss_namedtuple)(p, x)
    assert isinstance(g, Params)
    r = 2 * (x @ p.w + p.b)
    np.testing.assert_allclose(g.w, x.T @ r)
    np.testing.assert_allclose(g.b, r.sum(0))


def test_dataclass_parameters():
    layer = Layer(rng.normal(size=3), 0.5)
    g = pb.grad(loss_dataclass)(layer, x)
    assert isinstance(g, Layer) and type(g.b) is float
    np.testing.assert_allclose(g.w, np.sum(x * np.cos(x * layer.w), axis=0))
    assert g.b == pytest.approx(x.sum())


def test_list_of_tuples_and_unused_entries():
    ps = [(rng.normal(size=3), 2.0), (rng.normal(size=3), -1.0)]
    g = pb.grad(loss_nested)(ps, x)
    assert isinstance(g, list) and all(isinstance(t, tuple) for t in g)
    for (w, s), (gw, gs) in zip(ps, g):
        np.testing.assert_allclose(gw, x.sum(0) * s)
        assert gs == pytest.approx(np.sum(w * x))


def test_output_structure_under_vjp():
    def f(x):
        return {"a": x * 2.0, "b": (np.sum(x), x ** 2)}
    xv = np.array([1.0, 2.0])
    out, back = pb.vjp(f, xv)
    (g,) = back({"a": np.ones(2), "b": (3.0, np.array([1.0, 0.0]))})
    np.testing.assert_allclose(g, 2.0 + 3.0 + np.array([2.0, 0.0]))


def test_dict_constructors_and_get():
    def f(x, y):
        d = dict(a=x, b=y * 2.0)
        e = dict([("c", x * x)])
        return d.get("a", y) ** 2 + d.get("z", y) * 3.0 + e["c"] + d["b"]
    assert pb.grad(f, argnums=(0, 1))(1.5, 2.0) == (6.0, 5.0)

    def g(p):
        return p.get("w", 0.0) * 2.0 + p.get("missing", 1.0)
    assert pb.grad(g)({"w": 3.0}) == {"w": 2.0}


def _sum_of_values(d, x):
    return sum(np.sum(v) for v in d.values()) + np.sum(x ** 2)


def test_an_empty_structure_is_differentiated_as_jax_does():
    # a dict or tuple with no leaves is a structure like any other: its gradient
    # is the same empty structure (was a TypeError asking for a float)
    x = np.array([1.0, -2.0])
    gd, gx = pb.grad(_sum_of_values, argnums=(0, 1))({}, x)
    assert gd == {} and type(gd) is dict
    np.testing.assert_array_equal(gx, 2 * x)
    gt, gx = pb.grad(_sum_of_values, argnums=(0, 1))({"a": np.ones(2)}, x)
    np.testing.assert_array_equal(gt["a"], np.ones(2))
    (gd,) = pb.vjp(lambda d: _sum_of_values(d, x), {})[1](1.0)
    assert gd == {}
