"""``pb.checkpoint`` (the adjoint recomputes a function's primal instead of
storing its residuals) and ``pb.forward`` (a function differentiated by
forward mode inside a reverse-mode gradient), issue 15.

Gradients are checked against the same function without the marker (to
1e-12), central differences, and ``jax.grad`` (float64); the memory a
checkpointed loop keeps is measured with ``tracemalloc``.
"""
import math
import tracemalloc

import numpy as np
import pytest

import pullback as pb
from pullback.testing import function_from_source

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402

rng = np.random.default_rng(1015)


def central(f, args, i, t, eps=1e-6):
    """The central difference of ``f`` along ``t`` in argument ``i``."""
    plus = list(args)
    minus = list(args)
    plus[i] = args[i] + eps * t
    minus[i] = args[i] - eps * t
    return (f(*plus) - f(*minus)) / (2 * eps)


def directional(g, t):
    return float(np.sum(np.asarray(g) * t))


# -- checkpoint ------------------------------------------------------------------------------

def step(x, w):
    a = np.sin(w * x)
    b = np.tanh(a + x)
    c = np.exp(-b * b)
    return x + 0.01 * c * a


checked_step = pb.checkpoint(step)


def loop_plain(x, w, n):
    for i in range(n):
        x = step(x, w)
    return np.sum(x ** 2)


def loop_checked(x, w, n):
    for i in range(n):
        x = checked_step(x, w)
    return np.sum(x ** 2)


def loop_inline(x, w, n):
    for i in range(n):
        x = pb.checkpoint(step)(x, w)
    return np.sum(x ** 2)


def peak_bytes(fn, *args):
    fn(*args)                       # transforms, caches: not measured
    tracemalloc.start()
    try:
        out = fn(*args)
        return tracemalloc.get_traced_memory()[1], out
    finally:
        tracemalloc.stop()


