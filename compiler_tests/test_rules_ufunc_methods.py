"""NumPy rules added for issue 13 (the corpus and autograd's suite):
ufunc methods (``np.logaddexp.reduce``, ``np.maximum.accumulate``,
``np.multiply.outer``...), ``np.r_`` with slices, quantiles (``np.median``,
``np.quantile``, ``np.percentile``), ``np.trapezoid``, ``np.meshgrid``,
polynomial series (``np.polyval``, ``np.polynomial.*val``), NaN-ignoring
statistics, and forward tangents of non-holomorphic functions of values
complex from real arguments (``np.abs(np.fft.fft(x))``), which were silently
wrong and are now refused.

Each rule is also in ``test_rules``' table (the randomized dot-product check,
reverse and, through ``test_forward``, forward).  Here: whole functions
against ``jax`` (float64) or exact values, and the refusals' messages.
"""
import numpy as np
import pytest

import pullback as pb
from pullback.testing import function_from_source

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402

RNG = np.random.default_rng(13)
X = RNG.normal(size=(3, 4))


def assert_close(a, b, rtol=1e-10, atol=1e-12):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


def against_jax(f, jf, *args):
    """pb.grad and pb.jvp of ``f`` against jax's of ``jf`` at ``args``."""
    assert_close(pb.grad(f)(*args), jax.grad(jf)(*args))
    d = tuple(RNG.normal(size=np.shape(a)) for a in args)
    assert_close(pb.jvp(f, args, d)[1], jax.jvp(jf, args, d)[1])


# -- reduce -------------------------------------------------------------------------------


@pytest.mark.parametrize("kw", [{}, {"axis": 1}, {"axis": -1, "keepdims": True},
                                {"axis": None}, {"axis": 0, "keepdims": True}])
def test_logaddexp_reduce_is_logsumexp_along_axis_0_by_default(kw):
    def f(x):
        return np.sum(np.sin(np.logaddexp.reduce(x, **kw)))

    jkw = {"axis": kw.get("axis", 0), "keepdims": kw.get("keepdims", False)}

    def jf(x):
        return jnp.sum(jnp.sin(jax.nn.logsumexp(x, **jkw)))
    against_jax(f, jf, X)


def test_logaddexp2_reduce():
    def f(x):
        return np.sum(np.logaddexp2.reduce(x, axis=1) ** 2)

    def jf(x):
        return jnp.sum((jax.nn.logsumexp(x * jnp.log(2.0), axis=1) / jnp.log(2.0)) ** 2)
    against_jax(f, jf, X)


def test_forward_algorithm_in_a_loop():
    # the corpus' crf_tagger: alpha = logaddexp.reduce(alpha[:, None] + T, axis=0) + e
    def f(trans, em):
        alpha = em[0]
        for e in em[1:]:
            alpha = np.logaddexp.reduce(alpha[:, None] + trans, axis=0) + e
        return np.logaddexp.reduce(alpha)

    def jf(trans, em):
        alpha = em[0]
        for e in em[1:]:
            alpha = jax.nn.logsumexp(alpha[:, None] + trans, axis=0) + e
        return jax.nn.logsumexp(alpha)
    trans, em = RNG.normal(size=(3, 3)), RNG.normal(size=(5, 3))
    for k in (0, 1):
        assert_close(pb.grad(f, argnums=k)(trans, em), jax.grad(jf, argnums=k)(trans, em))


def test_add_multiply_maximum_reduce():
    def f(x):
        return (np.sum(np.add.reduce(x) ** 2) + np.sum(np.multiply.reduce(x, axis=1))
                + np.sum(np.maximum.reduce(x, axis=(0, 1))) - np.sum(np.minimum.reduce(x)))

    def jf(x):
        return (jnp.sum(jnp.sum(x, 0) ** 2) + jnp.sum(jnp.prod(x, 1))
                + jnp.max(x) - jnp.sum(jnp.min(x, 0)))
    against_jax(f, jf, X)


