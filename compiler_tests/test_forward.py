"""Forward mode (issue 15): ``pb.jvp`` as a source transform.

Each function is written once as text and defined twice: with NumPy for
pullback and with ``jax.numpy`` for ``jax.jvp`` (float64), the oracle; a
function JAX cannot run as written (indexing writes, ``math``) gives its
JAX twin separately or is checked by central differences.  Every program
of ``compiler_tests/programs/`` that reverse mode differentiates is checked
by the dot-product identity ``<vjp(ct), t> == <ct, jvp(t)>``.
"""
import collections
import functools
import importlib
import math
import os
import sys
import zlib

import numpy as np
import pytest

import pullback as pb
from pullback.lowering import kernels
from pullback.testing import function_from_source

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
from jax import tree_util  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import programs  # noqa: E402

RTOL = 1e-10


def rng_for(name):
    return np.random.default_rng(zlib.crc32(name.encode()))


def both(text, jax_text=None, extra=None):
    """The function in ``text`` for pullback (NumPy) and for JAX."""
    f = function_from_source(text, dict(extra or {}))
    ns = {"np": jnp, "math": math, **(extra or {})}
    exec(jax_text or text, ns)
    name = text.strip().split("def ", 1)[1].split("(", 1)[0].strip()
    return f, ns[name]


def assert_close(a, b, rtol=RTOL):
    la, ta = tree_util.tree_flatten(a)
    lb, tb = tree_util.tree_flatten(b)
    assert len(la) == len(lb), (a, b)
    for x, y in zip(la, lb):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=rtol, atol=1e-12)


# -- against jax.jvp ---------------------------------------------------------------------

