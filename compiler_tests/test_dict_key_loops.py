"""Loops over a dict's keys (issue 13): ``for k in d``, ``{k: f(d[k]) for k in d}``,
``[d[k] for k in d]`` and ``sum(d[k] for k in d)`` where ``d`` is a dict built in
the function or a dict argument (a dict of parameters).  In Python ``for k in d``
is ``for k in d.keys()``; pullback reads the keys where the dict is known from
the source, and otherwise writes the loop both ways, chosen when it runs
(``frontend.dict_loops``), so that the same function takes a list as well.

Checked against exact values, central differences and jax (x64), in reverse and
forward mode, with the inputs and cotangents unchanged."""
import copy

import numpy as np
import pytest

import pullback as pb

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy

RNG = np.random.default_rng(13)


def _params():
    return {"w": RNG.normal(size=(3, 2)), "b": RNG.normal(size=2), "s": 0.7}


def _same(got, want, rtol=1e-12):
    # (jax sorts a dict's keys; pullback keeps the argument's order)
    assert type(got) is dict and sorted(got) == sorted(want)
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=rtol, atol=1e-14)


def _fd(f, p, k, i, eps=1e-6):
    """Central difference of ``f`` along the ``i``-th element of ``p[k]``."""
    up, down = copy.deepcopy(p), copy.deepcopy(p)
    if np.ndim(p[k]):
        up[k].flat[i] += eps
        down[k].flat[i] -= eps
    else:
        up[k] += eps
        down[k] -= eps
    return (f(up) - f(down)) / (2 * eps)


# -- a dict argument ---------------------------------------------------------------------

def square_norm(p):
    return sum(np.sum(p[k] ** 2) for k in p)


def sgd_loss(p, g, lr):
    new = {k: p[k] - lr * g[k] for k in p}
    return sum(np.sum(np.sin(new[k]) * new[k]) for k in new)


def jax_sgd_loss(p, g, lr):
    return sum(jnp.sum(jnp.sin(p[k] - lr * g[k]) * (p[k] - lr * g[k])) for k in p)


def weighted(p, c):
    # the loop's body reads another dict by the key (no p[k]: the loop is written
    # both ways), with break and else
    t = 0.0
    for k in p:
        if k == "stop":
            break
        t = t + c[k] * np.sum(np.tanh(p[k]))
    else:
        t = t * 2.0
    return t


def test_sum_over_a_dict_argument_exact():
    p = _params()
    before = copy.deepcopy(p)
    _same(pb.grad(square_norm)(p), {k: 2 * p[k] for k in p})
    _same(p, before)
    out, t = pb.jvp(square_norm, (p,), ({k: np.ones_like(p[k]) for k in p},))
    assert out == pytest.approx(sum(np.sum(p[k] ** 2) for k in p), rel=1e-14)
    assert t == pytest.approx(sum(np.sum(2 * p[k]) for k in p), rel=1e-13)


def test_update_comprehension_over_a_dict_argument_against_jax():
    p, g = _params(), _params()
    before = copy.deepcopy((p, g))
    gp, gg = pb.grad(sgd_loss, argnums=(0, 1))(p, g, 0.1)
    jp, jg = jax.grad(jax_sgd_loss, argnums=(0, 1))(p, g, 0.1)
    _same(gp, jp)
    _same(gg, jg)
    assert list(gp) == list(p) and list(gg) == list(g)
    _same(p, before[0])
    _same(g, before[1])
    tp, tg = _params(), _params()
    out, t = pb.jvp(lambda p, g: sgd_loss(p, g, 0.1), (p, g), (tp, tg))
    jout, jt = jax.jvp(lambda p, g: jax_sgd_loss(p, g, 0.1), (p, g), (tp, tg))
    assert out == pytest.approx(float(jout), rel=1e-13)
    assert t == pytest.approx(float(jt), rel=1e-12)


def test_loop_over_a_dict_argument_with_break_and_else_central_differences():
    p, c = _params(), {"w": 0.5, "b": -1.5, "s": 2.0}
    g = pb.grad(weighted)(p, c)
    for k in p:
        for i in range(np.size(p[k])):
            want = _fd(lambda q: weighted(q, c), p, k, i)
            assert np.ravel(g[k])[i] == pytest.approx(want, rel=1e-6, abs=1e-9)
    # break: the keys after "stop" are not read, the else does not run
    q = {"w": p["w"], "stop": 1.0, "b": p["b"]}
    cq = {"w": 0.5, "stop": 9.0, "b": 3.0}
    gq = pb.grad(weighted)(q, cq)
    np.testing.assert_allclose(gq["w"], 0.5 / np.cosh(p["w"]) ** 2, rtol=1e-12)
    assert gq["stop"] == 0.0 and np.all(gq["b"] == 0.0)
    tangent = {k: np.ones_like(v) for k, v in p.items()}
    _, t = pb.jvp(lambda p: weighted(p, c), (p,), (tangent,))
    assert t == pytest.approx(sum(np.sum(g[k]) for k in p), rel=1e-12)


