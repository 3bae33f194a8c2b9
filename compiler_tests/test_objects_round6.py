"""Objects and classes, round 6 (issue 13): classes made by ``abc.ABCMeta``,
properties named like an array's attributes, ``Polynomial(c)(x)`` with ``c``
differentiated, ``out=`` into a local array, and the code objects of lifted
nested functions.

Gradients are checked against exact values, central differences and jax
(x64); what stays refused is checked for a message naming the user's line and
the real reason."""
import abc
import collections

import numpy as np
import numpy.polynomial as npp
import pytest
from numpy.polynomial import Chebyshev, Polynomial

import pullback as pb

from fd_helpers import central

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")


@pytest.fixture(autouse=True)
def x64():
    with jax.enable_x64(True):
        yield


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


class Filler(abc.ABC):
    def __init__(self, w):
        self.w = w

    def fill(self, buf):                  # writes into its argument
        buf[0] = self.w * 2.0


def abc_writing_method(w):
    m = Filler(w)
    buf = np.zeros(3)
    m.fill(buf)
    return np.sum(buf * np.array([3.0, 1.0, 1.0]))


def test_abc_method_writing_into_an_argument():
    assert pb.grad(abc_writing_method)(1.5) == 6.0
    assert pb.jvp(abc_writing_method, (1.5,), (2.0,)) == (9.0, 12.0)


class Layer(abc.ABC):
    @abc.abstractmethod
    def __call__(self, x):
        ...


class Affine(Layer):
    def __init__(self, w, b):
        self.w = w
        self.b = b

    def __call__(self, x):
        return x * self.w + self.b


class Tanh2(Layer):
    def __call__(self, x):
        return np.tanh(x)


def build_layers(p):
    return [Affine(p[0], p[1]), Tanh2(), Affine(p[2], p[3])]


def abc_layers(p, x):
    h = x
    for layer in build_layers(p):
        h = layer(h)
    return np.sum(h ** 2)


def jax_layers(p, x):
    return jnp.sum((jnp.tanh(x * p[0] + p[1]) * p[2] + p[3]) ** 2)


def test_abc_objects_as_values():
    p, x = np.array([0.5, 0.1, -1.2, 0.3]), np.array([1.0, 2.0])
    np.testing.assert_allclose(pb.grad(abc_layers)(p, x), jax.grad(jax_layers)(p, x),
                               rtol=1e-12)
    out, back = pb.vjp(make_affine, 0.5, 0.1)            # an ABC object as the output
    assert type(out) is Affine and (out.w, out.b) == (1.0, 0.1)
    assert back(Affine(1.0, 2.0)) == (2.0, 2.0)


def make_affine(w, b):
    return Affine(w * 2.0, b)


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


def box_argument(b, w):
    return np.sum(b.T * w) + b.size


Pair = collections.namedtuple("Pair", "T size")


@pytest.mark.parametrize("inplace", ["1", "0"])
def test_array_named_property_of_an_argument(monkeypatch, inplace):
    monkeypatch.setenv("PULLBACK_INPLACE", inplace)
    g = pb.grad(box_argument)(Box(W), W)
    np.testing.assert_allclose(g.w, 2.0 * W[::-1] + 2.0 * W, rtol=1e-15)   # (its getters')
    t = np.array([1.0, -2.0, 0.5])
    _, tan = pb.jvp(box_argument, (Box(W), W), (Box(t), np.zeros(3)))
    assert tan == pytest.approx(np.sum(2.0 * t[::-1] * W) + np.sum(2.0 * W * t), rel=1e-14)
    # a namedtuple's fields of those names stay fields
    gp = pb.grad(box_argument)(Pair(W, 2.0), W)
    np.testing.assert_array_equal(gp.T, W)
    assert gp.size == 1.0


def test_array_attributes_of_a_factory_made_array_stay_the_arrays():
    np.testing.assert_allclose(pb.grad(factory_array)(W), 4.0 * W, rtol=1e-15)
    _, tan = pb.jvp(factory_array, (W,), (np.ones(3),))
    assert tan == pytest.approx(4.0 * W.sum(), rel=1e-15)


