"""Helpers that used to compute a Dask graph or need concrete values, now
namespace-generic (issue 18): ``cumprod_grad``, ``diagonal_grad``,
``trace_grad``, ``diag_grad``, ``cov_grad``, ``corrcoef_grad``, ``ptp_grad``,
``quantile_grad`` and the tangents ``cumprod_jvp``, ``cov_jvp``,
``corrcoef_jvp``, ``ptp_jvp``, ``quantile_jvp``, ``sort_jvp``, ``prod_jvp``,
``norm_jvp``, ``reshape_tangent``, ``ravel_tangent``.

For each function, four backends against one oracle:

* Dask: ``pb.grad`` and ``pb.jvp`` give lazy Dask arrays, built while a
  counting scheduler records every compute (none may happen) and Dask's
  "computing" FutureWarning is an error; computed, they equal pullback's
  NumPy result to 1e-12 (same shape and dtype).
* JAX arrays (concrete): JAX arrays equal to ``jax.grad`` / ``jax.jvp`` of the
  same function run on jax.numpy, to 1e-12.
* JAX under ``jax.jit``: ``jax.jit(pb.grad(f))`` and ``pb.jvp`` under jit
  trace (the helpers run their generic forms on jax.numpy) and equal the same.

The NumPy results are themselves checked against central differences here.

Then the jit forms: ``np.linalg.lstsq``, ``np.trace`` and ``np.linalg.eig``/
``eigvals`` (real eigenvalues; complex ones and complex matrices refused with
what to do) trace under ``jax.jit``; a function of a complex matrix's singular
vectors traces when it does not depend on their phases and is refused when
it does; np.linalg's tangents trace under ``jax.jit`` (against ``jax.jvp``).
"""
import types
import warnings

import numpy as np
import pytest

import pullback as pb

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")
pytest.importorskip("array_api_compat")
jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy

TOL = dict(rtol=1e-12, atol=1e-12)
RNG = np.random.default_rng(1818)
W8 = np.arange(1.0, 9.0)
ZERO_AT_2 = np.array([1.0, 1, 0, 1, 1, 1, 1, 1])


def cumprod(x):
    return np.sum(np.cumprod(x) * W8)


def cumprod_with_zeros(x):          # a zero in each slice: the branch-free form
    m = np.reshape(x * ZERO_AT_2, (2, 4))
    return np.sum(np.cumprod(m, axis=1) * np.reshape(W8, (2, 4))) + np.sum(np.cumprod(m, 0))


def diagonals(x):
    m = np.reshape(x, (2, 4))
    return np.sum(np.diagonal(m, 1) ** 2) + np.sum(np.diagonal(m, -1) * 3.0) + np.sum(
        np.diagonal(np.reshape(x, (2, 2, 2)), 0, 2, 0) ** 3)


def traces(x):
    return np.trace(np.outer(x, x) * W8) + np.trace(np.reshape(x, (2, 4)), 1) ** 2


def diags(x):
    return np.sum(np.diag(np.reshape(x, (2, 4))[:, :2]) ** 2) + np.sum(np.diag(x[:3], 1) * 2.0)


def covariances(x):
    m = np.reshape(x, (2, 4))
    return (np.sum(np.cov(m) * np.array([[1.0, 2.0], [3.0, 4.0]]))
            + np.sum(np.cov(np.reshape(x, (4, 2)), rowvar=False, bias=True) ** 2))


def quantiles(x):
    m = np.reshape(x, (2, 4))
    return (np.sum(np.quantile(m, 0.3, axis=1) * np.array([1.0, 2.0]))
            + np.sum(np.median(m, axis=0) ** 2)
            + np.sum(np.percentile(np.reshape(x, (4, 2)), np.array([10.0, 90.0]), axis=0)))


def sorts(x):
    return np.sum(np.sort(np.reshape(x, (2, 4)), axis=1) * np.reshape(W8, (2, 4)))


def products(x):
    m = np.reshape(x * ZERO_AT_2, (2, 4))
    return np.sum(np.prod(m, axis=1) * np.array([1.0, 2.0])) + np.prod(x[:3])


def norms(x):
    return np.linalg.norm(x) + np.linalg.norm(np.reshape(x, (2, 4)), "fro") ** 3


def reshapes(x):
    return np.sum(np.ravel(np.reshape(x, (4, 2)).T) * W8)


def correlations(x):
    return np.sum(np.corrcoef(np.reshape(x, (2, 4))) * np.array([[1.0, 2.0], [3.0, 4.0]]))


def spreads(x):
    return np.sum(np.ptp(np.reshape(x, (2, 4)), axis=1) ** 2) + np.max(x) * np.min(x)


CASES = [cumprod, cumprod_with_zeros, diagonals, traces, diags, covariances, quantiles,
         sorts, products, norms, reshapes, correlations, spreads]
