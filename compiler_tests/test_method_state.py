"""Methods that store into ``self`` (issue 13, ``frontend/method_state.py``):
an object of the user's class built in the differentiated function, changed
by its methods, is followed as a value: each storing method is differentiated
as its state function and the caller's name rebound to the changed object.

Checked against exact values, jax (x64) and central differences, in reverse
and forward mode; what cannot be followed exactly (the object reachable by
another name, put in a list, passed on, returned, an argument of the
differentiated function, a write into what an attribute holds) is refused
naming its line."""
import time

import numpy as np
import pytest

import pullback as pb

from fd_helpers import central

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")


@pytest.fixture(autouse=True)
def x64():
    with jax.enable_x64(True):
        yield


# -- a float state beside a counter ------------------------------------------------------

class Sim:
    def __init__(self, x, v):
        self.x = x
        self.v = v
        self.n = 0

    def force(self):
        return -self.x

    def step(self, dt):
        a = self.force()
        self.v = self.v + dt * a
        self.x = self.x + dt * self.v
        self.n += 1


def sim_loss(x, v, steps=100):
    s = Sim(x, v)
    for _ in range(steps):
        s.step(0.01)
    return np.sum(s.x ** 2) + s.n


def sim_jax(x, v, steps=100):
    for _ in range(steps):
        v = v + 0.01 * (-x)
        x = x + 0.01 * v
    return jnp.sum(x ** 2) + steps


X = np.array([1.0, 2.0, -0.5])
V = np.array([0.5, -0.5, 0.25])


def test_counter_beside_float_state_against_jax():
    assert sim_loss(X, V) == pytest.approx(float(sim_jax(X, V)), rel=1e-14)
    value, (gx, gv) = pb.value_and_grad(sim_loss, argnums=(0, 1))(X, V)
    jx, jv = jax.grad(sim_jax, argnums=(0, 1))(X, V)
    assert value == pytest.approx(float(sim_jax(X, V)), rel=1e-14)
    np.testing.assert_allclose(gx, jx, rtol=1e-12)
    np.testing.assert_allclose(gv, jv, rtol=1e-12)
    t = np.array([0.3, -1.0, 2.0])
    _, out_dot = pb.jvp(sim_loss, (X, V), (t, np.zeros(3)))
    _, j_dot = jax.jvp(sim_jax, (X, V), (t, np.zeros(3)))
    assert out_dot == pytest.approx(float(j_dot), rel=1e-12)
    np.testing.assert_allclose(pb.jacfwd(sim_loss)(X, V), jx, rtol=1e-12)


