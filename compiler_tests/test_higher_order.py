"""Derivatives of derivatives (issue 15, "Higher order"): forward over reverse
(``pb.jvp`` of ``pb.grad``, ``pb.hessian``, ``pb.hvp``, ``pb.jacfwd`` of
``pb.grad``), reverse over reverse (``pb.grad(pb.grad(f))``, ``pb.vjp`` of a
gradient, ``pb.grad`` called inside a differentiated function) and third
derivatives.

Each function is written once as text and defined twice: with NumPy for
pullback and with ``jax.numpy`` for JAX (float64), the oracle
(``jax.hessian``, ``jax.jvp(jax.grad)``, ``jax.grad(jax.grad)``); a function
JAX cannot run as written (indexing writes) has a JAX twin.  Every case is
also checked against central differences of ``pb.grad``.
"""
import functools
import math
import zlib

import numpy as np
import pytest

import pullback as pb
from pullback.testing import function_from_source

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
from jax import tree_util  # noqa: E402

RTOL = 1e-9


def rng_for(name):
    return np.random.default_rng(zlib.crc32(name.encode()))


def both(text, jax_text=None, extra=None):
    """The function in ``text`` for pullback (NumPy) and for JAX."""
    f = function_from_source(text, dict(extra or {}))
    ns = {"np": jnp, "jnp": jnp, "math": math, **(extra or {})}
    exec(jax_text or text, ns)
    name = text.strip().split("def ", 1)[1].split("(", 1)[0].strip()
    return f, ns[name]


def assert_close(a, b, rtol=RTOL, atol=1e-11):
    la, ta = tree_util.tree_flatten(a)
    lb, tb = tree_util.tree_flatten(b)
    assert len(la) == len(lb), (a, b)
    for x, y in zip(la, lb):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=rtol, atol=atol)


def central_hvp(f, args, v, h=1e-5):
    """Central differences of pb.grad (every argument) along ``v``."""
    argnums = tuple(range(len(args)))
    g = pb.grad(f, argnums=argnums)
    up = g(*[a + h * d for a, d in zip(args, v)])
    down = g(*[a - h * d for a, d in zip(args, v)])
    return tuple((np.asarray(u) - np.asarray(w)) / (2 * h) for u, w in zip(up, down))


# -- the functions: (text, jax text or None, arguments) -------------------------------

W = np.array([[0.3, -0.2, 0.5], [0.1, 0.4, -0.3], [-0.2, 0.2, 0.1], [0.05, -0.1, 0.3]])
A = np.array([[2.0, 0.3, 0.1, 0.0], [0.3, 1.5, -0.2, 0.1], [0.1, -0.2, 1.8, 0.4],
              [0.0, 0.1, 0.4, 2.2]])
EXTRA = {"W": W, "A": A, "functools": functools}

