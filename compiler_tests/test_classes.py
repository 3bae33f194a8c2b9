"""Objects of the user's own classes built inside a differentiated function
(issue 13): ``Dense(W, b)(x)``, a list of layers run in a loop, a factory
``build(params)`` returning a model whose ``__call__`` runs them, methods
called on the object, attributes computed in ``__init__``; and
``functools.reduce``, differentiated as the loop it runs.

Gradients are checked against jax.grad (x64) of the same computation written
without objects, or against exact values.
"""
import functools
from functools import reduce

import numpy as np
import pytest

import pullback as pb

jax = pytest.importorskip("jax")
jnp = jax.numpy
jax.config.update("jax_enable_x64", True)

RNG = np.random.default_rng(13)
W1, B1 = RNG.standard_normal((3, 4)), RNG.standard_normal(4)
W2, B2 = RNG.standard_normal((4, 2)), RNG.standard_normal(2)
X = RNG.standard_normal((5, 3))


def close(got, want):
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(g, np.asarray(w), rtol=1e-12, atol=1e-12)


def relu(z):
    return np.maximum(z, 0.0)


class Dense:
    def __init__(self, W, b, activation=None):
        """A layer (the docstring is no store)."""
        self.W = W
        self.b = b
        self.activation = activation

    def __call__(self, x):
        z = x @ self.W + self.b
        if self.activation is not None:
            z = self.activation(z)
        return z

    def forward(self, x):
        return np.tanh(x @ self.W + self.b)


class Sequential:
    def __init__(self, layers):
        self.layers = list(layers)

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def jax_mlp(W1, b1, W2, b2, x):
    return jnp.sum(jnp.tanh(x @ W1 + b1) @ W2 + b2)


def test_dense_built_and_called():
    def f(W, b, x):
        return np.sum(Dense(W, b, np.tanh)(x))
    got = pb.grad(f, argnums=(0, 1, 2))(W1, B1, X)
    want = jax.grad(lambda W, b, x: jnp.sum(jnp.tanh(x @ W + b)), argnums=(0, 1, 2))(W1, B1, X)
    close(got, want)


def test_method_of_an_object_built_inside():
    def f(W, b, x):
        layer = Dense(W, b)
        return np.sum(layer.forward(x) ** 2)
    got = pb.grad(f, argnums=(0, 1))(W1, B1, X)
    want = jax.grad(lambda W, b: jnp.sum(jnp.tanh(X @ W + b) ** 2), argnums=(0, 1))(W1, B1)
    close(got, want)


def test_list_of_layers_in_a_loop():
    def f(W1, b1, W2, b2, x):
        layers = [Dense(W1, b1, np.tanh), Dense(W2, b2)]
        h = x
        for layer in layers:
            h = layer(h)
        return np.sum(h)
    got = pb.grad(f, argnums=(0, 1, 2, 3, 4))(W1, B1, W2, B2, X)
    close(got, jax.grad(jax_mlp, argnums=(0, 1, 2, 3, 4))(W1, B1, W2, B2, X))


def build(params):
    acts = [np.tanh, None]
    return Sequential([Dense(W, b, act) for (W, b), act in zip(params, acts)])


def test_factory_returns_a_model_whose_call_loops_over_its_layers():
    def loss(params, x):
        model = build(params)
        return np.sum(model(x))
    params = [(W1, B1), (W2, B2)]
    before = [(W.copy(), b.copy()) for W, b in params]
    value, got = pb.value_and_grad(loss, argnums=(0, 1))(params, X)
    assert value == pytest.approx(loss(params, X), rel=1e-14)
    want = jax.grad(lambda p, x: jax_mlp(p[0][0], p[0][1], p[1][0], p[1][1], x),
                    argnums=(0, 1))(params, X)
    close(got, want)
    assert isinstance(got[0], list) and isinstance(got[0][0], tuple)     # mirrors params
    for (W, b), (W0, b0) in zip(params, before):                          # inputs untouched
        assert np.array_equal(W, W0) and np.array_equal(b, b0)


class Scaled:
    def __init__(self, w, b):
        self.w = w * 2.0
        self.w += b            # updated after it is stored
        self.s = np.sum(self.w)  # read after it is stored

    def value(self, x):
        return self.s * np.sum(self.w * x)


