"""Function values that carry gradients (issue 13): ``partial(f, x)`` and a
nested function or lambda reading a value being differentiated, used as a
value (passed on, stored, returned), are structures whose leaves are the
values they hold; the gradient flows to those values in reverse mode, in
forward mode, and in derivatives of derivatives.

Gradients are checked against jax (x64) on the same computation, against
exact values, or against central differences; what stays refused is
checked for its file, line, quoted line and hint.
"""
import functools

import numpy as np
import pytest

import pullback as pb

from fd_helpers import central

from error_checks import check_error

jax = pytest.importorskip("jax")
jnp = jax.numpy
jax.config.update("jax_enable_x64", True)

RNG = np.random.default_rng(1013)
X = RNG.standard_normal(4)
Y = RNG.standard_normal(4)


def close(got, want, rtol=1e-12):
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(g, np.asarray(w), rtol=rtol, atol=1e-12)


def powered(base, exponent):
    return base ** exponent


def twice(fn, z):
    """A user function that calls its function parameter."""
    return fn(z) * 2.0


# -- reverse mode ---------------------------------------------------------------

def test_partial_of_differentiated_values():
    def f(x, y):
        g = functools.partial(np.multiply, y)
        h = functools.partial(powered, exponent=x[0])       # held by keyword
        return np.sum(g(np.sin(x)) + h(np.abs(y) + 1.0))

    def jf(x, y):
        return jnp.sum(y * jnp.sin(x) + (jnp.abs(y) + 1.0) ** x[0])
    close(pb.grad(f, argnums=(0, 1))(X, Y), jax.grad(jf, argnums=(0, 1))(X, Y))


def test_partial_of_a_partial_is_merged_by_python():
    def f(x, y):
        g = functools.partial(np.add, x)
        h = functools.partial(g, y)       # Python merges it: partial(np.add, x, y)
        return np.sum(h() ** 2)
    gx, gy = pb.grad(f, argnums=(0, 1))(X, Y)
    close((gx, gy), (2 * (X + Y), 2 * (X + Y)))


def test_closure_passed_to_a_function_that_calls_it():
    def f(x, y):
        def scaled(z):
            return np.tanh(z * y)
        return np.sum(twice(scaled, x))

    def jf(x, y):
        return jnp.sum(2.0 * jnp.tanh(x * y))
    close(pb.grad(f, argnums=(0, 1))(X, Y), jax.grad(jf, argnums=(0, 1))(X, Y))


def test_same_closure_called_several_times_accumulates():
    def f(x):
        g = lambda t: np.sin(t * x)       # noqa: E731
        return g(1.0) + twice(g, 2.0) + g(x)
    x = 0.37
    want = np.cos(x) + 2 * 2 * np.cos(2 * x) + 2 * x * np.cos(x * x)
    assert pb.grad(f)(x) == pytest.approx(want, rel=1e-14)


def test_map_and_generator_over_a_closure():
    def f(x):
        g = lambda t: t * x ** 2          # noqa: E731
        return sum(map(g, [1.0, 2.0, 3.0])) + sum(g(t) for t in (0.5, 1.5))
    assert pb.grad(f)(1.25) == pytest.approx(2 * 1.25 * 8.0, rel=1e-14)


class Runner:
    def __init__(self, scale):
        self.scale = scale

    def run(self, fn, z):
        return fn(z) * self.scale


def test_closure_passed_to_a_method():
    def f(x):
        r = Runner(3.0)
        return r.run(lambda t: np.exp(t * x), 0.5)
    x = 0.8
    assert pb.grad(f)(x) == pytest.approx(3.0 * 0.5 * np.exp(0.5 * x), rel=1e-14)


def make_loss(data):
    def loss(w):
        return np.sum((data @ w - 1.0) ** 2)
    return loss


def test_closure_returned_by_a_call():
    D = RNG.standard_normal((3, 4))

    def f(d, w):
        loss = make_loss(d * 2.0)          # a closure over a differentiated value
        return loss(w) + loss(w * 0.5)

    def jf(d, w):
        def loss(v):
            return jnp.sum((2.0 * d @ v - 1.0) ** 2)
        return loss(w) + loss(w * 0.5)
    close(pb.grad(f, argnums=(0, 1))(D, X), jax.grad(jf, argnums=(0, 1))(D, X))