CASES = {
    "elementwise": ("""
def f(x):
    return np.sum(np.sin(x) * x ** 3 + np.exp(-x * x))
""", None, "v"),
    "two_args": ("""
def f(x, y):
    return np.sum(np.tanh(x * y) + x ** 2 * y)
""", None, "vv"),
    "scalar_and_array": ("""
def f(x, s):
    return np.sum(np.log1p(x * x) * s) + s ** 3 * np.sum(x)
""", None, "vs"),
    "loop_tape": ("""
def f(x):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + np.sin(x[i]) * s + x[i] ** 2
    return s
""", None, "v"),
    "while_loop": ("""
def f(x):
    s = 1.0
    k = 0
    while k < 3:
        s = s * np.cos(np.sum(x) * 0.3) + np.sum(x ** 2) * 0.1
        k = k + 1
    return s
""", None, "v"),
    "branches": ("""
def f(x):
    s = np.sum(x)
    if s > 0.0:
        y = np.sin(x) * s
    else:
        y = np.cos(x) * s * s
    return np.sum(y * x)
""", None, "v"),
    "closure": ("""
def f(x):
    scale = np.sum(x ** 2)
    def inner(z):
        return np.sin(z) * scale
    return np.sum(inner(x) * x)
""", None, "v"),
    "indexing_write": ("""
def f(x):
    y = np.zeros(4)
    for i in range(4):
        y[i] = x[i] * x[(i + 1) % 4]
    return np.sum(np.sin(y) * y)
""", """
def f(x):
    y = jnp.zeros(4)
    for i in range(4):
        y = y.at[i].set(x[i] * x[(i + 1) % 4])
    return jnp.sum(jnp.sin(y) * y)
""", "v"),
    "indexed_reads_accumulate": ("""
def f(x):
    s = 0.0
    for i in range(x.shape[0] - 1):
        s = s + x[i] * x[i + 1] ** 2 + np.exp(x[i] * 0.5)
    return s
""", None, "v"),
    "containers": ("""
def f(x, y):
    parts = [x * y, np.sin(x), y ** 2]
    total = 0.0
    for p in parts:
        total = total + np.sum(p * p)
    d = {"a": x, "b": y}
    return total + np.sum(d["a"] * np.cos(d["b"]))
""", None, "vv"),
    "list_appends": ("""
def f(x):
    parts = []
    for i in range(3):
        parts.append(np.sin(x[i]) * x[i + 1])
    return sum(parts) * np.sum(x ** 2)
""", None, "v"),
    "linalg_solve": ("""
def f(x):
    M = A + np.outer(x, x)
    return np.sum(np.linalg.solve(M, x))
""", None, "v"),
    "linalg_inv_det": ("""
def f(x):
    M = A + np.diag(x * x)
    return np.sum(np.linalg.inv(M)) + np.log(np.linalg.det(M))
""", None, "v"),
    "user_function_calls": ("""
def f(x):
    h = layer(x, W)
    return np.sum(h * h) + np.sum(layer(x * 0.5, W))

def layer(h, w):
    return np.tanh(h @ w)
""", None, "v"),
    "mlp_loss": ("""
def f(x):
    h = np.tanh(x @ W)
    return np.mean((h - 0.3) ** 2)
""", None, "v"),
    "quadratic_form": ("""
def f(x):
    return x @ A @ x + np.sum(x ** 4)
""", None, "v"),
    "where_and_max": ("""
def f(x):
    y = np.where(x > 0.0, x ** 3, np.sin(x))
    return np.sum(y) + np.max(x) ** 2
""", None, "v"),
    "logsumexp": ("""
def f(x):
    m = np.max(x)
    return m + np.log(np.sum(np.exp(x - m)))
""", None, "v"),
    "reshape_transpose_concat": ("""
def f(x):
    m = np.reshape(np.concatenate([x, x ** 2]), (2, 4))
    return np.sum(np.sin(m.T @ m))
""", None, "v"),
    "reductions": ("""
def f(x):
    return np.std(x) * np.mean(x ** 3) + np.prod(np.cos(x))
""", None, "v"),
    "abs_clip_power": ("""
def f(x, y):
    return np.sum(np.abs(x) ** 3 * y) + np.sum(np.clip(x, -0.5, 0.5) * y ** 2) + np.sum(y ** x)
""", None, "vp"),
    "dot_and_cumsum": ("""
def f(x):
    return np.dot(np.cumsum(x), x) * np.sum(np.sin(x))
""", None, "v"),
    "tuple_input": ("""
def f(p, x):
    w, b = p
    return np.sum(np.tanh(x * w + b) ** 2)
""", None, "tv"),
}


def make_args(name, spec):
    rng = rng_for(name)
    out = []
    for c in spec:
        if c == "v":
            out.append(rng.standard_normal(4) * 0.7)
        elif c == "p":
            out.append(rng.uniform(0.5, 1.5, 4))
        elif c == "s":
            out.append(float(rng.standard_normal()))
        elif c == "t":
            out.append((rng.standard_normal(4) * 0.5, rng.standard_normal(4) * 0.5))
    return tuple(out)


def tangents_like(name, args):
    rng = rng_for(name + "tangent")
    return tuple(jax.tree_util.tree_map(lambda a: type(a)(rng.standard_normal())
                                        if isinstance(a, float)
                                        else rng.standard_normal(np.shape(a)), a)
                 for a in args)


@pytest.mark.parametrize("name", sorted(CASES))
def test_jvp_of_grad_against_jax(name):
    """Forward over reverse: pb.jvp(pb.grad(f)) == jax.jvp(jax.grad(f)), and
    central differences of pb.grad."""
    text, jax_text, spec = CASES[name]
    f, fj = both(text, jax_text, EXTRA)
    args = make_args(name, spec)
    t = tangents_like(name, args)
    argnums = tuple(range(len(args)))
    g, hv = pb.jvp(pb.grad(f, argnums=argnums), args, t)
    gj, hvj = jax.jvp(jax.grad(fj, argnums=argnums), args, t)
    assert_close(g, gj)
    assert_close(hv, hvj)
    if spec != "tv":
        fd = central_hvp(f, args, t)
        for a, b in zip(hv, fd):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(n for n in CASES if CASES[n][2] in ("v", "vv", "vs")))
def test_hessian_against_jax(name):
    text, jax_text, spec = CASES[name]
    f, fj = both(text, jax_text, EXTRA)
    args = make_args(name, spec)
    argnums = 0 if len(args) == 1 else tuple(range(len(args)))
    assert_close(pb.hessian(f, argnums)(*args), jax.hessian(fj, argnums)(*args))


@pytest.mark.parametrize("name", ["elementwise", "loop_tape", "indexing_write", "linalg_solve",
                                  "user_function_calls", "containers"])
