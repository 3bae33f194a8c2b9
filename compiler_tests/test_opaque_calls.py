"""Library calls that only move data, checked when they run (issue 13).

A call into library code (the standard library, an installed package) that
is given values being differentiated runs as plain Python and is checked to
have only moved them (``pullback.runtime.opaque``): each float or array of
its result is one of the values it was given, and its cotangent goes back
to where that value came from.  Gradients are checked against jax (x64) on
the same computation, exact values or central differences; a library that
computes, copies or writes is refused, naming the file, the line and what
to write instead.
"""
import collections
import collections.abc
import copy
import heapq
import importlib
import inspect
import itertools
import operator
import random
import sys
import textwrap

import numpy as np
import pytest

import pullback as pb

from fd_helpers import central

from error_checks import check_error

jax = pytest.importorskip("jax")
jnp = jax.numpy
jax.config.update("jax_enable_x64", True)

RNG = np.random.default_rng(1313)
X = RNG.standard_normal(3)
Y = RNG.standard_normal(3)


def close(got, want, rtol=1e-12):
    got_leaves = jax.tree_util.tree_leaves(got)
    want_leaves = jax.tree_util.tree_leaves(want)
    assert len(got_leaves) == len(want_leaves)
    for g, w in zip(got_leaves, want_leaves):
        np.testing.assert_allclose(g, np.asarray(w), rtol=rtol, atol=1e-12)


@pytest.fixture
def thirdlib(tmp_path):
    """A module installed as a third-party package would be (its file under a
    ``site-packages`` folder): library code, not the user's."""
    root = tmp_path / "site-packages"
    root.mkdir()
    (root / "thirdlib_opaque.py").write_text(textwrap.dedent('''
        def weight(params):
            return params["w"]

        def pick(params, names):
            return [params[n] for n in names]

        def doubled(x):
            return x * 2.0

        def poke(a):
            a[0] = 1.0
            return a

        def stash(store, v):
            store.append(v)

        def first_row(x):
            return x[0]
    '''))
    sys.path.insert(0, str(root))
    try:
        yield importlib.import_module("thirdlib_opaque")
    finally:
        sys.path.remove(str(root))
        sys.modules.pop("thirdlib_opaque", None)


# -- moving data: exact gradients -----------------------------------------------------

def test_copy_copy_of_a_dict():
    def f(x, y):
        d = {"a": x, "b": y, "n": 3}
        e = copy.copy(d)
        return np.sum(e["a"] ** 2 * e["b"][0]) + e["n"]

    def f_jax(x, y):
        return jnp.sum(x ** 2 * y[0]) + 3
    close(pb.grad(f, argnums=(0, 1))(X, Y), jax.grad(f_jax, argnums=(0, 1))(X, Y))


def test_ordered_dict_from_pairs():
    def f(x, y):
        od = collections.OrderedDict([("a", x), ("b", y)])
        od.move_to_end("a")
        return np.sum(np.sin(od["a"]) * od["b"])

    def f_jax(x, y):
        return jnp.sum(jnp.sin(x) * y)
    close(pb.grad(f, argnums=(0, 1))(X, Y), jax.grad(f_jax, argnums=(0, 1))(X, Y))


def test_itemgetter_on_a_list():
    def f(x, y):
        xs = [x, y, x * 3.0]
        a, c = operator.itemgetter(0, 2)(xs)
        return np.sum(a * c) + np.sum(operator.itemgetter(1)(xs) ** 3)

    def f_jax(x, y):
        return jnp.sum(x * x * 3.0) + jnp.sum(y ** 3)
    close(pb.grad(f, argnums=(0, 1))(X, Y), jax.grad(f_jax, argnums=(0, 1))(X, Y))


def test_itertools_chain_consumed_by_list():
    def f(x, y):
        items = list(itertools.chain([x, y], [x * y]))
        return np.sum(items[0] * items[1]) + np.sum(items[2] ** 2)

    def f_jax(x, y):
        return jnp.sum(x * y) + jnp.sum((x * y) ** 2)
    close(pb.grad(f, argnums=(0, 1))(X, Y), jax.grad(f_jax, argnums=(0, 1))(X, Y))


