"""Dicts filled item by item (issue 13, second round): per-step dicts in a
loop (Karpathy's min-char-rnn, ``xs, hs = {}, {}``), an attribute's dict
stored into by a method (Adam's moments, ``self.m[k] = ...``), nested
stores (refused, naming the user's line), and the cost of a gradient
through a dict filled in a loop of n steps: O(n), counted in lines run.

Checked against exact values and jax (x64), in reverse and forward mode."""

import numpy as np
import pytest

import pullback as pb
from line_counts import lines_run

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy


# -- per-step dicts filled in a loop ----------------------------------------------------

def rnn(w, h0, n):
    xs, hs = {}, {}
    hs[-1] = np.copy(h0)
    loss = 0.0
    for t in range(n):
        xs[t] = np.zeros(2)
        xs[t][t % 2] = 1.0
        hs[t] = np.tanh(w * hs[t - 1] + xs[t])
        loss += np.sum(hs[t] ** 2)
    return loss


def jax_rnn(w, h0, n):
    h, loss = h0, 0.0
    for t in range(n):
        h = jnp.tanh(w * h + jnp.zeros(2).at[t % 2].set(1.0))
        loss += jnp.sum(h ** 2)
    return loss


W, H0 = np.array([0.7, -0.4]), np.array([0.2, 0.1])


def test_per_step_dicts_reverse_mode():
    gw, gh = pb.grad(rnn, argnums=(0, 1))(W, H0, 6)
    jw, jh = jax.grad(jax_rnn, argnums=(0, 1))(W, H0, 6)
    np.testing.assert_allclose(gw, jw, rtol=1e-12)
    np.testing.assert_allclose(gh, jh, rtol=1e-12)
    assert np.array_equal(H0, [0.2, 0.1])          # hs[-1] = np.copy(h0): h0 unchanged


def test_per_step_dicts_forward_mode():
    tw, th = np.array([1.0, -2.0]), np.array([0.5, 0.25])
    out, tangent = pb.jvp(lambda w, h: rnn(w, h, 6), (W, H0), (tw, th))
    jout, jtangent = jax.jvp(lambda w, h: jax_rnn(w, h, 6), (W, H0), (tw, th))
    assert out == pytest.approx(float(jout), rel=1e-13)
    assert tangent == pytest.approx(float(jtangent), rel=1e-12)


def unpacked(x):
    a, b = {}, {"s": 2.0}
    a["x"] = x * x
    b["y"] = a["x"] * b["s"]
    return b["y"] + a["x"]


def test_new_dicts_bound_together():
    assert pb.grad(unpacked)(1.5) == pytest.approx(9.0)        # 3x^2 -> 6x
    assert pb.jvp(unpacked, (1.5,), (1.0,)) == pytest.approx((6.75, 9.0))


def overwrite(x):
    d = {"k": x}
    a = d["k"] * 2.0
    d["k"] = a * x
    d["k"] = d["k"] + 1.0
    return d["k"] * a


def test_a_key_stored_again_after_a_read():
    # (2x^2 + 1) * 2x = 4x^3 + 2x -> 12x^2 + 2
    assert pb.grad(overwrite)(1.5) == pytest.approx(29.0)
    assert pb.jvp(overwrite, (1.5,), (1.0,))[1] == pytest.approx(29.0)
    assert "dict_store(" in pb.source(overwrite, 1.5)


def read_whole_between(x):
    d = {}
    d["a"] = x
    e = dict(d)
    d["b"] = 2.0 * x
    return e["a"] * d["b"] + len(e) * d["a"]


def test_a_dict_read_whole_before_a_later_store_is_copied():
    assert pb.grad(read_whole_between)(1.5) == pytest.approx(4.0 * 1.5 + 1.0)
    assert pb.jvp(read_whole_between, (1.5,), (1.0,))[1] == pytest.approx(7.0)
    src = pb.source(read_whole_between, 1.5)
    assert "dict_set(" in src and "dict_store(" not in src


def build(x, n):
    d = {}
    for i in range(n):
        d[i] = x * (i + 1.0)
    return d


def test_a_returned_dict_and_its_cotangent_left_as_given():
    out, back = pb.vjp(build, 2.0, 3)
    assert out == {0: 2.0, 1: 4.0, 2: 6.0}
    ct = {0: 1.0, 1: 2.0, 2: 3.0}
    assert back(ct)[0] == pytest.approx(14.0)
    assert ct == {0: 1.0, 1: 2.0, 2: 3.0}
    assert back(ct)[0] == pytest.approx(14.0)           # twice: nothing consumed


# -- an attribute's dict stored into by a method ------------------------------------------

class Moments:
    def __init__(self, b1=0.5):
        self.b1 = b1
        self.m = None

    def init(self, params):
        self.m = {k: np.zeros_like(v) for k, v in params.items()}

    def update(self, grads):
        for k in grads:
            self.m[k] = self.b1 * self.m[k] + (1 - self.b1) * grads[k]
            self.m[k] = self.m[k] + grads[k]


def moments(x):
    opt = Moments()
    opt.init({"a": x, "b": x})
    for _ in range(2):
        opt.update({"a": x * x, "b": 3.0 * x})
    return np.sum(opt.m["a"] * opt.m["b"])


def jax_moments(x):
    m = {"a": jnp.zeros_like(x), "b": jnp.zeros_like(x)}
    for _ in range(2):
        g = {"a": x * x, "b": 3.0 * x}
        for k in g:
            m[k] = 0.5 * m[k] + 0.5 * g[k] + g[k]
    return jnp.sum(m["a"] * m["b"])