def test_vjp_of_grad_is_the_hvp(name):
    """Reverse over reverse: pb.vjp(pb.grad(f)) against jax.vjp(jax.grad(f))."""
    text, jax_text, spec = CASES[name]
    f, fj = both(text, jax_text, EXTRA)
    args = make_args(name, spec)
    ct = tangents_like(name + "ct", args)
    argnums = tuple(range(len(args)))
    out, back = pb.vjp(pb.grad(f, argnums=argnums), *args)
    outj, backj = jax.vjp(jax.grad(fj, argnums=argnums), *args)
    assert_close(out, outj)
    assert_close(back(ct), backj(ct))


@pytest.mark.parametrize("name", ["elementwise", "loop_tape", "mlp_loss", "branches"])
def test_jacfwd_of_grad_is_jax_hessian(name):
    text, jax_text, spec = CASES[name]
    f, fj = both(text, jax_text, EXTRA)
    (x,) = make_args(name, spec)
    assert_close(pb.jacfwd(pb.grad(f))(x), jax.jacfwd(jax.grad(fj))(x))


# -- scalar functions: grad of grad, third derivatives ---------------------------------

SCALAR = {
    "sin_x_cubed": "def f(x):\n    return np.sin(x) * x ** 3\n",
    "exp_over_poly": "def f(x):\n    return np.exp(0.5 * x) / (1.0 + x * x)\n",
    "loop": ("def f(x):\n    s = x\n    for i in range(3):\n        s = np.sin(s) * x + s * s * 0.1\n"
             "    return s\n"),
    "branch": ("def f(x):\n    if x > 0.0:\n        return x ** 4 * np.cos(x)\n"
               "    return np.tanh(x) * x\n"),
}


@pytest.mark.parametrize("name", sorted(SCALAR))
@pytest.mark.parametrize("x", [0.7, -1.3])
def test_second_and_third_derivatives_of_scalar_functions(name, x):
    f, fj = both(SCALAR[name])
    assert_close(pb.grad(pb.grad(f))(x), jax.grad(jax.grad(fj))(x))
    assert_close(pb.grad(pb.grad(pb.grad(f)))(x), jax.grad(jax.grad(jax.grad(fj)))(x),
                 rtol=1e-8)
    # forward over forward over reverse, the other way round
    assert_close(pb.jvp(pb.grad(pb.grad(f)), (x,), (1.0,))[1],
                 jax.grad(jax.grad(jax.grad(fj)))(x), rtol=1e-8)


def test_third_derivative_of_sin_x_cubed_exactly():
    """f = sin(x) x^3: f''' = -x^3 cos x - 9 x^2 sin x + 18 x cos x + 6 sin x."""
    def f(x):
        return np.sin(x) * x ** 3
    x = 0.9
    got = pb.grad(pb.grad(pb.grad(f)))(x)
    want = (-x ** 3 * math.cos(x) - 9 * x ** 2 * math.sin(x) + 18 * x * math.cos(x)
            + 6 * math.sin(x))
    assert abs(got - want) <= 1e-12 * abs(want)


def test_grad_of_grad_with_argnums_follows_jax():
    f, fj = both("def f(x, y):\n    return np.sin(x * y) * x ** 2 + y ** 3\n")
    for inner, outer in ((0, 0), (0, 1), (1, 0), (1, 1)):
        got = pb.grad(pb.grad(f, argnums=inner), argnums=outer)(0.7, -0.4)
        want = jax.grad(jax.grad(fj, argnums=inner), argnums=outer)(0.7, -0.4)
        assert_close(got, want)
    got = pb.grad(pb.grad(f, argnums=0), argnums=(0, 1))(0.7, -0.4)
    assert_close(got, jax.grad(jax.grad(fj, argnums=0), argnums=(0, 1))(0.7, -0.4))


# -- pb.grad inside a differentiated function -------------------------------------------

def test_grad_called_inside_a_differentiated_function():
    f, fj = both(CASES["elementwise"][0])

    def outer(x, w):
        g = pb.grad(f)(x * w)
        return np.sum(g * g) + np.sum(w * x)

    def outer_j(x, w):
        g = jax.grad(fj)(x * w)
        return jnp.sum(g * g) + jnp.sum(w * x)
    x, w = make_args("inside", "vv")
    assert_close(pb.grad(outer, argnums=(0, 1))(x, w), jax.grad(outer_j, argnums=(0, 1))(x, w))


def test_value_and_grad_inside_and_newton_step():
    def cube(x):
        return x ** 3 - 2.0 * x

    def newton(x):
        v, d = pb.value_and_grad(cube)(x)
        return x - v / d
    # newton'(x) = v f'' / f'^2
    x = 1.3
    want = (x ** 3 - 2 * x) * 6 * x / (3 * x ** 2 - 2) ** 2
    assert abs(pb.grad(newton)(x) - want) <= 1e-12 * abs(want)


