"""Calls whose callee is a value (issue 12): differentiated or refused, never
taken for a constant.

Every reproducer of the issue, with its exact gradient: function values
(parameters, defaults, aliases, containers, getattr, closure cells),
partials, decorators, methods and callable instances, derivatives of
derivatives, loops whose carried values change shape, rebinding
between calls, np.r_ and np.c_ (a string directive refused), ndarray subclasses and foreign
arrays (refused).
"""
import functools
import io
import sys
import threading
import types

import numpy as np
import pytest

import pullback as pb
from pullback.testing import function_from_source

X = np.array([0.3, 0.7, -1.2])
COS = np.cos(X)


def assert_close(a, b):
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


# -- function values ------------------------------------------------------------

def alias(x):
    f = np.sin
    return np.sum(f(x))


def as_parameter(fn, x):
    return np.sum(fn(x))


def square(z):
    return z * z


def with_default(x, nonlinearity=np.sin):
    return np.sum(nonlinearity(x))


BASE = 2.0


def reducer_default(a, r=np.sum):
    return r(np.exp(a) * BASE)


def in_list(x):
    fs = [np.cos, np.sin]
    return np.sum(fs[1](x))


def in_dict(x):
    fs = {"act": np.sin}
    return np.sum(fs["act"](x))


def by_getattr(x):
    return np.sum(getattr(np, "sin")(x))


def keyword_argument(fn, x):
    return fn(x, axis=0)


@pytest.mark.parametrize("f, args, argnums, expected", [
    (alias, (X,), 0, COS),
    (as_parameter, (np.sin, X), 1, COS),
    (as_parameter, (square, X), 1, 2 * X),
    (as_parameter, (lambda z: z ** 3, X), 1, 3 * X ** 2),
    (with_default, (X,), 0, COS),
    (with_default, (X, np.tanh), 0, 1 - np.tanh(X) ** 2),
    (reducer_default, (X,), 0, BASE * np.exp(X)),
    (in_list, (X,), 0, COS),
    (in_dict, (X,), 0, COS),
    (by_getattr, (X,), 0, COS),
    (keyword_argument, (np.sum, X), 1, np.ones(3)),
], ids=["alias", "parameter-rule", "parameter-user", "parameter-lambda", "default",
        "default-overridden", "default-reducer", "list", "dict", "getattr", "keyword"])
def test_function_values(f, args, argnums, expected):
    assert_close(pb.grad(f, argnums=argnums)(*args), expected)


def test_closure_cell_holding_a_function():
    def make(g):
        def h(x):
            return np.sum(g(x))
        return h
    assert_close(pb.grad(make(np.sin))(X), COS)
    assert_close(pb.grad(make(square))(X), 2 * X)


def test_adjoint_of_a_dynamic_call_is_not_zeros():
    src = pb.source(as_parameter, np.sin, X, argnums=(1,))
    assert "dynamic_call(fn, (0,), True, x)" in src and "dynamic_adjoint" in src


def test_function_value_with_no_rule_is_refused_at_its_line():
    with pytest.raises(pb.NoRuleError, match=r"(?s)no differentiation rule for .*trim_zeros.*"
                                             r"line \d+.*return np.sum\(fn\(x\)\)"):
        pb.grad(as_parameter, argnums=1)(np.trim_zeros, X)


def test_function_value_built_from_the_inputs_carries_its_gradient():
    def f(x):
        g = functools.partial(np.multiply, x)     # its held x gets g's cotangent
        return np.sum(g(x))
    assert_close(pb.grad(f)(X), 2 * X)


# -- partial, decorators, methods, callable instances -----------------------------

def scaled(x, a=1.0):
    return np.sum(a * x * x)


def test_partial_inside_and_as_the_differentiated_function():
    def f(x):
        return functools.partial(scaled, a=3.0)(x)
    assert_close(pb.grad(f)(X), 6 * X)
    assert_close(pb.grad(functools.partial(scaled, a=3.0))(X), 6 * X)
    g = functools.partial(as_parameter, np.sin)
    assert_close(pb.grad(g)(X), COS)


def doubled(fn):
    @functools.wraps(fn)
    def wrapper(w, x):
        return 2.0 * fn(w, x)
    return wrapper