def nested(p):
    # a dict of dicts of layers: the inner loop runs over an item of the outer dict
    scaled = {k: {j: p[k][j] * (2.0 if j == "w" else 3.0) for j in p[k]} for k in p}
    return sum(np.sum(scaled[k][j] ** 2) for k in scaled for j in scaled[k])


def test_dict_of_dicts_of_parameters():
    p = {"l1": {"w": RNG.normal(size=3), "b": 0.5}, "l2": {"w": RNG.normal(size=2), "b": -1.0}}
    g = pb.grad(nested)(p)
    for k in p:
        for j in p[k]:
            c = 2.0 if j == "w" else 3.0
            np.testing.assert_allclose(g[k][j], 2 * c * c * p[k][j], rtol=1e-13)
    tangent = {k: {j: np.ones_like(v) for j, v in p[k].items()} for k in p}
    _, t = pb.jvp(nested, (p,), (tangent,))
    want = sum(np.sum(g[k][j]) for k in p for j in p[k])
    assert t == pytest.approx(want, rel=1e-12)


# -- a dict built in the function --------------------------------------------------------

def built(x, y):
    d = dict(a=x, b=y * x)
    e = {k: d[k] ** 2 for k in d}
    terms = [e[k] for k in e]
    t = 0.0
    for k in e:
        t = t + np.sum(e[k]) * len(k)
    return t + np.sum(terms[0] * terms[1])


def jax_built(x, y):
    a, b = x ** 2, (y * x) ** 2
    return jnp.sum(a) + jnp.sum(b) + jnp.sum(a * b)


def test_dicts_built_in_the_function_against_jax():
    x, y = RNG.normal(size=3), RNG.normal(size=3)
    gx, gy = pb.grad(built, argnums=(0, 1))(x, y)
    jx, jy = jax.grad(jax_built, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx, jx, rtol=1e-12)
    np.testing.assert_allclose(gy, jy, rtol=1e-12)
    tx, ty = RNG.normal(size=3), RNG.normal(size=3)
    out, t = pb.jvp(built, (x, y), (tx, ty))
    jout, jt = jax.jvp(jax_built, (x, y), (tx, ty))
    assert out == pytest.approx(float(jout), rel=1e-13)
    assert t == pytest.approx(float(jt), rel=1e-12)
    # known from the source to be a dict: no loop written twice
    assert "loops_over_keys" not in pb.source(built, x, y)


# -- the same function over a dict or a sequence --------------------------------------------

def gather(keys, w):
    t = 0.0
    for k in keys:
        t = t + w[k] ** 2
    return t


def squares(xs):
    t = 0.0
    for x in xs:
        t = t + x * x
    return t


def row_norms(rows):
    t = 0.0
    for row in rows:
        t = t + np.sum(row * row)
    return t


def test_one_function_over_a_dict_or_a_list():
    w = RNG.normal(size=4)
    g_list = pb.grad(gather, argnums=1)([0, 2, 2], w)
    np.testing.assert_allclose(g_list, [2 * w[0], 0.0, 4 * w[2], 0.0], rtol=1e-14)
    wd = {"a": 1.5, "b": -2.0}
    _same(pb.grad(gather, argnums=1)({"a": None, "b": None}, wd), {"a": 3.0, "b": -4.0})
    _, t = pb.jvp(lambda w: gather([0, 2, 2], w), (w,), (np.ones(4),))
    assert t == pytest.approx(2 * w[0] + 4 * w[2], rel=1e-14)


def test_a_list_loop_keeps_its_in_place_accumulation():
    xs = [1.0, -2.0, 0.5]
    assert pb.grad(squares)(xs) == [2.0, -4.0, 1.0]
    assert xs == [1.0, -2.0, 0.5]
    rows = RNG.normal(size=(4, 3))
    np.testing.assert_allclose(pb.grad(row_norms)(rows), 2 * rows, rtol=1e-14)
    assert "loops_over_keys" not in pb.source(row_norms, rows)   # an array: no dict
    _, t = pb.jvp(squares, (xs,), ([1.0, 1.0, 1.0],))
    assert t == pytest.approx(-1.0)
    src = pb.source(squares, xs)
    assert "index_add(xs_bar, x_index, x_bar)" in src          # O(1) per element
    assert "jax.jit: traceable" in src