def test_jvp_of_value_and_grad_and_has_aux():
    f, fj = both("def f(x):\n    return np.sum(np.sin(x) ** 2), np.cos(x)\n")
    x = make_args("aux", "v")[0]
    t = np.ones(4)
    (g, aux), (g_dot, aux_dot) = pb.jvp(pb.grad(f, has_aux=True), (x,), (t,))
    (gj, auxj), (gj_dot, auxj_dot) = jax.jvp(jax.grad(fj, has_aux=True), (x,), (t,))
    assert_close((g, aux, g_dot, aux_dot), (gj, auxj, gj_dot, auxj_dot))
    (v, g), (v_dot, g_dot) = pb.jvp(pb.value_and_grad(lambda x: f(x)[0]), (x,), (t,))
    (vj, gj), (vj_dot, gj_dot) = jax.jvp(jax.value_and_grad(lambda x: fj(x)[0]), (x,), (t,))
    assert_close((v, g, v_dot, g_dot), (vj, gj, vj_dot, gj_dot))
    h, aux = pb.hessian(f, has_aux=True)(x)
    hj, auxj = jax.hessian(fj, has_aux=True)(x)
    assert_close((h, aux), (hj, auxj))


def test_vjp_of_value_and_grad_weights_the_gradient():
    f, fj = both(CASES["elementwise"][0])
    x = make_args("vg", "v")[0]
    ct = (1.7, np.array([0.5, -1.0, 2.0, 0.3]))
    assert_close(pb.vjp(pb.value_and_grad(f), x)[1](ct),
                 jax.vjp(jax.value_and_grad(fj), x)[1](ct))


def test_jvp_and_vjp_of_a_pullback():
    f, fj = both("def f(x):\n    return np.sin(x) * x\n")
    x = make_args("pullback", "v")[0]
    _, back = pb.vjp(f, x)
    _, backj = jax.vjp(fj, x)
    ct, ct_dot = np.ones(4), np.arange(4.0)
    assert_close(pb.jvp(back, (ct,), (ct_dot,)), jax.jvp(backj, (ct,), (ct_dot,)))
    w = np.array([0.3, 0.1, -0.2, 1.0])
    assert_close(pb.vjp(back, ct)[1]((w,)), jax.vjp(backj, ct)[1]((w,)))


# -- the HVP of an MLP loss, and pb.hvp -----------------------------------------------

MLP = """
def loss(w1, w2, x, y):
    h = np.tanh(x @ w1)
    out = h @ w2
    return np.mean((out - y) ** 2)
"""


def mlp_args(n=16, d=6, k=5):
    rng = rng_for("mlp")
    return (rng.standard_normal((d, k)) * 0.5, rng.standard_normal(k) * 0.5,
            rng.standard_normal((n, d)), rng.standard_normal(n))


def test_hvp_of_an_mlp_loss_against_jax():
    f, fj = both(MLP)
    w1, w2, x, y = mlp_args()
    rng = rng_for("mlp-v")
    v1, v2 = rng.standard_normal(w1.shape), rng.standard_normal(w2.shape)

    def jax_hvp(w1, w2, v1, v2):
        return jax.jvp(jax.grad(fj, argnums=(0, 1)), (w1, w2, x, y),
                       (v1, v2, jnp.zeros_like(x), jnp.zeros_like(y)))[1]
    got = pb.hvp(lambda a, b: f(a, b, x, y), (w1, w2), (v1, v2))
    assert_close(got, jax_hvp(w1, w2, v1, v2))
    assert_close(got, jax.jit(jax_hvp)(w1, w2, v1, v2))
    one = pb.hvp(lambda a: f(a, w2, x, y), (w1,), (v1,))
    assert isinstance(one, np.ndarray) and one.shape == w1.shape
    assert_close(one, jax.jvp(jax.grad(fj), (w1, w2, x, y),
                              (v1, jnp.zeros_like(w2), jnp.zeros_like(x),
                               jnp.zeros_like(y)))[1])


def test_hvp_on_arrays_large_enough_to_fuse():
    """The ordinary gradient fuses elementwise work into JAX kernels; the one
    differentiated again is transformed without fusion and agrees."""
    f, fj = both("def f(x):\n    return np.sum(np.sin(x) * np.exp(-x * x) + x ** 3)\n")
    rng = rng_for("large")
    x, v = rng.standard_normal(30000), rng.standard_normal(30000)
    assert_close(pb.grad(f)(x), jax.grad(fj)(x))
    assert_close(pb.hvp(f, (x,), (v,)), jax.jvp(jax.grad(fj), (x,), (v,))[1])


def test_hvp_takes_tuples():
    with pytest.raises(TypeError, match="tuples"):
        pb.hvp(np.sin, np.ones(2), np.ones(2))


# -- readable source -------------------------------------------------------------------

def test_source_of_a_gradient_shows_forward_over_reverse():
    f, _ = both(CASES["loop_tape"][0])
    text = pb.source(pb.grad(f), np.ones(4))
    assert "def f_primal(x):" in text and "def f_adjoint(residuals, out_bar):" in text
    assert "def f_primal_jvp(x, x_dot):" in text
    assert "def f_adjoint_jvp(residuals, out_bar, residuals_dot):" in text
    # the tape is read by position (forward mode follows no list changed in place)
    assert "tape[tape_at]" in text and ".pop()" not in text
    compile(text, "<source>", "exec")      # it is Python
    with pytest.raises(TypeError, match="example arguments"):
        pb.source(pb.grad(f))


