"""Dicts written by item, dict displays with ``**``, and ``max``/``min`` with
``key=`` (issue 13; frontend/dict_stores.py, rules/dicts.py, desugar_calls).

A dict the function builds (``{}``, a display, ``dict(...)``, a dict
comprehension, ``p.copy()``) and holds alone while it changes is followed as
a new dict per store: ``d[k] = v`` in a loop over ``sorted(p)``, ``p.items()``
or a list of keys, ``d[k] += v``, ``d.update(...)``, ``d.setdefault``,
``d |= q``.  ``{**p, "b": v}``, ``dict(p, b=v)`` and ``p | q`` are new dicts.
``max(xs, key=f)`` picks an item: its gradient goes to that item.  Checked
against exact values, jax (x64; dicts are pytrees there) and central
differences; what stays refused names its reason."""
import numpy as np
import pytest

import pullback as pb

from fd_helpers import central

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy

P = {"a": 1.5, "b": 2.0}


# -- stores into the function's own dict -------------------------------------------------

def doubled_sorted(p):
    d = {}
    for k in sorted(p):
        d[k] = p[k] * 2.0
    return d["a"] * d["b"]


def squared_items(p):
    d = dict()
    for k, v in p.items():
        d[k] = v * v
    return d["a"] + 3.0 * d["b"]


def scaled_keys(p):
    out = {}
    for k in ["b", "a"]:
        out[k] = p[k] * p["a"]
    return out["a"] * out["b"]


def test_a_store_in_a_loop_over_sorted_keys():
    assert pb.grad(doubled_sorted)(P) == {"a": 8.0, "b": 6.0}      # 4ab


def test_a_store_in_a_loop_over_items():
    assert pb.grad(squared_items)(P) == {"a": 3.0, "b": 12.0}


def test_a_store_in_a_loop_over_a_list_of_keys():
    # out = {b: ab, a: a^2}: a^3 b
    g = pb.grad(scaled_keys)(P)
    assert g == {"a": pytest.approx(3 * 1.5 ** 2 * 2.0), "b": pytest.approx(1.5 ** 3)}


def test_stores_match_jax_in_reverse_and_forward_mode():
    for f in (doubled_sorted, squared_items, scaled_keys):
        gj = jax.grad(f)({k: jnp.float64(v) for k, v in P.items()})
        g = pb.grad(f)(P)
        assert g == {k: pytest.approx(float(v), rel=1e-14) for k, v in gj.items()}
        t = {"a": 0.3, "b": -0.7}
        _, dot = pb.jvp(f, (P,), (t,))
        assert dot == pytest.approx(g["a"] * 0.3 - g["b"] * 0.7, rel=1e-14)


def updates(p):
    d = {"x": 0.0}
    d["x"] += p["a"]
    d["x"] *= p["b"]
    d.update(y=p["a"] ** 2)
    d.update({"v": p["b"]})
    d.setdefault("z", p["b"])
    d.setdefault("x", 100.0)           # present: no change
    d |= {"w": 3.0 * p["b"]}
    return d["x"] + d["y"] + d["z"] * d["w"] + d["v"]


def test_augmented_stores_update_setdefault_and_or_assign():
    # ab + a^2 + 3b^2 + b
    assert updates(P) == pytest.approx(1.5 * 2 + 1.5 ** 2 + 3 * 4 + 2)
    assert pb.grad(updates)(P) == {"a": pytest.approx(2.0 + 3.0),
                                   "b": pytest.approx(1.5 + 12.0 + 1.0)}


def setdefault_value(p):
    d = {}
    first = d.setdefault("a", p["a"] * 2.0)
    again = d.setdefault("a", p["b"])          # the stored one, not p["b"]
    return first * again


def test_setdefault_returns_the_item():
    assert pb.grad(setdefault_value)(P) == {"a": pytest.approx(8 * 1.5), "b": 0.0}


def copies(p):
    own = p.copy()
    for k, v in p.items():
        own[k] = v * v
    mine = dict(p)
    mine["a"] = mine["a"] * 3.0
    return own["a"] + own["b"] + mine["a"] * mine["b"]