ids = [f.__name__ for f in CASES]


def _on_jax(f):
    """``f`` with ``np`` bound to jax.numpy (in the helpers it calls too): the
    oracle's function."""
    g = {**f.__globals__, "np": jnp}
    for name in ("_mat", "_sym"):     # (the helpers of the linalg cases below)
        g[name] = types.FunctionType(g[name].__code__, g, name)
    return types.FunctionType(f.__code__, g, f.__name__)


class Counting:
    """A Dask scheduler that counts the graphs it is asked to compute."""

    def __init__(self):
        self.computes = 0

    def __call__(self, dsk, keys, **kwargs):
        self.computes += 1
        return dask.local.get_sync(dsk, keys, **kwargs)


def _lazy(run):
    counting = Counting()
    with dask.config.set(scheduler=counting), warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)   # dask computes what it cannot dispatch
        out = run()
    assert counting.computes == 0, f"{counting.computes} Dask graph(s) computed"
    return out


def _point():
    return RNG.normal(size=8) + 0.1, RNG.normal(size=8)


def _central(f, x, t, h=1e-6):
    return (f(x + h * t) - f(x - h * t)) / (2 * h)


@pytest.mark.parametrize("f", CASES, ids=ids)
def test_numpy_gradient_and_tangent_match_central_differences(f):
    x, t = _point()
    want = _central(f, x, t)
    assert abs(np.dot(pb.grad(f)(x), t) - want) < 1e-6 * max(1.0, abs(want))
    assert abs(pb.jvp(f, (x,), (t,))[1] - want) < 1e-6 * max(1.0, abs(want))


@pytest.mark.parametrize("f", CASES, ids=ids)
def test_dask_gradient_is_lazy_and_equals_numpy(f):
    x, _ = _point()
    want = pb.grad(f)(x)
    got = _lazy(lambda: pb.grad(f)(da.from_array(x, chunks=4)))
    assert isinstance(got, da.Array)
    got = got.compute(scheduler="sync")
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, **TOL)


@pytest.mark.parametrize("f", CASES, ids=ids)
def test_dask_tangent_is_lazy_and_equals_numpy(f):
    x, t = _point()
    value, want = pb.jvp(f, (x,), (t,))
    out, got = _lazy(lambda: pb.jvp(f, (da.from_array(x, chunks=4),),
                                    (da.from_array(t, chunks=4),)))
    assert isinstance(out, da.Array) and isinstance(got, da.Array)
    np.testing.assert_allclose(out.compute(scheduler="sync"), value, **TOL)
    np.testing.assert_allclose(got.compute(scheduler="sync"), want, **TOL)


@pytest.mark.parametrize("f", CASES, ids=ids)
def test_jax_arrays_give_jax_gradients_equal_to_jax_grad(f):
    x, _ = _point()
    want = jax.grad(_on_jax(f))(jnp.asarray(x))
    got = pb.grad(f)(jnp.asarray(x))
    assert isinstance(got, jax.Array)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), **TOL)


@pytest.mark.parametrize("f", CASES, ids=ids)
def test_gradient_and_tangent_under_jit_equal_jax(f):
    x, t = _point()
    xj, tj = jnp.asarray(x), jnp.asarray(t)
    want = jax.grad(_on_jax(f))(xj)
    got = jax.jit(pb.grad(f))(xj)
    assert isinstance(got, jax.Array)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), **TOL)
    _, want_dot = jax.jvp(_on_jax(f), (xj,), (tj,))
    got_dot = jax.jit(lambda a, b: pb.jvp(f, (a,), (b,))[1])(xj, tj)
    np.testing.assert_allclose(np.asarray(got_dot), np.asarray(want_dot), **TOL)


def test_numpy_keeps_the_shortcut_without_zeros():
    # the NumPy build calls the same helpers; a NumPy array without zeros
    # takes cumprod's one-sum form (the branch-free form agrees with it)
    from pullback.runtime import cumprod_grad, cumprod_jvp
    a = RNG.normal(size=(3, 5)) + 2.0
    g, t = RNG.normal(size=(3, 5)), RNG.normal(size=(3, 5))
    ans = np.cumprod(a, axis=1)
    lazy = da.from_array(a, chunks=2)
    np.testing.assert_allclose(cumprod_grad(g, ans, a, 1), _lazy(
        lambda: _dask_form(cumprod_grad)(g, da.from_array(ans), lazy, 1)).compute(), **TOL)
    np.testing.assert_allclose(cumprod_jvp(t, ans, a, 1), _lazy(
        lambda: _dask_form(cumprod_jvp)(t, da.from_array(ans), lazy, 1)).compute(), **TOL)