# -- 3. series objects built from values being differentiated ---------------------------

C = np.array([1.0, 2.0, 0.5, -0.25])
XS = np.array([0.3, -1.2, 2.0])


def series_inline(c, x):
    return np.sum(Polynomial(c)(x) ** 2)


def jax_series_inline(c, x):
    return jnp.sum(jnp.polyval(c[::-1], x) ** 2)


def chebyshev(c, x, lo, hi):
    u = (2.0 * x - (lo + hi)) / (hi - lo)      # the domain [lo, hi] onto [-1, 1]
    t0, t1, total = jnp.ones_like(u), u, c[0] * jnp.ones_like(u) + c[1] * u
    for k in range(2, c.shape[0]):
        t0, t1 = t1, 2.0 * u * t1 - t0
        total = total + c[k] * t1
    return total


def series_named(c, x):
    p = npp.Chebyshev(c * 2.0, domain=[-2.0, 3.0])
    s = 0.0
    for i in range(3):
        s = s + np.sum(np.sin(p(x * i)))
    return s + np.sum(p(x))


def jax_series_named(c, x):
    s = 0.0
    for i in range(3):
        s = s + jnp.sum(jnp.sin(chebyshev(c * 2.0, x * i, -2.0, 3.0)))
    return s + jnp.sum(chebyshev(c * 2.0, x, -2.0, 3.0))


def series_positional_domain(c, x):
    lo = -3.0
    return np.sum(Chebyshev(c, [lo, 1.0])(x) * x)


def jax_series_positional_domain(c, x):
    return jnp.sum(chebyshev(c, x, -3.0, 1.0) * x)


@pytest.mark.parametrize("inplace", ["1", "0"])
@pytest.mark.parametrize("fn, oracle", [
    (series_inline, jax_series_inline), (series_named, jax_series_named),
    (series_positional_domain, jax_series_positional_domain)])