# -- what is refused, and why ----------------------------------------------------------

def test_aux_output_read_by_the_outer_derivative_is_refused():
    def f(x):
        return np.sum(x ** 3), np.sum(x)

    def outer(x):
        g, aux = pb.grad(f, has_aux=True)(x)
        return np.sum(g) + aux
    with pytest.raises(pb.NonDifferentiableError, match="aux output"):
        pb.grad(outer)(np.ones(3))

    def reads_only_the_gradient(x):
        g, aux = pb.grad(f, has_aux=True)(x)
        return np.sum(g * g)
    assert_close(pb.grad(reads_only_the_gradient)(np.array([1.0, 2.0])),
                 np.array([36.0, 288.0]))


def test_reverse_over_reverse_of_complex_arguments_is_jaxs():
    # grad |z|**2 = 2 conj(z) (JAX's convention); the vjp of that with c is the
    # gradient of Re(c 2 conj(z)) = 2 conj(c) (test_complex_higher.py: more)
    def f(z):
        return np.abs(z) ** 2
    for c in (1.0 + 0.0j, 1.0j, 0.5 - 2.0j):
        got = pb.vjp(pb.grad(f), 1.0 + 2.0j)[1](c)[0]
        assert got == pytest.approx(2 * np.conj(c), rel=1e-14)
        assert got == pytest.approx(complex(jax.vjp(jax.grad(lambda z: jnp.abs(z) ** 2),
                                                    1.0 + 2.0j)[1](c)[0]), rel=1e-14)


def test_grad_of_value_and_grad_is_refused_for_its_tuple_output():
    with pytest.raises((TypeError, pb.PullbackError)):
        pb.grad(pb.value_and_grad(np.sin))(0.3)


def test_grad_of_a_jacfwd_made_function_against_jax():
    """Reverse over pb.jacfwd: one forward over reverse per input element."""
    f = pb.jacfwd(lambda x: x ** 2 * np.sin(x[0]))
    fj = jax.jacfwd(lambda x: x ** 2 * jnp.sin(x[0]))

    def loss(x):
        return np.sum(np.cos(f(x)))

    def loss_j(x):
        return jnp.sum(jnp.cos(fj(x)))
    x = np.array([0.3, 0.8, -0.4])
    assert_close(pb.grad(loss)(x), jax.grad(loss_j)(x))
    ct = np.arange(9.0).reshape(3, 3) - 4.0
    assert_close(pb.vjp(f, x)[1](ct), jax.vjp(fj, x)[1](ct))


# -- forward over forward, reverse over forward (higher_forward) -----------------------

VECTOR = {
    "elementwise": ("""
def f(x):
    return np.sin(x) * x ** 2 + np.exp(-x) * np.sum(x)
""", None),
    "loop": ("""
def f(x):
    y = x
    for i in range(3):
        y = np.tanh(y) * x + 0.1 * y * y
    return y
""", None),
    "while_loop": ("""
def f(x):
    y = x * 1.0
    k = 0
    while k < 3:
        y = np.sin(y) + x * np.sum(y ** 2) * 0.1
        k = k + 1
    return y
""", None),
    "branches": ("""
def f(x):
    if np.sum(x) > 0.0:
        y = np.sin(x) * np.sum(x)
    else:
        y = np.cos(x) * x ** 3
    return y * x[0]
""", None),
    "indexing_write": ("""
def f(x):
    y = np.zeros(4)
    for i in range(4):
        y[i] = x[i] * x[(i + 1) % 4] ** 2
    y[0] = y[0] + np.sin(x[3])
    return y
""", """
def f(x):
    y = jnp.zeros(4)
    for i in range(4):
        y = y.at[i].set(x[i] * x[(i + 1) % 4] ** 2)
    y = y.at[0].set(y[0] + jnp.sin(x[3]))
    return y
"""),
    "user_calls": ("""
def f(x):
    h = layer(x, W)
    return layer(h, W.T) * x

def layer(h, w):
    return np.tanh(h @ w)
""", None),
    "closure": ("""
def f(x):
    scale = np.sum(x ** 2)
    def inner(z):
        return np.sin(z) * scale
    return inner(x) + x
""", None),
    "containers": ("""
def f(x):
    parts = [x * x, np.sin(x)]
    d = {"a": x, "b": np.cos(x)}
    return parts[0] * d["b"] + parts[1] * d["a"]
""", None),
    "function_values": ("""
def f(x):
    return apply(np.tanh, x) * apply(g, x) + apply(functools.partial(g, scale=2.0), x)

def apply(fn, x):
    return fn(x) + x

def g(z, scale=1.0):
    return np.sin(z) * z * scale
""", None),
    "linalg": ("""
def f(x):
    M = A + np.outer(x, x)
    return np.linalg.solve(M, x) + np.log(np.linalg.det(M))
""", None),
    "reductions_where": ("""
def f(x):
    y = np.where(x > 0.0, x ** 3, np.sin(x))
    return y * np.max(x) + np.cumsum(x) * np.mean(x ** 2)
""", None),
}