def test_a_copy_of_an_argument_is_written_and_the_argument_never():
    p = dict(P)
    g = pb.grad(copies)(p)
    assert g == {"a": pytest.approx(3.0 + 6.0), "b": pytest.approx(4.0 + 4.5)}
    assert p == P
    y, t = pb.jvp(copies, (p,), ({"a": 1.0, "b": 0.0},))
    assert t == pytest.approx(9.0) and p == P


def rebound_argument(p):
    p = dict(p)
    for k in p:
        p[k] = p[k] ** 2
    return p["a"] * p["b"]


def test_an_argument_rebound_to_its_copy_then_written():
    p = dict(P)
    assert pb.grad(rebound_argument)(p) == {"a": pytest.approx(2 * 1.5 * 4),
                                            "b": pytest.approx(2 * 1.5 ** 2 * 2)}
    assert p == P


def comprehension(p):
    q = {k: v * p["a"] for k, v in p.items() if k != "c"}
    return q["a"] * q["b"] + len(q)


def test_a_dict_comprehension():
    p = {"a": 1.5, "b": 2.0, "c": 7.0}
    # a^3 b
    g = pb.grad(comprehension)(p)
    assert g == {"a": pytest.approx(3 * 1.5 ** 2 * 2), "b": pytest.approx(1.5 ** 3), "c": 0.0}


def arrays(params, x):
    grads = {k: np.zeros_like(v) for k, v in params.items()}
    for k in params:
        grads[k] = grads[k] + params[k] * x
    new = {}
    for k in sorted(params):
        new[k] = params[k] - 0.1 * grads[k]
    return np.sum(new["w"] ** 2) + np.sum(new["b"] * x)


def test_dicts_of_arrays_against_jax_and_central_differences():
    rng = np.random.default_rng(3)
    params = {"w": rng.standard_normal(3), "b": rng.standard_normal(3)}
    x = rng.standard_normal(3)
    g, gx = pb.grad(arrays, argnums=(0, 1))(params, x)
    jp = {k: jnp.asarray(v) for k, v in params.items()}
    gj, gxj = jax.grad(_arrays_jax, argnums=(0, 1))(jp, jnp.asarray(x))
    for k in params:
        np.testing.assert_allclose(g[k], gj[k], rtol=1e-13)
    np.testing.assert_allclose(gx, gxj, rtol=1e-13)
    np.testing.assert_allclose(gx, central(lambda v: arrays(params, v), x), rtol=1e-7)


def _arrays_jax(params, x):
    new = {k: params[k] - 0.1 * (params[k] * x) for k in params}
    return jnp.sum(new["w"] ** 2) + jnp.sum(new["b"] * x)


def adam_local(params, X, y, X_val, y_val):
    # the corpus' adam_unrolled with its moments in local dicts
    m = {k: np.zeros_like(p) for k, p in params.items()}
    v = {k: np.zeros_like(p) for k, p in params.items()}
    for t in range(1, 7):
        r = X @ params["w"] + params["b"] - y
        grads = {"w": 2.0 * X.T @ r / len(y), "b": 2.0 * np.mean(r)}
        new = {}
        for k in params:
            m[k] = 0.9 * m[k] + 0.1 * grads[k]
            v[k] = 0.999 * v[k] + (1 - 0.999) * grads[k] ** 2
            m_hat = m[k] / (1 - 0.9 ** t)
            v_hat = v[k] / (1 - 0.999 ** t)
            new[k] = params[k] - 0.05 * m_hat / (np.sqrt(v_hat) + 1e-8)
        params = new
    return np.mean((X_val @ params["w"] + params["b"] - y_val) ** 2)


