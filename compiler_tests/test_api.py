"""The public API, with JAX's conventions, checked against exact gradients."""
import linecache
import traceback

import numpy as np
import pytest

import pullback as pb

rng = np.random.default_rng(0)


def f2(x, y):
    return np.sum(x * y + np.sin(x))


def test_grad_argnums_int_and_tuple():
    x, y = rng.normal(size=3), rng.normal(size=3)
    np.testing.assert_allclose(pb.grad(f2)(x, y), y + np.cos(x))
    np.testing.assert_allclose(pb.grad(f2, argnums=1)(x, y), x)
    gx, gy = pb.grad(f2, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx, y + np.cos(x))
    np.testing.assert_allclose(gy, x)
    (gy2,) = pb.grad(f2, argnums=(1,))(x, y)
    np.testing.assert_allclose(gy2, x)
    np.testing.assert_allclose(pb.grad(f2, argnums=-1)(x, y), x)


def test_value_and_grad():
    x, y = rng.normal(size=3), rng.normal(size=3)
    v, g = pb.value_and_grad(f2)(x, y)
    assert v == f2(x, y)
    np.testing.assert_allclose(g, y + np.cos(x))


def test_keyword_arguments_bind_by_name():
    x, y = rng.normal(size=3), rng.normal(size=3)
    np.testing.assert_allclose(pb.grad(f2)(x, y=y), y + np.cos(x))


def with_aux(x):
    y = np.sum(x ** 2)
    return y, {"norm": np.sqrt(y)}


def test_has_aux():
    x = np.array([3.0, 4.0])
    g, aux = pb.grad(with_aux, has_aux=True)(x)
    np.testing.assert_allclose(g, 2 * x)
    assert aux["norm"] == 5.0
    (v, aux2), g2 = pb.value_and_grad(with_aux, has_aux=True)(x)
    assert v == 25.0 and aux2["norm"] == 5.0
    np.testing.assert_allclose(g2, 2 * x)
    out, back, aux3 = pb.vjp(with_aux, x, has_aux=True)
    assert out == 25.0 and aux3["norm"] == 5.0
    np.testing.assert_allclose(back(2.0)[0], 4 * x)


def test_vjp_one_cotangent_per_primal():
    x = rng.normal(size=(2, 3))
    w = rng.normal(size=(3, 4))
    out, back = pb.vjp(lambda x, w: np.tanh(x @ w), x, w)
    ct = rng.normal(size=(2, 4))
    gx, gw = back(ct)
    d = ct * (1 - np.tanh(x @ w) ** 2)
    np.testing.assert_allclose(gx, d @ w.T)
    np.testing.assert_allclose(gw, x.T @ d)
    # the pullback can be called again, with another cotangent
    gx2, _ = back(2 * ct)
    np.testing.assert_allclose(gx2, 2 * gx)
    with pytest.raises(ValueError, match="shape"):
        back(np.ones(3))


def test_vjp_of_tuple_output():
    x = rng.normal(size=3)
    out, back = pb.vjp(lambda x: (x * 2.0, np.sum(x)), x)
    (gx,) = back((np.ones(3), 3.0))
    np.testing.assert_allclose(gx, 2.0 + 3.0 * np.ones(3))


def test_vjp_integer_primal_gets_none():
    out, back = pb.vjp(lambda x, n: x * n, np.ones(2), 3)
    gx, gn = back(np.ones(2))
    np.testing.assert_allclose(gx, [3.0, 3.0])
    assert gn is None


def test_python_float_gets_python_float():
    g = pb.grad(lambda x, y: x * y + x)(2.0, 5.0)
    assert type(g) is float and g == 6.0


def test_numpy_scalar_and_float32_keep_their_type():
    g = pb.grad(lambda x: x * x)(np.float32(3.0))
    assert type(g) is np.float32 and g == 6.0
    x = np.ones(3, dtype=np.float32)
    g = pb.grad(lambda x: np.sum(x * np.float64(2.0)))(x)
    assert g.dtype == np.float32
    np.testing.assert_array_equal(g, 2.0)


def test_unused_input_gets_zeros_of_its_shape_and_dtype():
    x = np.ones((2, 3), dtype=np.float32)
    gx, gy = pb.grad(lambda x, y: np.sum(y * 2.0), argnums=(0, 1))(x, np.ones(4))
    assert gx.shape == (2, 3) and gx.dtype == np.float32 and not gx.any()
    np.testing.assert_array_equal(gy, 2.0)
    assert pb.grad(lambda a, b: b * 2.0)(1.0, 3.0) == 0.0


def test_complex_follows_jax_convention():
    assert pb.grad(lambda z: np.abs(z) ** 2)(3.0 + 4.0j) == 6.0 - 8.0j
    assert pb.grad(lambda z: np.real(z * z))(1.0 + 2.0j) == 2.0 + 4.0j


def test_broadcasting_is_unbroadcast():
    x = rng.normal(size=(4, 1))
    b = rng.normal(size=3)
    gx, gb = pb.grad(lambda x, b: np.sum((x + b) ** 2), argnums=(0, 1))(x, b)
    np.testing.assert_allclose(gx, np.sum(2 * (x + b), axis=1, keepdims=True))
    np.testing.assert_allclose(gb, np.sum(2 * (x + b), axis=0))


