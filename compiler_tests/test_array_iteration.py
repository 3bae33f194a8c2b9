"""Iteration over the rows of differentiated arrays (issue 13): loops and
comprehensions over ``itertools.pairwise(x)``, ``combinations``,
``product``, ``islice``, ``compress``, ``chain``, ``zip_longest``,
``repeat`` and ``accumulate`` of arrays and lists of values
(``frontend.itertools_rows``), ``zip(x, x[1:])``, ``zip(a, b)`` and
``enumerate(zip(...))``: gradients checked against central differences in
both modes (``pb.grad``, and ``pb.jvp`` against the gradient along the
tangent), some against exact values; what stays refused names the line and
says what to write.  Forward mode through ``d.values()`` / ``d.items()`` of
a dict of arrays the function builds; writes through views outside a loop
(the refusal says the real reason)."""
import itertools
import operator
from itertools import pairwise

import numpy as np
import pytest

import pullback as pb

from fd_helpers import central_differences as _fd_grad

RNG = np.random.default_rng(13)
X = RNG.standard_normal((5, 3))
Y = RNG.standard_normal((5, 3))
V = RNG.standard_normal(6)


def check_both_modes(f, *args, exact=None):
    """grad against central differences (and ``exact``); jvp's value against
    f's, its tangent against the gradient along a random tangent."""
    argnums = tuple(range(len(args)))
    grads = pb.grad(f, argnums=argnums)(*args)
    for i, g in enumerate(grads):
        np.testing.assert_allclose(g, _fd_grad(f, args, i), rtol=1e-6, atol=1e-7)
    if exact is not None:
        np.testing.assert_allclose(grads[0], exact, rtol=1e-12, atol=1e-14)
    tangents = tuple(RNG.standard_normal(np.shape(a)) for a in args)
    value, dot = pb.jvp(f, args, tangents)
    np.testing.assert_allclose(value, f(*args), rtol=1e-13)
    along = sum(np.sum(g * t) for g, t in zip(grads, tangents))
    np.testing.assert_allclose(dot, along, rtol=1e-10, atol=1e-12)
    return grads


# -- itertools over rows ---------------------------------------------------------

def pairwise_loop(x):
    s = 0.0
    for a, b in itertools.pairwise(x):
        s = s + np.sum((b - a) ** 2)
    return s


def pairwise_name_target(x):
    s = 0.0
    for p in pairwise(x):
        s = s + np.sum(p[0] * np.sin(p[1]))
    return s


def pairwise_comprehension(x):
    return sum([np.linalg.norm(b - a) for a, b in itertools.pairwise(x)])


def pairwise_generator_sum(x):
    return sum(np.sum(a * b) for a, b in itertools.pairwise(x))


def pairwise_of_scalars(v):
    t = 1.0
    for a, b in itertools.pairwise(v):
        t = t * (1.0 + a * b)
    return t


def combinations_loop(x):
    s = 0.0
    for a, b in itertools.combinations(x, 2):
        d = a - b
        s = s + 1.0 / (1.0 + np.sum(d * d))
    return s


def combinations_unknown_r(v, r=3):
    s = 0.0
    for c in itertools.combinations(v, r):
        s = s + c[0] * c[1] * c[2]
    return s


def permutations_loop(v):
    s = 0.0
    for a, b in itertools.permutations(v[:4], 2):
        s = s + a * b ** 2
    return s


def product_loop(x, y):
    s = 0.0
    for a, b in itertools.product(x, y):
        s = s + np.tanh(np.dot(a, b))
    return s


def product_repeat(v):
    return sum(a * np.cos(b) for a, b in itertools.product(v[:3], repeat=2))


def islice_loop(x):
    s = 0.0
    for i, row in enumerate(itertools.islice(x, 1, None, 2)):
        s = s + (i + 1) * np.sum(row ** 3)
    return s


def compress_loop(v):
    return sum(a * a for a in itertools.compress(v, [1, 0, 1, 1, 0, 1]))


def chain_loop(x, y):
    s = 0.0
    for k, row in enumerate(itertools.chain(x[:2], y, x[3:])):
        s = s + k * np.sum(np.sin(row))
    return s


def zip_longest_loop(v):
    s = 0.0
    for a, b in itertools.zip_longest(v, v[:3], fillvalue=2.0):
        s = s + a * b
    return s