@doubled
def decorated(w, x):
    return np.sum(w * x)


def test_decorated_function_is_the_wrapper():
    w = np.array([0.5, -1.0, 2.0])
    value, (gw, gx) = pb.value_and_grad(decorated, argnums=(0, 1))(w, X)
    assert value == 2.0 * np.sum(w * X)
    assert_close(gw, 2 * X)
    assert_close(gx, 2 * w)


class Model:
    def __init__(self, scale, act=np.tanh):
        self.scale = scale
        self.act = act

    def forward(self, x):
        return self.act(self.scale * x)

    def loss(self, x):
        return np.sum(self.forward(x) ** 2)

    def __call__(self, x):
        return self.loss(x)


def test_methods_and_callable_instances():
    m = Model(0.5)
    t = np.tanh(0.5 * X)
    expected = 2 * t * (1 - t ** 2) * 0.5
    assert_close(pb.grad(m.loss)(X), expected)
    assert_close(pb.grad(m)(X), expected)

    def uses_method(model, x):
        return model.loss(x) + np.sum(model(x))
    assert_close(pb.grad(uses_method, argnums=1)(m, X), 2 * expected)


def test_method_of_an_array_without_a_rule_is_refused():
    def f(x):
        return np.sum(x.compress([True, False, True]))
    with pytest.raises(pb.NoRuleError, match="compress"):
        pb.grad(f)(X)


# -- derivatives of derivatives (compiler_tests/test_higher_order.py has the rest) -----

def cube(x):
    return x ** 3


def newton_step(x):
    return x - cube(x) / pb.grad(cube)(x)


@pytest.mark.parametrize("call, expected", [
    (lambda: pb.grad(pb.grad(cube))(1.5), 6 * 1.5),
    (lambda: pb.vjp(pb.grad(cube), 1.5)[1](2.0)[0], 2.0 * 6 * 1.5),
    (lambda: pb.vjp(pb.value_and_grad(cube), 1.5)[1]((1.0, 2.0))[0],
     3 * 1.5 ** 2 + 2.0 * 6 * 1.5),
    (lambda: pb.grad(newton_step)(1.5), 2.0 / 3.0),
], ids=["grad-grad", "vjp-grad", "vjp-value_and_grad", "grad-inside"])
def test_higher_order_values(call, expected):
    """Derivatives of derivatives, once refused, are exact (x**3: f'' = 6x;
    Newton's step x - x/3 has derivative 2/3)."""
    assert abs(call() - expected) <= 1e-12 * abs(expected)


def test_grad_of_value_and_grad_is_refused_for_its_tuple_output():
    """pb.value_and_grad returns a pair: its pb.grad is refused, as in JAX."""
    with pytest.raises((TypeError, pb.PullbackError)):
        pb.grad(pb.value_and_grad(cube))(1.5)


# -- loops whose carried values change shape --------------------------------------

def layers(params, inputs):
    for W, b in params:
        outputs = inputs @ W + b
        inputs = np.tanh(outputs)
    return np.sum(outputs ** 2)