def helper(a, b):
    return a * np.exp(b)


@pb.differentiable
def decorated_helper(a):
    return np.sin(a) * 2.0


def uses_helpers(x, y):
    u = helper(x, y)
    v = decorated_helper(u)
    return np.sum(v + helper(y, 1.0))


def test_user_functions_become_primal_adjoint_pairs():
    x, y = rng.normal(size=3), rng.normal(size=3)
    u = x * np.exp(y)
    dv = 2 * np.cos(u)
    gx, gy = pb.grad(uses_helpers, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx, dv * np.exp(y))
    np.testing.assert_allclose(gy, dv * u + np.exp(1.0))
    src = pb.source(uses_helpers)
    assert "helper_primal(" in src and "helper_adjoint(" in src


def test_differentiable_still_runs_as_written():
    assert decorated_helper(0.5) == np.sin(0.5) * 2.0
    assert decorated_helper.__pullback_differentiable__


@pb.custom_vjp
def clip_gradient(x):
    return x


def clip_fwd(x):
    return x, None


def clip_bwd(res, g):
    return (np.clip(g, -1.0, 1.0),)


clip_gradient.defvjp(clip_fwd, clip_bwd)


def test_custom_vjp_direct_and_inside():
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(pb.grad(lambda x: np.sum(clip_gradient(x) * 5.0))(x), 1.0)
    np.testing.assert_allclose(pb.grad(lambda x: np.sum(clip_gradient(x) * 0.5))(x), 0.5)
    out, back = pb.vjp(clip_gradient, x)
    np.testing.assert_allclose(back(np.array([-3.0, 0.5, 7.0]))[0], [-1.0, 0.5, 1.0])
    assert clip_gradient(2.0) == 2.0


def test_custom_vjp_without_rule_is_an_error():
    @pb.custom_vjp
    def f(x):
        return x
    with pytest.raises(TypeError, match="defvjp"):
        pb.grad(lambda x: f(x) * 2.0)(1.0)


SCALE = 3.0


def uses_global(x):
    return np.sum(x * SCALE)


def test_globals_and_closures_are_read_at_call_time():
    global SCALE
    x = np.ones(2)
    np.testing.assert_allclose(pb.grad(uses_global)(x), 3.0)
    SCALE = 5.0
    try:
        np.testing.assert_allclose(pb.grad(uses_global)(x), 5.0)
    finally:
        SCALE = 3.0
    k = 2.0

    def closure(x):
        return np.sum(x * k)
    np.testing.assert_allclose(pb.grad(closure)(x), 2.0)
    k = 7.0
    np.testing.assert_allclose(pb.grad(closure)(x), 7.0)


def test_inputs_and_cotangents_are_never_written_or_returned():
    x = np.array([1.0, 2.0])
    x0 = x.copy()
    out, back = pb.vjp(lambda x: x, x)
    ct = np.array([5.0, 6.0])
    (g,) = back(ct)
    np.testing.assert_array_equal(g, ct)
    assert not np.shares_memory(g, ct) and not np.shares_memory(g, x)
    out, back = pb.vjp(lambda x, y: x + y, x, x)
    g1, g2 = back(ct)
    assert not np.shares_memory(g1, g2) and not np.shares_memory(g1, ct)
    np.testing.assert_array_equal(g1, ct)
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(ct, [5.0, 6.0])


def test_transform_is_cached_per_signature():
    def f(x):
        return np.sum(x * x)
    g = pb.grad(f)
    g(np.ones(3))
    g(np.ones(4))
    from pullback.callees import derivative_of
    assert len(derivative_of(f).cache) == 1
    g(np.ones((2, 2)))
    g(2.0)
    assert len(derivative_of(f).cache) == 3


def test_generated_code_is_in_linecache():
    def f(x):
        y = np.log(x)
        return np.sum(y)
    with pytest.raises(Exception):
        with np.errstate(all="raise"):
            pb.grad(f)(np.array([-1.0]))
    src = pb.source(f)
    assert "def f_adjoint" in src
    from pullback.callees import derivative_of
    loaded, _ = next(iter(derivative_of(f).cache.values()))
    assert "".join(linecache.getlines(loaded.filename)).count("def f_primal") == 1


def test_traceback_shows_generated_lines():
    def f(x):
        y = np.sqrt(x)
        return np.sum(y)
    with np.errstate(all="raise"):
        with pytest.raises(FloatingPointError) as excinfo:
            pb.grad(f)(np.array([0.0]))
    text = "".join(traceback.format_exception(excinfo.value))
    assert "<pullback" in text and "f_adjoint" in text


def test_scalar_branch_of_where_is_summed_back():
    cond = np.array([True, False, True])
    g = pb.grad(lambda a, b: np.sum(np.where(cond, a, b) * 2.0), argnums=(0, 1))(1.0, 2.0)
    assert g == (4.0, 2.0)