def repeat_loop(x):
    s = 0.0
    for a in itertools.repeat(x, 3):
        s = s + np.sum(a * a)
    return s


def repeat_a_number(v):
    t = v[0]
    for c in itertools.repeat(v[1] * 2.0, 3):
        t = t * c + v[2]
    return t


def accumulate_loop(v):
    s = 0.0
    for c in itertools.accumulate(v):
        s = s + c * c
    return s


def accumulate_product(v):
    return list(itertools.accumulate(v, operator.mul))[-1]


def accumulate_initial(v):
    return sum(np.sin(c) for c in itertools.accumulate(v, lambda a, b: a * b + 1.0,
                                                       initial=0.5))


def listed_pairwise(x):
    s = 0.0
    for a, b in list(itertools.pairwise(x)):
        s = s + np.sum(a * b)
    return s


def tuple_of_pairs(x):
    pairs = tuple(itertools.pairwise(x))
    return np.sum(pairs[1][0] * pairs[2][1])


def pairwise_break(x):
    s = 0.0
    for a, b in itertools.pairwise(x):
        if np.sum(a) > 10.0:
            break
        s = s + np.sum(a * b)
    else:
        s = s * 2.0
    return s


def nested_iterators(x):
    return sum(np.sum(a * b) for a, b in itertools.pairwise(itertools.islice(x, 1, None)))


def combinations_of_a_set(v):
    s = 0.0
    for i, j in itertools.combinations(set((0, 2, 3)), 2):
        s = s + v[i] * v[j] ** 2
    return s


def combinations_of_dict_keys(x, w):
    d = {"a": x * w, "b": np.sin(x), "c": x + 1.0}
    s = 0.0
    for k, m in itertools.combinations(d, 2):
        s = s + np.sum(d[k] * d[m])
    return s


def pairwise_of_a_list(v):
    xs = [v[0] * v[1], np.sin(v[2]), v[3] ** 2, v[4]]
    return sum(a * b for a, b in itertools.pairwise(xs))


def enumerate_pairwise(x):
    s = 0.0
    for k, (a, b) in enumerate(itertools.pairwise(x)):
        s = s + (k + 1.0) * np.sum(a * b)
    return s


def enumerate_combinations_from(x, k0=2):
    return sum(i * np.sum(a * np.cos(b))
               for i, (a, b) in enumerate(itertools.combinations(x, 2), start=k0))


def named_pairwise(x):
    pairs = itertools.pairwise(x)
    s = 0.0
    for a, b in pairs:
        s = s + np.sum(np.cos(a) * b)
    return s


def combinations_keyword_r(x):
    return sum(np.sum(a * b * c) for a, b, c in itertools.combinations(x, r=3))


CASES = [
    (pairwise_loop, (X,)), (pairwise_name_target, (X,)), (pairwise_comprehension, (X,)),
    (pairwise_generator_sum, (X,)), (pairwise_of_scalars, (V,)), (combinations_loop, (X,)),
    (combinations_unknown_r, (V,)), (permutations_loop, (V,)), (product_loop, (X, Y)),
    (product_repeat, (V,)), (islice_loop, (X,)), (compress_loop, (V,)),
    (chain_loop, (X, Y)), (zip_longest_loop, (V,)), (repeat_loop, (X,)), (repeat_a_number, (V,)),
    (accumulate_loop, (V,)), (accumulate_product, (V,)), (accumulate_initial, (V,)),
    (listed_pairwise, (X,)), (tuple_of_pairs, (X,)), (pairwise_break, (X,)),
    (nested_iterators, (X,)), (combinations_of_a_set, (V,)),
    (combinations_of_dict_keys, (V, V[::-1].copy())), (pairwise_of_a_list, (V,)),
    (enumerate_pairwise, (X,)), (enumerate_combinations_from, (X,)), (named_pairwise, (X,)), (combinations_keyword_r, (X,)),
]


@pytest.mark.parametrize("f, args", CASES, ids=[f.__name__ for f, _ in CASES])
def test_itertools_over_values(f, args):
    check_both_modes(f, *args)


def _squared_steps_grad(x):
    """d/dx of sum_k |x[k+1] - x[k]|^2: 2(x[k] - x[k-1]) - 2(x[k+1] - x[k])."""
    d = np.diff(x, axis=0)
    exact = np.zeros_like(x)
    exact[:-1] -= 2 * d
    exact[1:] += 2 * d
    return exact


