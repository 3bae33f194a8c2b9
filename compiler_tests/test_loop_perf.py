"""Issue 17's loop adjoints near the primal: what the generated adjoint no
longer does, counted on ``pb.source``, with gradients bit for bit those of
the out-of-place path (``inplace=False``) and of the code generated before
each change (a mirror of its order of operations, or the digest of its
bytes); never timed."""
import hashlib
import sys
from pathlib import Path

import numpy as np
import pytest

import pullback as pb
from pullback.runtime import distinct_indices
from pullback.testing import function_from_source

from fd_helpers import central as _central

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import problems as P  # noqa: E402

rng = np.random.default_rng(1717)


def _bytes(value, grads):
    return b"".join(np.ascontiguousarray(np.asarray(x, dtype=np.float64)).tobytes()
                    for x in (value,) + tuple(grads))


def _both_paths(f, args, argnums):
    got = [pb.value_and_grad(f, argnums=argnums, inplace=ip)(*args) for ip in (True, False)]
    assert _bytes(*got[0]) == _bytes(*got[1])
    return got[0]


# -- a fresh buffer written once per index: a store, not an add --------------------

def test_evalpoly_stores_each_coefficient_gradient_once():
    p = P.BY_NAME["evalpoly"]
    args = p.inputs(200)
    adjoint = pb.source(p.fn, *args, argnums=p.argnums).split("def evalpoly_adjoint")[1]
    loop = adjoint.split("for i in reversed")[1].split("# line")[0]
    assert "distinct_indices(" in adjoint
    assert "+= " not in loop and "+ 0.0 if distinct" in loop, loop
    value, (gx, gp) = _both_paths(p.fn, args, p.argnums)
    # the order of operations of the adjoint generated before: p_bar[i] += g
    x, coef = args
    n = len(coef)
    saved, ex = [], coef[n - 1]
    for i in range(n - 2, -1, -1):
        saved.append(ex)
        ex = x * ex + coef[i]
    want_p, want_x, g = np.zeros(n), 0.0, 1.0
    for i in range(0, n - 1):
        want_p[i] += g
        want_x = want_x + g * saved.pop()
        g = g * x
    want_p[n - 1] += g
    assert value == ex
    assert gx == want_x and np.array_equal(gp, want_p)


@pytest.mark.parametrize("r", [range(5), range(4, -1, -1), range(-1, -6, -1), range(-3, 3),
                               range(0), range(2, 9, 3), range(-1, 2)])
def test_distinct_indices(r):
    # True exactly when the range is all of one sign; then, for every length
    # the indices are valid for, they reach distinct elements
    assert distinct_indices(r) == (not r or min(r) >= 0 or max(r) < 0)
    if distinct_indices(r):
        for n in range(max([abs(i) + (i >= 0) for i in r], default=0), 12):
            hit = [i % n for i in r] if n else []
            assert len(set(hit)) == len(hit)


@pytest.mark.parametrize("lo, hi", [(0, 5), (-5, 0), (-2, 3), (-1, 2)])
def test_a_range_that_reaches_one_element_twice_still_adds(lo, hi):
    f = function_from_source("""
def f(w, lo, hi):
    s = 0.0
    for i in range(lo, hi):
        s = s * 0.5 + np.sin(w[i])
    return s
""")
    w = rng.normal(size=5)
    src = pb.source(f, w, lo, hi)
    assert "distinct_indices(" in src
    g = pb.grad(f)(w, lo, hi)
    np.testing.assert_allclose(g, _central(lambda v: f(v, lo, hi), w), rtol=1e-7, atol=1e-9)
    _both_paths(f, (w, lo, hi), 0)


def test_a_buffer_read_twice_in_the_body_keeps_its_adds():
    f = function_from_source("""
def f(w, n):
    s = 0.0
    for i in range(n):
        s = s + w[i] * w[i + 1]
    return s
""")
    w = rng.normal(size=6)
    assert "distinct_indices(" not in pb.source(f, w, 5)
    np.testing.assert_allclose(pb.grad(f)(w, 5), _central(lambda v: f(v, 5), w),
                               rtol=1e-7, atol=1e-9)