def test_list_of_closures():
    def f(x, y):
        fs = [lambda t: t * x, lambda t: np.sin(t + y)]
        total = 0.0
        for g in fs:
            total = total + np.sum(g(x))
        return total

    def jf(x, y):
        return jnp.sum(x * x) + jnp.sum(jnp.sin(x + y))
    close(pb.grad(f, argnums=(0, 1))(X, Y), jax.grad(jf, argnums=(0, 1))(X, Y))


def test_closure_over_a_closure_and_partial_of_a_closure():
    def f(x):
        g = lambda t: t * x               # noqa: E731
        h = lambda t: g(t) * x            # noqa: E731  (captures g, a function value)
        p = functools.partial(twice, h)
        return p(2.0) + twice(h, 1.0)
    x = 1.5
    assert pb.grad(f)(x) == pytest.approx(2 * 2 * 2.0 * x + 2 * 2 * x, rel=1e-14)


def test_late_binding_is_followed_where_the_value_is_made():
    def f(x):
        c = x
        g = lambda t: t * c               # noqa: E731
        c = x ** 3                        # before g is used: Python reads this one
        return twice(g, 1.0)
    assert pb.grad(f)(1.5) == pytest.approx(2 * 3 * 1.5 ** 2, rel=1e-14)


def test_value_made_and_used_in_one_statement_of_a_loop():
    def f(w):
        total = 0.0
        for i in range(3):
            batch = float(i)              # assigned again by the next iteration
            total = total + twice(lambda v: (v * batch - 1.0) ** 2, w)
        return total
    w = 0.5
    assert pb.grad(f)(w) == pytest.approx(sum(4 * (w * b - 1) * b for b in range(3)),
                                          rel=1e-14)
    assert pb.jvp(f, (w,), (1.0,))[1] == pytest.approx(-2.0, rel=1e-14)
    assert pb.grad(pb.grad(f))(w) == pytest.approx(20.0, rel=1e-14)


def test_default_bound_at_definition_in_a_loop():
    def f(x):
        total = 0.0
        for k in [1.0, 2.0, 3.0]:
            c = x * k
            total = total + twice(lambda z, c=c: z * c, x)
        return total
    assert pb.grad(f)(0.7) == pytest.approx(2 * 2 * 0.7 * 6.0, rel=1e-14)


def test_held_integer_and_string_carry_no_gradient():
    def pick(n, mode, z):
        return z[n] * 2.0 if mode == "double" else z[n]

    def f(x):
        g = functools.partial(pick, 1, "double")
        return g(x) + twice(lambda z: z[0] * x[2], x)
    want = np.zeros(4)
    want[1] = 2.0
    want[0] = 2 * X[2]
    want[2] = 2 * X[0]
    close(pb.grad(f)(X), want, rtol=1e-15)


def test_checked_by_central_differences():
    def f(x):
        def step(z):
            return np.cos(z * x[0]) + x[1] * z
        return np.sum(list(map(step, [x[2], x[3]])))
    got = pb.grad(f)(X)
    np.testing.assert_allclose(got, central(lambda v: f(v), X), rtol=1e-7, atol=1e-9)


# -- forward mode ------------------------------------------------------------------

def test_forward_mode_through_function_values():
    def f(x, y):
        g = functools.partial(np.multiply, y)
        h = lambda t: np.sin(t * x)       # noqa: E731
        return np.sum(twice(h, g(x)))

    def jf(x, y):
        return jnp.sum(2.0 * jnp.sin(y * x * x))
    tx, ty = RNG.standard_normal(4), RNG.standard_normal(4)
    out, out_dot = pb.jvp(f, (X, Y), (tx, ty))
    want, want_dot = jax.jvp(jf, (X, Y), (tx, ty))
    assert out == pytest.approx(float(want), rel=1e-14)
    assert out_dot == pytest.approx(float(want_dot), rel=1e-12)
    close(pb.jacfwd(f)(X, Y), jax.jacfwd(jf)(X, Y))


# -- derivatives of derivatives ------------------------------------------------------

def test_second_order_through_a_closure_value():
    def f(x):
        def scaled(z):
            return np.sin(z * x)
        return twice(scaled, x)
    x = 0.7
    want = 2 * (2 * np.cos(x * x) - 4 * x * x * np.sin(x * x))
    assert pb.grad(pb.grad(f))(x) == pytest.approx(want, rel=1e-13)

    def jf(v):
        return jnp.sum(2.0 * jnp.sin(v * v))

    def fv(v):
        return np.sum(twice(lambda z: np.sin(z * v), v))
    close(pb.hessian(fv)(X), jax.hessian(jf)(X))