def test_random_choice_of_layers():
    layers = [RNG.standard_normal(3) for _ in range(4)]
    k = random.Random(0).choice(range(4))

    def f(l0, l1, l2, l3):
        chosen = random.Random(0).choice([l0, l1, l2, l3])
        return np.sum(np.tanh(chosen))

    got = pb.grad(f, argnums=(0, 1, 2, 3))(*layers)
    for i, g in enumerate(got):
        want = 1.0 - np.tanh(layers[i]) ** 2 if i == k else np.zeros(3)
        np.testing.assert_allclose(g, want, rtol=1e-14)


def test_heapq_nsmallest_of_floats():
    def f(a, b, c):
        lo, mid = heapq.nsmallest(2, [a, b, c])
        return lo * mid ** 2

    assert pb.grad(f, argnums=(0, 1, 2))(3.0, 1.0, 2.0) == (0.0, 4.0, 4.0)


def test_third_party_helper_returning_an_entry(thirdlib):
    def f(params, x):
        w = thirdlib.weight(params)
        b, w2 = thirdlib.pick(params, ["b", "w"])
        return np.sum(np.tanh(x @ w + b) * w2[0])

    def f_jax(params, x):
        return jnp.sum(jnp.tanh(x @ params["w"] + params["b"]) * params["w"][0])
    params = {"w": RNG.standard_normal((3, 2)), "b": RNG.standard_normal(2)}
    close(pb.grad(f, argnums=(0, 1))(params, X), jax.grad(f_jax, argnums=(0, 1))(params, X))


def test_getattr_of_an_object_by_name():
    class Params:
        def __init__(self, w):
            self.w = w

    def f(x):
        p = Params(x * 2.0)
        return np.sum(getattr(p, "w") ** 2)

    np.testing.assert_allclose(pb.grad(f)(X), 8.0 * X, rtol=1e-14)


def test_bound_arguments_and_apply_defaults():
    """The autograd harness's own code: a signature bound, its defaults
    applied (a library method changing an object holding differentiated
    values), its arguments read back.  A derivative of the derivative
    through a library call is refused (not followed yet), with its line."""
    def fun(x, y=2.0):
        return np.sin(x) * y * x

    def call(f, args):
        b = inspect.signature(f).bind(*args)
        b.apply_defaults()
        return f(*tuple(b.arguments.values()))

    def g(x):
        return call(fun, (x,))

    x = 0.7
    want_d1 = 2.0 * (np.cos(x) * x + np.sin(x))
    np.testing.assert_allclose(pb.grad(g)(x), want_d1, rtol=1e-14)
    np.testing.assert_allclose(pb.grad(g)(x), central(lambda v: g(float(v)), x), rtol=1e-8)
    with pytest.raises(pb.NonDifferentiableError) as err:
        pb.grad(pb.grad(g))(x)
    # (the starred call is followed since issue 13; the library method changing `b` is not)
    assert "cannot follow tangents through `apply_defaults`" in str(err.value)
    with pytest.raises(pb.NonDifferentiableError, match="apply_defaults"):
        pb.jvp(g, (x,), (1.0,))           # a KeyError in the tangent code before


def test_forward_mode_through_library_calls():
    def f(x, y):
        d = copy.copy({"a": x, "b": y})
        return operator.itemgetter("b")(d) * np.sin(d["a"])

    t = RNG.standard_normal(3)
    u = RNG.standard_normal(3)
    out, tangent = pb.jvp(f, (X, Y), (t, u))
    want_out, want_t = jax.jvp(lambda x, y: y * jnp.sin(x), (X, Y), (t, u))
    close((out, tangent), (want_out, want_t))