def test_a_buffer_with_gradient_from_after_the_loop_keeps_its_adds():
    f = function_from_source("""
def f(w, n):
    s = 0.0
    for i in range(n):
        s = s * 0.9 + w[i]
    return s * np.sum(w * w)
""")
    w = rng.normal(size=6)
    src = pb.source(f, w, 6)
    assert "distinct_indices(" not in src
    np.testing.assert_allclose(pb.grad(f)(w, 6), _central(lambda v: f(v, 6), w),
                               rtol=1e-7, atol=1e-9)
    _both_paths(f, (w, 6), 0)


def test_an_inner_loop_buffer_owned_by_the_outer_loop_keeps_its_adds():
    f = function_from_source("""
def f(w, n):
    s = 0.0
    for j in range(2):
        for i in range(n):
            s = s * 0.9 + w[i] * w[i]
    return s
""")
    w = rng.normal(size=4)
    np.testing.assert_allclose(pb.grad(f)(w, 4), _central(lambda v: f(v, 4), w),
                               rtol=1e-7, atol=1e-9)
    _both_paths(f, (w, 4), 0)


def test_rows_of_a_matrix_are_stored_once():
    f = function_from_source("""
def f(W, n):
    s = np.zeros(3)
    for i in range(n - 1, -1, -1):
        s = np.sin(s) + W[i] * 2.0
    return np.sum(s * s)
""")
    W = rng.normal(size=(5, 3))
    assert "distinct_indices(" in pb.source(f, W, 5)
    np.testing.assert_allclose(pb.grad(f)(W, 5), _central(lambda v: f(v, 5), W),
                               rtol=1e-7, atol=1e-9)
    _both_paths(f, (W, 5), 0)


# -- the benchmark problems: bit for bit the gradients of the code before ---------

# sha256 of value and gradients (float64 bytes) from the adjoints generated
# before issue 17's loop changes (commit 4c80518), NumPy 2.4; under another
# NumPy only the two accumulation paths are compared
BEFORE = {("evalpoly", 1000): "2f46899c9d9fe866", ("fpu_chain", 1000): "065f538d6b2c94e5",
          ("sum_squares_list", 1000): "8f8c12943cc141f9",
          ("sum_squares_gen", 1000): "8f8c12943cc141f9", ("column_loop", 50): "8b0d37213fa9eed0"}


@pytest.mark.parametrize("name, n", sorted(BEFORE))
def test_benchmark_gradients_are_bitwise_those_of_before(name, n):
    p = P.BY_NAME[name]
    value, grads = _both_paths(p.fn, p.inputs(n), p.argnums)
    if np.__version__.startswith("2.4."):
        assert hashlib.sha256(_bytes(value, grads)).hexdigest()[:16] == BEFORE[name, n]


# -- float64 scalars taped as NumPy scalars run the adjoint as Python floats ------

def test_evalpoly_pops_python_floats():
    p = P.BY_NAME["evalpoly"]
    args = p.inputs(50)
    adjoint = pb.source(p.fn, *args, argnums=p.argnums).split("def evalpoly_adjoint")[1]
    assert "ex_1 = float(ex_1) if type(ex_1) is float64 else ex_1" in adjoint, adjoint
    value, (gx, gp) = _both_paths(p.fn, args, p.argnums)
    assert type(gx) is float and gp.dtype == np.float64


def test_a_scalar_divided_by_stays_a_numpy_scalar():
    # 1.0 / np.float64(0.0) is inf (and a warning); 1.0 / 0.0 raises
    f = function_from_source("""
def f(w, n):
    s = w[0] * 0.0
    t = 0.0
    for i in range(n):
        t = t + w[1] / s
        s = s * 1.0
    return t
""")
    w = np.array([1.0, 2.0])
    adjoint = pb.source(f, w, 2).split("def f_adjoint")[1]
    assert "s_1 = float(" not in adjoint and "ratio = float(ratio) if" in adjoint, adjoint
    with np.errstate(divide="ignore", invalid="ignore"):
        g = pb.grad(f)(w, 2)
    assert np.isinf(g[1]) or np.isnan(g[1])


