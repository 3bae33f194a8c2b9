"""Python constructs real programs use, round 7 (issue 13): list methods on
lists of differentiated values, ``collections.deque`` as a sliding window,
``functools.cached_property``, ``global`` counters, ``out=`` on array
methods and ufunc ``where=`` (the safe-division idiom), property reads in
methods.

Every gradient is checked in both modes (``pb.grad`` and ``pb.jvp``) against
central finite differences (or exact values), and every refusal names the
line and what to write instead.
"""
import collections
import functools
import warnings

import numpy as np
import pytest

import pullback as pb
from pullback.testing import function_from_source

X = np.array([0.5, -1.2, 2.0, 0.7, 1.3])


def central(f, x, eps=1e-6):
    """Central differences of the scalar ``f`` at the array ``x``."""
    g = np.zeros_like(x)
    for k in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[k] += eps
        down[k] -= eps
        g[k] = (f(up) - f(down)) / (2 * eps)
    return g


def both_modes(f, x=X, want=None):
    """``pb.grad(f)`` and ``pb.jvp(f)`` at ``x`` against ``want`` (central
    differences by default); ``x`` is left as it was; the gradient is returned."""
    before = x.copy()
    want = central(f, x) if want is None else want
    np.testing.assert_allclose(pb.grad(f)(x), want, rtol=1e-6, atol=1e-8)
    t = np.linspace(0.3, 1.1, x.size).reshape(x.shape)
    y, y_dot = pb.jvp(f, (x,), (t,))
    np.testing.assert_allclose(y, f(x.copy()), rtol=1e-12)
    np.testing.assert_allclose(y_dot, np.sum(want * t), rtol=1e-6, atol=1e-8)
    np.testing.assert_array_equal(x, before)
    return want


def refused(f, words, x=X):
    """Both modes refuse ``f`` with a PullbackError holding ``words``."""
    for run in (lambda: pb.grad(f)(x.copy()), lambda: pb.jvp(f, (x.copy(),), (x.copy(),))):
        with pytest.raises(pb.PullbackError) as info:
            run()
        for w in words:
            assert w in str(info.value), str(info.value)


# -- out= on array methods, ufunc where= -----------------------------------------------


def test_out_of_an_array_method():
    f = function_from_source('''
def f(x):
    buf = np.zeros(2)
    m = x[:4].reshape(2, 2)
    m.sum(axis=0, out=buf)
    y = (m * m).mean(axis=1, out=np.empty(2))
    return np.sum(buf * buf) + np.sum(y * buf)
''')
    both_modes(f)


def test_out_of_a_method_of_another_class_refused_when_it_runs():
    class Counter:
        def sum(self, out=None):
            return 1.0
    f = function_from_source('''
def f(x):
    buf = np.zeros(())
    y = Counter().sum(out=buf)
    return y * x[0]
''', {"Counter": Counter})
    refused(f, ["`.sum(..., out=...)`", "`Counter`", "line 3", "np.sum(x, out=...)"])


def test_ufunc_where_into_a_local_array():
    f = function_from_source('''
def f(x):
    buf = np.full(5, 2.0)
    np.add(x, x * x, where=x > 0, out=buf)
    np.multiply(buf, 3.0, out=buf, where=[True, False, True, True, False])
    return np.sum(buf * buf * x)
''')
    mask = X > 0
    buf = np.where(mask, X + X * X, 2.0) * np.array([3.0, 1, 3, 3, 1])
    d_buf = np.where(mask, 1 + 2 * X, 0.0) * np.array([3.0, 1, 3, 3, 1])
    both_modes(f, want=2 * buf * d_buf * X + buf * buf)


def test_ufunc_where_broadcasts_operands_and_mask_to_out():
    f = function_from_source('''
def f(x):
    m = x[:4].reshape(2, 2)
    buf = np.ones((2, 2))
    np.multiply(m, x[:2], out=buf, where=np.array([True, False]))
    return np.sum(buf ** 2)
''')
    both_modes(f)