def _dask_form(helper):
    from pullback.backend.foreign import _generic_helpers, twin_for
    return _generic_helpers(twin_for((da.ones(2),)))[helper]


# -- jit forms: np.linalg.lstsq, np.trace, np.linalg.eig; the complex SVD's phase ----------

A = RNG.normal(size=(5, 3))
B = RNG.normal(size=5)
B2 = RNG.normal(size=(5, 2))
D4 = np.diag([1.0, 2.0, 3.5, 5.0])
C3 = RNG.normal(size=(3, 3)) + 1j * RNG.normal(size=(3, 3))


def lstsq_solution(x):
    return np.sum(np.linalg.lstsq(A + np.outer(x[:5], x[5:8]), B)[0] ** 2)


def lstsq_every_part(x):            # a and b varied; residuals and singular values used
    sol, res, rank, s = np.linalg.lstsq(A * x[0] + np.outer(x[:5], x[5:8]), B2 + x[0])
    return np.sum(sol ** 2) + np.sum(res) + np.sum(s)


def lstsq_wide(x):                  # m < n: the minimum-norm solution
    return np.sum(np.linalg.lstsq(np.reshape(x[:6], (2, 3)), x[6:8])[0] ** 3)


def eig_values(x):
    return np.sum(np.linalg.eig(D4 + 0.1 * np.outer(x[:4], x[4:]))[0] ** 2)


def eig_vectors(x):                 # real eigenvectors: a sign-free function of them
    w, v = np.linalg.eig(D4 + 0.1 * np.outer(x[:4], x[4:]))
    return np.sum(w * np.arange(4.0)) + np.sum((v * v[0]) ** 2)


def eigvals(x):
    return np.sum(np.linalg.eigvals(D4 + 0.1 * np.outer(x[:4], x[4:])) ** 3)


JIT_FORMS = [lstsq_solution, lstsq_every_part, lstsq_wide, traces, eig_values, eig_vectors,
             eigvals]


def _close(got, want, tol=1e-12):
    got, want = np.asarray(got), np.asarray(want)
    assert np.max(np.abs(got - want)) <= tol * max(1.0, np.max(np.abs(want)))


@pytest.mark.parametrize("f", JIT_FORMS, ids=lambda f: f.__name__)
def test_linalg_jit_forms_trace_and_equal_numpy(f):
    x, t = _point()
    assert pb.source(f, x).splitlines()[1].startswith("# jax.jit: traceable")
    xj, tj = jnp.asarray(x), jnp.asarray(t)
    want = pb.grad(f)(x)
    assert abs(np.dot(want, t) - _central(f, x, t)) < 1e-6 * max(1.0, np.max(np.abs(want)))
    got = jax.jit(pb.grad(f))(xj)
    assert isinstance(got, jax.Array)
    _close(got, want)
    _close(jax.jit(lambda a, b: pb.jvp(f, (a,), (b,))[1])(xj, tj), pb.jvp(f, (x,), (t,))[1])
    if "eig" not in f.__name__:     # (jnp.linalg.eig is complex: its jax.grad is not real)
        _close(got, jax.grad(_on_jax(f))(xj))


def eig_complex_eigenvalues(x):     # a rotation's eigenvalues are complex
    m = np.array([[0.0, -1.0], [1.0, 0.0]]) * x[0] + np.eye(2) * x[1]
    return np.sum(np.real(np.linalg.eig(m)[0]))


def test_eig_with_complex_eigenvalues_is_refused_under_jit():
    x = np.array([1.0, 0.5])
    with pytest.raises(Exception, match="complex eigenvalues under jax.jit") as err:
        jax.block_until_ready(jax.jit(pb.grad(eig_complex_eigenvalues))(jnp.asarray(x)))
    assert "NonDifferentiableError" in str(err.value) or isinstance(
        err.value, pb.PullbackError)
    np.testing.assert_allclose(pb.grad(eig_complex_eigenvalues)(x), [0.0, 2.0], **TOL)


def eig_of_complex(z):
    return np.sum(np.abs(np.linalg.eig(z)[0]) ** 2)


def test_eig_of_a_complex_matrix_is_refused_under_jit_with_what_to_do():
    with pytest.raises(pb.NotTraceableError, match="this matrix is complex"):
        jax.jit(pb.grad(eig_of_complex))(jnp.asarray(C3))


def svd_phase_free(z):
    u, s, vh = np.linalg.svd(z)
    return np.sum(np.abs(u[:, :2] * vh[:2, 0]) ** 2) + np.sum(s)


def svd_phase_free_wide(z):
    u, s, vh = np.linalg.svd(np.concatenate([z, z[:1] * 2.0]), full_matrices=False)
    return np.sum(np.abs(u @ np.diag(s) @ vh[:, :2]) ** 2) + np.sum(np.abs(u[:, 0] * vh[0, 1]))