def test_multiply_reduce_with_a_zero_and_maximum_reduce_ties_exactly():
    x = np.array([[2.0, 0.0, 3.0], [1.0, 5.0, 5.0]])
    assert_close(pb.grad(lambda x: np.sum(np.multiply.reduce(x, axis=1)))(x),
                 [[0.0, 6.0, 0.0], [25.0, 5.0, 5.0]])
    assert_close(pb.grad(lambda x: np.sum(np.maximum.reduce(x, axis=1)))(x),
                 [[0.0, 0.0, 1.0], [0.0, 0.5, 0.5]])
    assert_close(pb.jvp(lambda x: np.maximum.reduce(x, axis=1), (x,), (np.ones_like(x),))[1],
                 [1.0, 1.0])


def test_initial_and_where_are_refused():
    for call in ("np.add.reduce(x, initial=1.0)", "np.maximum.reduce(x, where=x > 0, initial=0.0)"):
        f = function_from_source(f"def f(x):\n    return np.sum({call})\n")
        with pytest.raises(pb.UnsupportedSyntaxError, match="does not match its differentiation rule"):
            pb.grad(f)(X)


# -- accumulate ------------------------------------------------------------------------------


def test_add_and_multiply_accumulate():
    def f(x):
        return np.sum(np.sin(np.add.accumulate(x)) + np.multiply.accumulate(x, axis=1))

    def jf(x):
        return jnp.sum(jnp.sin(jnp.cumsum(x, 0)) + jnp.cumprod(x, 1))
    against_jax(f, jf, X)


def test_maximum_accumulate_against_jax_and_ties_shared():
    def f(x):
        return np.sum(np.sin(np.maximum.accumulate(x, axis=1))
                      + np.minimum.accumulate(x) ** 2)

    def jf(x):
        return jnp.sum(jnp.sin(jax.lax.cummax(x, axis=1)) + jax.lax.cummin(x, axis=0) ** 2)
    against_jax(f, jf, X)
    # ties: the equal running maxima share each output's cotangent equally
    x = np.array([1.0, 3.0, 2.0, 3.0, 4.0, 4.0])
    w = np.array([1.0, 10.0, 100.0, 1000.0, 1e4, 1e5])
    g = pb.grad(lambda x: np.sum(np.maximum.accumulate(x) * w))(x)
    assert_close(g, [1.0, 10 + 100 + 500, 0.0, 500.0, 1e4 + 5e4, 5e4])
    assert_close(pb.jvp(lambda x: np.maximum.accumulate(x), (x,), (np.arange(6.0),))[1],
                 [0.0, 1.0, 1.0, 2.0, 4.0, 4.5])


# -- outer ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["add", "subtract", "multiply"])
def test_outer_against_jax(name):
    f = function_from_source(
        f"def f(a, b):\n    return np.sum(np.sin(np.{name}.outer(a, b)))\n")

    def jf(a, b):
        return jnp.sum(jnp.sin(getattr(jnp, name).outer(a, b)))
    a, b = RNG.normal(size=(2, 3)), RNG.normal(size=4)
    for k in (0, 1):
        assert_close(pb.grad(f, argnums=k)(a, b), jax.grad(jf, argnums=k)(a, b))
    da, db = RNG.normal(size=a.shape), RNG.normal(size=b.shape)
    assert_close(pb.jvp(f, (a, b), (da, db))[1], jax.jvp(jf, (a, b), (da, db))[1])


# -- the other methods: refused with what to write ---------------------------------------------