def test_second_derivatives_against_jax():
    f = lambda x: sim_loss(x, V, 5)                                 # noqa: E731
    expected = jax.hessian(lambda x: sim_jax(x, V, 5))(X)
    np.testing.assert_allclose(pb.hessian(f)(X), expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(pb.jacrev(pb.jacfwd(f))(X), expected, rtol=1e-12, atol=1e-12)


def test_inputs_unchanged_and_the_counter_exact():
    x, v = X.copy(), V.copy()
    pb.grad(sim_loss, argnums=(0, 1))(x, v)
    np.testing.assert_array_equal(x, X)
    np.testing.assert_array_equal(v, V)

    def count(x):
        s = Sim(x, x)
        for _ in range(7):
            s.step(0.0)
        return s.n * np.sum(s.x)
    assert pb.value_and_grad(count)(X) == (pytest.approx(7 * np.sum(X)), pytest.approx(
        np.full(3, 7.0)))


def test_a_hundred_steps_stay_linear():
    grad = pb.grad(sim_loss, argnums=(0, 1))
    grad(X, V, 50)      # transformed once
    times = {}
    for n in (100, 400):
        start = time.perf_counter()
        for _ in range(3):
            grad(X, V, n)
        times[n] = time.perf_counter() - start
    # four times the steps: four times the work (16 if it were quadratic)
    assert times[400] < 9 * times[100], times
    g = grad(X, V, 400)
    np.testing.assert_allclose(g[0], jax.grad(sim_jax)(X, V, 400), rtol=1e-11)


def test_source_stays_readable():
    text = pb.source(sim_loss)
    assert "s.step(0.01)" in text                   # the line comment
    assert "Sim_step" in text                       # the call of the state function


# -- methods calling methods, branches, loops, results ------------------------------------

class Walker:
    def __init__(self, p, scale):
        self.p = p
        self.scale = scale
        self.path = 0.0

    def move(self, d):
        self.p = self.p + self.scale * d
        self.path = self.path + np.sum(d ** 2)

    def two_moves(self, d):                 # a method calling a storing method on self
        self.move(d)
        self.move(-0.5 * d)

    def clipped(self, d, limit):            # storing in a branch
        if np.sum(d) > limit:
            self.p = self.p + limit
        else:
            self.move(d)

    def walk(self, d, n):                   # storing in a loop, through another method
        for i in range(n):
            self.scale = self.scale * 0.5
            self.two_moves(d)

    def step_and_report(self, d):           # returning a value and storing
        self.move(d)
        return np.sum(self.p * self.p)

    def run(self, d, n):                    # returns self
        for _ in range(n):
            self.move(d)
        return self


def nested(p, d):
    w = Walker(p, 2.0)
    w.two_moves(d)
    w.walk(d, 3)
    return np.sum(w.p ** 3) + w.path * w.scale


def nested_jax(p, d):
    scale, path = 2.0, 0.0

    def move(p, path, scale, d):
        return p + scale * d, path + jnp.sum(d ** 2)
    p, path = move(p, path, scale, d)
    p, path = move(p, path, scale, -0.5 * d)
    for _ in range(3):
        scale = scale * 0.5
        p, path = move(p, path, scale, d)
        p, path = move(p, path, scale, -0.5 * d)
    return jnp.sum(p ** 3) + path * scale


def branchy(p, d):
    w = Walker(p, 1.5)
    w.clipped(d, 0.0)
    w.clipped(d, 10.0)
    r = w.step_and_report(d)
    return r + np.sum(w.p)


def branchy_jax(p, d):
    if jnp.sum(d) > 0.0:
        p = p + 0.0
    else:
        p = p + 1.5 * d
    p = p + 1.5 * d                                 # sum(d) <= 10
    p = p + 1.5 * d
    return jnp.sum(p * p) + jnp.sum(p)


P = np.array([0.5, -1.0])
D = np.array([0.25, 0.5])


@pytest.mark.parametrize("f, ref", [(nested, nested_jax), (branchy, branchy_jax)])
def test_methods_against_jax_both_modes(f, ref):
    assert f(P, D) == pytest.approx(float(ref(P, D)), rel=1e-14)
    g = pb.grad(f, argnums=(0, 1))(P, D)
    j = jax.grad(ref, argnums=(0, 1))(P, D)
    for a, b in zip(g, j):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    for k in range(2):
        np.testing.assert_allclose(pb.jacfwd(f, argnums=k)(P, D), j[k], rtol=1e-12)
    np.testing.assert_allclose(g[0], central(lambda p: f(p, D), P), rtol=1e-6)


def test_both_branches_of_a_storing_method():
    neg = -D
    g = pb.grad(branchy)(P, neg)
    np.testing.assert_allclose(g, jax.grad(branchy_jax)(P, neg), rtol=1e-12)


def test_a_method_returning_self():
    def f(p, d):
        w = Walker(p, 1.0)
        final = w.run(d, 4)
        return np.sum(final.p ** 2) + np.sum(w.p)
    # p + 4 d for both names
    expected = lambda p: np.sum((p + 4 * D) ** 2) + np.sum(p + 4 * D)  # noqa: E731
    assert pb.grad(f)(P, D) == pytest.approx(2 * (P + 4 * D) + 1)
    np.testing.assert_allclose(pb.grad(f)(P, D), central(expected, P), rtol=1e-6)
    assert pb.jvp(f, (P, D), (np.ones(2), np.zeros(2)))[1] == pytest.approx(
        np.sum(2 * (P + 4 * D) + 1))


def test_a_store_in_the_function_itself():
    def f(p):
        w = Walker(p, 3.0)
        w.p = w.p * w.p
        w.scale += 1.0
        w.move(p)
        return np.sum(w.p)
    # p*p + 4 p
    assert pb.grad(f)(P) == pytest.approx(2 * P + 4.0)
    assert pb.jvp(f, (P,), (np.ones(2),))[1] == pytest.approx(np.sum(2 * P + 4.0))


def test_an_object_without_a_gradient_runs_as_python():
    class Tally:
        def __init__(self):
            self.n = 0

        def bump(self, k):
            self.n += k
            return self.n

    def f(x):
        t = Tally()
        for i in range(4):
            t.bump(i)
        return x * t.n + x * t.bump(1)
    assert pb.grad(f)(2.0) == 13.0
    assert pb.jvp(f, (2.0,), (1.0,)) == (26.0, 13.0)


def test_a_result_unused_by_the_output():
    def f(p, d):
        w = Walker(p, 1.0)
        y = np.sum(w.p * d)
        w.move(d)               # changes w, which nothing reads after
        return y
    assert pb.grad(f)(P, D) == pytest.approx(D)


# -- refused, naming the line ----------------------------------------------------------------

class Cell:
    def __init__(self, x):
        self.x = x
        self.hist = []

    def step(self, k):
        self.x = self.x * k

    def me(self):
        return self

    def poke(self):
        self.x[0] = 5.0

    def record(self):
        self.hist.append(self.x)

    def bump(self):
        self.x += 1.0


def aliased(x):
    c = Cell(x)
    d = c
    c.step(2.0)
    return np.sum(d.x)


def listed(x):
    c = Cell(x)
    cells = [c]
    c.step(2.0)
    return np.sum(cells[0].x)


def passed_on(x):
    c = Cell(x)
    c.step(2.0)
    return np.sum(helper(c))


def helper(c):
    return c.x


def through_a_method(x):
    c = Cell(x)
    other = c.me()
    c.step(2.0)
    return np.sum(other.x)


def returned_alias_changed(x):
    w = Walker(x, 1.0)
    final = w.run(x, 2)
    w.move(x)
    return np.sum(final.p)


@pytest.mark.parametrize("f, line, why", [
    (aliased, "d = c", "bound to another name"),
    (listed, "cells = [c]", "put in a container"),
    (passed_on, "return np.sum(helper(c))", "passed to a function"),
    (through_a_method, "other = c.me()", "`me` uses `self`"),
    (returned_alias_changed, "w.move(x)", "another name of `w`"),
])
def test_aliases_are_refused_with_their_line(f, line, why):
    with pytest.raises(pb.PullbackError) as info:
        pb.grad(f)(np.array([1.0, 2.0]))
    message = str(info.value)
    assert why in message, message
    assert "test_method_state.py" in message
    import inspect
    src, first = inspect.getsourcelines(f)
    lineno = first + next(i for i, t in enumerate(src) if line in t)
    assert f"line {lineno}" in message, message


@pytest.mark.parametrize("method, why", [
    ("poke", "writes into what an attribute of `self` holds"),
    ("record", "changes what an attribute of `self` holds"),
])
def test_writes_into_attributes_refused(method, why):
    def f(x):
        c = Cell(x * 1.0)
        getattr(c, method)()
        return np.sum(c.x)
    ns = {"Cell": Cell, "np": np}
    src = f"def g(x):\n    c = Cell(x * 1.0)\n    c.{method}()\n    return np.sum(c.x)\n"
    import linecache
    name = f"<test_method_state {method}>"
    linecache.cache[name] = (len(src), None, src.splitlines(True), name)
    exec(compile(src, name, "exec"), ns)
    with pytest.raises(pb.PullbackError) as info:
        pb.grad(ns["g"])(np.array([1.0, 2.0]))
    assert why in str(info.value), str(info.value)
    assert "test_method_state.py" in str(info.value)


def test_an_update_in_place_of_an_array_attribute_refused():
    def f(x):
        c = Cell(x * 1.0)
        c.bump()
        return np.sum(c.x)
    with pytest.raises(pb.PullbackError) as info:
        pb.grad(f)(np.array([1.0, 2.0]))
    assert "`self.x += ...`" in str(info.value)
    assert "self.x = self.x + ..." in str(info.value)


# -- stores of every shape, calls inside expressions ------------------------------------------

class Pair:
    def __init__(self, x):
        self.a = x
        self.b = 2 * x

    def swap(self):                         # a tuple store (was run as plain Python:
        self.a, self.b = self.b, self.a     # 12 where 21 is right, no error)

    def both(self, v):
        self.a = self.b = v

    def early(self, v):                     # a return inside a branch
        if v > 0:
            self.a = self.a * v
            return 1.0
        self.b = self.b * v
        return 2.0


def pair_loss(x):
    s = Pair(x)
    s.swap()
    r = s.early(3.0) + 10.0 * s.early(-2.0)     # two calls inside one expression
    s.both(s.a * s.b)
    return s.a * 10 + s.b + r


def pair_reference(x):
    a, b = 2 * x, x                 # swap
    a = a * 3.0                     # early(3.0): 1.0
    b = b * -2.0                    # early(-2.0): 2.0
    a = b = a * b
    return a * 10 + b + 21.0


@pytest.mark.parametrize("x", [1.0, -0.5, 2.5])
def test_tuple_chained_stores_early_returns_and_calls_in_expressions(x):
    assert pair_loss(x) == pytest.approx(pair_reference(x), rel=1e-15)
    assert pb.grad(pair_loss)(x) == pytest.approx(float(jax.grad(pair_reference)(x)),
                                                  rel=1e-14)
    assert pb.jvp(pair_loss, (x,), (1.0,))[1] == pytest.approx(
        float(jax.jvp(pair_reference, (x,), (1.0,))[1]), rel=1e-14)


def test_a_call_that_may_not_run_is_refused():
    def f(x):
        s = Pair(x)
        y = x > 0 and s.early(x)
        return s.a + y
    with pytest.raises(pb.PullbackError) as info:
        pb.grad(f)(1.0)
    assert "may run it more than once or not at all" in str(info.value)


def test_a_container_changed_without_gradient_runs_as_python():
    class Log:
        def __init__(self):
            self.hist = []

        def record(self, v):
            self.hist.append(v)

    def f(x):
        log = Log()
        log.record(3)
        log.record(4)
        return x * len(log.hist)
    assert pb.grad(f)(2.0) == 2.0
    assert pb.jvp(f, (2.0,), (1.0,)) == (4.0, 2.0)


def test_a_property_setter_is_refused():
    class Box:
        def __init__(self, w):
            self._w = w

        @property
        def w(self):
            return self._w

        @w.setter
        def w(self, v):
            self._w = 3 * v

    def f(x):
        b = Box(x)
        b.w = x
        return b._w
    with pytest.raises(pb.PullbackError):
        pb.grad(f)(1.0)


# -- objects another function built, met one at a time in a loop --------------------------

class Scale:
    def __init__(self, w):
        self.w = w
        self.calls = 0

    def __call__(self, h):
        self.calls += 1
        self.last = h                       # state the loss never reads again
        return h * self.w


class Shift:
    def __init__(self, b):
        self.b = b

    def __call__(self, h):
        return h + self.b


def build_layers(w, b):
    return [Scale(w), Shift(b), Scale(2.0 * w)]


def layered(w, b, x):
    h = x
    for layer in build_layers(w, b):
        h = layer(h)
    return np.sum(h ** 2)


def layered_jax(w, b, x):
    return jnp.sum((2.0 * w * (x * w + b)) ** 2)


def test_a_list_of_new_objects_changed_in_a_loop():
    w, b, x = 0.7, np.array([0.5, -1.0]), np.array([1.0, 2.0])
    assert layered(w, b, x) == pytest.approx(float(layered_jax(w, b, x)), rel=1e-14)
    g = pb.grad(layered, argnums=(0, 1, 2))(w, b, x)
    j = jax.grad(layered_jax, argnums=(0, 1, 2))(w, b, x)
    for a, e in zip(g, j):
        np.testing.assert_allclose(a, e, rtol=1e-12)
    _, t = pb.jvp(layered, (w, b, x), (1.0, np.zeros(2), np.zeros(2)))
    assert t == pytest.approx(float(j[0]), rel=1e-12)


def test_a_list_of_objects_read_again_stays_refused():
    def f(w, b, x):
        layers = build_layers(w, b)
        h = x
        for layer in layers:
            h = layer(h)
        return np.sum(h ** 2) + np.sum(layers[0].last)
    with pytest.raises(pb.PullbackError):
        pb.grad(f)(0.7, np.array([0.5, -1.0]), np.array([1.0, 2.0]))