def test_kinds_follow_float64_through_arithmetic_and_loops():
    from pullback.testing import analyses
    from pullback.analyses.kinds import Kind
    f = function_from_source("""
def f(x, p, n, m):
    ex = p[0]
    for i in range(n):
        ex = x * ex + p[i]
    y = ex ** 0.5
    z = p * 2 + n
    q = m / 2.0
    return ex + np.sum(z) + y + q
""")
    f64 = Kind("scalar", False, 0, "float64")
    params = {"x": f64, "p": Kind("array", False, 1, "float64"),
              "n": Kind("scalar", False, 0, "int64"), "m": Kind("scalar", False, 0, "int16")}
    _, _, _, k, _ = analyses(f, param_kinds=params)
    assert k["ex"].dtype == "float64" and k["z"].dtype == "float64"
    assert k["y"].dtype is None          # a Python float to a fractional power may be complex
    assert k["q"].dtype is None          # int16 is not followed


# -- a negated gradient added into a buffer is subtracted -------------------------

def test_the_fpu_step_subtracts_rather_than_negates():
    p = P.BY_NAME["fpu_chain"]
    args = p.inputs(20)
    loop = pb.source(p.fn, *args, argnums=p.argnums).split("def fpu_chain_adjoint")[1] \
        .split("for t in reversed")[1]
    assert "= -" not in loop, loop
    assert loop.count("index_sub(") + loop.count("] -= ") == 2, loop
    _both_paths(p.fn, args, p.argnums)


@pytest.mark.parametrize("inplace", [True, False])
def test_differences_of_neighbours_in_a_loop(inplace):
    f = function_from_source("""
def f(x, n):
    s = 0.0
    for i in range(n):
        d = x[1:] - x[:-1]
        x = x + 0.1 * np.concatenate((d, d[-1:])) * x
        s = s + np.sum(d * d)
    return s
""")
    x = rng.normal(size=6)
    g = pb.grad(f, inplace=inplace)(x, 3)
    np.testing.assert_allclose(g, _central(lambda v: f(v, 3), x), rtol=1e-6, atol=1e-8)
    _both_paths(f, (x, 3), 0)


def test_a_negation_whose_operand_changes_before_the_add_is_kept():
    from pullback.backend.codegen import unparse
    from pullback.reverse.fold_negations import fold_negations
    import gast
    fn = gast.parse('''
def f_adjoint(d_bar, a, w):
    t_bar = -d_bar
    d_bar = d_bar * 2.0
    a_bar = owned_zeros(a)
    a_bar[:-1] += t_bar
    u_bar = -w
    w[0] = 1.0
    index_add(a_bar, slice(1, None), u_bar)
    v_bar = -d_bar
    a_bar = g(a_bar)
    a_bar[1:] += v_bar
    return a_bar
''').body[0]
    text = unparse(fold_negations(fn, {"owned_zeros"}, "index_sub"))
    assert text.count("= -") == 3 and "index_sub" not in text and "-=" not in text, text


def test_index_sub_is_index_add_of_the_negation():
    from pullback.runtime import index_add, index_sub
    for buf, idx, g in [(np.zeros(5), slice(1, None), np.arange(4.0)),
                        (np.zeros(5), np.array([1, 1, 2]), np.array([1.0, 2.0, 3.0])),
                        (np.zeros(3), 1, 2.5), (np.zeros(3), slice(None), 1j * np.ones(3) + 2)]:
        a, b = buf.copy(), buf.copy()
        index_sub(a, idx, g)
        index_add(b, idx, -g)
        assert np.array_equal(a, b)