def test_checkpointed_loop_keeps_under_half_the_memory():
    x, w = rng.normal(size=10_000), rng.normal(size=10_000)
    grad = {f: pb.grad(f, argnums=(0, 1)) for f in (loop_plain, loop_checked, loop_inline)}
    plain_peak, (gx, gw) = peak_bytes(grad[loop_plain], x, w, 1000)
    for f in (loop_checked, loop_inline):
        peak, (cx, cw) = peak_bytes(grad[f], x, w, 1000)
        # 1,000 steps of a 10,000-element state: 8e7 bytes of states kept either way;
        # the plain loop also keeps each step's intermediates
        assert peak <= plain_peak / 2, (f.__name__, peak, plain_peak)
        np.testing.assert_allclose(cx, gx, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(cw, gw, rtol=1e-12, atol=1e-12)
    # against central differences, along random directions
    tx, tw = rng.normal(size=x.size), rng.normal(size=w.size)
    # (1,000 steps bend the loss: a small step; the small case below is
    # checked against jax.grad to 1e-12)
    fd_x = central(loop_plain, (x, w, 1000), 0, tx, eps=1e-7)
    fd_w = central(loop_plain, (x, w, 1000), 1, tw, eps=1e-7)
    assert directional(gx, tx) == pytest.approx(fd_x, rel=2e-5)
    assert directional(gw, tw) == pytest.approx(fd_w, rel=2e-5)


def test_checkpoint_gradients_against_jax():
    def jstep(x, w):
        a = jnp.sin(w * x)
        b = jnp.tanh(a + x)
        c = jnp.exp(-b * b)
        return x + 0.01 * c * a

    def jloop(x, w):
        for i in range(20):
            x = jstep(x, w)
        return jnp.sum(x ** 2)
    x, w = rng.normal(size=5), rng.normal(size=5)
    jx, jw = jax.grad(jloop, argnums=(0, 1))(x, w)
    for f in (loop_checked, loop_inline):
        gx, gw = pb.grad(f, argnums=(0, 1))(x, w, 20)
        np.testing.assert_allclose(gx, jx, rtol=1e-12)
        np.testing.assert_allclose(gw, jw, rtol=1e-12)


def test_source_shows_the_checkpoint():
    text = pb.source(loop_checked, np.ones(3), np.ones(3), 2, argnums=(0, 1))
    assert "checkpoint_step_primal(" in text and "checkpoint_step_adjoint(" in text
    text = pb.source(loop_inline, np.ones(3), np.ones(3), 2, argnums=(0, 1))
    assert "pb.checkpoint(step)" in text
    assert "checkpoint_step_jvp(" in pb.source(loop_checked, mode="forward")


def test_checkpoint_as_decorator_and_on_a_differentiable_function():
    @pb.checkpoint
    def layer(h, w):
        return np.tanh(w @ h)

    @pb.differentiable
    def dense(h, w):
        return np.tanh(w @ h)

    ck_dense = pb.checkpoint(dense)
    assert pb.checkpoint(dense) is ck_dense          # one per function
    assert layer(np.ones(2), np.eye(2)) == pytest.approx(np.tanh(np.ones(2)))

    net_checked = function_from_source("""
def net(h, ws):
    for w in ws:
        h = layer(h, w)
    return np.sum(h)
""", {"layer": layer})
    net_differentiable = function_from_source("""
def net(h, ws):
    for w in ws:
        h = ck_dense(h, w)
    return np.sum(h)
""", {"ck_dense": ck_dense})
    net_plain = function_from_source("""
def net(h, ws):
    for w in ws:
        h = np.tanh(w @ h)
    return np.sum(h)
""")
    h = rng.normal(size=4)
    ws = [rng.normal(size=(4, 4)) for _ in range(3)]
    want = pb.grad(net_plain, argnums=(0, 1))(h, ws)
    for f in (net_checked, net_differentiable):
        got = pb.grad(f, argnums=(0, 1))(h, ws)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
        for a, b in zip(got[1], want[1]):
            np.testing.assert_allclose(a, b, rtol=1e-12)
    # the checkpointed function itself, at the top
    g = pb.grad(lambda h: np.sum(layer(h, ws[0])))(h)
    np.testing.assert_allclose(g, pb.grad(lambda h: np.sum(np.tanh(ws[0] @ h)))(h),
                               rtol=1e-12)


def test_checkpoint_recomputes_in_the_adjoint():
    runs = []

    def noted(x):
        runs.append(1)
        return x

    f = function_from_source("""
def f(x):
    y = note(x)
    return np.sin(y) * y
""", {"note": pb.custom_vjp(lambda x: x)})
    f.__globals__["note"].defvjp(lambda x: (noted(x), None), lambda r, g: (g,))
    ck = pb.checkpoint(f)
    out, back = pb.vjp(ck, 0.5)
    assert runs == [1]                       # the primal once
    g1 = back(1.0)
    assert runs == [1, 1]                    # ... and again in the adjoint
    g2 = back(1.0)                           # a pullback can be called again
    assert g1 == g2 == (pytest.approx(np.cos(0.5) * 0.5 + np.sin(0.5), rel=1e-14),)


def test_checkpoint_nested_and_with_branches():
    inner = pb.checkpoint(function_from_source("""
def inner(x, k):
    if k % 2:
        return np.cos(x) * x
    return x ** 3
"""))
    outer = pb.checkpoint(function_from_source("""
def outer(x, k):
    return inner(x, k) + inner(2.0 * x, k + 1)
""", {"inner": inner}))
    loss = function_from_source("""
def loss(x):
    s = 0.0
    for k in range(4):
        s = s + np.sum(outer(x, k))
        x = 0.5 * x
    return s
""", {"outer": outer})
    x = rng.normal(size=3)
    g = pb.grad(loss)(x)
    t = rng.normal(size=3)
    assert directional(g, t) == pytest.approx(central(loss, (x,), 0, t), rel=1e-8)


def test_checkpoint_arguments_written_after_the_call():
    # the primal keeps the arguments: a write into one after the call is
    # refused, as for any call (the stored argument would change)
    text = """
def loss(x):
    y = x * 1.0
    total = 0.0
    for i in range(len(x)):
        total = total + g(y)
        y[i] = 2.0 * y[i] + 1.0
    return total
"""
    body = """
def g(v):
    return np.sum(np.sin(v) * v)
"""
    plain = function_from_source(body)
    for g in (plain, pb.checkpoint(plain)):
        loss = function_from_source(text, {"g": g})
        with pytest.raises(pb.UnsupportedSyntaxError, match="`y` is written into"):
            pb.grad(loss)(np.ones(3))
    # a copy passed: the gradient is right
    loss = function_from_source(text.replace("g(y)", "g(y.copy())"),
                                {"g": pb.checkpoint(plain)})
    x = rng.normal(size=4)
    grad = pb.grad(loss)(x)
    t = rng.normal(size=4)
    assert directional(grad, t) == pytest.approx(central(loss, (x,), 0, t), rel=1e-8)


def test_checkpoint_called_as_a_function_value():
    loss = function_from_source("""
def loss(x, fn):
    for i in range(3):
        x = fn(x, x)
    return np.sum(x)
""")
    x = rng.normal(size=3)
    got = pb.grad(loss)(x, checked_step)
    want = pb.grad(loss)(x, step)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_forward_mode_through_a_checkpoint_is_plain_jvp():
    x, w = rng.normal(size=4), rng.normal(size=4)
    tx, tw = rng.normal(size=4), rng.normal(size=4)
    want = pb.jvp(loop_plain, (x, w, 5), (tx, tw, 0))
    for f in (loop_checked, loop_inline):
        got = pb.jvp(f, (x, w, 5), (tx, tw, 0))
        assert got[0] == want[0]
        assert got[1] == pytest.approx(want[1], rel=1e-12)
    out, out_dot = pb.jvp(checked_step, (x, w), (tx, tw))
    np.testing.assert_allclose(out_dot, pb.jvp(step, (x, w), (tx, tw))[1], rtol=1e-14)
    np.testing.assert_allclose(pb.jacfwd(checked_step)(x, w), pb.jacrev(step)(x, w),
                               rtol=1e-12)


_ck_custom = pb.custom_vjp(step)


def test_checkpoint_refusals():
    with pytest.raises(TypeError, match=r"pb\.checkpoint expects a function"):
        pb.checkpoint(2.0)

    def keyword_only(x, *, k):
        return x * k
    with pytest.raises(TypeError, match="parameters are all positional.*`k`"):
        pb.checkpoint(keyword_only)
    with pytest.raises(TypeError, match="gets its rule from pullback"):
        checked_step.defvjp(None, None)
    with pytest.raises(TypeError, match="has a rule of its own already"):
        pb.checkpoint(checked_step)
    with pytest.raises(TypeError, match="has a rule of its own already"):
        pb.forward(_ck_custom)
    # what the function itself cannot do is refused as without the checkpoint
    writes = pb.checkpoint(function_from_source("""
def writes(x):
    x[0] = 1.0
    return x
"""))
    x = np.ones(2)
    with pytest.raises(pb.UnsupportedSyntaxError, match="writes into its argument `x`, and "
                       "pb.checkpoint cannot follow"):
        pb.grad(lambda x: np.sum(writes(x)))(x)
    # (found at the merge with mutation: `np.sum(writes(x) * x)` through the
    # checkpoint gave [1, 4] where [0, 4] is right, the caller's write unseen)
    with pytest.raises(pb.UnsupportedSyntaxError, match="writes into its argument"):
        pb.grad(lambda x: np.sum(writes(x) * x))(np.array([3.0, 2.0]))
    fwd = pb.forward(function_from_source("""
def bump(x):
    x += 1.0
    return x * x
"""))
    with pytest.raises(pb.UnsupportedSyntaxError, match="pb.forward cannot follow"):
        pb.grad(lambda x: np.sum(fwd(x)))(np.array([3.0, 2.0]))
    assert np.array_equal(x, np.ones(2))


# -- forward ---------------------------------------------------------------------------------

MANY_STEPS = """
def orbit(a, b):
    s = a
    for i in range(60):
        s = s * np.cos(b) + 0.05 * np.sin(s * a)
    return s
"""

orbit = function_from_source(MANY_STEPS)
_ns = {"np": jnp}
exec(MANY_STEPS, _ns)
orbit_jax = _ns["orbit"]
orbit_fwd = pb.forward(orbit)
orbit_fwd_recompute = pb.forward(orbit, store=False)


def sum_of(fn):
    return function_from_source("""
def total(xs, b):
    s = 0.0
    for i in range(len(xs)):
        s = s + fn(xs[i], b) * xs[i]
    return s
""", {"fn": fn})


def test_forward_in_a_loop_of_1000_steps_against_jax():
    xs = rng.uniform(0.1, 1.0, size=1000)
    b = 0.4

    def total_jax(xs, b):
        return jnp.sum(jax.vmap(lambda x: orbit_jax(x, b))(xs) * xs)
    jx, jb = jax.grad(total_jax, argnums=(0, 1))(xs, b)
    plain = pb.grad(sum_of(orbit), argnums=(0, 1))(xs, b)
    for fn in (orbit_fwd, orbit_fwd_recompute):
        gx, gb = pb.grad(sum_of(fn), argnums=(0, 1))(xs, b)
        np.testing.assert_allclose(gx, jx, rtol=1e-10)
        assert gb == pytest.approx(float(jb), rel=1e-10)
        np.testing.assert_allclose(gx, plain[0], rtol=1e-12)
        assert gb == pytest.approx(plain[1], rel=1e-12)
        assert isinstance(gb, float)


def test_forward_against_central_differences():
    f = function_from_source("""
def f(a, v, c):
    return np.sum(np.tanh(v * a) ** 2) + c * a ** 3
""")
    fwd = pb.forward(f)
    loss = function_from_source("""
def loss(a, v, c):
    return fwd(a, v, c) * fwd(2.0 * a, v[::-1], c)
""", {"fwd": fwd})
    args = (0.7, rng.normal(size=3), 1.5)
    ga, gv, gc = pb.grad(loss, argnums=(0, 1, 2))(*args)
    assert ga == pytest.approx(central(loss, args, 0, 1.0), rel=1e-8)
    assert gc == pytest.approx(central(loss, args, 2, 1.0), rel=1e-8)
    t = rng.normal(size=3)
    assert directional(gv, t) == pytest.approx(central(loss, args, 1, t), rel=1e-8)
    # the function alone, at the top
    np.testing.assert_allclose(pb.grad(fwd, argnums=1)(*args), pb.grad(f, argnums=1)(*args),
                               rtol=1e-12)


def test_forward_mapped_over_an_array():
    total = function_from_source("""
def total(xs, b):
    return sum(map(lambda x: fn(x, b), xs)) + np.sum(np.array([fn(x, b) for x in xs]))
""", {"fn": orbit_fwd})
    xs = rng.uniform(0.1, 1.0, size=50)

    def total_jax(xs, b):
        return 2.0 * jnp.sum(jax.vmap(lambda x: orbit_jax(x, b))(xs))
    gx, gb = pb.grad(total, argnums=(0, 1))(xs, 0.3)
    jx, jb = jax.grad(total_jax, argnums=(0, 1))(xs, 0.3)
    np.testing.assert_allclose(gx, jx, rtol=1e-10)
    assert gb == pytest.approx(float(jb), rel=1e-10)


def test_forward_complex_input_follows_the_gradient_convention():
    f = function_from_source("""
def f(z, s):
    return np.real(z * np.conj(z)) * s ** 2 + np.real(z) * s
""")
    z, s = 0.3 - 1.2j, 0.8
    want = pb.grad(f, argnums=(0, 1))(z, s)
    got = pb.grad(pb.forward(f), argnums=(0, 1))(z, s)
    assert got[0] == pytest.approx(want[0], rel=1e-12)
    assert got[1] == pytest.approx(want[1], rel=1e-12)
    fj = lambda z, s: jnp.real(z * jnp.conj(z)) * s ** 2 + jnp.real(z) * s     # noqa: E731
    assert got[0] == pytest.approx(complex(jax.grad(fj)(z, s)), rel=1e-12)


def test_forward_array_output_and_float32():
    f = function_from_source("""
def f(a, b):
    return np.array([a * b, np.sin(a) + b])
""")
    loss = function_from_source("""
def loss(a, b):
    return np.sum(fwd(a, b) * np.array([1.0, 3.0]))
""", {"fwd": pb.forward(f)})
    ga, gb = pb.grad(loss, argnums=(0, 1))(0.5, 2.0)
    assert ga == pytest.approx(2.0 + 3.0 * math.cos(0.5), rel=1e-14)
    assert gb == pytest.approx(0.5 + 3.0, rel=1e-14)
    x = np.array([0.5, 1.0], dtype=np.float32)
    g = pb.grad(pb.forward(function_from_source("""
def g(x):
    return np.sum(x * x)
""")))(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, 2 * x)


def test_forward_structured_and_integer_arguments():
    f = function_from_source("""
def f(p, n, x):
    s = p["a"] * x
    for i in range(n):
        s = np.sin(s) + p["b"][i % 2] * x
    return s
""")
    loss = function_from_source("""
def loss(p, x):
    return fwd(p, 3, x) * x
""", {"fwd": pb.forward(f)})
    plain = function_from_source("""
def loss(p, x):
    return f(p, 3, x) * x
""", {"f": f})
    p = {"a": 0.5, "b": np.array([0.3, -0.7])}
    got = pb.grad(loss, argnums=(0, 1))(p, 1.2)
    want = pb.grad(plain, argnums=(0, 1))(p, 1.2)
    assert got[0]["a"] == pytest.approx(want[0]["a"], rel=1e-12)
    np.testing.assert_allclose(got[0]["b"], want[0]["b"], rtol=1e-12)
    assert got[1] == pytest.approx(want[1], rel=1e-12)


def test_forward_mode_through_forward_is_plain_jvp():
    xs = rng.uniform(0.1, 1.0, size=5)
    t = rng.normal(size=5)
    got = pb.jvp(sum_of(orbit_fwd), (xs, 0.4), (t, 0.5))
    want = pb.jvp(sum_of(orbit), (xs, 0.4), (t, 0.5))
    assert got[0] == want[0]
    assert got[1] == pytest.approx(want[1], rel=1e-12)


def test_forward_source_and_refusals():
    text = pb.source(sum_of(orbit_fwd), np.ones(2), 0.5)
    assert "forward_orbit_primal(" in text and "forward_orbit_adjoint(" in text
    with pytest.raises(TypeError, match=r"pb\.forward expects a function"):
        pb.forward([1.0])
    pair = pb.forward(function_from_source("""
def pair(a):
    return a, 2.0 * a
"""))
    with pytest.raises(TypeError, match="real float or an array of floats.*returned tuple"):
        pb.grad(lambda a: pair(a)[0])(1.0)
    cplx = pb.forward(function_from_source("""
def cplx(a):
    return a * 1j
"""))
    with pytest.raises(TypeError, match="real float or an array of floats.*returned complex"):
        pb.grad(lambda a: np.real(cplx(a)))(1.0)


# -- ahead of time --------------------------------------------------------------------------

AOT_MODULE = '''
import numpy as np
import pullback as pb


@pb.checkpoint
def step(x, w):
    return x + 0.1 * np.sin(w * x)


def orbit(a, b):
    return a * np.cos(b) + np.sin(a * b)


orbit_f = pb.forward(orbit)


@pb.differentiable
def loss(x, w):
    for i in range(10):
        x = step(x, w)
    return np.sum(x ** 2) + orbit_f(x[0], w[0])
'''


def test_compiled_artifact_calls_checkpoint_and_forward(tmp_path):
    import subprocess
    import sys
    (tmp_path / "ckmod.py").write_text(AOT_MODULE)
    p = subprocess.run([sys.executable, "-m", "pullback", "compile", "ckmod.py", "-o", "build"],
                       capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    text = (tmp_path / "build" / "ckmod_pullback.py").read_text()
    assert "checkpoint_step_primal(" in text and "forward_orbit_adjoint(" in text
    sys.path[:0] = [str(tmp_path / "build"), str(tmp_path)]
    try:
        import ckmod
        import ckmod_pullback as art
        x, w = np.linspace(0.0, 1.0, 3), np.linspace(1.0, 2.0, 3)
        out, res = art.loss_primal(x, w)
        gx, gw = art.loss_adjoint(res, 1.0)
        want = pb.grad(function_from_source(AOT_MODULE.split("@pb.differentiable")[1].replace(
            "step(", "step_plain(").replace("orbit_f(", "orbit("),
            {"step_plain": ckmod.step.fun, "orbit": ckmod.orbit}), argnums=(0, 1))(x, w)
        assert out == ckmod.loss(x, w)
        np.testing.assert_allclose(gx, want[0], rtol=1e-12)
        np.testing.assert_allclose(gw, want[1], rtol=1e-12)
    finally:
        sys.path[:2] = []
        sys.modules.pop("ckmod", None)
        sys.modules.pop("ckmod_pullback", None)