def test_forward_mode_through_a_c_method():
    """``od.move_to_end("a")`` (a method of a C type, its object changed) and
    ``od["a"]`` read after it, in forward mode."""
    def f(x, y):
        od = collections.OrderedDict([("a", x), ("b", y)])
        od.move_to_end("a")
        return np.sum(np.sin(od["a"]) * od["b"])

    t = RNG.standard_normal(3)
    u = RNG.standard_normal(3)
    out, tangent = pb.jvp(f, (X, Y), (t, u))
    want = jax.jvp(lambda x, y: jnp.sum(jnp.sin(x) * y), (X, Y), (t, u))
    close((out, tangent), want)


def test_try_body_reading_a_closure():
    """A ``try`` body that calls a nested function holding differentiated
    values (the harness's ``thunk``): its gradient reaches them."""
    def call_it(fn):
        return fn()

    def f(x):
        args = (x,)

        def thunk():
            return np.sum(np.sin(args[0]))
        try:
            out = call_it(thunk)
        except ValueError:
            raise
        return out

    np.testing.assert_allclose(pb.grad(f)(X), np.cos(X), rtol=1e-14)


class _TwoTries:
    """Two methods each with a `try` body (each lifted as `try_body_lifted`):
    each keeps its own source."""

    def first(self, f):
        try:
            sig = inspect.signature(f)
        except (TypeError, ValueError):
            sig = None
        return sig

    def second(self, f, x, scale):
        self.first(f)
        try:
            out = f(x) * scale
        except KeyError:
            raise
        return out


def test_two_lifted_try_bodies_of_one_file():
    obj = _TwoTries()
    np.testing.assert_allclose(pb.grad(lambda x: obj.second(np.sin, x, 3.0))(0.4),
                               3.0 * np.cos(0.4), rtol=1e-14)


def test_grad_made_inside_from_a_closure_parameter():
    """``pb.grad(f)`` made inside a function being differentiated, from a value
    the transform cannot prove constant (a nested function's parameter)."""
    def cube(x):
        return x ** 3

    def outer(x):
        fn = cube

        def thunk():
            return pb.grad(fn)(x)
        return thunk()

    assert pb.grad(outer)(2.0) == pytest.approx(12.0, rel=1e-14)


def test_with_block_whose_value_carries_no_number(tmp_path):
    """``with open(path) as fh`` and ``with np.printoptions(...) as opts`` built
    from the function's own values: what ``__enter__`` returns holds no
    number, so it is exact that it carries no gradient (checked when it runs)."""
    def f(x):
        path = str(tmp_path / f"log{len(x)}.txt")
        with open(path, "w") as fh:
            fh.write("x")
        with np.printoptions(precision=int(x[0])) as opts:
            y = np.sum(x ** 2) * len(opts)
        return y

    x = np.array([3.0, 1.0, 2.0])
    n = len(np.get_printoptions())
    np.testing.assert_allclose(pb.grad(f)(x), 2.0 * x * n, rtol=1e-14)
    assert (tmp_path / "log3.txt").read_text() == "x"


# -- refused when it runs ---------------------------------------------------------------

def test_deepcopy_has_a_rule():
    # copy.deepcopy holds the same values: each leaf's cotangent goes back to its leaf
    # (rules.math_rules.copied; it was refused as a library call making new arrays)
    def f(x):
        d = copy.deepcopy({"a": x})
        return np.sum(d["a"] ** 2)

    np.testing.assert_allclose(pb.grad(f)(X), 2 * X, rtol=1e-12)


def test_library_computing_is_refused(thirdlib):
    def f(x):
        return np.sum(thirdlib.doubled(x))

    with pytest.raises(pb.NonDifferentiableError) as err:
        pb.grad(f)(X)
    check_error(err.value, f, "thirdlib.doubled(x)", pb.NonDifferentiableError,
                ["doubled", "new array", "pb.custom_vjp"])


def test_library_writing_into_an_array_is_refused(thirdlib):
    def f(x):
        y = x * 1.0
        z = thirdlib.poke(y)
        return np.sum(z)

    x = X.copy()
    with pytest.raises(pb.NonDifferentiableError) as err:
        pb.grad(f)(x)
    check_error(err.value, f, "thirdlib.poke(y)", pb.NonDifferentiableError,
                ["poke", "wrote into an array", "x.copy()"])
    np.testing.assert_array_equal(x, X)
    assert x.flags.writeable