def test_second_order_in_every_order_of_modes():
    def f(x):
        return twice(lambda t: np.sin(t * x), x)
    x = 0.7
    want = 2 * (2 * np.cos(x * x) - 4 * x * x * np.sin(x * x))
    assert pb.grad(lambda v: pb.jvp(f, (v,), (1.0,))[1])(x) == pytest.approx(want, rel=1e-13)
    assert pb.jacrev(pb.jacfwd(f))(x) == pytest.approx(want, rel=1e-13)
    assert pb.jacfwd(pb.grad(f))(x) == pytest.approx(want, rel=1e-13)
    # forward over forward is not followed yet: a clear refusal naming the construct
    with pytest.raises(pb.NonDifferentiableError, match="nested function or lambda used as a "
                       "value") as info:
        pb.jacfwd(pb.jacfwd(f))(x)
    assert "pb.jacfwd(pb.grad(f))" in str(info.value)


class Harness:
    """The autograd suite's harness in miniature: a method that takes a thunk
    (a closure over the arguments) and runs it."""

    def call(self, thunk):
        return thunk()

    def grad_of(self, fun, args):
        def thunk():
            return pb.grad(fun)(*args)
        return self.call(thunk)


def test_thunk_calling_grad_differentiated_again():
    h = Harness()

    def inner(x):
        return np.sin(x) * x

    def outer(x):
        return h.grad_of(inner, (x,))     # d/dx inner, through a thunk
    x = 0.9
    assert outer(x) == pytest.approx(np.cos(x) * x + np.sin(x), rel=1e-15)
    assert pb.grad(outer)(x) == pytest.approx(2 * np.cos(x) - x * np.sin(x), rel=1e-13)


# -- what stays refused --------------------------------------------------------------

def keep(fn):
    return fn


def f_rebound_after_the_value_is_made(x):
    c = x
    h = keep(lambda t: t * c)
    c = x * 2.0
    return h(1.0)


def f_loop_variable_read_later(x):
    fs = []
    for k in [1.0, 2.0]:
        fs.append(keep(lambda t: t * x * k))
    return fs[0](1.0) + fs[1](1.0)


def f_nonlocal_state_as_value(x):
    total = 0.0

    def add(z):
        nonlocal total
        total = total + z
        return total
    twice(add, x)
    return total


def f_bound_in_two_branches(x):
    if x > 0:
        g = lambda t: t * x               # noqa: E731
    else:
        g = lambda t: t - x               # noqa: E731
    return twice(g, 3.0)


def f_def_rebound_to_a_value(x):
    def g(t):
        return t * x
    y = twice(g, x)
    g = np.sin
    return y + g(x)


def f_value_in_a_loop_test(x):
    c = x
    while twice(lambda t: t * c, 1.0) < 5.0:
        c = c * 2.0
    return c


@pytest.mark.parametrize("fn, text, cls, words", [
    (f_value_in_a_loop_test, "while twice(lambda t: t * c, 1.0) < 5.0:",
     pb.UnsupportedSyntaxError, ["`c`", "assigned again later (line", "lambda z, c=c"]),
    (f_bound_in_two_branches, "g = lambda t: t * x", pb.UnsupportedSyntaxError,
     ["`g`", "another branch or block (line", "a name of its own"]),
    (f_def_rebound_to_a_value, "def g(t):", pb.UnsupportedSyntaxError,
     ["`g`", "bound to another value", "a name of its own"]),
    # refused where the value is called after the assignment (when it runs)
    (f_rebound_after_the_value_is_made, "return h(1.0)", pb.UnsupportedSyntaxError,
     ["assigned again later (line", "Python's closure would read the new value",
      "as an argument"]),
    (f_loop_variable_read_later, "return fs[0](1.0) + fs[1](1.0)",
     pb.UnsupportedSyntaxError, ["`k`", "assigned again later", "lambda z, k=k"]),
    (f_nonlocal_state_as_value, "twice(add, x)", pb.UnsupportedSyntaxError,
     ["`nonlocal` state, used as a value", "return the new state"]),
])
def test_what_stays_refused(fn, text, cls, words):
    with pytest.raises(cls) as info:
        pb.grad(fn)(1.5)
    check_error(info.value, fn, text, cls, words)
