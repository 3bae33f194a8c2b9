"""Fused elementwise kernels (lower_broadcasts, kernels): every lowered
region's value and gradient equal the unlowered path's, on both of the
kernel's paths (JAX for large arrays, NumPy forward mode for small ones),
for random shapes, broadcasting pairs and float32; closures, np.vectorize,
side effects, the cost model, memory and the GPU path."""
import gc
import math
import os
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest

import pullback as pb
from pullback.sources import kernel_sources
from pullback.lowering import kernels
from pullback.callees import Derivative
from pullback.testing import function_from_source

jax_installed = pytest.mark.skipif(not kernels.jax_available(), reason="needs jax")
BIG, ALWAYS = 10 ** 12, 0            # thresholds: never JAX, always JAX

rng = np.random.default_rng(5)


def transform(src, args, wrt, lower, globals_=None, min_operations=1):
    """``src``'s function, transformed for ``args`` with the lowering on or off
    (by default every region is lowered, however small: these tests are about
    the lowering being right, not about when it pays)."""
    fn = function_from_source(src, globals_)
    with kernels.options(lower=lower, min_operations=min_operations):
        loaded = Derivative(fn).transform(args, tuple(wrt))
    return fn, loaded


def run(loaded, args, threshold=BIG):
    """Value and gradients (output cotangent: ones)."""
    with kernels.options(threshold=threshold):
        out, res = loaded.primal(*args)
        grads = loaded.adjoint(res, np.ones_like(out) if np.ndim(out) else 1.0)
    return out, grads


def paths(src, args, wrt=None, globals_=None):
    """(unlowered, lowered on NumPy, lowered on JAX) results and the
    lowered transform's source."""
    wrt = wrt if wrt is not None else [i for i, a in enumerate(args)
                                       if np.issubdtype(np.result_type(a), np.inexact)]
    _, plain = transform(src, args, wrt, False, globals_)
    _, low = transform(src, args, wrt, True, globals_)
    before = dict(kernels.stats)
    results = [run(plain, args), run(low, args, BIG)]
    numpy_calls = kernels.stats["numpy"] - before["numpy"]
    before = dict(kernels.stats)
    results.append(run(low, args, ALWAYS))
    jax_calls = kernels.stats["jax"] - before["jax"]
    return results, low.source, numpy_calls, jax_calls


def assert_same(a, b, dtype):
    rtol = 2e-5 if np.dtype(dtype) == np.float32 else 1e-11
    a_val, a_grads = a
    b_val, b_grads = b
    np.testing.assert_allclose(b_val, a_val, rtol=rtol, atol=rtol)
    assert np.result_type(b_val) == np.result_type(a_val)
    for ga, gb in zip(a_grads, b_grads):
        scale = max(1.0, float(np.max(np.abs(ga))))
        np.testing.assert_allclose(gb, ga, rtol=rtol, atol=rtol * scale)
        assert np.shape(gb) == np.shape(ga) and np.result_type(gb) == np.result_type(ga)
        assert type(gb) is type(ga)


PROGRAMS = {
    "chain": """
def f(x, y):
    return np.sum(np.tanh(2.0 * x + 1.0) * x * y)
""",
    "exp_sin": """
def f(x, y):
    z = np.exp(-x * y) + np.sin(x) / (1.0 + y * y)
    return np.sum(z)
""",
    "where_abs": """
def f(x, y):
    r = np.where(x > 0.1, x * y, 0.5 * np.abs(y) + 0.25)
    return np.sum(r ** 2)
""",
    "max_clip": """
def f(x, y):
    return np.sum(np.maximum(x, y) * np.clip(x - y, -0.5, 0.5))
""",
    "powers": """
def f(x, y):
    u = (x * x + 1.0) ** 1.5 / (y * y + 2.0)
    return np.mean(np.cbrt(u) + np.log1p(x * x) - y)
""",
    "linear": """
def f(x, y):
    return np.sum(x * 2.0 + y + 1.5)
""",
    "shared": """
def f(x, y):
    h = np.tanh(x * y)
    return np.sum(h) + np.mean(h * h)
""",
}

# broadcasting pairs, a 0-d array and a Python float; float32 on two of them
SHAPES = [((3, 1), (1, 4), np.float64), ((2, 3, 4), (), np.float64),
          ((6,), None, np.float64), ((5, 4), (4,), np.float32), ((6,), None, np.float32)]