@pytest.mark.parametrize("widths", [(5, 1, 3), (30, 10, 4), (3, 4, 5, 2)])
def test_layer_loop_with_changing_widths(widths):
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    jax.config.update("jax_enable_x64", True)
    rng = np.random.default_rng(len(widths))
    params = [(rng.standard_normal((m, n)), rng.standard_normal(n))
              for m, n in zip(widths[:-1], widths[1:])]
    inputs = rng.standard_normal((4, widths[0]))

    def jlayers(params, inputs):
        for W, b in params:
            outputs = inputs @ W + b
            inputs = jnp.tanh(outputs)
        return jnp.sum(outputs ** 2)
    got = pb.grad(layers, argnums=(0, 1))(params, inputs)
    want = jax.grad(jlayers, argnums=(0, 1))(params, inputs)
    for (gW, gb), (jW, jb) in zip(got[0], want[0]):
        np.testing.assert_allclose(gW, jW, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(gb, jb, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-10, atol=1e-12)


# -- rebinding between calls --------------------------------------------------------

def test_rebinding_a_global_function_a_cell_and_a_nested_default():
    module = types.ModuleType("rebinding_example")
    f = function_from_source("""
    def f(x):
        return np.sum(act(x) * SCALE)
    """, {"act": np.tanh, "SCALE": 1.0})
    assert_close(pb.grad(f)(X), 1 - np.tanh(X) ** 2)
    f.__globals__["act"] = np.sin
    assert_close(pb.grad(f)(X), COS)
    f.__globals__["SCALE"] = np.array([1.0, 2.0, 3.0])    # a float became an array
    assert_close(pb.grad(f)(X), COS * np.array([1.0, 2.0, 3.0]))
    del module

    def make(g):
        def h(x):
            return np.sum(g(x))
        return h
    h = make(np.tanh)
    pb.grad(h)(X)
    h.__closure__[0].cell_contents = np.sin
    assert_close(pb.grad(h)(X), COS)

    def outer(x, s):
        def inner(z, a=s * 2.0):
            return z * a
        return np.sum(inner(x))
    assert_close(pb.grad(outer)(X, 1.0), np.full(3, 2.0))
    assert_close(pb.grad(outer)(X, 3.0), np.full(3, 6.0))
    assert_close(pb.grad(outer, argnums=1)(X, 3.0), 2.0 * np.sum(X))


def test_nested_default_and_captured_value_do_not_swap():
    def outer(x):
        def inner(z, a=2.0):
            return z * a * x[0]
        return np.sum(inner(x))
    assert_close(pb.grad(outer)(X), 2.0 * X[0] + np.array([2.0 * np.sum(X), 0, 0]))


# -- values pullback cannot index into, and arrays it does not handle ------------

def test_r_and_c_of_arrays_and_numbers():
    def f(x, w):
        y = np.r_[x, 1.0, w]
        z = np.c_[x, w]
        return np.sum(y ** 2) + np.sum(z * np.arange(6.0).reshape(3, 2))
    w = np.array([0.5, -1.0, 2.0])
    gx, gw = pb.grad(f, argnums=(0, 1))(X, w)
    assert_close(gx, 2 * X + np.array([0.0, 2.0, 4.0]))
    assert_close(gw, 2 * w + np.array([1.0, 3.0, 5.0]))


def test_r_with_a_slice_joins_its_range_and_a_directive_is_refused():
    def f(x):
        return np.sum(np.r_[x, 0:3] ** 2)
    assert_close(pb.grad(f)(X), 2 * X)       # (more in test_rules_ufunc_methods.py)

    def g(x):
        return np.sum(np.r_["0,2", x, x])
    with pytest.raises(pb.UnsupportedSyntaxError, match=r"(?s)string directive.*np.concatenate"):
        pb.grad(g)(X)


def test_ndarray_subclasses_and_foreign_arrays_are_refused():
    def f(x):
        return np.sum(x * x)
    with pytest.raises(TypeError, match="numpy.matrix"):
        pb.grad(f)(np.matrix([[1.0, 2.0], [3.0, 4.0]]))
    with pytest.raises(TypeError, match="MaskedArray"):
        pb.grad(f)(np.ma.array([1.0, 2.0], mask=[0, 1]))
    class Foreign:              # another library's array (test_backends: JAX, Dask)
        __module__ = "torch"
        shape, ndim = (2,), 1

        def __array_namespace__(self):
            return None
    with pytest.raises(TypeError, match="np.asarray"):
        pb.vjp(lambda x: x * 2.0, Foreign())
    with pytest.raises(TypeError, match="np.asarray"):
        pb.grad(lambda x: x * 2.0)(Foreign())


# -- threads ----------------------------------------------------------------------

def test_threads_transform_once_and_leave_stdout_alone():
    from pullback.driver import cache
    fns = [function_from_source(f"""
    def f{i}(x):
        return np.sum(np.sin(x) * {i + 1}.0)
    """) for i in range(4)]
    out, err = sys.stdout, sys.stderr
    before = cache.stats["transforms"]
    errors = []

    def work():
        try:
            for fn in fns:
                pb.grad(fn)(X)
        except Exception as e:        # noqa: BLE001
            errors.append(e)
    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert cache.stats["transforms"] - before <= len(fns)
    assert sys.stdout is out and sys.stderr is err
    assert not isinstance(sys.stdout, io.StringIO)