CASES = {
    "elementwise_chain": ("""
def f(x):
    return np.tanh(2.0 * x + 1.0) * x + np.exp(-x * x) / (1.0 + x * x)
""", None, lambda r: (r.standard_normal(7),)),
    "sum_chain": ("""
def f(x, y):
    return np.sum(np.sin(x) * y + np.log1p(x * x) - np.sqrt(y * y + 1.0))
""", None, lambda r: (r.standard_normal(5), r.standard_normal(5))),
    "broadcasting": ("""
def f(x, b, s):
    return np.maximum(x * s + b, 0.5 * b) + x ** 3 - s / (2.0 + np.cos(x))
""", None, lambda r: (r.standard_normal((3, 4)), r.standard_normal(4), 1.3)),
    "mlp": ("""
def f(w1, b1, w2, x):
    h = np.tanh(x @ w1 + b1)
    logits = h @ w2
    m = np.max(logits, axis=1, keepdims=True)
    z = logits - m
    return np.sum(z - np.log(np.sum(np.exp(z), axis=1, keepdims=True)))
""", None, lambda r: (r.standard_normal((3, 5)), r.standard_normal(5),
                      r.standard_normal((5, 2)), r.standard_normal((4, 3)))),
    "reductions": ("""
def f(x):
    a = np.mean(x, axis=0) + np.var(x, axis=1).sum() + np.std(x)
    b = np.prod(x, axis=1) + np.min(x, axis=1) + np.cumsum(x, axis=1)[:, -1]
    return np.concatenate([a, b, np.ravel(x.T)])
""", None, lambda r: (r.standard_normal((3, 3)),)),
    "shapes": ("""
def f(x, y):
    a = np.reshape(x, (2, 6)).T
    b = np.stack([a[:, 0], y, a[:, 1] * y], axis=1)
    c = np.transpose(np.expand_dims(b, 0), (0, 2, 1))
    return np.squeeze(c) * 2.0 + np.flip(np.roll(y, 1))[None, :]
""", None, lambda r: (r.standard_normal((3, 4)), r.standard_normal(6))),
    "for_loop": ("""
def f(x, w):
    h = x
    for i in range(4):
        h = np.sin(h * w) + 0.5 * h
    return h
""", None, lambda r: (r.standard_normal(3), r.standard_normal(3))),
    "while_loop": ("""
def f(x):
    k = 0
    y = x
    while k < 5:
        y = y * 0.9 + np.cos(y)
        k = k + 1
    return y
""", None, lambda r: (r.standard_normal(4),)),
    "loop_over_rows": ("""
def f(xs, w):
    total = 0.0
    for row in xs:
        total = total + np.sum(np.tanh(row @ w))
    return total
""", None, lambda r: (r.standard_normal((5, 3)), r.standard_normal((3, 2)))),
    "branches": ("""
def f(x, y):
    if np.sum(x) > 0:
        z = x * y
    else:
        z = -x + y ** 2
    if z[0] > 10.0:
        z = z * 0.0
    return z
""", None, lambda r: (r.standard_normal(3) + 1.0, r.standard_normal(3))),
    "early_return": ("""
def f(x, n):
    for i in range(n):
        x = x * 1.5
        if np.max(x) > 4.0:
            return np.sum(x)
    return np.sum(x * x)
""", None, lambda r: (np.abs(r.standard_normal(3)), 6)),
    "closure": ("""
def f(x, a):
    def g(v):
        return np.sin(v * a) + a
    return g(x) * g(2.0 * x)
""", None, lambda r: (r.standard_normal(4), 0.7)),
    "lambda_map": ("""
def f(xs, s):
    ys = [np.exp(-s * v) for v in xs]
    return sum(ys) + np.sum(np.stack(ys))
""", None, lambda r: (r.standard_normal(4), 0.3)),
    "indexing_reads": ("""
def f(x, idx):
    a = x[1:] * x[:-1]
    b = x[idx] * x[0]
    return np.concatenate([a, b, x[::2]])
""", None, lambda r: (r.standard_normal(6), np.array([0, 3, 3, 5]))),
    "indexing_writes": ("""
def f(x, w):
    y = np.zeros(5)
    y[0] = x[1] * w
    y[1:3] = x[:2] ** 2
    for i in range(3, 5):
        y[i] = y[i - 1] * x[i - 3]
    y[0] += w * w
    return y
""", """
def f(x, w):
    y = np.zeros(5)
    y = y.at[0].set(x[1] * w)
    y = y.at[1:3].set(x[:2] ** 2)
    for i in range(3, 5):
        y = y.at[i].set(y[i - 1] * x[i - 3])
    y = y.at[0].add(w * w)
    return y
""", lambda r: (r.standard_normal(3), 0.8)),
    "containers": ("""
def f(params, x):
    w, b = params["w"], params["b"]
    pair = (np.tanh(x @ w + b), b)
    h, c = pair
    return {"out": np.sum(h) * c, "h": h}
""", None, lambda r: ({"w": r.standard_normal((3, 2)), "b": r.standard_normal(2)},
                      r.standard_normal((4, 3)))),
    "tuple_output": ("""
def f(x, y):
    return np.sin(x) * y, np.sum(x * x), x[0] + y[1]
""", None, lambda r: (r.standard_normal(3), r.standard_normal(3))),
    "user_call": ("""
def f(x, y):
    return helper(x, 2.0) + helper(y * x, 0.5) * helper(1.0, y)

def helper(v, k):
    return np.tanh(k * v) * v
""", None, lambda r: (r.standard_normal(3), r.standard_normal(3))),
    "recursion": ("""
def f(x, n):
    if n == 0:
        return x
    return np.sin(f(x, n - 1)) * x
""", None, lambda r: (r.standard_normal(3), 4)),
    "linalg": ("""
def f(a, b):
    s = a @ a.T + 3.0 * np.eye(3)
    x = np.linalg.solve(s, b)
    xi = np.linalg.inv(s) @ b
    sign, logdet = np.linalg.slogdet(s)
    L = np.linalg.cholesky(s)
    return np.sum(x * xi) + np.linalg.det(s) + logdet + np.sum(L) + np.linalg.norm(b)
""", None, lambda r: (r.standard_normal((3, 3)), r.standard_normal(3))),
    "contractions": ("""
def f(a, b, c):
    e = np.einsum("ij,jk->ik", a, b)
    t = np.tensordot(e, c, axes=1)
    return np.dot(t, t) + np.outer(c, c).sum() + np.inner(c, c) + np.trace(e @ e.T)
""", None, lambda r: (r.standard_normal((3, 2)), r.standard_normal((2, 4)),
                      r.standard_normal(4))),
    "where_clip_abs": ("""
def f(x, y):
    z = np.where(x > 0, x * y, -y)
    return np.clip(z, -0.5, 0.7) + np.abs(x - y) + np.minimum(x, y ** 2)
""", None, lambda r: (r.standard_normal(6), r.standard_normal(6))),
    "complex_holomorphic": ("""
def f(z, w):
    return np.exp(1j * z) * w + z ** 2 / (w + 3.0)
""", None, lambda r: (r.standard_normal(3) + 1j * r.standard_normal(3),
                      r.standard_normal(3) + 1j * r.standard_normal(3))),
    "real_of_complex": ("""
def f(x):
    z = np.fft.fft(x)
    return np.real(z * np.conj(z)) + np.imag(z)
""", None, lambda r: (r.standard_normal(4),)),
    "layout_rules": ("""
def f(x, y):
    a = np.pad(x, 2, mode="reflect") + 0.0
    b = np.pad(x, (1, 2))
    c = np.sort(y) * np.sinc(y)
    d = np.nansum(x * y) + np.nanmean(x) + np.max(np.round(y)) * 0.0 + np.max(x)
    e = np.prod(np.where(x > 0.5, 0.0, x)) + np.prod(y[:3])
    m = np.maximum(x, x[::-1])            # ties in the middle
    return np.concatenate([a, b, c, np.atleast_1d(d), np.atleast_1d(e), np.diff(y),
                           np.tile(y, 2), m, np.linalg.norm(np.stack([x, y]), axis=0)])
""", None, lambda r: (r.standard_normal(6), r.standard_normal(6))),
    "scalars": ("""
def f(x, y):
    z = x * y + x ** 2
    w = z / (1.0 + y * y)
    return -w + abs(z)
""", None, lambda r: (0.7, -1.3)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_against_jax(name):
    text, jax_text, make = CASES[name]
    f, fj = both(text, jax_text)
    r = rng_for(name)
    args = make(r)
    tangents = tree_util.tree_map(
        lambda a: (r.standard_normal(np.shape(a)) + (1j * r.standard_normal(np.shape(a))
                                                     if np.iscomplexobj(a) else 0))
        if isinstance(a, (float, complex, np.ndarray)) and np.asarray(a).dtype.kind in "fc"
        else a, args)
    tangents = tree_util.tree_map(
        lambda t, a: float(t) if isinstance(a, float) else t, tangents, args)
    diff = [i for i, a in enumerate(args) if np.asarray(tree_util.tree_leaves(a)[0]).dtype.kind
            in "fc"]
    before = tree_util.tree_map(np.copy, (args, tangents))
    out, out_dot = pb.jvp(f, args, tangents)

    def fixed(*d):
        full = list(args)
        for i, v in zip(diff, d):
            full[i] = v
        return fj(*full)
    jout, jdot = jax.jvp(fixed, tuple(args[i] for i in diff), tuple(tangents[i] for i in diff))
    assert_close(out, jout)
    assert_close(out_dot, jdot)
    # the arguments and the tangents are left as they were
    assert_close((args, tangents), before, rtol=0)
    # the tangent has the output's structure and types
    assert tree_util.tree_structure(out_dot) == tree_util.tree_structure(out)
    for o, t in zip(tree_util.tree_leaves(out), tree_util.tree_leaves(out_dot)):
        assert np.shape(o) == np.shape(t)
        if isinstance(o, np.ndarray):
            assert isinstance(t, np.ndarray) and t.dtype == o.dtype


def test_has_aux_and_tuple_conventions():
    f = function_from_source("""
def f(x, k):
    y = np.sin(x) * k
    return np.sum(y), {"y": y, "k": k}
""")
    x, t = np.array([0.3, 0.5]), np.array([1.0, -2.0])
    out, out_dot, aux = pb.jvp(f, (x, 2), (t, 0), has_aux=True)
    assert out == pytest.approx(np.sum(np.sin(x) * 2))
    assert out_dot == pytest.approx(np.sum(np.cos(x) * 2 * t))
    np.testing.assert_allclose(aux["y"], np.sin(x) * 2)
    with pytest.raises(TypeError, match="tuples"):
        pb.jvp(f, x, t)


def test_math_scalar_function_by_finite_differences():
    f = function_from_source("""
def f(x, y):
    s = 0.0
    for k in range(1, 4):
        s = s + math.sin(k * x) * math.exp(-y * k) + math.atan2(x, y + k)
    return s + math.hypot(x, y) + math.log(1.0 + x * x, 2.0)
""")
    x, y, tx, ty = 0.4, 0.9, 0.3, -1.1
    out, dot = pb.jvp(f, (x, y), (tx, ty))
    h = 1e-6
    fd = (f(x + h * tx, y + h * ty) - f(x - h * tx, y - h * ty)) / (2 * h)
    assert isinstance(dot, float)
    assert dot == pytest.approx(fd, rel=1e-7)


def test_float32_stays_float32():
    f = function_from_source("""
def f(x, w):
    y = np.tanh(x * w + 1.0)
    z = np.zeros(3, dtype=np.float32)
    z[0] = y[1]
    return y @ w, z.copy(), np.sum(y) * 2.0
""")
    x = np.linspace(-1, 1, 3).astype(np.float32)
    w = np.ones(3, dtype=np.float32)
    out, dot = pb.jvp(f, (x, w), (np.ones(3, np.float32), np.ones(3, np.float32)))
    for o, d in zip(out, dot):
        assert np.asarray(d).dtype == np.float32 == np.asarray(o).dtype


def test_real_output_of_complex_gets_real_tangent():
    f = function_from_source("""
def f(z):
    return np.real(z * z)
""")
    z = np.array([1.0 + 2.0j, 0.5 - 1.0j])
    out, dot = pb.jvp(f, (z,), (np.ones(2, complex),))
    assert dot.dtype == np.float64
    np.testing.assert_allclose(dot, np.real(2 * z))


def test_caller_tangent_is_never_written_and_output_is_new():
    f = function_from_source("""
def f(x):
    y = x + 0.0
    y[0] = 5.0
    return y
""")
    g = function_from_source("""
def g(x):
    return x
""")
    x, t = np.arange(3.0), np.ones(3)
    out, dot = pb.jvp(f, (x,), (t,))
    np.testing.assert_array_equal(t, np.ones(3))
    np.testing.assert_array_equal(dot, [0.0, 1.0, 1.0])
    out, dot = pb.jvp(g, (x,), (t,))
    assert not np.shares_memory(dot, t)


def test_append_and_add_at():
    f, fj = both("""
def f(x):
    parts = []
    for i in range(3):
        parts.append(x[i] * x)
    y = np.zeros(4)
    np.add.at(y, [0, 0, 2], x)
    return np.stack(parts), y.copy()
""", """
def f(x):
    parts = []
    for i in range(3):
        parts.append(x[i] * x)
    y = np.zeros(4).at[np.array([0, 0, 2])].add(x)
    return np.stack(parts), y.copy()
""")
    x, t = np.array([0.5, -1.0, 2.0]), np.array([1.0, 2.0, 3.0])
    assert_close(pb.jvp(f, (x,), (t,)), jax.jvp(fj, (x,), (t,)))


def test_function_values_partials_methods():
    class Scale:
        def __init__(self, k):
            self.k = k

        def __call__(self, v):
            return np.sin(v) * self.k

    def twice(fn, v):
        return fn(v) + fn(2.0 * v)

    f = function_from_source("""
def f(x, fn, act):
    p = functools.partial(twice, fn)
    return p(x) + act(x)
""", {"functools": functools, "twice": twice})
    x, t = np.array([0.2, 0.4]), np.array([1.0, -1.0])
    out, dot = pb.jvp(f, (x, Scale(3.0), np.tanh), (t, None, None))
    want = (3 * np.cos(x) * t + 3 * np.cos(2 * x) * 2 * t) + (1 - np.tanh(x) ** 2) * t
    np.testing.assert_allclose(dot, want, rtol=1e-12)


def test_top_level_partial_and_numpy_function():
    def f(x, k):
        return np.sin(x) * k
    out, dot = pb.jvp(functools.partial(f, k=2.0), (np.ones(2),), (np.ones(2),))
    np.testing.assert_allclose(dot, 2 * np.cos(1.0) * np.ones(2))
    out, dot = pb.jvp(np.exp, (1.0,), (2.0,))
    assert dot == pytest.approx(2 * np.e)


def test_custom_jvp():
    @pb.custom_jvp
    def softplus(x):
        return np.log1p(np.exp(x))

    @softplus.defjvp
    def softplus_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return softplus(x), t * 7.0           # a deliberately different rule

    f = function_from_source("""
def f(x):
    return softplus(x) * 2.0
""", {"softplus": softplus})
    x = np.array([0.1, 0.2])
    out, dot = pb.jvp(f, (x,), (np.ones(2),))
    np.testing.assert_allclose(dot, 14.0)
    out, dot = pb.jvp(softplus, (x,), (np.ones(2),))
    np.testing.assert_allclose(dot, 7.0)
    # reverse mode transposes the rule (JAX's): the deliberately different rule shows
    np.testing.assert_allclose(pb.grad(lambda v: np.sum(softplus(v)))(x), [7.0, 7.0])
    np.testing.assert_allclose(pb.grad(lambda v: np.sum(f(v)))(x), [14.0, 14.0])


def test_linearize():
    f = function_from_source("""
def f(x, y):
    return np.sin(x) * y
""")
    x, y = np.array([0.1, 0.2]), np.array([1.0, 3.0])
    out, f_jvp = pb.linearize(f, x, y)
    np.testing.assert_allclose(out, np.sin(x) * y)
    np.testing.assert_allclose(f_jvp(np.ones(2), np.zeros(2)), np.cos(x) * y)
    np.testing.assert_allclose(f_jvp(np.zeros(2), np.ones(2)), np.sin(x))


def test_source_reads_like_the_math():
    f = function_from_source("""
def f(x, w):
    y = np.tanh(x @ w)
    z = np.zeros(3)
    z[0] = y[0, 1]
    return np.sum(y) + z
""")
    src = pb.source(f, np.ones((2, 3)), np.ones((3, 3)), mode="forward")
    for line in ["def f_jvp(x, w, x_dot, w_dot):",
                 "# line 2: y = np.tanh(x @ w)",
                 "xw_dot = x_dot @ w + x @ w_dot",
                 "y_dot = xw_dot * (1.0 - y * y)",
                 "z_dot = zeros_tangent(z)",
                 "y_item_dot = y_dot[0, 1]",
                 "z_dot[0] = y_item_dot",
                 "return (out, output_tangent(out_dot, out, fresh=True))"]:
        assert line in src, line
    assert "def f_jvp(x, w, w_dot):" in pb.source(f, argnums=1, mode="forward")
    with pytest.raises(ValueError, match="mode"):
        pb.source(f, mode="sideways")


# -- refusals -----------------------------------------------------------------------------

def test_no_forward_rule_is_a_clear_error():
    import scipy.integrate          # (odeint: SciPy's one rule without a forward rule)
    f = function_from_source("""
def f(a):
    e = scipy.integrate.odeint(field, a, np.array([0.0, 0.5]))
    return np.sum(e)
""", {"scipy": scipy, "field": lambda y, t: -y})
    a = np.ones(3) + 0.1
    with pytest.raises(pb.NonDifferentiableError) as info:
        pb.jvp(f, (a,), (np.ones(3),))
    text = str(info.value)
    assert "forward mode has no rule for scipy.integrate.odeint" in text
    assert "e = scipy.integrate.odeint(field, a, np.array([0.0, 0.5]))" in text
    assert "pb.vjp" in text


def test_custom_vjp_is_refused_in_forward_mode():
    @pb.custom_vjp
    def g(x):
        return np.sin(x)
    g.defvjp(lambda x: (np.sin(x), np.cos(x)), lambda c, ct: (ct * c,))
    f = function_from_source("""
def f(x):
    return g(x) * 2.0
""", {"g": g})
    with pytest.raises(pb.NonDifferentiableError, match="custom_vjp"):
        pb.jvp(f, (np.ones(2),), (np.ones(2),))


def test_complex_abs_tangent_is_re_conj_z_dz_over_abs_z():
    f = function_from_source("""
def f(z):
    return np.abs(z)
""")
    z = np.array([1.0 + 1.0j, 3.0 - 4.0j, 0.0j])
    dz = np.array([1.0 + 1.0j, 1.0j, 2.0 + 1.0j])
    # JAX's convention: Re(conj(z) dz) / |z|; zero at z == 0 (the slopes split)
    assert pb.jvp(f, (z,), (dz,))[1] == pytest.approx([2 ** 0.5, -0.8, 0.0], rel=1e-14)


def test_scipy_elementwise_ufuncs_by_central_differences():
    # main's SciPy rules meet forward mode: the ufuncs declared elementwise
    # (registry.declare_elementwise) read their reverse rule forwards, on the
    # NumPy path and in fused kernels; complex arguments are refused, as they
    # are declared not holomorphic
    sp = pytest.importorskip("scipy.special")
    f = function_from_source("""
def f(x, y, fn):
    return np.sum(sp.gammaln(x) * sp.xlogy(x, y) + sp.erf(y) * fn(x) + sp.expit(x * y))
""", {"sp": sp})
    r = rng_for("scipy")
    x, y = r.uniform(0.5, 2.0, 300), r.uniform(0.2, 3.0, 300)
    tx, ty = r.standard_normal(300), r.standard_normal(300)
    h = 1e-6
    fd = (f(x + h * tx, y + h * ty, sp.ndtr) - f(x - h * tx, y - h * ty, sp.ndtr)) / (2 * h)
    out, dot = pb.jvp(f, (x, y, sp.ndtr), (tx, ty, None))
    assert out == pytest.approx(f(x, y, sp.ndtr), rel=1e-12)
    assert dot == pytest.approx(fd, rel=1e-7)
    with kernels.options(lower=True, threshold=0, min_operations=2):
        fused = pb.jvp(f, (x, y, sp.ndtr), (tx, ty, None))
    assert fused[1] == pytest.approx(dot, rel=1e-9)
    g = function_from_source("""
def g(z):
    return sp.erf(z)
""", {"sp": sp})
    z = np.array([0.5 + 0.1j])
    with pytest.raises(pb.NonDifferentiableError, match="complex"):
        pb.jvp(g, (z,), (np.ones(1, complex),))


def test_mismatched_tangents():
    with pytest.raises(ValueError, match="one tangent per primal"):
        pb.jvp(np.sum, (np.ones(3),), (np.ones(3), np.ones(3)))
    with pytest.raises(ValueError, match="structure"):
        pb.jvp(lambda p: p[0], ((1.0, 2.0),), ([1.0, 2.0],))
    with pytest.raises(TypeError, match="complex tangent"):
        pb.jvp(np.sin, (np.ones(2),), (np.ones(2) * 1j,))


# -- fused elementwise regions ----------------------------------------------------------------

def test_fused_kernel_tangent_matches_numpy_path():
    f = function_from_source("""
def f(x, y):
    z = np.tanh(2.0 * x + 1.0) * x + np.exp(-y * y) * x
    return z, np.sum(np.sin(z) * z + z * z)
""")
    r = rng_for("fused")
    x, y = r.standard_normal(200), r.standard_normal(200)
    tx, ty = r.standard_normal(200), r.standard_normal(200)
    plain = pb.jvp(f, (x, y), (tx, ty))
    with kernels.options(lower=True, threshold=0, min_operations=2):
        src = pb.source(f, x, y, mode="forward")
        fused = pb.jvp(f, (x, y), (tx, ty))
    assert "_tangent(x, y, (x_dot, y_dot))" in src
    assert_close(fused, plain, rtol=1e-9)


# -- the program corpus: <vjp(ct), t> == <ct, jvp(t)> ---------------------------------------

def _program(name):
    return importlib.import_module(f"programs.{name}")


# programs reverse mode refuses too; none today: kalman_filter, once refused by both, is
# differentiated by both since the run-time number check of issue 12
# (runtime.number_to_update), newton_root (a pb.grad inside) since higher order (issue 15),
# decorated_loss and optimiser_loop (*args, a pb.grad inside) since forward mode's *args
# and star calls and higher order
REFUSED_BOTH = set()
# programs forward mode alone refuses, and why
REFUSED_FORWARD = {
    "gp_ard_cho_solve": "scipy.linalg.cho_factor and cho_solve have no forward rules yet",
    "nonlocal_accumulator": "`list(filter(lambda g: g > 0.0, gaps))`: no tangents through filter",
}
# the corpus' programs both modes fail today (test_programs.XFAIL, one list, strict)
from test_programs import XFAIL as PROGRAM_XFAIL  # noqa: E402


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=pytest.mark.xfail(strict=True, reason="issue 13: " + PROGRAM_XFAIL[n]))
    if n in PROGRAM_XFAIL else n for n in programs.NAMES])