@jax_installed
@pytest.mark.parametrize("shapes", SHAPES, ids=lambda s: f"{s[0]}x{s[1]}-{s[2].__name__}")
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_lowered_regions_equal_the_unlowered_path(name, shapes):
    xs, ys, dtype = shapes
    x = rng.normal(size=xs).astype(dtype)
    y = 0.7 if ys is None else rng.normal(size=ys).astype(dtype)
    (plain, on_numpy, on_jax), source, numpy_calls, jax_calls = paths(PROGRAMS[name], (x, y))
    assert "fused_" in source
    assert numpy_calls > 0 and jax_calls > 0
    assert_same(plain, on_numpy, dtype)
    assert_same(plain, on_jax, dtype)


def test_seed_001_closure_gradients_are_exact():
    src = """
def f(x, y):
    g = lambda z: z ** 2 + y[0]
    return np.sum(g(x))
"""
    x, y = np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0])
    (plain, on_numpy, on_jax), source, *_ = paths(src, (x, y))
    for _, (gx, gy) in (plain, on_numpy, on_jax):
        np.testing.assert_array_equal(gx, [2.0, 4.0, 6.0])
        np.testing.assert_array_equal(gy, [3.0, 0.0])
    assert "fused_" in source and "= y[0]" in source      # captured y[0]: a kernel input


def test_closure_capturing_a_scale_and_an_array():
    src = """
def f(x, w, s):
    g = lambda z: np.sin(z * s) * w
    return np.sum(g(x) ** 2)
"""
    x, w = rng.normal(size=(4, 3)), rng.normal(size=3)
    results, source, *_ = paths(src, (x, w, 1.3))
    assert "fused_" in source
    for r in results[1:]:
        assert_same(results[0], r, np.float64)


# -- np.vectorize -----------------------------------------------------------------

C = 3.0


def smooth(z, w):
    return math.tanh(2.0 * z + 1.0) * z + math.sin(w) * C


def expected_smooth(x, w):
    t = np.tanh(2.0 * x + 1.0)
    return t + 2.0 * x * (1.0 - t * t), np.sum(np.cos(w) * C * np.ones_like(x))


@jax_installed
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_vectorize_of_a_pure_scalar_function_is_fused(dtype):
    src = """
def f(x, w):
    return np.sum(np.vectorize(smooth)(x, w))
"""
    x = rng.normal(size=(3, 5)).astype(dtype)
    (plain, on_numpy, on_jax), source, numpy_calls, jax_calls = paths(
        src, (x, 0.3), globals_={"smooth": smooth})
    assert "fused_smooth" in source and jax_calls and numpy_calls
    gx, gw = expected_smooth(x.astype(float), 0.3)
    for _, (ax, aw) in (plain, on_numpy, on_jax):
        tol = 1e-5 if dtype == np.float32 else 1e-12
        np.testing.assert_allclose(ax, gx, rtol=tol, atol=tol)
        np.testing.assert_allclose(aw, gw, rtol=tol)
        assert ax.dtype == dtype and isinstance(aw, float)


def test_vectorize_of_library_functions_and_otypes():
    src = """
def f(x):
    a = np.vectorize(math.sin)(x)
    b = np.vectorize(np.tanh)(a * 2.0)
    c = np.vectorize(smooth, otypes=[np.float32])(b, 0.5)
    return np.sum(c * x)
"""
    x = rng.normal(size=6)
    (plain, on_numpy, on_jax), source, *_ = paths(src, (x,), globals_={"smooth": smooth})
    assert "fused_" in source and "_each" not in source
    assert_same(plain, on_numpy, np.float32)
    assert_same(plain, on_jax, np.float32)
    s = np.sin(x)
    t = np.tanh(2.0 * s)
    c = (np.tanh(2.0 * t + 1.0) * t + math.sin(0.5) * C).astype(np.float32)
    dc = np.tanh(2.0 * t + 1.0) + 2.0 * t * (1.0 - np.tanh(2.0 * t + 1.0) ** 2)
    np.testing.assert_allclose(on_jax[1][0], c + x * dc * (1 - t * t) * 2.0 * np.cos(x),
                               rtol=1e-5)


def test_vectorize_reads_globals_at_call_time():
    global C
    f = function_from_source("""
def f(x):
    return np.sum(np.vectorize(smooth)(x, 0.0) + np.vectorize(smooth)(x, 1.0))
""", {"smooth": smooth})
    x = rng.normal(size=4)
    before = pb.value_and_grad(f)(x)[0]
    old, C = C, 5.0
    try:
        after = pb.value_and_grad(f)(x)[0]
    finally:
        C = old
    assert after - before == pytest.approx(4 * 2.0 * math.sin(1.0))