def test_series_of_differentiated_coefficients(monkeypatch, inplace, fn, oracle):
    monkeypatch.setenv("PULLBACK_INPLACE", inplace)
    gc, gx = pb.grad(fn, argnums=(0, 1))(C, XS)
    wc, wx = jax.grad(oracle, argnums=(0, 1))(C, XS)
    np.testing.assert_allclose(gc, wc, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(gx, wx, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(gc, central(lambda c: fn(c, XS), C), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(gx, central(lambda x: fn(C, x), XS), rtol=1e-6, atol=1e-7)
    tc, tx = np.linspace(-1.0, 1.0, 4), np.array([0.5, 1.0, -2.0])
    value, tan = pb.jvp(fn, (C, XS), (tc, tx))
    assert value == pytest.approx(fn(C, XS), rel=1e-13)
    assert tan == pytest.approx(float(jax.jvp(oracle, (C, XS), (tc, tx))[1]), rel=1e-11)


def test_series_second_derivatives():
    # (the helpers' rules are the helpers again: forward over reverse works)
    def f(c):
        return series_named(c, XS)

    def j(c):
        return jax_series_named(c, XS)
    np.testing.assert_allclose(pb.hessian(f)(C), jax.hessian(j)(C), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(pb.hessian(series_inline, argnums=1)(C, XS),
                               jax.hessian(jax_series_inline, argnums=1)(C, XS), rtol=1e-10)


def series_used_otherwise(c, x):
    p = Polynomial(c)
    return np.sum(p.deriv()(x))


def series_domain_from_x(c, x):
    return np.sum(Chebyshev(c, [float(np.min(x)) - 1.0, 3.0])(x))


@pytest.mark.parametrize("fn, line, words", [
    (series_used_otherwise, "p = Polynomial(c)", ["Polynomial"]),
    (series_domain_from_x, "Chebyshev(c, [float(np.min(x)) - 1.0, 3.0])(x)", ["`domain`"])])
def test_series_refusals_name_the_users_code(fn, line, words):
    with pytest.raises(pb.PullbackError) as info:
        pb.grad(fn, argnums=(0, 1))(C, XS)
    message = str(info.value)
    assert line in message and __file__ in message
    for w in words:
        assert w in message


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


class Doubler:
    def __init__(self, x):
        self.x = x

    def step(self, k):                    # a state method with a nested function
        def inner(y):
            return np.sin(y) * 2.0
        same = inner.__code__.co_filename == __file__
        self.x = inner(self.x) * k * (3.0 if same else 1.0)


def state_with_nested(x):
    s = Doubler(x)
    s.step(2.0)
    s.step(0.5)
    return np.sum(s.x)


def jax_state_with_nested(x):
    for k in (2.0, 0.5):
        x = jnp.sin(x) * 2.0 * k * 3.0
    return jnp.sum(x)


def test_nested_function_in_a_state_method():
    # (its returns were rewritten as the method's, `return (self, y)`: a TypeError)
    x = np.array([0.3, -1.1])
    np.testing.assert_allclose(pb.grad(state_with_nested)(x),
                               jax.grad(jax_state_with_nested)(x), rtol=1e-12)
    _, tan = pb.jvp(state_with_nested, (x,), (np.ones(2),))
    assert tan == pytest.approx(float(jax.jvp(jax_state_with_nested, (x,), (np.ones(2),))[1]),
                                rel=1e-12)


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


# -- 4. out= into an array the function made -----------------------------------------------

A = np.array([1.0, 2.0, 3.0])
B = np.array([0.5, -1.0, 2.0])
M = np.arange(6.0).reshape(2, 3) / 7.0


def out_dot(a, m):
    buf = np.empty((2,))
    y = np.dot(m, a, out=buf)
    return np.sum(y ** 2)


def jax_out_dot(a, m):
    return jnp.sum(jnp.dot(m, a) ** 2)


def out_loop(a, b):
    acc = np.zeros_like(a)
    for i in range(3):
        np.add(acc, a * i, out=acc)
        np.multiply(acc, b, out=acc)
    return np.sum(np.sin(acc))


def jax_out_loop(a, b):
    acc = jnp.zeros_like(a)
    for i in range(3):
        acc = (acc + a * i) * b
    return jnp.sum(jnp.sin(acc))


def out_broadcast(a, b):
    buf = np.zeros((2, 3))
    np.add(a, b, out=buf)                     # broadcast into both rows
    return np.sum(np.exp(buf) * np.arange(6.0).reshape(2, 3))


def jax_out_broadcast(a, b):
    return jnp.sum(jnp.exp(jnp.broadcast_to(a + b, (2, 3))) * jnp.arange(6.0).reshape(2, 3))


def out_reductions(m):
    buf = np.zeros(3)
    np.sum(m, axis=0, out=buf)
    np.add.reduce(m * buf, axis=0, out=(buf,))
    return np.sum(buf ** 3)


def jax_out_reductions(m):
    buf = jnp.sum(m, axis=0)
    return jnp.sum(jnp.sum(m * buf, axis=0) ** 3)


def out_alias_and_return(a, b):
    buf = a.copy()
    c = buf                                   # another name for the same array
    np.multiply(buf, b, out=buf)
    first = np.sum(c * a)
    y = np.maximum(a, b, out=buf)
    return first + np.sum(y) + np.sum(c)


def jax_out_alias_and_return(a, b):
    return jnp.sum(a * b * a) + 2.0 * jnp.sum(jnp.maximum(a, b))


def out_positional(a, b):
    buf = np.zeros(3)
    np.add(a, b, buf)                         # a ufunc's output by position
    np.sin(buf, buf)
    return np.sum(buf * a)


def jax_out_positional(a, b):
    return jnp.sum(jnp.sin(a + b) * a)


@pytest.mark.parametrize("inplace", ["1", "0"])
@pytest.mark.parametrize("fn, oracle, args", [
    (out_positional, jax_out_positional, (A, B)), (out_dot, jax_out_dot, (A, M)), (out_loop, jax_out_loop, (A, B)),
    (out_broadcast, jax_out_broadcast, (A, B)), (out_reductions, jax_out_reductions, (M,)),
    (out_alias_and_return, jax_out_alias_and_return, (A, B))])
def test_out_into_a_local_array(monkeypatch, inplace, fn, oracle, args):
    monkeypatch.setenv("PULLBACK_INPLACE", inplace)
    kept = [a.copy() for a in args]
    argnums = tuple(range(len(args)))
    grads = pb.grad(fn, argnums=argnums)(*args)
    want = jax.grad(oracle, argnums=argnums)(*args)
    for i, (g, w) in enumerate(zip(grads, want)):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(g, central(lambda v: fn(*args[:i], v, *args[i + 1:]), args[i]),
                                   rtol=1e-6, atol=1e-6)
    tangents = tuple(np.linspace(-1.0, 1.0, a.size).reshape(a.shape) for a in args)
    value, tan = pb.jvp(fn, args, tangents)
    assert value == pytest.approx(fn(*[a.copy() for a in args]), rel=1e-14)
    assert tan == pytest.approx(float(jax.jvp(oracle, args, tangents)[1]), rel=1e-12)
    for a, k in zip(args, kept):
        np.testing.assert_array_equal(a, k)   # the caller's arrays are not written into


def out_argument(a, b):
    np.add(a, b, out=a)
    return np.sum(a)


def out_view(a, b):
    buf = np.zeros((2, 3))
    row = buf[0]
    np.add(a, b, out=row)
    return np.sum(buf)


def out_in_expression(a, b):
    buf = np.zeros(3)
    return float(np.sum(np.add(a, b, out=buf) * 2))     # (NumPy's calls only: followed)


def out_where(a, b):
    buf = np.zeros(())
    np.add.reduce(a * b, out=buf, where=a > 1)      # (a ufunc's where= is followed)
    return np.sum(buf)


@pytest.mark.parametrize("fn, text, words", [
    (out_argument, "np.add(a, b, out=a)", ["argument", "y = np.add(...)"]),
    (out_view, "np.add(a, b, out=row)", ["`row`", "a view"]),
    (out_in_expression, "np.add(a, b, out=buf)", ["larger expression", "statement of its own"]),
    (out_where, "np.add.reduce(a * b, out=buf, where=a > 1)", ["where=", "np.where"])])
def test_out_refused_where_it_cannot_be_followed(fn, text, words):
    for transform in (pb.grad(fn), lambda a, b: pb.jvp(fn, (a, b), (a, b))):
        with pytest.raises(pb.UnsupportedSyntaxError) as info:
            transform(A.copy(), B.copy())
        message = str(info.value)
        assert text in message and "`out=`" in message and __file__ in message
        for w in words:
            assert w in message


def out_into_integers(a, b):
    buf = np.zeros(3, dtype=int)
    np.add(a, b, out=buf)
    return np.sum(buf * a)


def out_complex_into_reals(a, b):
    buf = np.zeros(3)
    np.multiply(a, b * 1j, out=buf)
    return np.sum(buf)


@pytest.mark.parametrize("fn", [out_into_integers, out_complex_into_reals])
def test_out_casts_as_numpy_does(fn):
    with pytest.raises(TypeError):            # what NumPy raises (not a truncated value)
        fn(A.copy(), B.copy())
    with pytest.raises(TypeError, match="cannot cast"):
        pb.grad(fn)(A, B)
    with pytest.raises(TypeError, match="cannot cast"):
        pb.jvp(fn, (A, B), (A, B))


def user_out(a, out=None):
    return a * 2.0 if out is None else out


def out_of_a_users_function(a):
    return np.sum(user_out(a, out=a * 3.0))     # (a parameter like any other)


def test_out_of_a_users_function_is_a_parameter():
    np.testing.assert_array_equal(pb.grad(out_of_a_users_function)(A), np.full(3, 3.0))