def test_program_dot_product_identity(name):
    m = _program(name)
    args = tuple(m.make_inputs(rng_for(name)))
    r = np.random.default_rng(1)

    def tangent(a, on):
        if isinstance(a, np.ndarray) and a.dtype.kind == "f":
            return r.standard_normal(a.shape) if on else np.zeros_like(a)
        if isinstance(a, float):
            return float(r.standard_normal()) if on else 0.0
        return a
    tangents = tuple(tree_util.tree_map(lambda a: tangent(a, i in m.argnums), a)
                     for i, a in enumerate(args))
    if name in REFUSED_BOTH or name in REFUSED_FORWARD:
        with pytest.raises(pb.PullbackError):
            pb.jvp(m.fun, args, tangents)
        return
    out, out_dot = pb.jvp(m.fun, args, tangents)
    grads = pb.grad(m.fun, argnums=tuple(m.argnums))(*args)
    lhs = 0.0
    for i, g in zip(m.argnums, grads):
        for gl, tl in zip(tree_util.tree_leaves(g), tree_util.tree_leaves(tangents[i])):
            if isinstance(tl, (np.ndarray, float)):
                lhs += float(np.sum(np.asarray(gl) * np.asarray(tl)))
    assert np.isclose(lhs, float(out_dot), rtol=1e-8, atol=1e-10), (lhs, out_dot)
    assert out == pytest.approx(m.fun(*args), rel=1e-12)