def test_attributes_computed_in_init():
    def f(w, b, x):
        return Scaled(w, b).value(x)
    w, b, x = np.array([0.5, -1.0]), 0.25, np.array([2.0, 3.0])

    def jf(w, b, x):
        v = w * 2.0 + b
        return jnp.sum(v) * jnp.sum(v * x)
    close(pb.grad(f, argnums=(0, 1, 2))(w, b, x), jax.grad(jf, argnums=(0, 1, 2))(w, b, x))


class Outer:
    def __init__(self, inner, c):
        self.inner = inner
        self.c = c

    def __call__(self, x):
        return self.c * self.inner(x)


def test_object_holding_an_object_called_through_its_attribute():
    def f(W, b, c, x):
        return np.sum(Outer(Dense(W, b, relu), c)(x))

    def jf(W, b, c, x):
        return jnp.sum(c * jnp.maximum(x @ W + b, 0.0))
    got = pb.grad(f, argnums=(0, 1, 2, 3))(W1, B1, 1.5, X)
    close(got, jax.grad(jf, argnums=(0, 1, 2, 3))(W1, B1, 1.5, X))


class Counted:
    made = []

    def __init__(self, w):
        Counted.made.append(1)      # a side effect that uses no `self`
        self.w = w


def test_init_side_effects_run_once_and_inactive_objects_are_plain():
    Counted.made.clear()

    def f(w, k):
        c = Counted(k)              # no gradient: the class itself runs
        d = Counted(w)
        return np.sum(d.w * c.w)
    assert pb.grad(f)(np.array([1.0, 2.0]), 3.0).tolist() == [3.0, 3.0]
    assert len(Counted.made) == 2


# -- functools.reduce ---------------------------------------------------------------

def step(z, w):
    return np.sin(z) * w


def test_reduce_with_initial_value_lambda_and_named_function():
    ws, x = [1.5, 0.5, 2.0], np.array([0.3, 0.7])

    def f(ws, x):
        return np.sum(functools.reduce(lambda z, w: np.tanh(z * w), ws, x))

    def g(ws, x):
        return np.sum(reduce(step, ws, x))
    close(pb.grad(f, argnums=(0, 1))(ws, x), jax.grad(
        lambda ws, x: jnp.sum(functools.reduce(lambda z, w: jnp.tanh(z * w), ws, x)),
        argnums=(0, 1))(ws, x))
    close(pb.grad(g, argnums=(0, 1))(ws, x), jax.grad(
        lambda ws, x: jnp.sum(functools.reduce(lambda z, w: jnp.sin(z) * w, ws, x)),
        argnums=(0, 1))(ws, x))


def test_reduce_without_initial_value():
    def prod(ws):
        return reduce(lambda a, b: a * b, ws)
    assert pb.grad(prod)([1.0, 3.0, 0.75]) == [2.25, 0.75, 3.0]
    assert pb.grad(prod)((2.0,)) == (1.0,)
    with pytest.raises(TypeError, match="empty iterable"):
        pb.grad(prod)([])


def test_reduce_over_layers():
    def f(W1, b1, W2, b2, x):
        layers = [Dense(W1, b1, np.tanh), Dense(W2, b2)]
        return np.sum(reduce(lambda z, layer: layer(z), layers, x))
    got = pb.grad(f, argnums=(0, 1, 2, 3, 4))(W1, B1, W2, B2, X)
    close(got, jax.grad(jax_mlp, argnums=(0, 1, 2, 3, 4))(W1, B1, W2, B2, X))


# -- what stays refused ---------------------------------------------------------------

def test_bound_method_of_an_object_taken_as_a_value_is_refused():
    def f(W, b, x):
        fwd = Dense(W, b).forward        # the object's gradient would hide in `fwd`
        return np.sum(fwd(x))
    with pytest.raises(pb.NonDifferentiableError, match="function value") as info:
        pb.grad(f)(W1, B1, X)
    assert "layer.forward(y)" in str(info.value) or "obj.method(y)" in str(info.value)