def vector_case(name):
    text, jax_text = VECTOR[name]
    f, fj = both(text, jax_text, EXTRA)
    rng = rng_for("vector" + name)
    x, t, s, u = (rng.standard_normal(4) * 0.7 for _ in range(4))
    return f, fj, x, t, s, u


@pytest.mark.parametrize("name", sorted(VECTOR))
def test_jacfwd_of_jacfwd_against_jax(name):
    f, fj, x, *_ = vector_case(name)
    assert_close(pb.jacfwd(pb.jacfwd(f))(x), jax.jacfwd(jax.jacfwd(fj))(x))


@pytest.mark.parametrize("name", sorted(VECTOR))
def test_jvp_of_jvp_against_jax(name):
    """pb.jvp of a function calling pb.jvp, the primal and the tangent both
    moving: (J s, f''[t, s] + J u), against JAX and central differences."""
    f, fj, x, t, s, u = vector_case(name)

    def inner(x, t):
        return pb.jvp(f, (x,), (t,))

    def inner_j(x, t):
        return jax.jvp(fj, (x,), (t,))
    got = pb.jvp(inner, (x, t), (s, u))
    want = jax.jvp(inner_j, (x, t), (s, u))
    assert_close(got, want)
    h = 1e-5
    up = pb.jvp(f, (x + h * s,), (t + h * u,))[1]
    down = pb.jvp(f, (x - h * s,), (t - h * u,))[1]
    np.testing.assert_allclose(got[1][1], (up - down) / (2 * h), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(VECTOR))
def test_grad_of_jvp_against_jax(name):
    """Reverse over forward: pb.grad of a function reading pb.jvp's value
    and tangent, with respect to the primal and the tangent."""
    f, fj, x, t, s, u = vector_case(name)

    def loss(x, t):
        y, y_dot = pb.jvp(f, (x,), (t,))
        return np.sum(s * y_dot) + np.sum(np.sin(y) * u)

    def loss_j(x, t):
        y, y_dot = jax.jvp(fj, (x,), (t,))
        return jnp.sum(s * y_dot) + jnp.sum(jnp.sin(y) * u)
    assert_close(pb.grad(loss, argnums=(0, 1))(x, t), jax.grad(loss_j, argnums=(0, 1))(x, t))


@pytest.mark.parametrize("name", ["elementwise", "loop", "branches", "indexing_write",
                                  "user_calls", "function_values", "linalg"])
def test_check_grads_order_2_both_modes(name):
    f, _, x, *_ = vector_case(name)
    pb.check_grads(f, (x,), order=2)


@pytest.mark.parametrize("name", ["elementwise", "loop_tape", "branches", "indexing_write",
                                  "user_function_calls", "containers"])
def test_hessian_by_forward_over_forward_against_jax(name):
    text, jax_text, spec = CASES[name]
    f, fj = both(text, jax_text, EXTRA)
    args = make_args(name, spec)
    assert_close(pb.jacfwd(pb.jacfwd(f))(args[0], *args[1:]),
                 jax.hessian(fj)(args[0], *args[1:]))


# forward over forward of functions with *args, keyword-only parameters and
# defaults: each call is flattened to one value per parameter (call_layouts.Flat)

VARIADIC = {
    "star_args": ("""
def f(*xs):
    return np.sin(xs[0]) * xs[1] ** 2 + np.exp(-xs[0]) * np.sum(xs[1])
""", 2),
    "named_then_star": ("""
def f(a, *rest):
    total = a * 1.0
    for r in rest:
        total = total * np.tanh(r) + a ** 2
    return total
""", 3),
    "keyword_only": ("""
def f(a, *rest, scale=3.0):
    return scale * np.sin(a * rest[0]) * np.sum(rest[1] ** 2)
""", 3),
    "default": ("""
def f(a, b, c=2.0):
    return np.sin(a) * b ** 2 * c
""", 2),
    "calls_star_callee": ("""
def f(x, y):
    return k(x, y, y * x) + k(y)

def k(x, *ys):
    total = x * 1.0
    for v in ys:
        total = total + x * np.tanh(v) ** 2
    return total
""", 2),
}


def variadic_case(name):
    text, n = VARIADIC[name]
    f, fj = both(text)
    rng = rng_for("variadic" + name)
    return f, fj, [rng.standard_normal(3) * 0.7 for _ in range(4 * n)], n


@pytest.mark.parametrize("name", sorted(VARIADIC))
def test_jacfwd_of_jacfwd_of_variadic_functions_against_jax(name):
    f, fj, vals, n = variadic_case(name)
    args = vals[:n]
    for a in range(n):
        assert_close(pb.jacfwd(pb.jacfwd(f, argnums=a), argnums=tuple(range(n)))(*args),
                     jax.jacfwd(jax.jacfwd(fj, argnums=a), argnums=tuple(range(n)))(*args))