# -- jacfwd ----------------------------------------------------------------------------------

def test_jacfwd_against_jax():
    f, fj = both("""
def f(x, y):
    return np.sin(x)[:, None] * y, np.sum(x * y[:, 0])
""")
    x, y = np.array([0.1, 0.2, 0.3]), np.arange(6.0).reshape(3, 2)
    for argnums in (0, 1, (0, 1), (1,)):
        assert_close(pb.jacfwd(f, argnums=argnums)(x, y),
                     jax.jacfwd(fj, argnums=argnums)(x, y))
    g, gj = both("""
def g(p, s):
    return p["a"] * np.tanh(p["b"] * s)
""")
    p = {"a": 1.5, "b": np.array([0.3, -0.2])}
    assert_close(pb.jacfwd(g)(p, 2.0), jax.jacfwd(gj)(p, 2.0))
    out = pb.jacfwd(g, has_aux=False)(p, 2.0)
    assert set(out) == {"a", "b"} and np.shape(out["b"]) == (2, 2)


def test_jacfwd_has_aux_and_refuses_integers():
    f = function_from_source("""
def f(x):
    return x * x, {"n": 3}
""")
    jac, aux = pb.jacfwd(f, has_aux=True)(np.array([1.0, 2.0]))
    np.testing.assert_allclose(jac, np.diag([2.0, 4.0]))
    assert aux == {"n": 3}
    with pytest.raises(TypeError, match="float or complex"):
        pb.jacfwd(f)(np.array([1, 2]))