def test_forward_mode_follows_objects_too():
    def f(params, x):
        return np.sum(build(params)(x))
    params = [(W1, B1), (W2, B2)]
    r = np.random.default_rng(2)
    tangent = [(r.standard_normal(W.shape), r.standard_normal(b.shape)) for W, b in params]
    tx = r.standard_normal(X.shape)
    out, out_dot = pb.jvp(f, (params, X), (tangent, tx))
    _, want = jax.jvp(lambda p, x: jax_mlp(p[0][0], p[0][1], p[1][0], p[1][1], x),
                      (params, X), (tangent, tx))
    assert out == pytest.approx(f(params, X), rel=1e-14)
    np.testing.assert_allclose(out_dot, want, rtol=1e-12)


def test_partial_built_from_differentiated_values_in_both_modes():
    def f(w, x):
        g = functools.partial(np.multiply, w)
        return np.sum(g(x))
    x = X[0]
    w = 0.5 * x + 1.0
    gw, gx = pb.grad(f, argnums=(0, 1))(w, x)
    np.testing.assert_allclose(gw, x, rtol=1e-15)
    np.testing.assert_allclose(gx, w, rtol=1e-15)
    out, out_dot = pb.jvp(f, (w, x), (w, x))
    assert out_dot == pytest.approx(2 * np.sum(w * x), rel=1e-14)


class _Base:
    def __init__(self, w):
        self.w = w


class _Derived(_Base):
    def __init__(self, w, c):
        super().__init__(w)
        self.c = c


class _Inherits(_Base):
    def scaled(self, x):
        return self.w * x


def test_inherited_init_and_super_init_are_followed():
    def f(w, x):
        return np.sum(_Inherits(w).scaled(x))
    assert pb.grad(f)(np.array([1.0, 2.0]), np.array([3.0, 4.0])).tolist() == [3.0, 4.0]

    def g(w):
        d = _Derived(w, 2.0)
        return np.sum(d.w * d.c)
    assert pb.grad(g)(np.ones(2)).tolist() == [2.0, 2.0]


# -- __init__ with super().__init__, a base's __init__ by name, stores in branches

class Layer:
    def __init__(self, w, b=None):
        self.w = w
        if b is None:
            self.b = 0.0
        else:
            self.b = b * 1.0


class ScaledLayer(Layer):
    def __init__(self, w, b=None, scale=2.0):
        super().__init__(w * scale, b)
        self.scale = scale
        if scale > 1.0:
            self.w = self.w + self.b      # read after the base stored it
        self.n = 0
        for _ in range(2):
            self.n += 1

    def __call__(self, x):
        return np.tanh(x @ self.w + self.b) * self.n


class ByName(Layer):
    def __init__(self, w, b):
        Layer.__init__(self, w, b=b)
        self.c = np.sum(self.b)


def test_super_init_and_stores_in_branches():
    W, b = RNG.standard_normal((3, 3)), RNG.standard_normal(3)

    def f(W, b, x):
        return np.sum(ScaledLayer(W, b)(x)) + np.sum(ScaledLayer(W, None, 0.5)(x))

    def jf(W, b, x):
        w1 = W * 2.0 + b
        w2 = W * 0.5
        return jnp.sum(jnp.tanh(x @ w1 + b) * 2) + jnp.sum(jnp.tanh(x @ w2) * 2)
    got = pb.grad(f, argnums=(0, 1, 2))(W, b, X)
    close(got, jax.grad(jf, argnums=(0, 1, 2))(W, b, X))
    dW, db = RNG.standard_normal((3, 3)), RNG.standard_normal(3)      # forward mode too
    _, t = pb.jvp(lambda W, b: f(W, b, X), (W, b), (dW, db))
    np.testing.assert_allclose(t, np.sum(got[0] * dW) + np.sum(got[1] * db), rtol=1e-12)

    def g(w, b):
        m = ByName(w, b)
        return np.sum(m.w * m.b) * m.c
    w, b = np.array([1.0, 2.0]), np.array([0.5, -1.5])
    # (w . b) * sum(b): d/dw = b * sum(b), d/db = w * sum(b) + (w . b)
    gw, gb = pb.grad(g, argnums=(0, 1))(w, b)
    np.testing.assert_array_equal(gw, b * -1.0)
    np.testing.assert_array_equal(gb, w * -1.0 + (0.5 - 3.0))


class Maybe:
    def __init__(self, w, flag):
        if flag:
            self.extra = w * 3.0
        self.w = w


