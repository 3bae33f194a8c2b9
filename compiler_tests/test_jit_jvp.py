"""``pb.jvp`` under ``jax.jit`` (issue 18) with structures of traced arrays
(a dict of parameters, tuples and lists, nested) and with user callees,
whose tangent functions get their own namespace build when the trace
reaches them (their traceability is decided then, at their own line).

Oracle: ``jax.jvp`` of the same function written with jax.numpy, float64,
to 1e-12.
"""
import numpy as np
import pytest

import pullback as pb

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy

TOL = dict(rtol=1e-12, atol=1e-12)
RNG = np.random.default_rng(1803)


def _close(got, want):
    assert isinstance(got, jax.Array)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), **TOL)


def _normal(*shape):
    return jnp.asarray(RNG.normal(size=shape))


def layer(p, x):
    return np.tanh(x @ p["w"] + p["b"])


def mlp(params, x, y):
    h = layer(params[0], x)
    out = h @ params[1]["w"] + params[1]["b"]
    return np.mean((out - y) ** 2) * params[1]["scale"]


def mlp_j(params, x, y):
    h = jnp.tanh(x @ params[0]["w"] + params[0]["b"])
    out = h @ params[1]["w"] + params[1]["b"]
    return jnp.mean((out - y) ** 2) * params[1]["scale"]


def _params():
    return [{"w": _normal(4, 5), "b": _normal(5)},
            {"w": _normal(5, 2), "b": _normal(2), "scale": 1.5}]


def test_a_list_of_dicts_of_parameters_and_a_callee():
    params, x, y = _params(), _normal(6, 4), _normal(6, 2)
    tangents = jax.tree_util.tree_map(lambda a: jnp.asarray(RNG.normal(size=np.shape(a))),
                                      params)
    tx = _normal(6, 4)
    run = jax.jit(lambda p, t, x, tx, y: pb.jvp(mlp, (p, x, y), (t, tx, jnp.zeros_like(y))))
    out, out_dot = run(params, tangents, x, tx, y)
    want, want_dot = jax.jvp(mlp_j, (params, x, y), (tangents, tx, jnp.zeros_like(y)))
    _close(out, want)
    _close(out_dot, want_dot)


def stats(pair):
    a, b = pair
    return {"sum": np.sum(a * b), "both": (np.sin(a), b ** 2)}


def test_a_tuple_in_and_a_dict_out():
    a, b, ta, tb = _normal(3), _normal(3), _normal(3), _normal(3)
    out, out_dot = jax.jit(lambda a, b, ta, tb: pb.jvp(stats, ((a, b),), ((ta, tb),)))(
        a, b, ta, tb)
    _close(out_dot["sum"], jnp.sum(ta * b + a * tb))
    _close(out_dot["both"][0], jnp.cos(a) * ta)
    _close(out_dot["both"][1], 2 * b * tb)
    _close(out["both"][0], jnp.sin(a))


def scaled(x, k):
    return x * k


def with_aux(p, k):
    y = scaled(p["x"], k)
    return np.sum(y ** 2), y


def test_has_aux_an_integer_primal_and_a_callee():
    p, t = {"x": _normal(4)}, {"x": _normal(4)}
    out, out_dot, aux = jax.jit(lambda p, t: pb.jvp(with_aux, (p, 3), (t, 0), has_aux=True))(
        p, t)
    _close(out, jnp.sum((3 * p["x"]) ** 2))
    _close(out_dot, 18.0 * jnp.sum(p["x"] * t["x"]))
    _close(aux, 3 * p["x"])


def branches(x):
    if x[0] > 0:
        return x * 2.0
    return x


def calls_a_branching_function(p):
    return np.sum(branches(p["x"]))


def test_an_untraceable_callee_is_refused_at_its_own_line():
    p = {"x": jnp.ones(3)}
    header = pb.source(calls_a_branching_function, {"x": np.ones(3)}).splitlines()[1]
    assert "not decided here for the calls of branches" in header
    with pytest.raises(pb.NotTraceableError, match="branches's tangent function") as err:
        jax.jit(lambda p: pb.jvp(calls_a_branching_function, (p,), (p,)))(p)
    assert err.value.lineno == branches.__code__.co_firstlineno + 1
    assert pb.jvp(calls_a_branching_function, ({"x": np.ones(3)},), ({"x": np.ones(3)},))[1] \
        == 6.0                  # outside jax.jit: the same call runs


def test_a_tangent_of_another_structure_is_refused():
    p = {"x": jnp.ones(3)}
    with pytest.raises(ValueError, match="structure and shapes"):
        jax.jit(lambda p: pb.jvp(calls_a_branching_function, (p,), ({"x": jnp.ones(2)},)))(p)


class Holder:
    def __init__(self, w):
        self.w = w


def held(h):
    return np.sum(h.w ** 2)


def test_an_object_of_the_users_class_is_refused_with_what_to_pass():
    with pytest.raises(pb.NotTraceableError, match="holds a Holder object"):
        jax.jit(lambda w: pb.jvp(held, (Holder(w),), (Holder(w),)))(jnp.ones(3))
    assert float(pb.jvp(held, (Holder(np.ones(3)),), (Holder(np.ones(3)),))[1]) == 6.0
