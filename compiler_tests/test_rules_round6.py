"""Issue 13, round 6: NumPy functions that had no rule (``np.block``,
``np.choose``, ``np.modf``, ``np.frexp``, ``np.ldexp``, ``np.logspace``,
``np.histogram``, ``np.unique`` and the set operations, ``np.vecdot``,
``np.matvec``, ``np.vecmat``) and ``np.frompyfunc``, refused.

Each rule is also in ``test_rules``' table (``rule_cases_round6``: the
randomized dot-product check, reverse and, through ``test_forward``,
forward).  Here whole functions that call them go through ``pb.grad`` and
``pb.jvp`` and are checked against JAX (float64), and which occurrence of a
repeated value gets its gradient (the first: JAX's convention where its
result is differentiable, ``jnp.unique(..., size=n)``) by exact values.
"""
import numpy as np
import pytest

import pullback as pb
from pullback.testing import function_from_source

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402

RNG = np.random.default_rng(6)
numpy2 = pytest.mark.skipif(not hasattr(np, "matvec"), reason=(
    "needs NumPy >= 2.2 (np.matvec, np.unique_all): a version gate, no issue removes it"))


def both_modes(text, jax_fn, args, rtol=1e-9, namespace=None):
    """pb.grad and pb.jvp of the NumPy function ``text`` against JAX's at
    ``args``; the arguments are left as they were."""
    f = function_from_source(text, namespace or {})
    jargs = tuple(jnp.asarray(a) for a in args)
    wrt = tuple(range(len(args)))
    before = [np.copy(a) for a in args]
    got = pb.grad(f, argnums=wrt)(*args)
    want = jax.grad(jax_fn, argnums=wrt)(*jargs)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, np.asarray(w), rtol=rtol, atol=1e-12)
    tangents = tuple(RNG.standard_normal(np.shape(a)) for a in args)
    _, dot = pb.jvp(f, tuple(args), tangents)
    _, jdot = jax.jvp(jax_fn, jargs, tuple(jnp.asarray(t) for t in tangents))
    np.testing.assert_allclose(dot, np.asarray(jdot), rtol=rtol, atol=1e-12)
    for b, a in zip(before, args):
        np.testing.assert_array_equal(a, b)
    return got


# -- a number's parts ----------------------------------------------------------------------


def test_modf_frexp_ldexp_unpacked():
    both_modes('''
def f(x):
    frac, whole = np.modf(3.0 * x)
    mantissa, exponent = np.frexp(x)
    return np.sum(frac * whole + mantissa ** 2 * exponent + np.ldexp(x, exponent + 1))
''', lambda x: jnp.sum(jnp.modf(3.0 * x)[0] * jnp.modf(3.0 * x)[1]
                       + jnp.frexp(x)[0] ** 2 * jnp.frexp(x)[1]
                       + jnp.ldexp(x, jnp.frexp(x)[1] + 1)),
        (np.array([0.3, -1.7, 5.2, 0.9]),))


def test_frexp_result_indexed_and_exact():
    f = function_from_source('''
def f(x):
    return np.sum(np.frexp(x)[0])
''')
    # mantissa = x / 2**e: its slope is 2**-e (3 = 0.75 * 4, 0.7 = 0.7 * 1, -5 = -0.625 * 8)
    np.testing.assert_array_equal(pb.grad(f)(np.array([3.0, 0.7, -5.0])), [0.25, 1.0, 0.125])


# -- np.block, np.choose, np.logspace --------------------------------------------------------


def test_block_of_blocks_and_a_constant():
    a, b = RNG.standard_normal((2, 3)), RNG.standard_normal((2, 2))
    w = RNG.standard_normal((4, 5))
    both_modes('''
def f(a, b):
    m = np.block([[a, b], [np.zeros((2, 3)), 2.0 * b]])
    return np.sum(np.sin(m) * w)
''', lambda a, b: jnp.sum(jnp.sin(jnp.block([[a, b], [jnp.zeros((2, 3)), 2.0 * b]])) * w),
        (a, b), namespace={"w": w})


