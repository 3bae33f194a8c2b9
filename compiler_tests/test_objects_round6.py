"""Objects and classes, round 6 (issue 13): classes made by ``abc.ABCMeta``,
properties named like an array's attributes, ``Polynomial(c)(x)`` with ``c``
differentiated, ``out=`` into a local array, and the code objects of lifted
nested functions.

Gradients are checked against exact values, central differences and jax
(x64); what stays refused is checked for a message naming the user's line and
the real reason."""
import abc

import numpy as np
import pytest

import pullback as pb

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")


@pytest.fixture(autouse=True)
def x64():
    with jax.enable_x64(True):
        yield


def central(f, x, h=1e-6):
    x = np.asarray(x, dtype=float)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


W = np.array([0.3, -0.7, 1.1])
X = np.array([1.5, 0.4, -0.2])


# -- 1. classes made by abc.ABCMeta ------------------------------------------------------

class Model(abc.ABC):
    @abc.abstractmethod
    def forward(self, x):
        ...

    @property
    @abc.abstractmethod
    def scale(self):
        ...

    def loss(self, x):
        return np.sum(self.forward(x) ** 2) * self.scale


class Tanh(Model):
    def __init__(self, w):
        self.w = w

    def forward(self, x):
        return np.tanh(x * self.w)

    @property
    def scale(self):
        return np.sum(self.w)


def jax_loss(w, x):
    return jnp.sum(jnp.tanh(x * w) ** 2) * jnp.sum(w)


class Sim(abc.ABC):
    def __init__(self, x):
        self.x = x
        self.n = 0

    @abc.abstractmethod
    def rate(self):
        ...

    def step(self, dt):
        self.x = self.x + dt * self.rate()
        self.n += 1


class Decay(Sim):
    def rate(self):
        return -np.sin(self.x)


def built_abc(w, x):
    m = Tanh(w)
    return m.loss(x)


def abc_argument(m, x):
    return m.loss(x)


def abc_state(x):
    s = Decay(x)
    for _ in range(5):
        s.step(0.1)
    return np.sum(s.x ** 2) + s.n


def jax_state(x):
    for _ in range(5):
        x = x + 0.1 * -jnp.sin(x)
    return jnp.sum(x ** 2) + 5


@pytest.mark.parametrize("inplace", ["1", "0"])
def test_abc_subclass_built_inside(monkeypatch, inplace):
    monkeypatch.setenv("PULLBACK_INPLACE", inplace)
    g = pb.grad(built_abc)(W, X)
    np.testing.assert_allclose(g, jax.grad(jax_loss)(W, X), rtol=1e-12)
    np.testing.assert_allclose(g, central(lambda w: built_abc(w, X), W), rtol=1e-7)
    t = np.array([1.0, -2.0, 0.5])
    _, tan = pb.jvp(built_abc, (W, X), (t, np.zeros(3)))
    np.testing.assert_allclose(tan, jax.jvp(jax_loss, (W, X), (t, np.zeros(3)))[1], rtol=1e-12)


def test_abc_subclass_as_argument():
    g = pb.grad(abc_argument)(Tanh(W), X)
    assert type(g) is Tanh
    np.testing.assert_allclose(g.w, jax.grad(jax_loss)(W, X), rtol=1e-12)


def test_abc_subclass_as_state():
    np.testing.assert_allclose(pb.grad(abc_state)(X), jax.grad(jax_state)(X), rtol=1e-12)
    _, tan = pb.jvp(abc_state, (X,), (np.ones(3),))
    np.testing.assert_allclose(tan, jax.jvp(jax_state, (X,), (np.ones(3),))[1], rtol=1e-12)


def test_abstract_class_itself_is_not_made():
    def f(x):
        return Model().loss(x)
    with pytest.raises(TypeError, match="abstract"):
        pb.grad(f)(X)