def test_library_view_is_refused(thirdlib):
    def f(x):
        return np.sum(thirdlib.first_row(x))

    with pytest.raises(pb.NonDifferentiableError) as err:
        pb.grad(f)(RNG.standard_normal((2, 3)))
    check_error(err.value, f, "thirdlib.first_row(x)", pb.NonDifferentiableError,
                ["first_row", "a view", "in your own function"])


def test_library_storing_into_a_list_is_refused(thirdlib):
    def f(x):
        store = [x]
        thirdlib.stash(store, x * 2.0)
        return np.sum(store[0])

    with pytest.raises(pb.NonDifferentiableError) as err:
        pb.grad(f)(X)
    check_error(err.value, f, "thirdlib.stash(store", pb.NonDifferentiableError,
                ["stash", "changed an argument in place", "your own function"])


def test_replacing_a_differentiated_value_by_a_constant_is_refused():
    def f(x):
        d = {"a": x}
        collections.abc.MutableMapping.update(d, {"a": np.ones(3)})
        return np.sum(d["a"] * x)

    with pytest.raises(pb.NonDifferentiableError) as err:
        pb.grad(f)(X)
    check_error(err.value, f, "collections.abc.MutableMapping.update(d",
                pb.NonDifferentiableError,
                ["update", "replacing the value being differentiated", "your own function"])


def test_shuffle_in_place_is_refused():
    def f(x, y):
        layers = [x, y]
        random.Random(1).shuffle(layers)
        return np.sum(layers[0])

    with pytest.raises(pb.NonDifferentiableError) as err:
        pb.grad(f)(X, Y)
    check_error(err.value, f, "random.Random(1).shuffle(layers)", pb.NonDifferentiableError,
                ["shuffle", "replacing the value being differentiated", "your own function"])


def test_one_value_at_two_places_is_refused():
    def f(x):
        return np.sum(operator.itemgetter(1)([x, x]))

    with pytest.raises(pb.NonDifferentiableError) as err:
        pb.grad(f)(X)
    check_error(err.value, f, "operator.itemgetter(1)([x, x])", pb.NonDifferentiableError,
                ["itemgetter", "2 places", "Pass each value once"])


def test_callback_that_stores_is_refused():
    def f(x, y):
        seen = []

        def key(v):
            seen.append(v)
            return float(v[0])
        lo = heapq.nsmallest(1, [x, y], key=key)[0]
        return np.sum(lo)

    with pytest.raises(pb.NonDifferentiableError) as err:
        pb.grad(f)(X, Y)
    check_error(err.value, f, "heapq.nsmallest(1, [x, y], key=key)", pb.NonDifferentiableError,
                ["nsmallest", ".append", "only computes and returns"])


def test_sum_of_a_consumed_iterator_is_refused():
    def f(x, y):
        return sum(iter([x, y]))

    with pytest.raises(pb.PullbackError) as err:
        pb.grad(f)(1.0, 2.0)
    assert "used up once read" in str(err.value)
    assert "sum(list(...))" in str(err.value)


def test_user_method_changing_an_object_of_unknown_class_is_refused():
    class State:
        def __init__(self, x):
            self.x = x

        def step(self):
            self.x = self.x * 2.0

    def make(x):
        return State(x)

    def f(x):
        s = make(x)
        s.step()
        return np.sum(s.x)

    with pytest.raises(pb.PullbackError) as err:
        pb.grad(f)(X)
    check_error(err.value, f, "s.step()", pb.UnsupportedSyntaxError,
                ["step", "stores into the attribute `x`", "did not build itself",
                 "obj = obj.step()"])


def test_no_user_array_is_left_read_only():
    def f(x):
        d = copy.copy({"a": x})
        return np.sum(operator.itemgetter("a")(d) ** 2)

    x = X.copy()
    np.testing.assert_allclose(pb.grad(f)(x), 2.0 * X, rtol=1e-14)
    assert x.flags.writeable
    x[0] = 5.0      # still the user's to write