@pytest.mark.parametrize("mode", ["raise", "wrap", "clip"])
def test_choose_broadcasts_its_choices(mode):
    idx = np.array([[0, 1, 2], [2, 0, 1]]) if mode == "raise" else np.array([[0, 4, -1],
                                                                               [5, 1, 2]])
    both_modes('''
def f(x, y):
    return np.sum(np.cos(np.choose(idx, [x, y, x * y], mode=mode)))
''', lambda x, y: jnp.sum(jnp.cos(jnp.choose(idx, [x, y, x * y], mode=mode))),
        (RNG.standard_normal((2, 3)), RNG.standard_normal((3,))),
        namespace={"idx": idx, "mode": mode})


def test_logspace_ends_and_base():
    both_modes('''
def f(lo, hi):
    return np.sum(np.logspace(lo, hi, 6, base=2.0) ** 0.5) + np.sum(np.logspace(lo, hi, 3, axis=1))
''', lambda lo, hi: (jnp.sum(jnp.logspace(lo, hi, 6, base=2.0) ** 0.5)
                     + jnp.sum(jnp.logspace(lo, hi, 3, axis=1))),
        (np.array([0.1, -0.3]), np.array([1.2, 0.4])))


# -- np.histogram ---------------------------------------------------------------------------


A = np.array([0.1, 0.52, 0.93, 0.31, 0.7, 0.2])


@pytest.mark.parametrize("density", [False, True])
def test_histogram_weights_and_edges_from_the_data(density):
    c = np.arange(1.0, 5.0)
    e = np.arange(1.0, 6.0)
    both_modes('''
def f(a, w):
    hist, edges = np.histogram(a, bins=4, weights=w, density=density)
    return np.sum(hist * c) + np.sum(edges * e)
''', lambda a, w: (jnp.sum(jnp.histogram(a, bins=4, weights=w, density=density)[0] * c)
                   + jnp.sum(jnp.histogram(a, bins=4, weights=w, density=density)[1] * e)),
        (A, np.array([1.0, 2.0, 0.5, 1.5, 3.0, 1.0])),
        namespace={"c": c, "e": e, "density": density})


def test_histogram_bin_edges_as_jax():
    e = np.arange(1.0, 5.0)
    both_modes('''
def f(a):
    return np.sum(np.histogram_bin_edges(a ** 2, bins=3) * e)
''', lambda a: jnp.sum(jnp.histogram_bin_edges(a ** 2, bins=3) * e), (A,), namespace={"e": e})


def test_histogram_in_a_range_gets_no_gradient_for_a():
    f = function_from_source('''
def f(a, w):
    return np.sum(np.histogram(a, bins=2, range=(0.0, 1.0), weights=w)[0] * c)
''', {"c": np.array([1.0, 10.0])})
    ga, gw = pb.grad(f, argnums=(0, 1))(A, np.ones(6))
    np.testing.assert_array_equal(ga, np.zeros(6))
    np.testing.assert_array_equal(gw, [1.0, 10.0, 10.0, 1.0, 10.0, 1.0])


def test_histogram_bins_from_the_inputs_are_refused():
    f = function_from_source('''
def f(a):
    return np.sum(np.histogram(a, bins=np.sort(a))[1])
''')
    with pytest.raises(pb.NonDifferentiableError, match="`bins` argument of np.histogram"):
        pb.grad(f)(A)


# -- np.unique and the set operations: a repeated value's gradient goes to its first
# occurrence (JAX's where it differentiates them: size=) -----------------------------------

X = np.array([3.0, 1.0, 3.0, 2.0, 1.0])


def test_unique_first_occurrence_as_jax():
    w = np.array([1.0, 2.0, 3.0])
    got = both_modes('''
def f(x):
    return np.sum(np.unique(x) * w)
''', lambda x: jnp.sum(jnp.unique(x, size=3) * w), (X,), namespace={"w": w})
    np.testing.assert_array_equal(got[0], [3.0, 1.0, 0.0, 2.0, 0.0])


def test_unique_with_counts_and_inverse():
    both_modes('''
def f(x):
    values, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    return np.sum(values ** 2 * counts) + np.sum(values[inverse] * x)
''', lambda x: (jnp.sum(jnp.unique(x, size=3) ** 2 * jnp.array([2, 1, 2]))
                + jnp.sum(jnp.unique(x, size=3)[jnp.array([2, 0, 2, 1, 0])] * x)), (X,))