def test_pairwise_of_a_list_argument():
    """A list of arrays given by the caller: its gradient is a list."""
    xs = [RNG.standard_normal(3) for _ in range(4)]

    def f(xs, w):
        s = 0.0
        for a, b in itertools.pairwise(xs):
            s = s + np.sum(a * b * w)
        for c in itertools.accumulate(xs):
            s = s + np.sum(c ** 2)
        return s
    w = RNG.standard_normal(3)
    g, gw = pb.grad(f, argnums=(0, 1))(xs, w)
    assert isinstance(g, list)
    eps = 1e-6
    for i in range(4):
        for k in range(3):
            up = [x.copy() for x in xs]
            up[i][k] += eps
            down = [x.copy() for x in xs]
            down[i][k] -= eps
            assert g[i][k] == pytest.approx((f(up, w) - f(down, w)) / (2 * eps), rel=1e-6)
    ts = [RNG.standard_normal(3) for _ in range(4)]
    value, dot = pb.jvp(f, (xs, w), (ts, np.zeros(3)))
    assert dot == pytest.approx(sum(np.sum(a * t) for a, t in zip(g, ts)), rel=1e-12)


@pytest.mark.parametrize("f", [pairwise_loop, "zip_shifted"], ids=["pairwise_loop", "zip_shifted"])
def test_squared_steps_exact(f):
    check_both_modes(globals()[f] if isinstance(f, str) else f, X, exact=_squared_steps_grad(X))


def test_accumulate_exact():
    # sum_k c_k^2 with c_k = v_0 + ... + v_k: d/dv_j = 2 sum_{k >= j} c_k
    c = np.cumsum(V)
    check_both_modes(accumulate_loop, V, exact=np.cumsum((2 * c)[::-1])[::-1])


def test_gradient_accumulates_by_row():
    """The loop reads `x[i]` by index: no list of the rows is made."""
    text = pb.source(pairwise_loop, X)
    assert "itertools.pairwise(range_len_" in text and "a = rows[row_index]" in text
    assert "index_add(rows_bar, row_index, a_bar)" in text and "= index_items(" in text


# -- zip and enumerate of arrays -----------------------------------------------------

def zip_shifted(x):
    s = 0.0
    for a, b in zip(x, x[1:]):
        s = s + np.sum((b - a) ** 2)
    return s


def zip_both_shifted(x):
    return sum(np.sum(a * np.exp(b)) for a, b in zip(x[:-1], x[1:]))


def zip_two(x, y):
    s = 0.0
    for a, b in zip(x, y):
        s = s + np.sum(a * b * a)
    return s


def enumerate_zip(x, y):
    s = 0.0
    for i, (a, b) in enumerate(zip(x, y)):
        s = s + (i + 1.0) * np.sum(a * np.cos(b))
    return s


def zip_comprehension(x, y):
    return np.sum(np.stack([a * b for a, b in zip(x, y)]))


ZIPS = [(zip_shifted, (X,)), (zip_both_shifted, (X,)), (zip_two, (X, Y)),
        (enumerate_zip, (X, Y)), (zip_comprehension, (X, Y))]


@pytest.mark.parametrize("f, args", ZIPS, ids=[f.__name__ for f, _ in ZIPS])
def test_zip_of_arrays(f, args):
    check_both_modes(f, *args)


def test_bead_spring_contour():
    """The corpus program's pattern: `[norm(b - a) for a, b in pairwise(x)]`,
    then the running sum by `itertools.accumulate`."""
    def contour(x):
        lengths = [np.linalg.norm(b - a) for a, b in itertools.pairwise(x)]
        return list(itertools.accumulate(lengths))[-1] ** 2
    exact_total = np.sum(np.linalg.norm(np.diff(X, axis=0), axis=1))
    assert contour(X) == pytest.approx(exact_total ** 2, rel=1e-13)
    check_both_modes(contour, X)


# -- what stays refused ---------------------------------------------------------------

def _refusal(f, *args):
    messages = []
    for run in (lambda: pb.grad(f)(*args), lambda: pb.jvp(f, args, args)):
        with pytest.raises(pb.PullbackError) as info:
            run()
        messages.append(str(info.value))
    return messages


