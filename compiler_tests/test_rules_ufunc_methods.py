"""NumPy rules added for issue 13 (the corpus and autograd's suite):
ufunc methods (``np.logaddexp.reduce``, ``np.maximum.accumulate``,
``np.multiply.outer``...), ``np.r_`` with slices, and forward tangents of
non-holomorphic functions of values complex from real arguments
(``np.abs(np.fft.fft(x))``), which were silently wrong and are now refused.

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
def test_forward_refuses_a_non_holomorphic_function_of_a_complex_result(body):
    # the kinds analysis took np.fft.fft of a real array for real, so forward
    # mode read np.abs's reverse rule as its tangent: a wrong number, no error
    f = function_from_source(f"def f(x):\n    return {body}\n")
    x = RNG.normal(size=5)
    with pytest.raises(pb.NonDifferentiableError, match="complex value"):
        pb.jvp(f, (x,), (np.ones(5),))
    assert np.isfinite(pb.grad(f)(x)).all()            # reverse mode is right (below)


def test_forward_of_eigvals_checks_at_run_time_and_reverse_is_right():
    def f(x):
        return np.sum(np.abs(np.fft.fft(x)) ** 2)
    x = RNG.normal(size=5)
    assert_close(pb.grad(f)(x), jax.grad(lambda x: jnp.sum(jnp.abs(jnp.fft.fft(x)) ** 2))(x))

    def e(a):
        return np.sum(np.abs(np.linalg.eigvals(a)))
    a = np.array([[0.0, 1.0, 0.2], [-1.0, 0.0, 0.3], [0.1, 0.0, 2.0]])    # complex pair
    with pytest.raises(pb.NonDifferentiableError, match="complex value"):
        pb.jvp(e, (a,), (np.ones((3, 3)),))


def test_a_linear_function_of_fft_still_has_its_tangent():
    def f(x):
        z = np.fft.fft(x)
        return np.sum(np.real(z * np.conj(z)))
    x, d = RNG.normal(size=5), RNG.normal(size=5)
    assert_close(pb.jvp(f, (x,), (d,))[1],
                 jax.jvp(lambda x: jnp.sum(jnp.real(jnp.fft.fft(x) * jnp.conj(jnp.fft.fft(x)))),
                         (x,), (d,))[1])