def test_unique_rows():
    m = np.array([[1.0, 2.0], [0.0, 5.0], [1.0, 2.0], [0.5, 0.0]])
    w = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    both_modes('''
def f(m):
    return np.sum(np.unique(m, axis=0) * w)
''', lambda m: jnp.sum(jnp.unique(m, axis=0, size=3) * w), (m,), namespace={"w": w})


@numpy2
def test_unique_all_and_unique_values():
    f = function_from_source('''
def f(x):
    values, indices, inverse, counts = np.unique_all(x)
    return np.sum(values * counts) + np.sum(np.unique_values(x) ** 2)
''')
    # values 1, 2, 3 (counts 2, 1, 2) from places 1, 3, 0
    np.testing.assert_array_equal(pb.grad(f)(X), [2 + 6.0, 2 + 2.0, 0, 1 + 4.0, 0])
    _, dot = pb.jvp(f, (X,), (np.arange(5.0),))
    assert dot == pytest.approx(2 * 1 + 2 * 0 + 1 * 3 + 2 * 1 * 1 + 2 * 2 * 3 + 2 * 3 * 0)


A1, A2 = np.array([3.0, 1.0, 3.0, 2.0]), np.array([2.0, 5.0, 3.0, 2.0])


@pytest.mark.parametrize("name,size,w", [
    ("intersect1d", 2, [1.0, 10.0]), ("union1d", 4, [1.0, 2.0, 3.0, 4.0]),
    ("setdiff1d", 1, [7.0]), ("setxor1d", 2, [1.0, 2.0])])
def test_set_operations_as_jax(name, size, w):
    w = np.array(w)
    both_modes(f'''
def f(a, b):
    return np.sum(np.sin(np.{name}(a, b)) * w)
''', lambda a, b: jnp.sum(jnp.sin(getattr(jnp, name)(a, b, size=size)) * w), (A1, A2),
        namespace={"w": w})


def test_set_operations_exact():
    f = function_from_source('''
def f(a, b):
    common, ia, ib = np.intersect1d(a, b, return_indices=True)
    return np.sum(common * w) + np.sum(np.setdiff1d(a, b, assume_unique=True) * 100.0)
''', {"w": np.array([1.0, 10.0])})
    ga, gb = pb.grad(f, argnums=(0, 1))(A1, A2)
    np.testing.assert_array_equal(ga, [10.0, 100.0, 0.0, 1.0])    # 3 and 2 from a; 1 kept
    np.testing.assert_array_equal(gb, np.zeros(4))


# -- NumPy 2's gufuncs ------------------------------------------------------------------------


@numpy2
def test_vecdot_matvec_vecmat_real():
    x, m, v = RNG.standard_normal((2, 4)), RNG.standard_normal((3, 4)), RNG.standard_normal(3)
    both_modes('''
def f(x, m, v):
    return (np.sum(np.vecdot(x, np.tanh(x[::-1]))) + np.sum(np.matvec(m, x) ** 2)
            + np.sum(np.vecmat(v, m) * np.vecdot(m, m[0], axis=-1)[0]))
''', lambda x, m, v: (jnp.sum(jnp.vecdot(x, jnp.tanh(x[::-1]))) + jnp.sum(jnp.matvec(m, x) ** 2)
                      + jnp.sum(jnp.vecmat(v, m) * jnp.vecdot(m, m[0], axis=-1)[0])),
        (x, m, v))


@numpy2
@pytest.mark.parametrize("name", ["vecdot", "matvec", "vecmat"])
def test_complex_gufuncs_as_jax_vjp(name):
    shapes = {"vecdot": ((3, 4), (4,)), "matvec": ((3, 4), (4,)), "vecmat": ((4,), (4, 3))}[name]
    x1, x2 = (RNG.standard_normal(s) + 1j * RNG.standard_normal(s) for s in shapes)
    f = function_from_source(f'''
def f(x1, x2):
    return np.{name}(x1, x2)
''')
    out, back = pb.vjp(f, x1, x2)
    jout, jback = jax.vjp(getattr(jnp, name), jnp.asarray(x1), jnp.asarray(x2))
    ct = RNG.standard_normal(out.shape) + 1j * RNG.standard_normal(out.shape)
    np.testing.assert_allclose(out, np.asarray(jout), rtol=1e-12)
    for g, w in zip(back(ct), jback(jnp.asarray(ct))):
        np.testing.assert_allclose(g, np.asarray(w), rtol=1e-12)