def test_an_attribute_stored_on_some_paths_is_left_off_the_others():
    def f(w, flag):
        m = Maybe(w, flag)
        return np.sum(m.w * (m.extra if hasattr(m, "extra") else 1.0))
    w = np.array([1.0, 2.0])
    np.testing.assert_array_equal(pb.grad(f)(w, True), 6.0 * w)
    np.testing.assert_array_equal(pb.grad(f)(w, False), [1.0, 1.0])


# -- properties: followed as calls of the getter where the class is known
# (frontend/properties.py), refused elsewhere (the gradient used to be dropped:
# zeros, silently) -------------------------------------------------------------

class Weighted:
    def __init__(self, w):
        self._w = w
        self.scale = 3.0

    @property
    def weight(self):
        return self._w * self.scale

    @property
    def norm2(self):
        return np.sum(self.weight ** 2)        # a property reading a property

    def energy(self):
        return np.sum(self.weight ** 2)


class Reweighted(Weighted):
    @property
    def weight(self):
        return self._w * 0.5


@pytest.mark.parametrize("inplace", ["1", "0"])
def test_property_reads_follow_the_getter(monkeypatch, inplace):
    monkeypatch.setenv("PULLBACK_INPLACE", inplace)
    w = np.array([1.0, 2.0])

    def built_inside(w):
        m = Weighted(w)
        return np.sum(m.weight ** 2)

    def method(w):
        return Weighted(w).energy()

    def nested(w):
        m = Weighted(w * 2.0)
        return m.norm2
    np.testing.assert_array_equal(pb.grad(built_inside)(w), 18.0 * w)
    np.testing.assert_array_equal(pb.grad(method)(w), 18.0 * w)
    np.testing.assert_array_equal(pb.grad(nested)(w), 72.0 * w)
    _, t = pb.jvp(method, (w,), (np.array([1.0, -1.0]),))
    assert t == 18.0 * (1.0 - 2.0)


def test_a_subclass_overriding_the_property_is_read_in_the_base_method():
    def f(w):       # (self's class picks the getter when the read runs: was refused)
        return Reweighted(w).energy()
    np.testing.assert_array_equal(pb.grad(f)(np.array([1.0, 2.0])), [0.5, 1.0])

    def g(w):
        m = Reweighted(w)
        return np.sum(m.weight ** 2)      # its own property: followed
    np.testing.assert_array_equal(pb.grad(g)(np.array([1.0, 2.0])), [0.5, 1.0])


@pytest.mark.parametrize("inplace", ["1", "0"])
def test_property_of_an_argument(monkeypatch, inplace):
    # a property of an argument's class: the getter, picked when the read runs,
    # is differentiated (frontend.properties; was refused, and a zero before that)
    import dataclasses
    monkeypatch.setenv("PULLBACK_INPLACE", inplace)

    @dataclasses.dataclass
    class D:
        w: np.ndarray
        scale: float = 3.0

        @property
        def weight(self):
            return self.w * self.scale

        @property
        def unseen_weight(self):    # a name no class the function reaches has
            return self.w * self.scale

    def f(d):
        return np.sum(d.weight ** 2)
    g = pb.grad(f)(D(np.array([1.0, 2.0])))
    np.testing.assert_allclose(g.w, [18.0, 36.0])          # 2 scale^2 w
    assert g.scale == pytest.approx(30.0)                   # 2 scale sum(w^2)

    def h(d):
        return np.sum(d.unseen_weight ** 2)
    with pytest.raises(pb.PullbackError, match=r"`\.unseen_weight`, a property of D") as info:
        pb.grad(h)(D(np.array([1.0, 2.0])))
    assert "obj._w * obj.scale" in str(info.value)


def test_attribute_reads_of_an_instance_out_of_place(monkeypatch):
    # PULLBACK_INPLACE=0: the cotangent of `self.W` for an object of the user's
    # class (runtime.unindex) was a TypeError; the same values as in place
    monkeypatch.setenv("PULLBACK_INPLACE", "0")

    def f(W, b, x):
        return np.sum(Dense(W, b, np.tanh)(x))
    got = pb.grad(f, argnums=(0, 1, 2))(W1, B1, X)
    want = jax.grad(lambda W, b, x: jnp.sum(jnp.tanh(x @ W + b)), argnums=(0, 1, 2))(W1, B1, X)
    close(got, want)