@pytest.mark.parametrize("call,instead", [
    ("np.subtract.reduce(x)", r"a\[0\] - np\.sum\(a\[1:\], axis=0\)"),
    ("np.add.reduceat(x, [0, 2])", "joined with np.stack"),
    ("np.logaddexp.accumulate(x)", "a loop of np.logaddexp"),
    ("np.divide.outer(x, x)", r"a\[\.\.\., None\] / b"),
    ("np.arctan2.outer(x, x)", r"np\.arctan2\(a\[\.\.\., None\], b\)"),
])
def test_other_methods_are_refused_naming_the_equivalent(call, instead):
    f = function_from_source(f"def f(x):\n    return np.sum({call})\n")
    with pytest.raises(pb.NoRuleError, match=f"(?s)no differentiation rule for "
                                             f"{call.split('(')[0]}.*{instead}"):
        pb.grad(f)(X[0])


# -- np.r_ with slices -------------------------------------------------------------------------


def test_r_with_slices_and_numbers():
    # autograd's suite: np.r_[x, c, 1:10]
    def f(x):
        return np.sum(np.sin(np.r_[x, 2.0, 1:10, 7:1:-2]) * np.arange(16.0))

    def jf(x):
        return jnp.sum(jnp.sin(jnp.r_[x, 2.0, 1:10, 7:1:-2]) * jnp.arange(16.0))
    against_jax(f, jf, X[0, :3])
    assert pb.value_and_grad(f)(X[0, :3])[0] == f(X[0, :3])


def test_r_with_a_bound_from_an_argument():
    def f(x, n):
        return np.sum(np.r_[:n, x] * np.r_[x, 0:n])
    x = X[0]
    g = pb.grad(f)(x, 3)
    assert_close(g, np.r_[x, 0:3][3:] + np.r_[0:3, x][:4])


@pytest.mark.parametrize("item,message", [
    ("'r'", "string directive 'r'"), ("'0,2'", "string directive"),
    ("0:1:5j", r"complex step.*np\.linspace"), ("0:1.5", r"integers or names.*np\.arange"),
    ("2:", r"with a stop.*np\.arange"),
])
def test_r_refusals_name_what_to_write(item, message):
    f = function_from_source(f"def f(x):\n    return np.sum(np.r_[{item}, x])\n")
    with pytest.raises(pb.UnsupportedSyntaxError, match=f"(?s){message}"):
        pb.grad(f)(X[0])


# -- forward tangents of complex values made from real ones ------------------------------------


@pytest.mark.parametrize("body", [
    "np.sum(np.abs(np.fft.fft(x)) ** 2)",          # was 2.92 where the truth is -9.48
    "np.sum(np.abs(np.fft.rfft(x)))",
    "np.sum(np.maximum(np.fft.fft(x).real, np.abs(np.fft.fft(x))))",
    "abs(complex(x[0], x[1]))",
])
def test_forward_of_a_non_holomorphic_function_of_a_complex_result(body):
    # the kinds analysis took np.fft.fft of a real array for real, so forward
    # mode read np.abs's reverse rule as its tangent: a wrong number, no error;
    # then refused; now abs of a complex value has its forward rule
    # (rules.complex_tangents): the tangent is the reverse gradient's dot product
    f = function_from_source(f"def f(x):\n    return {body}\n")
    x, d = RNG.normal(size=5), RNG.normal(size=5)
    h = 1e-6
    fd = (f(x + h * d) - f(x - h * d)) / (2 * h)
    assert_close(pb.jvp(f, (x,), (d,))[1], fd, rtol=1e-6)
    assert_close(pb.grad(f)(x) @ d, fd, rtol=1e-6)


def test_forward_of_eigvals_checks_at_run_time_and_reverse_is_right():
    def f(x):
        return np.sum(np.abs(np.fft.fft(x)) ** 2)
    x = RNG.normal(size=5)
    assert_close(pb.grad(f)(x), jax.grad(lambda x: jnp.sum(jnp.abs(jnp.fft.fft(x)) ** 2))(x))

    def e(a):
        return np.sum(np.abs(np.linalg.eigvals(a)))
    a = np.array([[0.0, 1.0, 0.2], [-1.0, 0.0, 0.3], [0.1, 0.0, 2.0]])    # complex pair
    d, h = RNG.normal(size=(3, 3)), 1e-6
    fd = (e(a + h * d) - e(a - h * d)) / (2 * h)
    assert_close(pb.jvp(e, (a,), (d,))[1], fd, rtol=1e-6)