@numpy2
def test_vecdot_axes_refused():
    f = function_from_source('''
def f(x):
    return np.sum(np.vecdot(x, x, axes=[(0,), (0,), ()]))
''')
    with pytest.raises(pb.PullbackError, match="axes="):
        pb.grad(f)(np.ones((3, 2)))


# -- np.frompyfunc: a ufunc of Python objects, refused with what to write instead ------------


def _square(v):
    return v * v


@pytest.mark.parametrize("text", ['''
def f(x):
    return np.sum(UF(x).astype(float))
''', '''
def f(x):
    uf = np.frompyfunc(_square, 1, 1)
    return np.sum(uf(x).astype(float))
'''])
def test_frompyfunc_refused_suggesting_vectorize(text):
    f = function_from_source(text, {"UF": np.frompyfunc(_square, 1, 1), "_square": _square})
    for run in (lambda: pb.grad(f)(np.array([1.0, 2.0])),
                lambda: pb.jvp(f, (np.array([1.0, 2.0]),), (np.ones(2),))):
        with pytest.raises(pb.PullbackError) as err:
            run()
        assert "np.frompyfunc" in str(err.value) and "write np.vectorize(f)" in str(err.value)
        assert "line 3" in str(err.value) or "line 2" in str(err.value)


def test_vectorize_instead_of_frompyfunc():
    f = function_from_source('''
def f(x):
    return np.sum(np.vectorize(_square)(x))
''', {"_square": _square})
    np.testing.assert_array_equal(pb.grad(f)(np.array([1.0, 2.0])), [2.0, 4.0])


# -- second derivatives: the adjoints' helpers have forward rules (rules.assorted_helpers) ---

HESSIANS = [
    ("np.vecdot(x, np.sin(x))", lambda x: jnp.vecdot(x, jnp.sin(x))),
    ("np.sum(np.logspace(x[0], x[1], 4)) + np.sum(np.logspace(x[2], x[0], 3, base=2.0))",
     lambda x: jnp.sum(jnp.logspace(x[0], x[1], 4)) + jnp.sum(jnp.logspace(x[2], x[0], 3,
                                                                           base=2.0))),
    ("np.sum(np.block([[x, x ** 2]]) ** 3)", lambda x: jnp.sum(jnp.block([[x, x ** 2]]) ** 3)),
    ("np.sum(np.choose(np.array([0, 1, 0]), [x, x ** 2]) ** 3)",
     lambda x: jnp.sum(jnp.choose(jnp.array([0, 1, 0]), [x, x ** 2]) ** 3)),
    ("np.sum(np.modf(3.0 * x)[0] ** 3 + np.frexp(x)[0] ** 2 * np.ldexp(x, 2))",
     lambda x: jnp.sum(jnp.modf(3.0 * x)[0] ** 3 + jnp.frexp(x)[0] ** 2 * jnp.ldexp(x, 2))),
    ("np.sum(np.unique(x * x) ** 3)", lambda x: jnp.sum(jnp.unique(x * x, size=3) ** 3)),
    ("np.sum(np.union1d(x, x[:2] * 3.0) ** 3) + np.sum(np.setdiff1d(x, x[:1]) ** 3)",
     lambda x: (jnp.sum(jnp.union1d(x, x[:2] * 3.0, size=5) ** 3)
                + jnp.sum(jnp.setdiff1d(x, x[:1], size=2) ** 3))),
    ("np.sum(np.histogram_bin_edges(x ** 3, bins=3) ** 2)",
     lambda x: jnp.sum(jnp.histogram_bin_edges(x ** 3, bins=3) ** 2)),
    ("np.sum(np.matvec(np.outer(x, x), np.sin(x)) ** 2)",
     lambda x: jnp.sum(jnp.matvec(jnp.outer(x, x), jnp.sin(x)) ** 2)),
    ("np.sum(np.vecmat(np.sin(x), np.outer(x, x)) ** 2)",
     lambda x: jnp.sum(jnp.vecmat(jnp.sin(x), jnp.outer(x, x)) ** 2)),
]