@pytest.mark.parametrize("name", sorted(VARIADIC))
def test_jvp_of_jvp_of_variadic_functions_against_jax(name):
    """The primals and the inner tangents both moving: the inner tangents
    sit after every flattened argument (defaults, keyword-only ones)."""
    f, fj, vals, n = variadic_case(name)
    xs, ts, ss, us = vals[:n], vals[n:2 * n], vals[2 * n:3 * n], vals[3 * n:]

    def inner(*xt):
        return pb.jvp(f, tuple(xt[:n]), tuple(xt[n:]))

    def inner_j(*xt):
        return jax.jvp(fj, tuple(xt[:n]), tuple(xt[n:]))
    got = pb.jvp(inner, tuple(xs + ts), tuple(ss + us))
    assert_close(got, jax.jvp(inner_j, tuple(xs + ts), tuple(ss + us)))
    # the inner tangent alone moving (primals fixed): J u
    assert_close(pb.jvp(lambda *t: pb.jvp(f, tuple(xs), t)[1], tuple(ts), tuple(us)),
                 jax.jvp(lambda *t: jax.jvp(fj, tuple(xs), t)[1], tuple(ts), tuple(us)))


def test_jvp_of_jvp_with_a_default_parameter_moves_the_tangent_not_the_default():
    """Was silently wrong: the inner tangent's position was counted from the
    primals given, so with ``c`` left to its default the tangent's tangent
    went to ``c`` (0.315 where 0.573 is right)."""
    def f(a, c=2.0):
        return np.sin(a) * c

    x, t, u = np.array([0.3, 0.7]), np.array([1.1, -0.4]), np.array([0.3, 0.7])

    def inner(t):
        return pb.jvp(f, (x,), (t,))[1]
    np.testing.assert_allclose(pb.jvp(inner, (t,), (u,))[1], 2.0 * np.cos(x) * u, rtol=1e-14)


def test_hessian_of_a_star_args_function_against_jax():
    f, fj = both("""
def f(*xs):
    return np.sum(np.sin(xs[0]) * xs[1] ** 2)
""")
    x, y = np.array([0.3, 0.7]), np.array([1.1, -0.4])
    assert_close(pb.hessian(f, argnums=(0, 1))(x, y), jax.hessian(fj, argnums=(0, 1))(x, y))


def test_jvp_of_jvp_of_a_custom_jvp_function_differentiates_its_rule():
    @pb.custom_jvp
    def softplus(x):
        return np.log1p(np.exp(x))

    @softplus.defjvp
    def softplus_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return softplus(x), t / (1.0 + np.exp(-x))

    def inner(x, t):
        return pb.jvp(softplus, (x,), (t,))[1]
    x, t, s = np.array([0.3, -1.2]), np.array([1.0, 0.5]), np.array([0.4, 2.0])
    sig = 1.0 / (1.0 + np.exp(-x))
    np.testing.assert_allclose(pb.jvp(inner, (x, t), (s, 0 * s))[1], sig * (1 - sig) * t * s,
                               rtol=1e-13)


def test_linearize_made_functions_forward_and_reverse():
    x = np.array([0.3, 0.8])
    _, lin = pb.linearize(lambda x: np.sin(x) * x[0], x)
    lin_j = jax.linearize(lambda x: jnp.sin(x) * x[0], x)[1]
    t, v = np.array([0.5, -1.0]), np.array([0.2, 0.7])

    def sq(t):
        return lin(t) ** 2

    def sq_j(t):
        return lin_j(t) ** 2
    assert_close(pb.jvp(sq, (t,), (v,)), jax.jvp(sq_j, (t,), (v,)))
    assert_close(pb.vjp(sq, t)[1](v), jax.vjp(sq_j, t)[1](v))


def test_reverse_over_jvp_refusals():
    def f(x):
        return np.sin(x)

    def with_aux(x):
        return pb.jvp(lambda z: (f(z), z), (x,), (x,), has_aux=True)[1].sum()
    with pytest.raises(pb.NonDifferentiableError, match="without has_aux"):
        pb.grad(with_aux)(np.ones(2))

    def of_complex(x):
        return np.real(pb.jvp(f, (x * (1 + 1j),), (x + 0j,))[1]).sum()
    with pytest.raises(pb.NonDifferentiableError, match="real primals"):
        pb.grad(of_complex)(np.ones(2))


# -- the helpers' forward rules are what they declare ----------------------------------

