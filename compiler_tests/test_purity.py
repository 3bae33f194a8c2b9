"""Purity: which operations may join a fused kernel, and which user
functions are pure elementwise maps."""
import math
import operator

import gast
import numpy as np
import pytest

import pullback as pb
from pullback.analyses import purity
from pullback.rules import registry
from pullback.lowering import kernels
from pullback.testing import analyses, function_from_source


def ops_of(src):
    fn = function_from_source(src)
    normal, ops, *_ = analyses(fn)
    return [(s, ops[id(s)]) for s in normal.tree.body if isinstance(s, gast.Assign)]


def elementwise_of(src):
    return [purity.elementwise(op, s.value) for s, op in ops_of(src)]


def test_elementwise_operations():
    got = elementwise_of("""
def f(x, y, c):
    a = x * y
    b = -a
    d = np.tanh(b)
    e = np.where(c, d, 0.0)
    g = np.maximum(e, y)
    h = np.clip(g, -1.0, 1.0)
    k = x < y
    m = np.floor(h)
    n = np.add(m, x)
    p = a
    return p
""")
    assert got == [operator.mul, operator.neg, np.tanh, np.where, np.maximum, np.clip,
                   operator.lt, np.floor, np.add, purity._identity]


def test_not_elementwise():
    got = elementwise_of("""
def f(x, y):
    a = np.sum(x)
    b = x @ y
    c = x[0]
    e = np.argmax(x)
    g = x.T
    h = np.cumsum(x)
    k = np.dot(x, y)
    return a
""")
    assert got == [None] * 7      # (a call with out= is refused before this analysis)


def test_math_functions_map_to_their_numpy_twins():
    got = elementwise_of("""
def f(x, y):
    a = math.sin(x)
    b = math.atan2(a, y)
    c = math.log(b)
    d = math.log(c, 2.0)
    e = abs(d)
    g = max(e, y)
    h = pow(g, 2.0)
    k = math.erf(h)
    return k
""")
    assert got == [np.sin, np.arctan2, np.log, None, np.absolute, np.maximum, np.power, None]


def test_ufunc_table_matches_jax_numpy():
    jnp = pytest.importorskip("jax.numpy")
    for name in registry.KERNEL_UFUNCS:
        assert hasattr(np, name) and hasattr(jnp, getattr(np, name).__name__), name


def pure_helper(z):
    return math.exp(-z * z) * 2.0


def impure_helper(z):
    print(z)
    return z


LOG = []


def test_scalar_functions():
    pure = function_from_source("""
def g(z, w):
    a = math.tanh(2.0 * z + w) * z
    b = pure_helper(a) + W[0]
    return np.where(b > 0.0, b, 0.1 * b)
""", {"pure_helper": pure_helper, "W": np.ones(2)})
    assert purity.scalar_function(pure).pure
    cases = {
        "print": ("""
def g(z):
    print(z)
    return z
""", "kept for its effect"),
        "append": ("""
def g(z):
    LOG.append(z)
    return z * z
""", "kept for its effect"),
        "reduction": ("""
def g(z):
    return np.sum(z) * z
""", "not a pure elementwise"),
        "indexing the element": ("""
def g(z):
    return z[0]
""", "not a pure elementwise"),
        "branch": ("""
def g(z):
    if z > 0:
        return z
    return -z
""", ""),
        "impure callee": ("""
def g(z):
    return impure_helper(z) * 2.0
""", "not a pure elementwise"),
        "global state": ("""
def g(z):
    global COUNT
    COUNT = COUNT + 1
    return z
""", ""),
    }
    for what, (src, reason) in cases.items():
        fn = function_from_source(src, {"LOG": LOG, "impure_helper": impure_helper,
                                        "COUNT": 0})
        info = purity.scalar_function(fn)
        assert not info.pure, what
        assert reason in info.reason, (what, info.reason)


def test_purity_sees_the_function_as_a_transform_does():
    """Purity runs the whole front end (``front.FRONT``, as a transform does):
    a closure inside a scalar function is lifted and called like any helper,
    so the function is a pure map, and a vectorized call of it is fused."""
    g = function_from_source("""
def g(z):
    h = lambda u: u * u + 1.0
    return h(z) * 3.0
""")
    assert purity.scalar_function(g).pure
    f = function_from_source("""
def f(x):
    return np.sum(np.vectorize(g)(x) * x)
""", {"g": g})
    x = np.linspace(0.1, 1.0, 5)
    exact = 3.0 * (3.0 * x ** 2 + 1.0)         # d/dx of 3 (x^2 + 1) x
    for lower in (False, True):
        before = sum(kernels.stats.values())
        with kernels.options(lower=lower):
            np.testing.assert_allclose(pb.grad(f)(x), exact, rtol=1e-12)
        assert sum(kernels.stats.values()) > before        # the fused map ran


def test_recursion_is_not_pure():
    ns = {}
    fn = function_from_source("""
def g(z):
    return g(z * 0.5) + z
""", ns)
    ns["g"] = fn
    fn.__globals__["g"] = fn
    assert not purity.scalar_function(fn).pure


def test_not_python_functions():
    assert not purity.scalar_function(np.sin).pure
    assert not purity.scalar_function(len).pure