@numpy2
@pytest.mark.parametrize("body,jf", HESSIANS, ids=[b[:24] for b, _ in HESSIANS])
def test_hessian_against_jax(body, jf):
    f = function_from_source(f"def f(x):\n    return {body}\n")
    x = np.array([0.3, -1.2, 2.0])
    np.testing.assert_allclose(pb.hessian(f)(x), np.asarray(jax.hessian(jf)(jnp.asarray(x))),
                               rtol=1e-9, atol=1e-9)


def test_hessian_through_a_histogram_is_refused():
    # (density=True is not linear in the cotangent: its helper has no forward rule)
    f = function_from_source('''
def f(w):
    return np.sum(np.histogram(A, bins=3, weights=w * w)[0] ** 2)
''', {"A": A})
    with pytest.raises(pb.PullbackError, match="histogram_grads"):
        pb.hessian(f)(np.ones(6))


# -- a result holding integers, indexed ------------------------------------------------------
# The adjoint accumulates into every part of a tuple result that is indexed
# (`r = np.unique(x, return_counts=True); r[1]`): an integer part's buffer
# (owned_zeros: integer zeros) cannot take a float in place, and a namedtuple's
# (runtime.core.FieldGrads, keyed by field name) is not read by position, so
# such a result is added into by index_add, never `r_bar[1] += g`.


XD = np.array([0.3, -1.2, 2.1, 0.7, 5.0])      # distinct: each count 1, np.unique sorts
_E = np.frexp(XD)[1]


@pytest.mark.parametrize("body, want", [
    ("r = np.frexp(x)\n    return np.sum(r[0] * r[1])", _E * 2.0 ** -_E),
    ("r = np.unique(x, return_counts=True)\n    return np.sum(r[0] * r[1])", np.ones(5)),
    pytest.param("r = np.unique_counts(x)\n    return np.sum(r[0] * r[1] * r[0])", 2 * XD,
                 marks=numpy2),
    pytest.param("return np.sum(np.unique_counts(x)[0] ** 3)", 3 * XD ** 2, marks=numpy2)])
def test_indexed_result_with_integer_parts(body, want):
    # (was a crash, KeyError or TypeError: the adjoint added into the integer or
    # named parts of the tuple in place, `r_bar[1] += g`; reverse.rule_adjoints now
    # adds into a call's tuple result by index_add). sum(m e) of x = m 2^e: e 2^-e
    f = function_from_source("def f(x):\n    " + body + "\n")
    np.testing.assert_allclose(pb.grad(f)(XD), want, rtol=1e-12)
    t = np.linspace(0.5, 1.5, 5)
    np.testing.assert_allclose(pb.jvp(f, (XD,), (t,))[1], want @ t, rtol=1e-12)


def test_lists_of_numbers_as_arguments():
    # (a list is an array to NumPy, and its cotangent a part per number)
    f = function_from_source('''
def f(x):
    u = np.union1d([x[0], x[1]], x) * np.arange(3.0)
    hist, edges = np.histogram([x[0], x[1]], bins=2, weights=[x[2], x[0]])
    return np.sum(u) + np.sum(hist * np.array([1.0, 3.0])) + np.sum(edges ** 2)
''')
    x, t = np.array([3.0, 1.0, 2.0]), np.array([1.0, 10.0, 100.0])
    # union1d [1, 2, 3] from x1, x2 (in b only), x0; the weights of bins [1, 2) and [2, 3]
    # are x0 and x2; the edges 1, 2, 3 move with min = x1 and max = x0
    np.testing.assert_array_equal(pb.grad(f)(x), [2.0 + 1.0 + 8.0, 0.0 + 4.0, 1.0 + 3.0])
    assert pb.jvp(f, (x,), (t,))[1] == pytest.approx(11.0 + 40.0 + 400.0)