def _linear_helper_cases():
    from pullback import runtime as rt
    x = np.arange(6.0).reshape(2, 3) - 2.5
    g1, g2 = np.linspace(-1, 1, 6).reshape(2, 3), np.cos(np.arange(6.0)).reshape(2, 3)
    return [
        ("unbroadcast", lambda g: rt.unbroadcast(g, x[0]), g1, g2),
        ("unreduce", lambda g: rt.unreduce(g, x, 0), g1[0], g2[0]),
        ("project", lambda g: rt.project(g, x), g1, g2),
        ("unindex", lambda g: rt.unindex(g, x, (1, slice(None))), g1[0], g2[0]),
        ("written_grad", lambda g: rt.written_grad(g, 1, x[0]), g1, g2),
        ("zeroed", lambda g: rt.zeroed(g, 0), g1, g2),
        ("tie_share", lambda g: rt.tie_share(g, np.maximum(x, 0.0), x, 0.0 * x), g1, g2),
        ("clip_grad", lambda g: rt.clip_grad(g, np.clip(x, -1, 1), x, -1, 1, "a"), g1, g2),
        ("untranspose", lambda g: rt.untranspose(g, (1, 0)), g1.T, g2.T),
        ("unconcatenate", lambda g: rt.unconcatenate(g, [x, x])[1],
         np.vstack([g1, g2]), np.vstack([g2, g1])),
        ("take_grad", lambda g: rt.take_grad(g, x[0], np.array([0, 0, 2])), g1[0], g2[0]),
        ("abs_grad", lambda g: rt.abs_grad(g, x), g1, g2),
    ]


@pytest.mark.parametrize("case", _linear_helper_cases(), ids=lambda c: c[0])
def test_helpers_declared_linear_are_linear(case):
    """A helper's forward rule is the helper applied to the tangent; that is
    right only if the helper is linear in its cotangent."""
    _, fn, g1, g2 = case
    assert_close(fn(2.0 * g1 - 3.0 * g2), 2.0 * fn(g1) - 3.0 * fn(g2), rtol=1e-13)


def test_matmul_helpers_are_bilinear():
    from pullback import runtime as rt
    rng = rng_for("bilinear")
    a, b, b2, g, g2 = (rng.standard_normal(s) for s in ((3, 4), (4, 2), (4, 2), (3, 2), (3, 2)))
    for fn, lin in ((rt.matmul_lhs_grad, lambda g, b: g @ b.T),
                    (rt.dot_lhs_grad, lambda g, b: g @ b.T)):
        assert_close(fn(g, a, b), lin(g, b))
        assert_close(fn(g + g2, a, b + b2) - fn(g, a, b) - fn(g2, a, b2),
                     fn(g, a, b2) + fn(g2, a, b))
    assert_close(rt.matmul_rhs_grad(g, a, b), a.T @ g)


# -- methods, partials and custom_vjp rules differentiated again --------------------------

class _Model:
    def __init__(self, c):
        self.c = c

    def loss(self, x, y):
        return np.sum(np.sin(x * y) * self.c) + np.sum(x ** 3)


def _tanh_loss(a, x):
    return np.sum(np.tanh(a * x) ** 2)


def test_hessian_of_a_bound_method_and_a_partial():
    import functools
    x, y = np.array([0.3, 0.7]), np.array([1.1, -0.4])
    want = jax.hessian(lambda x, y: jnp.sum(jnp.sin(x * y) * 1.5) + jnp.sum(x ** 3))(x, y)
    assert_close(pb.hessian(_Model(1.5).loss)(x, y), want)
    assert_close(pb.hessian(functools.partial(_tanh_loss, 0.7))(x),
                 jax.hessian(lambda x: jnp.sum(jnp.tanh(0.7 * x) ** 2))(x))


@pb.custom_vjp
def _softplus(x):
    return np.log1p(np.exp(x))


def _softplus_fwd(x):
    return np.log1p(np.exp(x)), x


def _softplus_bwd(x, g):
    return (g / (1.0 + np.exp(-x)),)


_softplus.defvjp(_softplus_fwd, _softplus_bwd)


def test_custom_vjp_rules_are_differentiated_again():
    """A custom_vjp's fwd and bwd are Python: forward mode transforms them."""
    def f(x):
        return np.sum(_softplus(x) * x)
    x = np.array([0.3, -1.2, 2.0])
    assert_close(pb.hessian(f)(x),
                 jax.hessian(lambda x: jnp.sum(jax.nn.softplus(x) * x))(x))


# -- through pb.checkpoint (its handle's inner function is differentiated again) ----

@pb.checkpoint
def _ck_step(x, w):
    return np.tanh(x * w) + 0.1 * x


def _ck_loss(x):
    for i in range(5):
        x = _ck_step(x, 1.3)
    return np.sum(x ** 2)


def _ck_loss_jax(x):
    for i in range(5):
        x = jnp.tanh(x * 1.3) + 0.1 * x
    return jnp.sum(x ** 2)


def test_hessian_through_checkpoint():
    x = np.array([0.3, -0.2, 0.5])
    np.testing.assert_allclose(pb.hessian(_ck_loss)(x), jax.hessian(_ck_loss_jax)(x),
                               rtol=1e-12, atol=1e-12)