def test_a_linear_function_of_fft_still_has_its_tangent():
    def f(x):
        z = np.fft.fft(x)
        return np.sum(np.real(z * np.conj(z)))
    x, d = RNG.normal(size=5), RNG.normal(size=5)
    assert_close(pb.jvp(f, (x,), (d,))[1],
                 jax.jvp(lambda x: jnp.sum(jnp.real(jnp.fft.fft(x) * jnp.conj(jnp.fft.fft(x)))),
                         (x,), (d,))[1])


# -- quantiles, integration, grids, series, NaN statistics (rules.numpy_statistics) -------------


def test_median_quantile_percentile_against_jax():
    def f(x):
        return (np.median(x) + np.sum(np.median(x, axis=0) ** 2)
                + np.sum(np.quantile(x, np.array([0.1, 0.75]), axis=1, keepdims=True) ** 3)
                + np.percentile(x, 40.0) * np.sum(np.percentile(x, 90.0, axis=(0, 1))))

    def jf(x):
        return (jnp.median(x) + jnp.sum(jnp.median(x, axis=0) ** 2)
                + jnp.sum(jnp.quantile(x, jnp.array([0.1, 0.75]), axis=1, keepdims=True) ** 3)
                + jnp.percentile(x, 40.0) * jnp.sum(jnp.percentile(x, 90.0, axis=(0, 1))))
    against_jax(f, jf, X)


def test_quantile_methods_other_than_linear_are_refused_when_the_gradient_runs():
    def f(x):
        return np.quantile(x, 0.3, method="nearest")
    with pytest.raises(NotImplementedError, match="method='nearest'"):
        pb.grad(f)(X)


def test_q_computed_from_the_inputs_is_refused():
    def f(x):
        return np.quantile(x, x[0, 0] ** 2 / 10)
    with pytest.raises(pb.NonDifferentiableError, match="`q` argument of np.quantile"):
        pb.grad(f)(X)


def test_trapezoid_and_meshgrid_against_jax():
    grid = np.array([0.0, 0.3, 1.0, 1.5])

    def f(y, v):
        a, b = np.meshgrid(v, y[0])
        return np.trapezoid(y ** 2, grid) @ y[:, 0] + np.trapezoid(np.sin(y), dx=0.2, axis=0)[1] \
            + np.sum(a * b ** 2)

    def jf(y, v):
        a, b = jnp.meshgrid(v, y[0])
        return jnp.trapezoid(y ** 2, grid) @ y[:, 0] + jnp.trapezoid(jnp.sin(y), dx=0.2, axis=0)[1] \
            + jnp.sum(a * b ** 2)
    v = RNG.normal(size=3)
    for k in (0, 1):
        assert_close(pb.grad(f, argnums=k)(X, v), jax.grad(jf, argnums=k)(X, v))
    d = (RNG.normal(size=X.shape), RNG.normal(size=3))
    assert_close(pb.jvp(f, (X, v), d)[1], jax.jvp(jf, (X, v), d)[1])


def test_polyval_against_jax():
    def f(p, x):
        return np.sum(np.sin(np.polyval(p, x)))

    def jf(p, x):
        return jnp.sum(jnp.sin(jnp.polyval(p, x)))
    p, x = RNG.normal(size=4), RNG.normal(size=(2, 3))
    for k in (0, 1):
        assert_close(pb.grad(f, argnums=k)(p, x), jax.grad(jf, argnums=k)(p, x))
    d = (RNG.normal(size=4), RNG.normal(size=(2, 3)))
    assert_close(pb.jvp(f, (p, x), d)[1], jax.jvp(jf, (p, x), d)[1])


@pytest.mark.parametrize("fn", ["polynomial.polyval", "chebyshev.chebval", "legendre.legval",
                                "hermite.hermval", "hermite_e.hermeval", "laguerre.lagval"])