def svd_phase_dependent(z):
    return np.sum(np.real(np.linalg.svd(z)[0]))


@pytest.mark.parametrize("f", [svd_phase_free, svd_phase_free_wide], ids=lambda f: f.__name__)
def test_complex_svd_vectors_trace_when_phase_free(f):
    want = jax.grad(_on_jax(f))(jnp.asarray(C3))
    _close(pb.grad(f)(C3), want)
    got = jax.jit(pb.grad(f))(jnp.asarray(C3))
    _close(got, want)


def test_complex_svd_phase_dependence_is_refused_under_jit():
    with pytest.raises(pb.NonDifferentiableError, match="depends on their phases"):
        pb.grad(svd_phase_dependent)(C3)
    with pytest.raises(Exception, match="depends on their phases"):
        jax.block_until_ready(jax.jit(pb.grad(svd_phase_dependent))(jnp.asarray(C3)))


def test_a_refused_lazy_svd_cotangent_is_nan():
    # a Dask cotangent of complex singular vectors: the check is lazy, its
    # failure NaN where the phase matters (NumPy raised above)
    from pullback.backend.foreign import _generic_helpers, twin_for
    from pullback.runtime import svd_grad
    lazy_svd_grad = _generic_helpers(twin_for((da.ones(2),)))[svd_grad]
    ans = np.linalg.svd(C3)
    gu = np.ones((3, 3))                            # d sum(real(u)): phase-dependent
    g = (da.from_array(gu), da.zeros(3), da.zeros((3, 3), dtype=complex))
    out = _lazy(lambda: lazy_svd_grad(g, tuple(da.from_array(p) for p in ans),
                                      da.from_array(C3)))
    assert isinstance(out, da.Array) and np.all(np.isnan(out.compute()))
    free = (da.zeros((3, 3), dtype=complex), da.ones(3), da.zeros((3, 3), dtype=complex))
    np.testing.assert_allclose(lazy_svd_grad(free, ans, da.from_array(C3)).compute(),
                               pb.grad(lambda z: np.sum(np.linalg.svd(z)[1]))(C3), **TOL)


# -- np.linalg's tangents under jax.jit (forward mode), and Dask's decompositions' --------


def _mat(x):
    return D4 + 0.1 * np.outer(x[:4], x[4:])


def _sym(x):
    return D4 + 0.1 * np.outer(x[:4], x[:4])


def det(x):
    return np.linalg.det(_mat(x)) + np.linalg.slogdet(_mat(x))[1]


def cholesky(x):
    return np.sum(np.linalg.cholesky(_sym(x)) ** 2)


def eigh(x):
    w, v = np.linalg.eigh(_sym(x))
    return np.sum(w ** 2) + np.sum(v[:, 0] ** 2 * np.arange(4.0)) + np.sum(
        np.linalg.eigvalsh(_sym(x)) ** 3)


def svd(x):
    u, s, vh = np.linalg.svd(_mat(x))
    return np.sum(s) + np.sum((u[:, 0] * vh[0]) ** 2)


def qr(x):
    q, r = np.linalg.qr(_mat(x))
    return np.sum(r ** 2) + np.sum(q[:, 0] * r[0])


def pinv_power_dot(x):
    m = _mat(x)
    return (np.sum(np.linalg.pinv(m) ** 2) + np.sum(np.linalg.matrix_power(m, 3))
            + np.sum(np.linalg.multi_dot([m, m, x[:4]])) + np.sum(np.linalg.solve(m, x[4:])))


LINALG_TANGENTS = [det, cholesky, eigh, svd, qr, pinv_power_dot]


@pytest.mark.parametrize("f", LINALG_TANGENTS, ids=lambda f: f.__name__)
def test_linalg_tangents_under_jit_equal_jax_jvp(f):
    x, t = _point()
    xj, tj = jnp.asarray(x), jnp.asarray(t)
    want = pb.jvp(f, (x,), (t,))[1]
    assert abs(want - _central(f, x, t)) < 1e-6 * max(1.0, abs(want))
    got = jax.jit(lambda a, b: pb.jvp(f, (a,), (b,))[1])(xj, tj)
    _close(got, want)
    _close(got, jax.jvp(_on_jax(f), (xj,), (tj,))[1])


@pytest.mark.parametrize("f", [svd, qr], ids=lambda f: f.__name__)
def test_dask_decomposition_tangents_are_lazy(f):
    # Dask's svd and qr return plain tuples: the tangent is one too
    x, t = _point()
    want = pb.jvp(f, (x,), (t,))[1]
    _, got = _lazy(lambda: pb.jvp(f, (da.from_array(x, chunks=8),),
                                  (da.from_array(t, chunks=8),)))
    assert isinstance(got, da.Array)
    _close(got.compute(scheduler="sync"), want)