def test_a_method_storing_into_an_attributes_dict():
    x = np.array([0.5, -1.5])
    # m_a = 2.25 x^2, m_b = 6.75 x: sum(15.1875 x^3) -> 45.5625 x^2
    np.testing.assert_allclose(pb.grad(moments)(x), 45.5625 * x ** 2, rtol=1e-13)
    np.testing.assert_allclose(pb.grad(moments)(x), jax.grad(jax_moments)(x), rtol=1e-13)
    t = np.array([1.0, 2.0])
    assert pb.jvp(moments, (x,), (t,))[1] == pytest.approx(float(45.5625 * x ** 2 @ t))


class Leaky(Moments):
    def moments(self):
        return self.m


class Given(Moments):
    def __init__(self, m):
        self.b1, self.m = 0.5, m


def leaky(x):
    opt = Leaky()
    opt.init({"a": x})
    opt.update({"a": x * x})
    return np.sum(opt.m["a"])


def given(x):
    opt = Given({"a": x})
    opt.update({"a": x * x})
    return np.sum(opt.m["a"])


def read_whole(x):
    opt = Moments()
    opt.init({"a": x})
    m = opt.m
    opt.update({"a": x * x})
    return np.sum(m["a"])


@pytest.mark.parametrize("f, why", [
    (leaky, "`moments` uses `.m` otherwise than by item"),
    (given, "`__init__` stores into `.m` something other than a new dict"),
    (read_whole, "`opt.m` is read whole"),
])
def test_a_dict_attribute_another_name_may_hold_refused(f, why):
    x = np.array([0.5, -1.5])
    for run in (lambda: pb.grad(f)(x), lambda: pb.jvp(f, (x,), (x,))):
        with pytest.raises(pb.PullbackError) as info:
            run()
        assert why in str(info.value), str(info.value)
        assert "test_dict_items.py" in str(info.value)


# -- nested stores --------------------------------------------------------------------

def nested(x, n):
    d = {}
    for i in range(n):
        d[i] = {}
        for j in range(2):
            d[i][j] = x * (i + j)
    return d[0][1] * d[n - 1][0]


def nested_built_whole(x, n):
    d = {}
    for i in range(n):
        inner = {}
        for j in range(2):
            inner[j] = x * (i + j)
        d[i] = inner
    return d[0][1] * d[n - 1][0]


def test_a_store_into_an_item_of_an_item_refused_naming_the_line():
    for run in (lambda: pb.grad(nested)(1.5, 3), lambda: pb.jvp(nested, (1.5, 3), (1.0, 0))):
        with pytest.raises(pb.PullbackError) as info:
            run()
        text = str(info.value)
        assert "item of an item of a dict" in text and "d[i][j] = x * (i + j)" in text
        assert "dict_item(" not in text and "d_item" not in text
    # what the hint says to write instead: x * 2x = 2x^2 -> 4x
    assert pb.grad(nested_built_whole)(1.5, 3) == pytest.approx(6.0)
    assert pb.jvp(nested_built_whole, (1.5, 3), (1.0, 0))[1] == pytest.approx(6.0)


# -- cost: O(n) in the number of stores --------------------------------------------------

def filled(x, n):
    hs = {}
    hs[-1] = x
    for t in range(n):
        hs[t] = np.tanh(0.9 * hs[t - 1] + 0.1)
    s = 0.0
    for t in range(n):
        s = s + np.sum(hs[t] * hs[t])
    return s


def test_a_gradient_through_a_dict_filled_in_a_loop_is_linear():
    x = np.array([0.3, 0.5])
    g = pb.grad(filled)
    g(x, 3)                                         # (transformed once, before counting)
    small, large = lines_run(g, x, 200), lines_run(g, x, 800)
    # four times the steps: four times the lines (was sixteen: each store copied
    # the dict, and each step's adjoint built a dict of zeros as large as it)
    assert large < 4.5 * small, (small, large)
    out, tangent = pb.jvp(filled, (x, 800), (np.ones(2), 0))
    f = pb.jvp
    small = lines_run(f, filled, (x, 200), (np.ones(2), 0))
    large = lines_run(f, filled, (x, 800), (np.ones(2), 0))
    assert large < 4.5 * small, (small, large)
    h, total = x, 0.0
    for _ in range(800):
        h = np.tanh(0.9 * h + 0.1)
        total += np.sum(h * h)
    assert out == pytest.approx(total, rel=1e-12)


class Calls(Moments):
    def step(self, grads):
        self.update(grads)
        for k in grads:
            self.m[k] = self.m[k] + grads[k]


def calls(x):
    opt = Calls()
    opt.init({"a": x, "b": x})
    opt.step({"a": x * x, "b": 3.0 * x})
    return np.sum(opt.m["a"] * opt.m["b"])


def test_a_method_calling_one_that_stores_into_an_attributes_dict():
    x = np.array([0.5, -1.5])
    # m_a = 2.5 x^2, m_b = 7.5 x: sum(18.75 x^3) -> 56.25 x^2
    np.testing.assert_allclose(pb.grad(calls)(x), 56.25 * x ** 2, rtol=1e-13)
    t = np.array([1.0, 2.0])
    assert pb.jvp(calls, (x,), (t,))[1] == pytest.approx(float(56.25 * x ** 2 @ t))


def caller_store(x):
    opt = Moments()
    opt.init({"a": x})
    opt.m["a"] = x * x
    opt.update({"a": x})
    return np.sum(opt.m["a"])


def test_a_store_into_an_objects_dict_in_the_caller():
    x = np.array([1.0, 2.0])
    # m = 0.5 x^2 + 1.5 x -> x + 1.5
    np.testing.assert_allclose(pb.grad(caller_store)(x), [2.5, 3.5], rtol=1e-14)
    assert pb.jvp(caller_store, (x,), (np.ones(2),)) == pytest.approx((7.0, 6.0))