def test_unconcatenate_slices_along_the_first_axis():
    from pullback.runtime import unconcatenate
    g = np.arange(12.0).reshape(6, 2)
    parts = unconcatenate(g, (np.ones((1, 2)), np.ones((4, 2)), np.ones((1, 2))))
    assert isinstance(parts, tuple) and [q.shape for q in parts] == [(1, 2), (4, 2), (1, 2)]
    assert np.array_equal(np.concatenate(parts), g)
    assert isinstance(unconcatenate(np.arange(3.0), [np.ones(1), np.ones(2)]), list)
    # other axes and ranks take the general path
    parts = unconcatenate(np.arange(6.0).reshape(2, 3), (np.ones((2, 1)), np.ones((2, 2))), axis=1)
    assert [q.shape for q in parts] == [(2, 1), (2, 2)]


# -- exact slice adds where every array is float64 ---------------------------------

NEIGHBOURS = """
def f(x, k):
    xp = np.concatenate((x, x[:1]))
    d = xp[1:] - xp[:-1]
    return np.sum(k * d * d)
"""


def test_slices_of_a_concatenation_add_in_place_when_all_is_float64():
    f = function_from_source(NEIGHBOURS)
    x, k = rng.normal(size=5), rng.normal(size=5)
    adjoint = pb.source(f, x, k).split("def f_adjoint")[1]
    assert "xp_bar[:-1] -= " in adjoint and "xp_bar[1:] += " in adjoint, adjoint
    assert "index_add(" not in adjoint and "index_sub(" not in adjoint
    g = pb.grad(f)(x, k)
    np.testing.assert_allclose(g, _central(lambda v: f(v, k), x), rtol=1e-7, atol=1e-9)
    _both_paths(f, (x, k), 0)


@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
def test_other_dtypes_keep_the_general_add(dtype):
    f = function_from_source(NEIGHBOURS)
    x, k = rng.normal(size=5).astype(dtype), rng.normal(size=5)
    adjoint = pb.source(f, x, k).split("def f_adjoint")[1]
    assert "xp_bar[" not in adjoint and "index_sub(xp_bar" in adjoint, adjoint
    g = pb.grad(f)(x.real.astype(dtype), k) if dtype is np.float32 else None
    if g is not None:
        assert g.dtype == np.float32
    # the generic transform (any dtype) keeps it too
    assert "xp_bar[" not in pb.source(f).split("def f_adjoint")[1]


# -- shapes on the tape, not meta objects ---------------------------------------------

def test_the_fpu_tape_keeps_shapes_and_no_meta_call_runs():
    p = P.BY_NAME["fpu_chain"]
    args = p.inputs(20)
    text = pb.source(p.fn, *args, argnums=p.argnums)
    primal, adjoint = text.split("def fpu_chain_adjoint")
    tape = [ln for ln in primal.splitlines() if "tape.append" in ln][0]
    # x.shape for a NumPy array, meta(x) for anything else (Dask, CuPy)
    assert tape.count(".shape if type(") == 6 and tape.count("else meta(") == 6, tape
    loop = adjoint.split("for t in reversed")[1]
    assert loop.count("unbroadcast_to(") == 4 and loop.count("zeros_shaped(") == 2, loop
    assert "owned_zeros(" not in loop
    from pullback import runtime
    calls = {"meta": 0}
    real = runtime.meta

    def counted(x):
        calls["meta"] += 1
        return real(x)
    vg = pb.value_and_grad(p.fn, argnums=p.argnums)
    vg(*args)
    import pullback.runtime.core as core
    saved = core.meta
    try:
        core.meta = runtime.meta = counted
        # (the helpers are bound when the transform is loaded: count a fresh one)
        f = function_from_source(FPU_LIKE)
        pb.value_and_grad(f, argnums=(0, 1))(args[0], args[1], 20)
    finally:
        core.meta = runtime.meta = saved
    assert 1 <= calls["meta"] <= 3, calls     # residuals outside the loop only


FPU_LIKE = """
def f(x0, k, steps):
    x = x0
    v = np.zeros_like(x0)
    wall = np.zeros(1)
    for t in range(steps):
        xp = np.concatenate((wall, x, wall))
        d = xp[1:] - xp[:-1]
        tension = k * (d + 0.25 * d * d)
        v = v + 0.05 * (tension[1:] - tension[:-1])
        x = x + 0.05 * v
    return np.sum(x * x)
"""


