"""Runtime helpers on Dask arrays (issue 18): a helper whose NumPy code calls
a function Dask lacks (``np.argsort``, ``np.size``), branches on values
(``prod_grad``'s test for a zero) or converts (``np.asarray``) would compute
the graph; for Dask arguments the generated code calls the helpers'
namespace-generic forms over the Dask twin instead (``backend.foreign``),
and accumulates at a Dask index array (``x[np.argsort(x)]``) by a 0/1
matrix product (``runtime.backends``).

Oracle: pullback's NumPy gradient (checked against JAX and finite
differences in the rules' tests) to 1e-12; the gradient must come back
lazy, built under a scheduler that refuses to compute and with Dask's
"computing" FutureWarning an error.  The generic forms are checked against
``jax.grad`` under ``jax.jit`` too (test_jit.py).
"""
import warnings

import numpy as np
import pytest

import pullback as pb

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")
pytest.importorskip("array_api_compat")

TOL = dict(rtol=1e-12, atol=1e-12)
RNG = np.random.default_rng(1812)
IDX = np.array([0, 3, 3, 5])
W = np.arange(8.0)


def _no_compute(*args, **kwargs):
    raise AssertionError("pullback computed a Dask graph while differentiating")


def sort(x):
    return np.sum(np.sort(x) * W)


def sorted_by_index(x):
    return np.sum(x[np.argsort(x)] * W)         # a Dask index array: lazy accumulation


def prod_with_a_zero(x):
    return np.prod(x * np.array([1.0, 0.0, 1, 1, 1, 1, 1, 1])) + np.prod(x[2:5])


def diffs(x):
    return np.sum(np.diff(x, 2) ** 2)


def norms(x):
    return np.linalg.norm(x) + np.linalg.norm(x, np.inf) + np.linalg.norm(x, 1)


def take_repeated(x):
    return np.sum(np.take(x, IDX) ** 2) + np.sum(x[np.array([1, 1, 2])] ** 3)


def repeats(x):
    return np.sum(np.repeat(x, 2) ** 2 * np.arange(16.0))


def averages(x):
    return np.average(x, weights=W + 1.0) + np.max(x)


def upper_triangle(x):
    return np.sum(np.triu(np.outer(x, x)) * 2.0)


def written_into_zeros(x):
    out = np.zeros(8)                   # made from a shape: Dask's, written lazily
    out[1:] = x[1:] * 2.0
    return np.sum(np.triu(np.outer(out, x)) ** 2)


def searched(x):
    return np.sum(x[np.searchsorted(np.sort(x), x[:3])] ** 2)


CASES = [sort, sorted_by_index, prod_with_a_zero, diffs, norms, take_repeated, repeats,
         averages, upper_triangle, written_into_zeros, searched]


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_dask_gradient_is_lazy_and_equals_numpy(f):
    x = RNG.normal(size=8)
    want = pb.grad(f)(x)
    with dask.config.set(scheduler=_no_compute), warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)   # dask computes what it cannot dispatch
        got = pb.grad(f)(da.from_array(x, chunks=4))
    assert isinstance(got, da.Array)
    got = got.compute(scheduler="synchronous")
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, **TOL)


def test_numpy_arguments_keep_numpys_helpers():
    from pullback.callees import derivative_of
    from pullback.runtime import layout_support
    x = RNG.normal(size=8)
    pb.grad(sort)(x)
    pb.grad(sort)(da.from_array(x, chunks=4))
    builds = {key[0][0][0]: entry[0] for key, entry in derivative_of(sort).cache.items()}
    numpy_helper = builds[np.ndarray].adjoint.__closure__
    assert any(c.cell_contents is layout_support.sort_grad for c in numpy_helper)
    bound = builds[da.Array].adjoint.__closure__          # (the build bound to Dask)
    assert not any(c.cell_contents is layout_support.sort_grad for c in bound)


def test_forward_mode_binds_the_tangent_function_to_dask():
    # np.argsort in the tangent function: NumPy's computed the graph (a
    # FutureWarning); bound to the Dask twin it stays lazy
    x, t = RNG.normal(size=8), RNG.normal(size=8)
    want = pb.jvp(sorted_by_index, (x,), (t,))
    with dask.config.set(scheduler=_no_compute), warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        out, out_dot = pb.jvp(sorted_by_index, (da.from_array(x, chunks=4),),
                              (da.from_array(t, chunks=4),))
    assert isinstance(out, da.Array) and isinstance(out_dot, da.Array)
    np.testing.assert_allclose(out.compute(), want[0], **TOL)
    np.testing.assert_allclose(out_dot.compute(), want[1], **TOL)