def test_named_iterator_read_later_is_refused():
    """Something that may change `x` stands between the binding and the loop:
    the items are not read early; refused, naming the line and the fix."""
    def f(x):
        pairs = itertools.pairwise(x)
        s = np.sum(x)
        for a, b in pairs:
            s = s + np.sum(a * b)
        return s
    for text in _refusal(f, X):
        assert "pairs = itertools.pairwise(x)" in text and "holds a ndarray" in text
        assert "Loop over the itertools call itself" in text


def test_zip_with_an_iterator_is_refused():
    def f(x, y):
        s = 0.0
        for a, b in zip(x, iter(y)):
            s = s + np.sum(a * b)
        return s
    for text in _refusal(f, X, Y):
        assert "for a, b in zip(x, iter(y)):" in text and "test_array_iteration.py" in text
        assert "iterator" in text and "list(" in text


def test_zip_with_count_is_refused_not_endless():
    def f(x):
        s = 0.0
        for a, k in zip(x, itertools.count(1)):
            s = s + k * np.sum(a)
        return s
    for text in _refusal(f, X):
        assert "never ends" in text and "enumerate(x, start=" in text
        assert "for a, k in zip(x, itertools.count(1)):" in text


def test_zip_with_cycle_is_refused_not_endless():
    def f(x, w):
        s = 0.0
        for a, c in zip(x, itertools.cycle(w)):
            s = s + np.sum(a * c)
        return s
    for text in _refusal(f, X, V):
        assert "never ends" in text and "w[i % len(w)]" in text


def test_pairwise_of_an_iterator_is_refused():
    def f(x):
        s = 0.0
        for a, b in itertools.pairwise(iter(x)):
            s = s + np.sum(a * b)
        return s
    reverse, forward = _refusal(f, X)
    assert "itertools.pairwise(iter(x))" in reverse and "iterator has none" in reverse
    assert "xs = list(...)" in reverse
    assert "itertools.pairwise(iter(x))" in forward and "list(" in forward


# -- forward mode through a dict of arrays the function builds -----------------------

def dict_values(x, w):
    d = {"a": x * w, "b": np.sin(x), "c": x ** 2}
    s = 0.0
    for v in d.values():
        s = s + np.sum(v * v)
    return s


def dict_items_stored(x, w):
    d = {}
    d["a"] = x * w
    d["b"] = np.cos(x) * w
    s = 0.0
    for k, v in d.items():
        s = s + (2.0 if k == "a" else 1.0) * np.sum(v ** 3)
    return s


def dict_keys_and_iteration(x, w):
    d = {"p": x * w, "q": x + w}
    s = 0.0
    for k in d:
        s = s + np.sum(d[k] * x)
    for k in d.keys():
        s = s + np.sum(d[k])
    return s


def dict_comprehension_values(x, w):
    d = {f"k{i}": x * (i + 1) * w for i in range(3)}
    return sum(np.sum(np.tanh(v)) for v in d.values())


def dict_built_in_loop(x, w):
    d = {}
    for i in range(3):
        d[i] = x[i] * w
    s = 0.0
    for k, v in sorted(d.items()):
        s = s + k * np.sum(v ** 2)
    return s


def dict_items_enumerated(x, w):
    """Was a TypeError ('dict_items' object is not subscriptable) in reverse
    mode and a refusal in forward mode that advised list(...)."""
    d = {"a": x * w, "b": x - w}
    total = 0.0
    for i, (k, v) in enumerate(d.items()):
        total = total + (i + 1) * np.sum(v ** 3)
    return total


def dict_values_listed(x, w):
    """list(d.values()): forward mode refused it, advising list(...)."""
    d = {"a": x * w, "b": x - w}
    d["a"] = d["a"] + 1.0
    vals = list(d.values())
    return np.sum(vals[0] * vals[1])


def dict_tuple_values(x, w):
    d = {"a": (x, w), "b": (x * w, np.sin(x))}
    s = 0.0
    for k, (p, q) in d.items():
        s = s + np.sum(p * q)
    return s


def dict_zip_keys_values(x, w):
    d = {"a": x * w, "b": np.exp(x) - w}
    s = 0.0
    for k, v in zip(d.keys(), d.values()):
        s = s + (2.0 if k == "b" else 1.0) * np.sum(v * x)
    return s