def test_show_forward_mode(tmp_path, capsys):
    from pullback.driver import cli
    path = tmp_path / "model.py"
    path.write_text("import numpy as np\n\n\ndef loss(w, x):\n    h = np.tanh(x @ w)\n"
                    "    return np.sum(h * h)\n")
    assert cli.main(["show", f"{path}:loss", "--mode", "forward", "--argnums", "0",
                     "--color", "never"]) == 0
    out = capsys.readouterr().out
    assert "def loss_jvp(w, x, w_dot):" in out
    assert "xw_dot = x @ w_dot" in out and "# line 5: h = np.tanh(x @ w)" in out


# -- every rule's forward rule, against central differences ----------------------------------
# (test_rules' table: each registered primitive on real, float32 and complex arguments)

import test_rules as tr  # noqa: E402
from pullback.checks import is_inexact  # noqa: E402
from pullback.forward.calls import jvp_call  # noqa: E402
from pullback.forward.rules import how  # noqa: E402


def _call_text(key, nargs, kw):
    params = [f"a{i}" for i in range(nargs)]
    kws = [f"{k}=kw_{k}" for k in kw]
    if isinstance(key, str):
        attr = key.split(".", 1)[1]
        if nargs == 1 and not kw and not callable(getattr(np.ones((2, 2)), attr, None)):
            body = f"a0.{attr}"
        else:
            body = f"a0.{attr}({', '.join(params[1:] + kws)})"
    else:
        body = f"callee({', '.join(params + kws)})"
    return f"def f({', '.join(params)}):\n    return {body}\n"