def test_unrolled_adam_with_dict_state_matches_jax():
    import sys
    import os
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "programs"))
    try:
        import adam_unrolled
    finally:
        sys.path.pop(0)
    args = adam_unrolled.make_inputs(np.random.default_rng(0))
    g = pb.grad(adam_local, argnums=(0, 1, 2))(*args)
    jargs = jax.tree_util.tree_map(jnp.asarray, args)
    gj = jax.grad(adam_unrolled.jax_fun, argnums=(0, 1, 2))(*jargs)
    np.testing.assert_allclose(g[0]["w"], gj[0]["w"], rtol=1e-10)
    assert g[0]["b"] == pytest.approx(float(gj[0]["b"]), rel=1e-10)
    np.testing.assert_allclose(g[1], gj[1], rtol=1e-10, atol=1e-15)
    np.testing.assert_allclose(g[2], gj[2], rtol=1e-10, atol=1e-15)


# -- displays and merges ------------------------------------------------------------------

def spread(p, v):
    q = {**p, "b": v * 2.0, "c": p["a"]}
    return q["a"] * q["b"] + q["c"]


def keyword_copy(p, v):
    q = dict(p, b=v)
    return q["a"] * q["b"] ** 2


def merged(p, v):
    q = p | {"b": v}
    r = {"a": 10.0, "c": v} | q            # q's "a" wins
    return r["a"] * r["b"] + r["c"]


def test_double_star_display_dict_with_keywords_and_or():
    g = pb.grad(spread, argnums=(0, 1))(P, 0.5)
    assert g == ({"a": pytest.approx(2.0), "b": 0.0}, pytest.approx(2 * 1.5))
    g = pb.grad(keyword_copy, argnums=(0, 1))(P, 0.5)
    assert g == ({"a": pytest.approx(0.25), "b": 0.0}, pytest.approx(2 * 1.5 * 0.5))
    g = pb.grad(merged, argnums=(0, 1))(P, 0.5)
    assert g == ({"a": pytest.approx(0.5), "b": 0.0}, pytest.approx(1.5 + 1.0))


def test_merges_against_jax_and_forward_mode():
    for f in (spread, keyword_copy, merged):
        jp = {k: jnp.float64(v) for k, v in P.items()}
        gj = jax.grad(f, argnums=(0, 1))(jp, jnp.float64(0.5))
        g = pb.grad(f, argnums=(0, 1))(P, 0.5)
        assert g[0] == {k: pytest.approx(float(v), rel=1e-14) for k, v in gj[0].items()}
        assert g[1] == pytest.approx(float(gj[1]), rel=1e-14)
        _, dot = pb.jvp(f, (P, 0.5), ({"a": 1.0, "b": 1.0}, 1.0))
        assert dot == pytest.approx(sum(g[0].values()) + g[1], rel=1e-14)


def everything(x):
    p = {"a": x[0], "b": x[1], "c": x[2]}
    d = {}
    for k in sorted(p):
        d[k] = p[k] * p["a"]
    d["b"] += d["c"]
    q = {**d, "e": x[1] ** 3}
    r = dict(q, f=x[2])
    s = r | {"g": x[0] * x[1]}
    best = max(s.values(), key=lambda t: -abs(t - 1.0))
    return d["a"] * d["b"] + s["e"] + s["f"] * s["g"] + best