def test_series_by_central_differences(fn):
    module, name = fn.split(".")
    val = getattr(getattr(np.polynomial, module), name)

    def f(x, c):
        return np.sum(np.cos(val(x, c)))
    f.__globals__["val"] = val
    x, c = RNG.uniform(-0.9, 0.9, size=(2, 3)), RNG.normal(size=5)
    for k, arg in ((0, x), (1, c)):
        d = RNG.normal(size=arg.shape)
        def moved(s, k=k, d=d):
            return f(*[(a + s * d if i == k else a) for i, a in enumerate((x, c))])
        fd = (moved(1e-6) - moved(-1e-6)) / 2e-6
        assert np.sum(pb.grad(f, argnums=k)(x, c) * d) == pytest.approx(fd, rel=1e-6)
        t = (d, np.zeros(5)) if k == 0 else (np.zeros(x.shape), d)
        assert pb.jvp(f, (x, c), t)[1] == pytest.approx(fd, rel=1e-6)


def test_series_with_coefficients_of_two_axes_is_refused_when_the_gradient_runs():
    def f(x, c):
        return np.sum(np.polynomial.hermite.hermval(x, c))
    with pytest.raises(NotImplementedError, match="more than one axis"):
        pb.grad(f, argnums=1)(X[0], X)


def test_nan_statistics_against_jax():
    x = X.copy()
    x[0, 1] = x[2, 3] = np.nan

    def f(x):
        return (np.nanvar(x) + np.sum(np.nanstd(x, axis=0, ddof=1)) + np.nanprod(x[1:])
                + np.sum(np.nancumsum(x, axis=1) ** 2))

    def jf(x):
        return (jnp.nanvar(x) + jnp.sum(jnp.nanstd(x, axis=0, ddof=1))
                + jnp.nanprod(x[1:]) + jnp.sum(jnp.nancumsum(x, axis=1) ** 2))
    g, gj = pb.grad(f)(x), jax.grad(jf)(x)
    assert_close(g, np.where(np.isnan(x), 0.0, gj))       # JAX: NaN at the NaNs, pullback 0
    d = np.where(np.isnan(x), 0.0, RNG.normal(size=x.shape))
    assert_close(pb.jvp(f, (x,), (d,))[1], jax.jvp(jf, (x,), (d,))[1])


def test_copysign_ediff1d_vander_delete_against_jax():
    v, w = RNG.normal(size=5), RNG.normal(size=5)

    def f(v, w):
        return (np.sum(np.copysign(v, w) * w) + np.sum(np.ediff1d(v, to_end=2.0) ** 2)
                + np.sum(np.vander(v, 3) ** 2) + np.sum(np.delete(v, [1, 3]) ** 3))

    def jf(v, w):
        return (jnp.sum(jnp.copysign(v, w) * w) + jnp.sum(jnp.ediff1d(v, to_end=2.0) ** 2)
                + jnp.sum(jnp.vander(v, 3) ** 2) + jnp.sum(jnp.delete(v, jnp.array([1, 3])) ** 3))
    for k in (0, 1):
        assert_close(pb.grad(f, argnums=k)(v, w), jax.grad(jf, argnums=k)(v, w))
    d = (RNG.normal(size=5), RNG.normal(size=5))
    assert_close(pb.jvp(f, (v, w), d)[1], jax.jvp(jf, (v, w), d)[1])


def test_matrix_rank_is_an_integer_and_fill_diagonal_is_refused_as_np_put():
    def f(a):
        return np.linalg.matrix_rank(a) * np.sum(a)
    assert_close(pb.grad(f)(X[:, :3]), 3.0 * np.ones((3, 3)))

    def g(a):
        b = a.copy()
        np.fill_diagonal(b, 0.0)
        return np.sum(b)
    with pytest.raises(pb.UnsupportedSyntaxError, match="changes its argument in place"):
        pb.grad(g)(X)