#: run-time helpers that change their first argument by design, where generated
#: code proves it held alone (``control.dict_store``: frontend.dict_in_place); a
#: call here gets copies of the arguments and tangents
_CHANGES_ITS_ARGUMENT = {pb.runtime.control.dict_store}


@pytest.mark.parametrize("case,kind", list(tr._params()))
def test_forward_rule(case, kind):
    rule = tr.RULES[case.key]
    rng = np.random.default_rng(zlib.crc32(f"fwd{tr.keyname(case.key)}{kind}".encode()))
    args = case.make(tr.Gen(rng, kind))
    ba = rule.bind(args, case.kw)
    where = tr.positions(rule, len(args))
    # tangents for the positional arguments (a differentiable one passed by
    # keyword, as SciPy's b= and cov=, is held fixed)
    diff = [n for n in rule.diff if n in ba.arguments and n in where]
    f = function_from_source(_call_text(case.key, len(args), case.kw),
                             {"callee": case.key, **{f"kw_{k}": v for k, v in case.kw.items()}})
    v = {n: tr.tmap(lambda x: tr.random_like(rng, x), ba.arguments[n]) for n in diff}
    wrt, tangents = [], []
    for n in diff:
        w = where[n]
        positions = range(w.start, w.stop) if isinstance(w, slice) else [w]
        for k, i in enumerate(positions):
            if not is_inexact(args[i]):
                continue
            wrt.append(i)
            tangents.append(v[n][k] if isinstance(w, slice) else v[n])
    if not wrt:
        pytest.skip("this rule case passes its floats by keyword only (SciPy's b=, cov=): "
                    "forward tangents go to positional arguments; not an open gap")
    kind_of, _ = how(rule, case.key)
    before = tr.copy.deepcopy((args, tangents))
    given = (args, tangents)
    if case.key in _CHANGES_ITS_ARGUMENT:
        given = tr.copy.deepcopy(given)
    try:
        with np.errstate(invalid="ignore" if case.quiet else "warn"):
            out, dot = jvp_call(f, tuple(given[0]), {}, tuple(wrt), tuple(given[1]), top=True)
    except pb.NonDifferentiableError as err:
        # no forward rule, one that holds for real values only, or a case of a
        # rule its helper refuses (np.linalg.norm's other orders): said, not wrong
        assert "forward mode has no rule" in str(err), str(err)
        return
    assert tr.same(before, (args, tangents)), "the tangent function wrote to an input"

    def at(t):
        moved = tr.tmap(tr.upcast, list(args))
        for i, tan in zip(wrt, tangents):
            moved[i] = tr.tmap(lambda x, d: tr.shifted(x, d, t), moved[i], tan)
        return tr.call(case.key, moved, tr.tmap(tr.upcast, case.kw))
    try:
        jv = tr.tmap(lambda p, m: None if isinstance(p, bool) else    # cho_factor's lower
                     (np.asarray(p) - np.asarray(m)) / (2 * tr.STEP), at(tr.STEP), at(-tr.STEP))
    except ValueError:                     # math.pow off its domain, one step away
        pytest.skip("a central-difference step leaves the function's domain (math.pow "
                    "near its edge): this case cannot be checked by differences")
    u = tr.tmap(lambda y: tr.random_like(rng, y), out)
    lhs, rhs = tr.pair(u, jv), tr.pair(u, dot)
    scale = sum(abs(tr.pair(a, b)) for a, b in zip(tr.leaves(u), tr.leaves(jv)))
    rtol = 2e-4 if kind == "f32" else 1e-6
    assert abs(lhs - rhs) <= rtol * max(scale, 1.0), (lhs, rhs)
    for o, d in zip(tr.leaves(out), tr.leaves(dot)):
        if isinstance(o, np.ndarray) and o.dtype.kind in "fc":
            assert np.shape(d) == o.shape and np.asarray(d).dtype == o.dtype