LOG = []


def noisy(z):
    LOG.append(z)
    return z * z


def test_vectorize_with_side_effects_is_not_fused_and_agrees():
    src = """
def f(x):
    return np.sum(np.vectorize(noisy)(x) * 2.0)
"""
    x = np.array([1.0, -2.0, 0.5])
    for lower in (False, True):
        fn, loaded = transform(src, (x,), (0,), lower, {"noisy": noisy})
        assert "noisy_each_primal" in loaded.source and "fused_noisy" not in loaded.source
        LOG.clear()
        out, grads = run(loaded, (x,), ALWAYS)
        assert len(LOG) == 4                   # three elements, and NumPy's probe of the first
        assert out == pytest.approx(2.0 * np.sum(x * x))
        np.testing.assert_allclose(grads[0], 4.0 * x)


def shout(z):
    print("z =", z)
    return math.exp(z)


def test_vectorize_with_print_runs_per_element(capsys):
    f = function_from_source("""
def f(x):
    return np.sum(np.vectorize(shout)(x))
""", {"shout": shout})
    x = np.array([0.0, 1.0])
    with kernels.options(lower=True):
        g = pb.grad(f)(x)
    np.testing.assert_allclose(g, np.exp(x))
    assert capsys.readouterr().out.count("z =") == 3


def test_closure_with_a_counter_is_not_fused():
    src = """
def f(x):
    count = 0
    def g(z):
        nonlocal count
        count = count + 1
        return z * z * 3.0
    a = g(x)
    b = g(a)
    return np.sum(b) + count
"""
    x = rng.normal(size=5)
    (plain, on_numpy, on_jax), source, *_ = paths(src, (x,))
    assert plain[0] == pytest.approx(np.sum(9.0 * x ** 4 * 3.0) + 2)
    for r in (on_numpy, on_jax):
        assert_same(plain, r, np.float64)


# -- control flow, activity, dtypes -------------------------------------------------

@jax_installed
def test_regions_stay_inside_blocks():
    src = """
def f(x, y, flag):
    a = np.tanh(x) * y
    if flag:
        b = np.exp(a) * 2.0
    else:
        b = np.sin(a) + a
    return np.sum(b * b)
"""
    x, y = rng.normal(size=(4, 3)), rng.normal(size=3)
    for flag in (True, False):
        results, source, *_ = paths(src, (x, y, flag), wrt=[0, 1])
        assert source.count("fused_") >= 4
        for r in results[1:]:
            assert_same(results[0], r, np.float64)


def test_forward_mode_at_an_untaken_infinite_branch():
    src = """
def f(x):
    return np.sum(np.where(x > 0.0, np.log(x) * 2.0 + 1.0, 0.0))
"""
    x = np.array([0.0, 1.0, 2.0])
    with np.errstate(divide="ignore", invalid="ignore"):
        (plain, on_numpy, on_jax), *_ = paths(src, (x,))
    assert np.isnan(plain[1][0][0])                  # reverse mode: 0 * inf
    for _, (g,) in (on_numpy, on_jax):               # forward mode, both paths: 0
        np.testing.assert_allclose(g, [0.0, 2.0, 1.0])


def test_regions_do_not_reach_across_writes():
    src = """
def f(x):
    y = np.zeros(x.shape)
    b = x * 2.0 + 1.0
    w = np.tanh(b) * x
    y[0] = 5.0
    c = np.exp(w) * x + y[1] + y[0]
    d = c * 3.0 + 1.0
    d[0] = 2.0
    return np.sum(d * d)
"""
    x = rng.normal(size=6)
    results, source, _, jax_calls = paths(src, (x,))
    assert source.count("_primal(") >= 3 and jax_calls >= 3
    for r in results[1:]:                     # d, written into, is a writable copy
        assert_same(results[0], r, np.float64)


def test_complex_values_stay_on_numpy():
    src = """
def f(z, w):
    return np.sum(np.abs(z * w + 1.0) ** 2)
"""
    z = rng.normal(size=6) + 1j * rng.normal(size=6)
    w = rng.normal(size=6)
    (plain, on_numpy, on_jax), source, numpy_calls, jax_calls = paths(src, (z, w))
    for r in (on_numpy, on_jax):
        assert_same(plain, r, np.float64)
    _, loaded = transform(src, (z, w), (0, 1), True)
    for k in kernel_objects(loaded):                 # only the real tail is fused
        assert "z" not in k.params and "w" not in k.params
    _, loaded = transform("""
def f(z):
    return np.exp(z) * 2.0
""", (z,), (0,), True)
    assert not kernel_objects(loaded)