DICTS = [dict_values, dict_items_stored, dict_keys_and_iteration, dict_comprehension_values,
         dict_built_in_loop, dict_items_enumerated, dict_values_listed, dict_tuple_values,
         dict_zip_keys_values]


@pytest.mark.parametrize("f", DICTS, ids=lambda f: f.__name__)
def test_forward_mode_over_dict_values(f):
    x, w = RNG.standard_normal(4), RNG.standard_normal(4)
    check_both_modes(f, x, w)


# -- writes through a view outside any loop: the refusal says why ------------------------

def view_of_a_view(x):
    y = x * 1.0
    v = y[1:]
    w = v[1:]
    w[0] = 3.0
    return np.sum(y * y)


def reshaped_view(x):
    y = x * 1.0
    v = y.reshape(2, 2)
    v[0, 0] = 3.0
    return np.sum(y * y)


def reshaped_by_function(x):
    y = x * 1.0
    v = np.reshape(y, (2, 2))
    v[0] = 3.0
    return np.sum(y * y)


def view_put_in_a_list(x):
    y = x * 1.0
    v = y[1:]
    z = [v, y]
    v[0] = 3.0
    return np.sum(y * y) + np.sum(z[0])


def view_written_in_a_loop(x):
    y = x * 1.0
    v = y.reshape(2, 2)
    for i in range(2):
        v[i, 0] = 3.0
    return np.sum(y * y)


VIEW_WRITES = [
    (view_of_a_view, "w = v[1:]", ["`w` is a view of `v`, itself a view of `y`",
                                   "not through a view of a view", "`w = y[...]`"]),
    (reshaped_view, "v = y.reshape(2, 2)", ["a view made by `reshape`",
                                            "made by indexing (`y[1:]`) or `.T`",
                                            "`v = y.reshape(...).copy()`"]),
    (reshaped_by_function, "v = np.reshape(y, (2, 2))", ["a view made by `reshape`",
                                                          "Write into `y` itself"]),
    (view_put_in_a_list, "v = y[1:]", ["aliased (`z = y`), handed to a function, put in a list"]),
    (view_written_in_a_loop, "v = y.reshape(2, 2)", ["written into inside a loop or a branch"]),
]


@pytest.mark.parametrize("f, line, words", VIEW_WRITES, ids=[c[0].__name__ for c in VIEW_WRITES])
def test_write_through_a_view_says_why(f, line, words):
    x = np.arange(1.0, 5.0)
    with pytest.raises(pb.UnsupportedSyntaxError) as info:
        pb.grad(f)(x)
    text = str(info.value)
    assert line in text and "test_array_iteration.py" in text and "may share memory" in text
    for w in words:
        assert w in text, text
    if f is not view_written_in_a_loop:
        assert "inside a loop" not in text


def test_write_through_a_view_at_the_top_is_followed():
    def f(x):
        y = x * 1.0
        v = y[1:]
        v[0] = 3.0
        v *= 2.0
        return np.sum(y * y) + np.sum(v)
    x = np.arange(1.0, 5.0)
    # y = [x0, 6, 2 x2, 2 x3]: sum y^2 + (6 + 2 x2 + 2 x3)
    check_both_modes(f, x, exact=[2.0, 0.0, 8.0 * 3.0 + 2.0, 8.0 * 4.0 + 2.0])


def test_second_derivatives_exact():
    """pairwise and accumulate of a vector differentiated twice (forward over
    reverse), against the exact Hessian of sum_i v_i v_{i+1}^2 + sum_k c_k^3,
    c = cumsum(v)."""
    def f(v):
        t = 0.0
        for a, b in itertools.pairwise(v):
            t = t + a * b * b
        for c in itertools.accumulate(v):
            t = t + c ** 3
        return t
    n = len(V)
    exact = np.zeros((n, n))
    for i in range(n - 1):
        exact[i, i + 1] += 2 * V[i + 1]
        exact[i + 1, i] += 2 * V[i + 1]
        exact[i + 1, i + 1] += 2 * V[i]
    tail = np.cumsum((6 * np.cumsum(V))[::-1])[::-1]     # sum over k >= m of 6 c_k
    exact += tail[np.maximum.outer(np.arange(n), np.arange(n))]
    np.testing.assert_allclose(pb.hessian(f)(V), exact, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(pb.hvp(f, (V,), (V,)), exact @ V, rtol=1e-12, atol=1e-12)