# -- random programs (fuzzing.py): <vjp(ct), t> == <ct, jvp(t)> ----------------------------

import copy  # noqa: E402
import dataclasses  # noqa: E402

from hypothesis import HealthCheck, assume, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import fuzzing  # noqa: E402

FUZZ = int(os.environ.get("PULLBACK_FUZZ_EXAMPLES", "30"))


def _random_tangent(x, rng):
    if isinstance(x, np.ndarray) and x.dtype.kind == "f":
        return rng.standard_normal(x.shape).astype(x.dtype)
    if isinstance(x, float):
        return float(rng.standard_normal())
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*(_random_tangent(v, rng) for v in x))
    if isinstance(x, (list, tuple)):
        return type(x)(_random_tangent(v, rng) for v in x)
    if isinstance(x, dict):
        return {k: _random_tangent(v, rng) for k, v in x.items()}
    if dataclasses.is_dataclass(x):
        return type(x)(**{f.name: _random_tangent(getattr(x, f.name), rng)
                          for f in dataclasses.fields(x)})
    return x


@settings(max_examples=FUZZ, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(fuzzing.programs(), st.integers(0, 2 ** 32 - 1))
def test_random_programs_forward(program, seed):
    """What reverse mode differentiates, forward mode agrees with; what it
    refuses, forward mode refuses too; tangents are never written to."""
    f = fuzzing.load(program.source)
    rng = np.random.default_rng(seed)
    args = fuzzing.make_args(program, rng)
    try:
        with np.errstate(all="raise"):
            value = f(*copy.deepcopy(args))
    except (FloatingPointError, OverflowError, ZeroDivisionError, ValueError):
        assume(False)
    assume(np.all(np.isfinite(value)) and np.max(np.abs(value)) <= 1e6)
    tangents = tuple(_random_tangent(a, rng) for a in args)
    saved = copy.deepcopy(tangents)
    if program.must_refuse:
        with pytest.raises(pb.PullbackError):
            pb.jvp(f, tuple(args), tangents)
        return
    try:
        out, back = pb.vjp(f, *args)
    except pb.PullbackError:
        with pytest.raises(pb.PullbackError):
            pb.jvp(f, tuple(args), tangents)
        return
    ct = np.float64(1.3) if program.returns == "s" else rng.uniform(-1, 1, np.shape(value))
    grads = back(ct)
    _, dot = pb.jvp(f, tuple(args), tangents)
    lhs = sum(float(np.sum(np.asarray(g, float) * np.asarray(t, float)))
              for (_, g), (_, t) in zip(fuzzing.leaves(grads), fuzzing.leaves(tangents))
              if isinstance(t, (np.ndarray, float)) and g is not None)
    rhs = float(np.sum(np.asarray(ct) * np.asarray(dot)))
    assert np.isclose(lhs, rhs, rtol=1e-7, atol=1e-9), (lhs, rhs, program.source)
    assert all(fuzzing.same_bits(a, b) for a, b in zip(tangents, saved)), "tangent written"


def test_rebinding_a_global_transforms_again():
    ns = {}
    f = function_from_source("""
def f(x):
    return act(x) * 2.0
""", ns)
    f.__globals__["act"] = np.sin
    x, t = np.array([0.1, 0.2]), np.ones(2)
    np.testing.assert_allclose(pb.jvp(f, (x,), (t,))[1], 2 * np.cos(x))
    f.__globals__["act"] = np.tanh
    np.testing.assert_allclose(pb.jvp(f, (x,), (t,))[1], 2 * (1 - np.tanh(x) ** 2))


_Pair = collections.namedtuple("_Pair", "w b")


def _through_a_namedtuple(x):
    p = _Pair(x * 2.0, b=x + 1.0)
    return p.w * p.b


def test_a_structure_built_inside_has_a_structured_tangent():
    # issue 13's constructed namedtuples/dataclasses (a 'construct' op) reached
    # forward mode without a tangent rule: AttributeError; now P(w_dot, b=b_dot)
    out, t = pb.jvp(_through_a_namedtuple, (3.0,), (1.0,))
    assert out == 24.0 and t == 2.0 * 4.0 + 6.0 * 1.0


# -- user functions with *args, keyword-only and **kwargs parameters ---------------------------

def _varargs_helper(a, *rest, scale=2.0, **kw):
    return a * scale + sum(r * r for r in rest) + kw.get("b", 0.0) * a


def _varargs_caller(x, y):
    return _varargs_helper(x, y, np.sin(y), scale=3.0, b=x) + _star(x, y * 2.0, k=0.5)


def _star(*xs, k=1.0):
    return sum(np.tanh(v) * k for v in xs)


def _varargs_helper_jax(a, *rest, scale=2.0, **kw):
    return a * scale + sum(r * r for r in rest) + kw.get("b", 0.0) * a


def _star_jax(*xs, k=1.0):
    return sum(jnp.tanh(v) * k for v in xs)


def _varargs_caller_jax(x, y):
    return _varargs_helper_jax(x, y, jnp.sin(y), scale=3.0, b=x) + _star_jax(x, y * 2.0, k=0.5)


def test_varargs_callees_against_jax():
    x, y = np.array([0.3, -1.2, 0.7]), np.array([1.1, 0.4, -0.5])
    tx, ty = np.array([1.0, 0.5, -2.0]), np.array([0.25, -1.0, 3.0])
    assert_close(pb.jvp(_varargs_caller, (x, y), (tx, ty)),
                 jax.jvp(_varargs_caller_jax, (x, y), (tx, ty)))
    # a variadic function differentiated itself: one transform per layout
    assert_close(pb.jvp(_star, (x, y, x), (tx, ty, tx)),
                 jax.jvp(_star_jax, (x, y, x), (tx, ty, tx)))
    assert_close(pb.jvp(_star, (x,), (ty,)), jax.jvp(_star_jax, (x,), (ty,)))
    assert_close(pb.jvp(lambda v: _star(v, v, k=2.0), (y,), (ty,)),
                 jax.jvp(lambda v: _star_jax(v, v, k=2.0), (y,), (ty,)))


# -- calls with *xs and **d inside the function (runtime.control.star_call) -----------------

def test_star_calls_carry_tangents():
    f, fj = both('''
def f(x, w):
    def inner(a, b, c=1.0, *, scale=1.0):
        return scale * np.sum(np.sin(a) * b) + c
    parts = (x, w)
    opts = {"scale": 2.0 * w[0]}
    return inner(*parts, c=x[1], **opts) + inner(*[x, x])
''')
    x, w = np.array([0.3, -1.2, 0.7]), np.array([1.5, 0.4, -0.6])
    tx, tw = np.array([1.0, -0.5, 0.25]), np.array([0.2, 0.1, -0.3])
    out, out_dot = pb.jvp(f, (x, w), (tx, tw))
    ref, ref_dot = jax.jvp(fj, (x, w), (tx, tw))
    assert_close((out, out_dot), (ref, ref_dot), rtol=1e-12)