class _Two(Layer, Weighted):
    def __init__(self, w):
        super().__init__(w)


def test_super_init_refused_where_it_cannot_be_told():
    def f(w):
        return np.sum(_Two(w).w)
    with pytest.raises(pb.NonDifferentiableError, match="_Two.*several bases"):
        pb.grad(f)(np.ones(2))


# -- constructs the corpus found refused with messages pointing the wrong way --

class _Norm:
    def __init__(self, logits, scale):
        self.log_p = self.log_softmax(logits)          # a staticmethod read off `self`
        self.scale, self.shift = scale, 0.5 * scale      # one tuple assignment
        self.a, self.b = self.scale, self.shift          # reads `self`: values first

    @staticmethod
    def log_softmax(z):
        return z - np.log(np.sum(np.exp(z)))

    @staticmethod
    def square(z):
        return z * z

    @classmethod
    def from_params(cls, params):
        return cls(params["logits"], params["scale"])

    def value(self, x):
        return np.sum(self.square(self.log_p * x)) * self.a + self.b


class _Swap:
    def __init__(self, u, v):
        self.p, self.q = u, v
        self.p, self.q = self.q, self.p                  # a swap, as Python does


def _jax_norm(logits, scale, x):
    log_p = logits - jnp.log(jnp.sum(jnp.exp(logits)))
    return jnp.sum((log_p * x) ** 2) * scale + 0.5 * scale


LOGITS, X3 = np.array([0.3, -1.2, 0.8]), np.array([1.5, -0.5, 2.0])


def test_object_built_with_double_star_and_its_staticmethods():
    def f(params, x):
        return _Norm(**params).value(x)
    params = {"logits": LOGITS, "scale": 1.7}
    got = pb.grad(f, argnums=(0, 1))(params, X3)
    want = jax.grad(lambda p, x: _jax_norm(p["logits"], p["scale"], x), argnums=(0, 1))(
        params, X3)
    close(got, want)
    out, out_dot = pb.jvp(f, (params, X3), ({"logits": X3, "scale": 0.3}, LOGITS))
    _, want_dot = jax.jvp(lambda p, x: _jax_norm(p["logits"], p["scale"], x), (params, X3),
                          ({"logits": X3, "scale": 0.3}, LOGITS))
    np.testing.assert_allclose(out_dot, want_dot, rtol=1e-12)


def test_cls_called_in_a_classmethod():
    def f(params, x):
        return _Norm.from_params(params).value(x)
    params = {"logits": LOGITS, "scale": 0.9}
    got = pb.grad(f)(params, X3)
    want = jax.grad(lambda p, x: _jax_norm(p["logits"], p["scale"], x))(params, X3)
    close(got, want)


def test_tuple_assignment_of_attributes_in_init():
    def f(u, v):
        s = _Swap(u, v)
        return s.p * 3.0 + s.q * 5.0
    assert pb.grad(f, argnums=(0, 1))(2.0, 7.0) == (5.0, 3.0)


class _NotFollowed:
    def __init__(self, w):
        self.w = w
        self.register()

    def register(self):
        pass


def test_class_called_through_a_value_that_cannot_be_followed_names_the_class():
    def f(w):
        make = _NotFollowed
        return make(w).w
    with pytest.raises(pb.PullbackError, match=r"_NotFollowed.*`self` is used otherwise"):
        pb.grad(f)(1.0)


class _Canvas:
    def __init__(self, w):
        self.w = w

    def fill(self, v):                      # the user's own method, not ndarray.fill
        return self.w * v


def test_a_user_method_named_fill_is_the_users():
    def f(w, v):
        c = _Canvas(w)
        return np.sum(c.fill(v))
    gw, gv = pb.grad(f, argnums=(0, 1))(np.array([1.0, 2.0, 4.0]), 3.0)
    np.testing.assert_array_equal(gw, [3.0, 3.0, 3.0])
    assert gv == 7.0


def test_ndarray_fill_is_still_refused():
    def f(x):
        y = x * 2.0
        y.fill(1.0)
        return np.sum(y)
    with pytest.raises(pb.PullbackError, match=r"\.fill\(\)`, which changes `y` in place"):
        pb.grad(f)(np.ones(3))