def test_second_derivatives_through_dict_stores():
    x = np.array([0.7, 1.3, -0.4])
    g = pb.grad(everything)(x)
    np.testing.assert_allclose(g, central(everything, x), rtol=1e-7)
    np.testing.assert_allclose(pb.jacfwd(everything)(x), g, rtol=1e-14)
    h = pb.hessian(everything)(x)
    step = 1e-6
    rows = [(pb.grad(everything)(x + e) - pb.grad(everything)(x - e)) / (2 * step)
            for e in step * np.eye(3)]
    np.testing.assert_allclose(h, np.array(rows), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(h, h.T, rtol=1e-14)


# -- max / min / sorted with key= --------------------------------------------------------

def by_square(xs):
    return max(xs, key=lambda t: t * t) * 2.0 + min(xs, key=abs)


def test_max_and_min_with_a_key_pick_an_item():
    assert pb.grad(by_square)([1.0, -3.0, 0.5]) == [0.0, 2.0, 1.0]
    g = pb.grad(by_square)(np.array([1.0, -3.0, 0.5]))
    np.testing.assert_array_equal(g, [0.0, 2.0, 1.0])
    gj = jax.grad(lambda v: v[1] * 2.0 + v[2])(jnp.array([1.0, -3.0, 0.5]))
    np.testing.assert_array_equal(g, gj)


def first_of_ties(a, b, c):
    return max(a, b, c, key=lambda t: round(t)) * 10.0


def test_ties_go_to_the_first_item_as_python_picks():
    assert pb.grad(first_of_ties, argnums=(0, 1, 2))(1.9, 2.1, 0.3) == (10.0, 0.0, 0.0)


def best_key(p):
    k = max(p, key=p.get)
    worst = min(p.items(), key=lambda kv: kv[1])
    return p[k] * 3.0 + worst[1]


def test_max_of_a_dict_by_its_values_gives_a_key():
    assert pb.grad(best_key)(P) == {"a": 1.0, "b": 3.0}


def with_default(xs):
    return max(xs, key=lambda t: -t, default=7.0) + min([v * 2.0 for v in xs], default=0.0)


def test_max_with_a_default():
    assert pb.grad(with_default)([2.0, 0.5]) == [0.0, 3.0]
    assert with_default([]) == 7.0
    assert pb.value_and_grad(empty_default)([]) == (14.0, [])
    assert pb.value_and_grad(empty_default)([0.5, -1.0]) == (-2.0, [0.0, 2.0])


def empty_default(xs):
    return max(xs, key=abs, default=7.0) * 2.0


def test_max_of_nothing_without_default_is_pythons_error():
    with pytest.raises(ValueError, match="empty"):
        pb.grad(lambda xs: max(xs, key=abs))(np.zeros(0))


def sorted_by(xs):
    ys = sorted(xs, key=lambda t: -t)
    return ys[0] * 2.0 + ys[1]


def test_sorted_with_a_key():
    assert pb.grad(sorted_by)([1.0, 3.0, 2.0]) == [0.0, 2.0, 1.0]


def loop_over_keys(params):
    s = 0.0
    for k in params:
        s = s + params[k] ** 2
    return s


def test_a_loop_over_a_dict_argument_reading_it_by_key():
    assert pb.grad(loop_over_keys)(P) == {"a": 3.0, "b": 4.0}


# -- what stays refused, with the reason ------------------------------------------------

def aliased(p):
    d = {}
    e = d
    d["a"] = p["a"] * 2
    return e["a"]


def handed_on(p):
    d = {}
    log = []
    log.append(d)
    d["a"] = p["a"]
    return d["a"]


def other_key_in_loop(p):
    d = dict(p)
    for k in d:
        d["c"] = d[k]
    return d["c"]


def argument_written(p):
    p["a"] = p["a"] * 2
    return p["a"]


@pytest.mark.parametrize("f, words", [
    (aliased, r"`d` is given another name at line \d+, and stored into after that"),
    (handed_on, r"`d` is passed to a call at line \d+, and stored into after that"),
    (other_key_in_loop, r"while a loop runs over it .*for k in list\(d\)"),
    (argument_written, r"writes into its argument `p`"),
])
def test_refused_with_the_reason(f, words):
    with pytest.raises(pb.UnsupportedSyntaxError, match=words) as err:
        pb.grad(f)(dict(P))
    assert "test_dict_writes.py" in str(err.value)


def array_item_added(p):
    d = {"a": np.array([1.0, 2.0]) * p["a"]}
    d["a"] += p["b"]
    return np.sum(d["a"])


def test_an_array_item_changed_in_place_is_refused():
    with pytest.raises(pb.UnsupportedSyntaxError, match=r"(?s)changes that object in place.*"
                       r"d\['a'\] = d\['a'\] \+ v"):
        pb.grad(array_item_added)(dict(P))


def values_as_keys(xs):
    s = 0.0
    for k in xs:
        s = s + xs[k]
    return s


def test_a_loop_over_values_read_by_them_is_refused():
    with pytest.raises(pb.UnsupportedSyntaxError, match="loop over a dict's keys"):
        pb.grad(values_as_keys)([1.0, 0.0])


def test_no_store_writes_into_the_callers_dict():
    p = {"a": np.array([1.0, 2.0]), "b": 2.0}
    before = {k: np.copy(v) for k, v in p.items()}

    def f(q):
        d = dict(q)
        d["a"] = d["a"] * 2.0
        d["b"] = d["a"][0] + d["b"]
        return np.sum(d["a"]) * d["b"]
    g = pb.grad(f)(p)
    # sum(2a) * (2 a0 + b)
    np.testing.assert_allclose(g["a"], [2.0 * 4.0 + 6.0 * 2.0, 2.0 * 4.0])
    assert g["b"] == pytest.approx(6.0)
    np.testing.assert_array_equal(p["a"], before["a"])
    assert p["b"] == before["b"] and list(p) == ["a", "b"]


def positions(x, names):
    pos = {}
    for i in range(len(names)):
        pos[names[i]] = i
    return np.sum(x * pos[names[-1]])


def test_stores_that_carry_no_gradient_run_in_place():
    names = [f"n{i}" for i in range(50)]
    np.testing.assert_array_equal(pb.grad(positions)(np.ones(2), names), [49.0, 49.0])
    src = pb.source(positions, np.ones(2), names, argnums=0)
    assert "dict_set_in_place(pos" in src or "dict_store(pos" in src    # (no copy per store)


def copied_by_method(params):
    new = params.copy()
    new["w"] = params["w"] * params["b"]
    return np.sum(new["w"]) + new["b"]


def test_a_copy_of_a_dict_argument_read_by_string_keys():
    p = {"w": np.array([1.0, 2.0]), "b": 3.0}
    g = pb.grad(copied_by_method)(p)
    np.testing.assert_array_equal(g["w"], [3.0, 3.0])
    assert g["b"] == 4.0 and p["w"].tolist() == [1.0, 2.0]


def test_forward_mode_loops_over_keys_and_in_place_stores():
    _, dot = pb.jvp(loop_over_keys, (P,), ({"a": 1.0, "b": 0.5},))
    assert dot == pytest.approx(3.0 + 0.5 * 4.0)
    names = ["a", "b", "c"]
    _, dot = pb.jvp(lambda x: positions(x, names), (np.ones(2),), (np.ones(2),))
    assert dot == 4.0


def keyword_spread(p, q):
    r = dict(**p, c=q["c"])
    s = p | q                      # both read by key: dicts
    return r["a"] * r["c"] + s["c"] * s["a"]


def test_dict_of_double_star_keywords_and_or_of_two_arguments():
    g = pb.grad(keyword_spread, argnums=(0, 1))(P, {"c": 4.0})
    assert g == ({"a": 8.0, "b": 0.0}, {"c": 3.0})


def appended_to_an_item(x):
    d = {}
    for i in range(3):
        d.setdefault("xs", [])
        d["xs"].append(x * i)
    return sum(d["xs"])


def appended_to_a_row(x):
    rows = [[] for _ in range(2)]
    for i in range(2):
        rows[i].append(x * (i + 1.0))
    return rows[0][0] + rows[1][0]


@pytest.mark.parametrize("f, line", [(appended_to_an_item, 'd["xs"].append(x * i)'),
                                     (appended_to_a_row, "rows[i].append(x * (i + 1.0))")])
def test_an_append_to_a_list_held_by_a_container_is_refused(f, line):
    # (a zero gradient with no error before: 0.0 where 3.0 is right)
    with pytest.raises(pb.UnsupportedSyntaxError, match="list held inside another "
                       "container") as err:
        pb.grad(f)(1.5)
    assert line in str(err.value)


def test_the_refusals_fix_works():
    def f(x):
        xs = []
        for i in range(3):
            xs.append(x * i)
        d = {"xs": xs}
        return sum(d["xs"])
    assert pb.grad(f)(1.5) == 3.0