def test_a_list_loop_under_jit():
    xs = [jnp.asarray(RNG.normal(size=3)) for _ in range(3)]
    got = jax.jit(pb.grad(row_norms))(xs)
    for g, x in zip(got, xs):
        np.testing.assert_allclose(g, 2 * np.asarray(x), rtol=1e-14)


# -- refused -------------------------------------------------------------------------------

def over_set(s, x):
    t = 0.0
    for v in s:
        t = t + v * x
    return t


def with_lambda(p, c):
    out = []
    for k in p:
        out.append((lambda v: v * 2.0)(c[k]))
    return out[0]


def test_a_set_and_an_undupliable_body_stay_refused():
    with pytest.raises(pb.PullbackError, match="runs over a set"):
        pb.grad(over_set, argnums=1)({1.0, 2.0}, 3.0)
    with pytest.raises(pb.PullbackError, match=r"d\.keys\(\)"):
        pb.grad(with_lambda, argnums=1)({"a": None}, {"a": 1.0})


# -- the refusal of a write into a dict that may be the caller's names it -------------------

def memo_step(x, n, memo=None):
    memo = {} if memo is None else memo
    if n in memo:
        return memo[n]
    r = x * n
    memo[n] = r
    return r


def test_a_write_into_a_maybe_shared_dict_names_the_users_dict():
    with pytest.raises(pb.PullbackError) as info:
        pb.grad(lambda x: memo_step(x, 3))(1.5)
    message = str(info.value)
    assert "`memo` may be a dict that another name holds" in message, message
    assert "memo_1" not in message and "array" not in message
    assert "memo = {} if memo is None else memo" in message


# -- keyword-only defaults of a nested function that read a module constant ---------------

def layered(x, w1, w2):
    def layer(h, w, *, scale=1.0, act=np.tanh):
        return act(h @ w) * scale
    h = layer(x, w1)
    h = layer(h, w2, act=np.sin)
    return np.sum(layer(h, w2, scale=2.0) ** 2)


def jax_layered(x, w1, w2):
    h = jnp.sin(jnp.tanh(x @ w1) @ w2)
    return jnp.sum((2.0 * jnp.tanh(h @ w2)) ** 2)


def computed_default(x, c):
    def scaled(h, *, s=c):
        return h * s
    return scaled(x) ** 2


def test_keyword_only_default_reading_a_module_function():
    x, w1, w2 = RNG.normal(size=(2, 3)), RNG.normal(size=(3, 3)), RNG.normal(size=(3, 3))
    g = pb.grad(layered, argnums=(1, 2))(x, w1, w2)
    j = jax.grad(jax_layered, argnums=(1, 2))(x, w1, w2)
    for a, b in zip(g, j):
        np.testing.assert_allclose(a, b, rtol=1e-11)
    t = (RNG.normal(size=(2, 3)), RNG.normal(size=(3, 3)), RNG.normal(size=(3, 3)))
    out, tangent = pb.jvp(layered, (x, w1, w2), t)
    jout, jtangent = jax.jvp(jax_layered, (x, w1, w2), t)
    assert out == pytest.approx(float(jout), rel=1e-13)
    assert tangent == pytest.approx(float(jtangent), rel=1e-11)


def test_keyword_only_default_computed_from_an_argument_stays_refused():
    with pytest.raises(pb.PullbackError, match="keyword-only default computed") as info:
        pb.grad(computed_default)(1.5, 2.0)
    assert "def scaled(h, *, s=c):" in str(info.value)


def cubes(p):
    return sum(np.sum(p[k] ** 3) for k in p)


def test_forward_over_reverse_through_both_copies():
    p = {"a": np.array([1.0, 2.0]), "b": 3.0}
    t = {"a": np.array([1.0, 0.5]), "b": 1.0}
    g, hvp = pb.jvp(pb.grad(cubes), (p,), (t,))
    _same(g, {"a": 3 * p["a"] ** 2, "b": 27.0})
    _same(hvp, {"a": 6 * p["a"] * t["a"], "b": 18.0})
    g, hvp = pb.jvp(pb.grad(squares), ([1.0, 2.0],), ([1.0, 1.0],))
    assert g == [2.0, 4.0] and hvp == [2.0, 2.0]