def test_other_metaclasses_are_refused_naming_it():
    class Meta(type):
        pass

    class Lin(metaclass=Meta):
        def __init__(self, w):
            self.w = w

        def forward(self, x):
            return x * self.w

    def f(w, x):
        m = Lin(w)
        return np.sum(m.forward(x))
    with pytest.raises(pb.NonDifferentiableError, match="metaclass Meta") as err:
        pb.grad(f)(W, X)
    assert "m = Lin(w)" in str(err.value)


# -- 2. properties named like an array's attributes --------------------------------------

class Box:
    def __init__(self, w):
        self.w = w

    @property
    def T(self):
        return self.w[::-1] * 2.0

    @property
    def size(self):
        return np.sum(self.w ** 2)

    @property
    def shape(self):
        return self.w.shape


def make_box(w):
    return Box(w * 3.0)


def twice(w):
    return w * 2.0


def factory_box(w):
    b = make_box(w)
    return np.sum(b.T * w) + b.size + b.shape[0]


def jax_factory_box(w):
    v = 3.0 * w
    return jnp.sum(v[::-1] * 2.0 * w) + jnp.sum(v ** 2) + 3


def factory_array(w):
    a = twice(w)                  # an array: its own .T, .size and .shape
    return np.sum(a.T * w) + a.size + a.shape[0]


@pytest.mark.parametrize("inplace", ["1", "0"])
def test_array_named_property_of_a_factory_made_object(monkeypatch, inplace):
    monkeypatch.setenv("PULLBACK_INPLACE", inplace)
    g = pb.grad(factory_box)(W)
    np.testing.assert_allclose(g, jax.grad(jax_factory_box)(W), rtol=1e-12)
    np.testing.assert_allclose(g, central(factory_box, W), rtol=1e-7)
    t = np.array([1.0, -2.0, 0.5])
    value, tan = pb.jvp(factory_box, (W,), (t,))
    assert value == pytest.approx(factory_box(W), rel=1e-15)
    np.testing.assert_allclose(tan, jax.jvp(jax_factory_box, (W,), (t,))[1], rtol=1e-12)


def test_array_attributes_of_a_factory_made_array_stay_the_arrays():
    np.testing.assert_allclose(pb.grad(factory_array)(W), 4.0 * W, rtol=1e-15)
    _, tan = pb.jvp(factory_array, (W,), (np.ones(3),))
    assert tan == pytest.approx(4.0 * W.sum(), rel=1e-15)


# -- 5. attributes of a lifted nested function -------------------------------------------

def code_of_nested(x):
    def inner(y):
        return np.sin(y) * 2.0
    code = inner.__code__
    assert code.co_name == "inner" and code.co_filename == __file__, code
    assert inner.__qualname__ == "code_of_nested.<locals>.inner"
    assert inner.__module__ == __name__
    return np.sum(inner(x)) * code.co_argcount


def code_of_nested_lambda(x):
    g = lambda y: y ** 2   # noqa: E731
    return g(x) * (3.0 if g.__code__.co_name == g.__name__ == "<lambda>" else 1.0)


def code_two_levels(x):
    def middle(y):
        def inner(z):
            return z * 2.0
        return inner(y) * (2.0 if inner.__code__.co_filename == __file__ else 1.0)
    return middle(x) * x


def test_nested_function_code_is_the_users():
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(pb.grad(code_of_nested)(x), 2.0 * np.cos(x), rtol=1e-15)
    _, tan = pb.jvp(code_of_nested, (x,), (np.ones(2),))
    assert tan == pytest.approx(2.0 * np.cos(x).sum(), rel=1e-15)
    assert pb.grad(code_of_nested_lambda)(1.5) == 9.0
    assert pb.grad(code_two_levels)(1.5) == 12.0         # d/dx 4 x**2
    # the generated code reads the user's code object, not a copy
    assert code_of_nested.__code__.co_consts[1] is next(
        c for c in code_of_nested.__code__.co_consts if getattr(c, "co_name", "") == "inner")