def kernel_objects(loaded):
    found = {id(v.__pullback_kernel__[0]): v.__pullback_kernel__[0]
             for v in loaded.helpers.values() if kernels.is_kernel_helper(v)}
    return list(found.values())


def test_integer_values_carry_no_gradient():
    src = """
def f(x, n):
    return np.sum(np.sin(x) * n + n * n)
"""
    x, n = rng.normal(size=5), np.arange(5)
    (plain, on_numpy, on_jax), *_ = paths(src, (x, n), wrt=[0])
    for r in (on_numpy, on_jax):
        assert_same(plain, r, np.float64)
    np.testing.assert_allclose(on_jax[1][0], np.cos(x) * n)


def test_returned_value_is_writable():
    src = """
def f(x):
    return np.exp(x) * 2.0
"""
    x = rng.normal(size=8)
    _, loaded = transform(src, (x,), (0,), True)
    with kernels.options(threshold=ALWAYS):
        out, _ = loaded.primal(x)
    out[0] = 1.0                             # a JAX buffer would be read-only


# -- the cost model and the switches ---------------------------------------------------

def test_small_arguments_keep_plain_numpy_code():
    f = function_from_source("""
def f(x):
    return np.sum(np.tanh(x) * x + 1.0)
""")
    small, big = np.ones(4), np.ones(kernels.current_threshold())
    with kernels.sizing((small,)):
        assert not kernels.lowering_wanted()
    with kernels.sizing((big,)):
        assert kernels.lowering_wanted()
    assert "fused_" not in pb.source(f, small)
    with kernels.options(lower=True):
        assert "fused_tanh" in pb.source(f)


def test_threshold_from_the_environment(monkeypatch):
    monkeypatch.setenv("PULLBACK_JAX_THRESHOLD", "123")
    assert kernels.threshold_from_env() == 123 == kernels.current_threshold()
    with kernels.options(threshold=7):
        assert kernels.current_threshold() == 7
        assert kernels.size_class((np.ones(7),)) and not kernels.size_class((np.ones(6),))
    _, loaded = transform("""
def f(x):
    return np.sum(np.tanh(x) * x)
""", (np.ones(3),), (0,), True)
    assert kernel_objects(loaded)[0].threshold == 123
    monkeypatch.setenv("PULLBACK_JAX_THRESHOLD", "lots")
    with pytest.raises(ValueError, match="PULLBACK_JAX_THRESHOLD"):
        kernels.threshold_from_env()


def test_regions_of_few_operations_are_not_lowered():
    src = """
def f(x, c):
    return np.sum(np.tanh(x) * c + np.abs(x) * 2.0)
"""
    x = rng.normal(size=5)
    _, loaded = transform(src, (x, 0.5), (0,), True, min_operations=None)
    assert len(kernel_objects(loaded)) == 1                       # 5 operations
    _, loaded = transform("""
def f(x, c):
    return np.sum(np.tanh(x) * c)
""", (x, 0.5), (0,), True, min_operations=None)
    assert kernels.MIN_OPERATIONS == 3 and not kernel_objects(loaded)
    (plain, on_numpy, on_jax), source, *_ = paths(src, (x, 0.5))
    for r in (on_numpy, on_jax):
        assert_same(plain, r, np.float64)


@jax_installed
def test_the_users_jax_configuration_is_left_alone():
    import jax
    before = jax.config.jax_enable_x64
    _, loaded = transform(CHAIN, (rng.normal(size=9),), (0,), True)
    run(loaded, (rng.normal(size=9),), ALWAYS)
    assert jax.config.jax_enable_x64 == before


def test_switched_off_by_the_environment(monkeypatch):
    monkeypatch.setenv("PULLBACK_JAX", "0")
    src = """
def f(x):
    return np.sum(np.tanh(x) * np.vectorize(smooth)(x, 0.5))
"""
    x = rng.normal(size=5)
    _, loaded = transform(src, (x,), (0,), True, {"smooth": smooth})
    assert "fused_tanh" not in loaded.source            # no region is lowered...
    assert "fused_smooth" in loaded.source              # ...but vectorize is still inlined
    before = kernels.stats["jax"]
    run(loaded, (x,), ALWAYS)
    assert kernels.stats["jax"] == before