def test_ufunc_where_in_a_loop():
    f = function_from_source('''
def f(x):
    buf = np.zeros(5)
    for i in range(3):
        np.multiply(buf + 1.0, x, out=buf, where=x > -1)
    return np.sum(buf * buf)
''')
    both_modes(f)


def test_safe_division_idiom_has_zero_gradient_where_masked_and_no_nan():
    f = function_from_source('''
def f(x, b):
    r = np.divide(x, b, out=np.zeros_like(x), where=b != 0)
    return np.sum(r * x)
''')
    x, b = np.array([0.5, -1.2, 2.0, 0.7]), np.array([0.0, 2.0, 0.0, -1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # no 0/0 computed where b == 0
        gx, gb = pb.grad(f, argnums=(0, 1))(x, b)
        live = b != 0
        np.testing.assert_allclose(gx, np.where(live, 2 * x / np.where(live, b, 1), 0.0))
        np.testing.assert_allclose(gb, np.where(live, -x * x / np.where(live, b, 1) ** 2, 0.0))
        tx, tb = np.array([1.0, 2.0, 3.0, 4.0]), np.array([0.5, 1.0, 1.5, 2.0])
        y, y_dot = pb.jvp(f, (x, b), (tx, tb))
    assert y == f(x, b) and np.isclose(y_dot, gx @ tx + gb @ tb)
    np.testing.assert_array_equal(b, [0.0, 2.0, 0.0, -1.0])


def test_where_without_out_and_where_of_a_reduction_refused():
    g = function_from_source('''
def g(x):
    buf = np.zeros(())
    np.add.reduce(x, out=buf, where=x > 0)
    return buf * 2.0
''')
    refused(g, ["`out=` with `where=`", "line 3", "np.where(mask"])
    h = function_from_source('''
def h(x):
    r = np.sqrt(x, where=x > 0)
    return np.sum(r)
''')
    refused(h, ["`where=` without `out=`", "line 2", "out=np.zeros_like(x), where=mask"])


def test_out_inside_a_larger_expression_of_numpy_calls():
    f = function_from_source('''
def f(x):
    b = x * np.array([1.0, 0.0, 2.0, 0.0, -1.0])
    s = 1.0
    s += np.sum(np.multiply(x, x, out=np.ones_like(x), where=x > 0))
    return s * np.sum(x * np.divide(x, b, out=np.zeros_like(x), where=b != 0))
''')
    both_modes(f)
    g = function_from_source('''
def g(x):
    return keep(np.sum(np.multiply(x, x, out=np.ones_like(x), where=x > 0)))
''', {"keep": lambda v: v})
    refused(g, ["`out=` inside a larger expression", "line 2"])


def test_where_mask_that_is_not_boolean_raises_numpys_error():
    f = function_from_source('''
def f(x):
    buf = np.zeros(5)
    np.add(x, 1.0, out=buf, where=np.array([1, 0, 1, 0, 1]))
    return np.sum(buf)
''')
    with pytest.raises(TypeError, match="boolean"):
        pb.grad(f)(X)


# -- property reads in methods ------------------------------------------------------------


class Layer:
    def __init__(self, a, b):
        self.a, self.b = a, b

    @property
    def weight(self):
        return self.a * self.b

    @property
    def pair(self):
        return self.a + 1.0, self.b * 2.0

    def run(self, x):
        h = x
        for _ in range(3):
            h = np.tanh(self.weight * h)
        p, q = self.pair
        return np.sum(h * p + q)


def test_property_read_in_a_loop_and_property_returning_a_tuple():
    f = function_from_source('''
def f(x):
    layer = Layer(x[0], x[1:3])
    return layer.run(x[3]) + layer.pair[1][0] * layer.weight[1]
''', {"Layer": Layer})
    both_modes(f)


# -- list methods on lists of differentiated values ------------------------------------------


@pytest.mark.parametrize("body", [
    # extend, by a display and by a generator
    """xs = [x[0] * 2.0]
    xs.extend([x[1] ** 2, np.sin(x[2])])
    xs.extend(x[i] * i for i in range(3, 5))
    return sum(v * v for v in xs) * xs[1]""",
    # pop() and pop(i), as statements, values and inside arithmetic
    """xs = [x[0], x[1] * 2.0, x[2] ** 2, x[3], x[4]]
    last = xs.pop()
    a = xs.pop(1)
    xs.pop(0)
    b = 3.0 * xs.pop(-2) + 1.0
    return last * a + b * xs[0] + len(xs)""",
    # a stack emptied in a while loop
    """stack = [x[0], x[1], x[2]]
    acc = 1.0
    while stack:
        acc = acc * stack.pop() + x[3]
    return acc""",
    # pop(i) with i known when it runs
    """xs = [x[0], x[1], x[2], x[3]]
    i = int(np.argmax(x[:4]))
    top = xs.pop(i)
    return top * 10.0 + xs[-1] * xs[0]""",
    # sort, sort with key and reverse, sorted with key
    """xs = [x[0], x[1], x[2], x[3]]
    xs.sort()
    ys = [x[0], x[1], x[2], x[3]]
    ys.sort(key=lambda v: v * v, reverse=True)
    zs = sorted([x[4], x[1] * 3.0, x[0]], key=abs)
    return xs[0] * 2.0 + xs[-1] ** 2 + ys[0] * ys[1] ** 3 + zs[0] * 5.0 + zs[2]""",
    # insert (front, middle, past the end, negative), reverse
    """xs = [x[0], x[1]]
    xs.insert(1, x[2] * 3.0)
    xs.insert(0, x[3])
    xs.insert(10, x[4] ** 2)
    xs.insert(-1, x[0] * x[1])
    xs.reverse()
    return sum(v * (k + 1.0) for k, v in enumerate(xs))""",
    # del xs[i], remove, clear
    """xs = [x[0], x[1] * 2.0, x[2], x[3]]
    del xs[1]
    del xs[-1]
    xs.remove(xs[1])
    ys = [x[4]]
    ys.clear()
    ys.append(x[1])
    return xs[0] * 5.0 + len(xs) + ys[0] ** 2""",
    # del of slices
    """xs = [x[0], x[1] * 2.0, x[2], x[3], x[4] ** 2]
    del xs[1:3]
    del xs[-1:]
    del xs[5:1]
    ys = [x[4], x[3]]
    del ys[:]
    ys.append(x[0] * 7.0)
    return xs[0] * 5.0 + xs[1] ** 3 + len(xs) + ys[0]""",
    # the same list changed in a loop: a queue
    """queue = [x[0], x[1]]
    total = 0.0
    for k in range(2, 5):
        queue.insert(0, x[k] * k)
        oldest = queue.pop()
        total = total + oldest * queue[0]
    return total""",
])
def test_list_methods_followed_in_both_modes(body):
    f = function_from_source("def f(x):\n    " + body + "\n")
    both_modes(f)


def test_list_methods_keep_pythons_errors():
    f = function_from_source('''
def f(x):
    xs = [x[0]]
    xs.pop()
    return xs.pop()
''')
    with pytest.raises(IndexError):
        pb.grad(f)(X)
    g = function_from_source('''
def g(x):
    xs = [x[0], x[1]]
    xs.remove(7.0)
    return xs[0]
''')
    with pytest.raises(ValueError):
        pb.grad(g)(X)


@pytest.mark.parametrize("body, words", [
    ("""xs = [x[0], x[1]]
    ys = xs
    xs.pop()
    return ys[-1]""", ["another name", "line 3", "ys = list(xs)"]),
    ("""xs = [x[0], x[1], x[2]]
    s = 0.0
    for v in xs:
        s = s + xs.pop() * v
    return s""", ["while a loop runs over it", "line 5", "for v in list(xs)"]),
    ("""xs = [x[0], x[1], x[2]]
    if xs.pop() > 0:
        return xs[0]
    return xs[1]""", ["`xs.pop()` inside a larger expression or condition", "line 3",
                      "v = xs.pop(...)"]),
    ("""xs = [x[0], x[1], x[2]]
    return xs[-1] * xs.pop()""", ["next to another use of `xs`", "line 3"]),
    ("""xs = [x[0], x[1]]
    xs.pop()
    return keep(xs)[0]""", ["passed to `keep`", "line 4"]),
    ("""xs = [x[0], x[1]]
    g = lambda: xs[0]
    xs.pop()
    return g()""", ["nested function or lambda", "line 3"]),
    ("""xs = [x[0], x[1]]
    g = (v * 2 for v in xs)
    xs.pop()
    return sum(g)""", ["generator expression", "line 3"]),
    ("""xs = [x[0], x[1], x[2]]
    del xs[::2]
    return xs[0]""", ["`del` of a slice with a step", "line 3"]),
])
def test_list_methods_refused_where_another_name_could_see_the_change(body, words):
    f = function_from_source("def f(x):\n    " + body + "\n", {"keep": lambda v: v})
    refused(f, words)


# -- collections.deque as a sliding window ------------------------------------------------------


@pytest.mark.parametrize("body", [
    """win = collections.deque(maxlen=3)
    s = 0.0
    for i in range(5):
        win.append(x[i] * 2.0)
        m = 0.0
        for v in win:
            m = m + v
        s = s + m * m / len(win)
    return s""",
    """win = collections.deque([x[0], x[1]])
    s = 0.0
    for i in range(2, 5):
        win.append(x[i])
        old = win.popleft()
        s = s + old * win[-1] + sum(win)
    return s""",
    """win = collections.deque([x[0]], 2)
    s = 0.0
    for i in range(1, 5):
        win.appendleft(x[i] ** 2)
        s = s + win[0] * win[-1]
    win.extend([x[0], x[1] * 3.0, x[2]])
    last = win.pop()
    win.clear()
    win.append(x[3])
    return s + last * np.mean(np.array(list(win)))""",
])
def test_deque_sliding_window_in_both_modes(body):
    f = function_from_source("def f(x):\n    " + body + "\n", {"collections": collections})
    both_modes(f)


def test_deque_rotate_reverse_remove():
    f = function_from_source('''
def f(x):
    d = collections.deque([x[0], x[1] * 2.0, x[2]], maxlen=4)
    d.rotate()
    s = d[0] * 10.0 + d[1]
    d.rotate(-2)
    d.reverse()
    d.remove(d[1])
    d.append(x[3])
    d.append(x[4])
    return s + d[0] * 3.0 + d[1] ** 2 + d[-1] * len(d)
''', {"collections": collections})
    both_modes(f)


def test_deque_used_otherwise_is_left_to_python():
    f = function_from_source('''
def f(x):
    d = collections.deque(maxlen=2)
    for i in range(4):
        d.append(i)
    d.extendleft([5])
    return x * sum(d) + len(d)
''', {"collections": collections})
    assert pb.grad(f)(1.5) == 7.0


# -- functools.cached_property -------------------------------------------------------------------


class Normed:
    def __init__(self, w):
        self.w = w

    @functools.cached_property
    def norm(self):
        return np.sqrt(np.sum(self.w ** 2))

    def out(self, x):
        return self.w * x / self.norm


class Rescaled(Normed):
    def scale(self, k):
        self.w = self.w * k


def test_cached_property_of_an_object_built_in_the_function():
    f = function_from_source('''
def f(x):
    m = Normed(x[:3] * 2.0)
    return np.sum(m.out(x[2:])) + m.norm * m.norm
''', {"Normed": Normed})
    both_modes(f)
    both_modes(f, X * 3.0)       # a new object per call: no value kept from the last


def normed_loss(m, x):
    return np.sum(m.out(x)) + m.norm


def test_cached_property_of_an_argument_and_no_value_kept_between_calls():
    x = X[:3]
    for scale in (1.0, 3.0):
        w = np.array([1.0, 2.0, 2.0]) * scale
        m = Normed(w)
        gm, gx = pb.grad(normed_loss, argnums=(0, 1))(m, x)
        assert "norm" not in vars(m)
        np.testing.assert_allclose(
            gm.w, central(lambda v: normed_loss(Normed(v), x), w), rtol=1e-6)
        np.testing.assert_allclose(gx, w / np.linalg.norm(w), rtol=1e-12)
        y, t = pb.jvp(lambda v: normed_loss(Normed(v), x), (w,), (np.ones(3),))
        np.testing.assert_allclose(t, gm.w.sum(), rtol=1e-6)
    # cached before the call: read as Python reads it, a value of the object's own
    m = Normed(np.array([1.0, 2.0, 2.0]))
    m.norm
    gm, gx = pb.grad(normed_loss, argnums=(0, 1))(m, x)
    np.testing.assert_allclose(gm.w, x / 3.0)
    np.testing.assert_allclose(gm.norm, 1.0 - np.sum(m.w * x) / 9.0)


def test_cached_property_of_a_class_that_changes_its_objects_refused():
    f = function_from_source('''
def f(x):
    m = Rescaled(x)
    a = m.norm
    m.scale(2.0)
    return a + m.norm
''', {"Rescaled": Rescaled})
    refused(f, ["`m.norm`", "line 3", "norm"])


# -- global counters -----------------------------------------------------------------------------

calls = 0
mode = "train"
last = None


def counted(x):
    global calls, mode
    calls += 1
    if calls > 1000:
        mode = "eval"
    scale = 2.0 if mode == "train" else 1.0
    return np.sum(np.sin(x)) * scale + calls * 0.0


def stores_a_value(x):
    global last
    last = x * 2.0
    return np.sum(x)


def test_global_counter_changes_once_per_call_in_both_modes():
    global calls, mode
    calls, mode = 0, "train"
    x = X.copy()
    np.testing.assert_allclose(pb.grad(counted)(x), 2.0 * np.cos(X), rtol=1e-12)
    assert calls == 1
    y, t = pb.jvp(counted, (x,), (np.ones(5),))
    assert calls == 2 and np.isclose(t, 2.0 * np.sum(np.cos(X)))
    value, back = pb.vjp(counted, x)
    assert calls == 3
    back(1.0)
    back(2.0)
    assert calls == 3 and value == counted(X) and calls == 4
    calls = 1000            # the flag the counter sets is followed too
    np.testing.assert_allclose(pb.grad(counted)(x), np.cos(X), rtol=1e-12)
    assert (calls, mode) == (1001, "eval")


def test_global_store_of_a_differentiated_value_refused():
    refused(stores_a_value, ["global `last`", "computed from the function's values",
                             "Return the value instead"])


def run_layer(layer, x):
    return layer.run(x)


def test_property_read_in_a_method_of_an_argument():
    layer, w = Layer(0.7, np.array([0.3, -0.4])), np.array([0.7, 0.3, -0.4])
    gl, gx = pb.grad(run_layer, argnums=(0, 1))(layer, 1.3)
    want = central(lambda v: run_layer(Layer(v[0], v[1:3]), 1.3), w)
    np.testing.assert_allclose(np.r_[gl.a, gl.b], want, rtol=1e-6)
    y, t = pb.jvp(lambda v: run_layer(Layer(v[0], v[1:3]), 1.3), (w,), (np.ones(3),))
    np.testing.assert_allclose(t, want.sum(), rtol=1e-6)
    assert np.isclose(gx, central(lambda v: run_layer(layer, v[0]), np.array([1.3]))[0])


def test_second_derivatives_against_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    text = '''
def f(x):
    xs = [x[0], x[1] * 2.0]
    xs.insert(1, x[2] ** 2)
    v = xs.pop(0)
    xs.extend([v * x[1]])
    xs.reverse()
    b = x - 1.0
    r = np.divide(x * x, b, out=np.zeros_like(x), where=b != 0)
    return xs[0] * xs[1] + np.sin(xs[2]) * v + np.sum(r * x)
'''
    f = function_from_source(text)

    def f_jax(x):
        xs = [x[0] * x[1], x[1] * 2.0, x[2] ** 2]       # (what the list methods leave)
        b = x - 1.0
        r = jnp.where(b != 0, x * x / jnp.where(b != 0, b, 1.0), 0.0)
        return xs[0] * xs[1] + jnp.sin(xs[2]) * x[0] + jnp.sum(r * x)
    x = np.array([0.5, 1.0, 3.0])
    np.testing.assert_allclose(pb.hessian(f)(x), jax.hessian(f_jax)(jnp.asarray(x)),
                               rtol=1e-10)