def test_shapes_on_the_tape_give_the_gradient_of_broadcasting_steps():
    f = function_from_source("""
def f(x, w, n):
    s = 0.0
    for i in range(n):
        y = x[:i + 2] * w[i]
        z = y + x[:1]
        s = s + np.sum(z * z)
    return s
""")
    x, w = rng.normal(size=6), rng.normal(size=4)
    adjoint = pb.source(f, x, w, 4).split("def f_adjoint")[1]
    g = pb.grad(f, argnums=(0, 1))(x, w, 4)
    np.testing.assert_allclose(g[0], _central(lambda v: f(v, w, 4), x), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(g[1], _central(lambda v: f(x, v, 4), w), rtol=1e-7, atol=1e-9)
    _both_paths(f, (x, w, 4), (0, 1))
    assert "unbroadcast_to(" in adjoint or "unbroadcast(" in adjoint


def test_a_one_argument_ufunc_keeps_the_shape():
    p = P.BY_NAME["column_loop"]
    args = p.inputs(30)
    loop = pb.source(p.fn, *args).split("def column_loop_adjoint")[1].split("for j in")[1]
    assert "unbroadcast(" not in loop, loop
    value, (g,) = _both_paths(p.fn, args, (0,))
    X = args[0]
    np.testing.assert_allclose(g, np.cos(X) * X + np.sin(X), rtol=1e-14)
    # and a two-argument one, or one whose operand broadcasts, keeps it
    f = function_from_source("""
def f(x, y, n):
    s = 0.0
    for i in range(n):
        a = x[:i + 1]
        b = np.sin(a)
        c = np.arctan2(a, y)
        s = s + np.sum(b * c)
    return s
""")
    x, y = rng.normal(size=4), rng.normal(size=1)
    loop = pb.source(f, x, y, 3).split("def f_adjoint")[1]
    assert "unbroadcast(" in loop
    for argnum, v0 in ((0, x), (1, y)):
        def h(v, argnum=argnum):
            return f(v, y, 3) if argnum == 0 else f(x, v, 3)
        np.testing.assert_allclose(pb.grad(f, argnums=argnum)(x, y, 3), _central(h, v0),
                                   rtol=1e-7, atol=1e-9)


def test_the_fpu_step_calls_no_unbroadcast_when_shapes_agree():
    """The four ``unbroadcast_to`` of a step return the cotangent itself (the
    carried arrays keep their shape): the test is written in the generated
    code (reverse/shape_guards), so no call runs; the gradient is the one
    the calls gave, to the bit."""
    import sys
    from collections import Counter
    p = P.BY_NAME["fpu_chain"]
    args = p.inputs(20)
    loop = pb.source(p.fn, *args, argnums=p.argnums).split("for t in reversed")[1]
    assert loop.count(".shape == ") == 4 and loop.count("else unbroadcast_to(") == 4, loop
    vg = pb.value_and_grad(p.fn, argnums=p.argnums)
    first = vg(*args)
    seen = Counter()

    def profile(frame, event, arg):
        if event == "call":
            seen[frame.f_code.co_name] += 1
    sys.setprofile(profile)
    try:
        again = vg(*args)
    finally:
        sys.setprofile(None)
    assert seen["unbroadcast_to"] == 0 and seen["unbroadcast"] == 2 * 20, seen
    # xp's cotangent gives x its slice, between the walls (reverse/concatenate_parts)
    assert seen["zeros_shaped"] == 2 * 20 and seen["unconcatenate"] == 0, seen
    assert first[0] == again[0]
    for a, b in zip(first[1], again[1]):
        assert np.array_equal(a, b)
    # a cotangent of another shape still goes through the helper
    from pullback import runtime
    g = np.ones((3, 4))
    assert np.array_equal(runtime.unbroadcast_to(g, (4,)), np.full(4, 3.0))