def test_import_does_not_load_jax(tmp_path):
    (tmp_path / "small.py").write_text(
        "import sys, numpy as np, pullback as pb\n"
        "from pullback.lowering import kernels\n"
        "def f(x):\n"
        "    return np.sum(np.tanh(x) * x)\n"
        "with kernels.options(lower=True):\n"
        "    g = pb.grad(f)(np.ones(3))\n"
        "print('jax' in sys.modules)\n")
    out = subprocess.run([sys.executable, str(tmp_path / "small.py")], capture_output=True,
                         text=True, env=dict(os.environ, PULLBACK_CACHE="0"))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_kernel_source_shows_the_region_and_its_translations():
    f = function_from_source("""
def f(x):
    return np.sum(np.tanh(2.0 * x + 1.0) * x)
""")
    with kernels.options(lower=True):
        text = kernel_sources(f)
    assert "def fused_tanh_sum(x):" in text and "jnp.tanh(" in text
    assert "def fused_tanh_sum_partials(x):" in text and "1.0 - " in text
    assert "return np.sum(prod), (prod_dx,)" in text     # the sum is fused in


# -- memory ---------------------------------------------------------------------------

CHAIN = """
def f(x):
    a = np.sin(x) * 2.0 + 1.0
    b = np.tanh(a) * x
    c = np.exp(-b * b) + a
    return np.sum(c * c)
"""


def residual_bytes(loaded, x, threshold):
    with kernels.options(threshold=threshold):
        _, res = loaded.primal(x)
    arrays = []

    def walk(r):
        if isinstance(r, np.ndarray):
            arrays.append(r)
        elif isinstance(r, (tuple, list)):
            for v in r:
                walk(v)
    walk(res)
    return sum(a.nbytes for a in arrays if a is not x and not np.shares_memory(a, x))


@jax_installed
def test_intermediates_are_not_kept():
    x = rng.normal(size=20_000)
    _, plain = transform(CHAIN, (x,), (0,), False)
    _, low = transform(CHAIN, (x,), (0,), True)
    assert residual_bytes(plain, x, BIG) >= 4 * x.nbytes
    assert residual_bytes(low, x, ALWAYS) <= x.nbytes        # one partial
    assert residual_bytes(low, x, BIG) <= x.nbytes


def peak(loaded, x, threshold):
    gc.collect()
    tracemalloc.start()
    try:
        run(loaded, (x,), threshold)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_numpy_path_peak_memory_is_below_the_unlowered_path():
    x = rng.normal(size=200_000)
    _, plain = transform(CHAIN, (x,), (0,), False)
    _, low = transform(CHAIN, (x,), (0,), True)
    run(low, (x,), BIG)
    p_plain, p_low = peak(plain, x, BIG), peak(low, x, BIG)
    assert p_low < 0.75 * p_plain, (p_low / x.nbytes, p_plain / x.nbytes)


# -- GPU --------------------------------------------------------------------------------

def _gpu():
    try:
        import cupy
        import jax
        return cupy.is_available() and any(d.platform == "gpu" for d in jax.devices())
    except Exception:
        return False


@pytest.mark.gpu
@pytest.mark.skipif(not _gpu(), reason="needs a GPU with CuPy and a CUDA build of JAX (issue 18: run benchmarks/gpu_check.sh where one is lent)")
def test_cupy_arrays_reach_jax_without_a_copy():
    import cupy
    import jax
    _, loaded = transform("""
def f(x):
    return np.sum(np.tanh(2.0 * x + 1.0) * x)
""", (np.ones(3),), (0,), True)
    k = kernel_objects(loaded)[0]
    primal, adjoint = k.for_callers((0,))
    x = cupy.asarray(rng.normal(size=100_000))
    assert jax.dlpack.from_dlpack(x).unsafe_buffer_pointer() == x.data.ptr
    before = kernels.stats["jax"]
    out, res = primal(x)
    assert kernels.stats["jax"] == before + 1 and isinstance(out, cupy.ndarray)
    (gx,) = adjoint(res, cupy.ones_like(out))
    xh = cupy.asnumpy(x)
    t = np.tanh(2.0 * xh + 1.0)
    np.testing.assert_allclose(cupy.asnumpy(gx), t + 2.0 * xh * (1.0 - t * t), rtol=1e-10)
