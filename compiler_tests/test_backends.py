"""Array backends (issue 18): the same gradient on NumPy, JAX (CPU), Dask (a
two-worker ``dask.distributed`` cluster) and, where a GPU is present, CuPy.

Oracles: ``jax.grad`` in float64 for the JAX arrays (1e-12), pullback's own
NumPy gradient for Dask and CuPy (1e-12; it is checked against JAX and
finite differences elsewhere).  Dask gradients must come back lazy: pullback
runs under a scheduler that refuses to compute, and the cluster's task
stream must show work on both workers.  What stays unsupported is refused
with a message that says what to pass instead.
"""
import warnings

import numpy as np
import pytest

import pullback as pb

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy

TOL = dict(rtol=1e-12, atol=1e-12)


# -- the programs: the MLP loss, the elementwise chain, a loop with indexed reads ----

def mlp(w1, b1, w2, b2, x, y):
    h = np.tanh(x @ w1 + b1)
    z = h @ w2 + b2
    m = np.max(z, axis=1, keepdims=True)
    e = np.exp(z - m)
    logp = z - m - np.log(np.sum(e, axis=1, keepdims=True))
    return -np.mean(np.sum(logp * y, axis=1))


def chain(x):
    y = np.tanh(x)
    y = 2.0 * y + 1.0
    y = np.sin(y) * x
    return np.sum(y ** 2)


def indexed_loop(x, w, idx):
    s = 0.0
    for k in range(idx.shape[0]):
        i = idx[k]
        s = s + np.sin(x[i]) * w[k] + x[i] * x[i + 1]
    return s


def gather(x, idx):
    return np.sum(np.cos(x[idx]) * x[idx])


def mlp_j(w1, b1, w2, b2, x, y):
    h = jnp.tanh(x @ w1 + b1)
    z = h @ w2 + b2
    m = jnp.max(z, axis=1, keepdims=True)
    e = jnp.exp(z - m)
    logp = z - m - jnp.log(jnp.sum(e, axis=1, keepdims=True))
    return -jnp.mean(jnp.sum(logp * y, axis=1))


def chain_j(x):
    y = jnp.tanh(x)
    y = 2.0 * y + 1.0
    y = jnp.sin(y) * x
    return jnp.sum(y ** 2)


def indexed_loop_j(x, w, idx):
    s = 0.0
    for k in range(idx.shape[0]):
        i = int(idx[k])
        s = s + jnp.sin(x[i]) * w[k] + x[i] * x[i + 1]
    return s


def gather_j(x, idx):
    return jnp.sum(jnp.cos(x[idx]) * x[idx])


rng = np.random.default_rng(18)
N = 64                          # batch rows: 4 chunks of 16
IDX = np.array([3, 0, 3, 7, 62, 3, 11])       # repeated reads accumulate


def _problems():
    w1, b1 = rng.normal(size=(10, 6)), rng.normal(size=6)
    w2, b2 = rng.normal(size=(6, 3)), rng.normal(size=3)
    x, y = rng.normal(size=(N, 10)), np.eye(3)[rng.integers(0, 3, N)]
    v = rng.normal(size=N)
    return {
        "mlp": (mlp, mlp_j, (w1, b1, w2, b2, x, y), (0, 1, 2, 3, 4)),
        "chain": (chain, chain_j, (rng.normal(size=(N, 5)),), (0,)),
        "indexed_loop": (indexed_loop, indexed_loop_j, (v, rng.normal(size=IDX.size), IDX),
                         (0, 1)),
        "gather": (gather, gather_j, (v, IDX), (0,)),
    }


PROBLEMS = _problems()


# -- JAX ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(PROBLEMS))
def test_jax_arrays_give_jax_gradients_equal_to_jax_grad(name):
    f, fj, args, argnums = PROBLEMS[name]
    jargs = tuple(jnp.asarray(a) if a.dtype.kind == "f" else a for a in args)
    value, got = pb.value_and_grad(f, argnums=argnums)(*jargs)
    want_value, want = jax.value_and_grad(fj, argnums=argnums)(*jargs)
    assert isinstance(value, jax.Array)
    np.testing.assert_allclose(value, want_value, **TOL)
    for g, w, i in zip(got, want, argnums):
        assert isinstance(g, jax.Array) and g.shape == args[i].shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, **TOL)


def test_jax_vjp_returns_a_cotangent_per_float_primal():
    f, fj, args, _ = PROBLEMS["mlp"]
    jargs = tuple(jnp.asarray(a) for a in args)
    out, back = pb.vjp(f, *jargs)
    grads = back(jnp.asarray(1.5))
    want = jax.vjp(fj, *jargs)[1](jnp.asarray(1.5))
    assert isinstance(out, jax.Array) and len(grads) == len(args)
    for g, w in zip(grads, want):
        assert g is not None and isinstance(g, jax.Array)     # never None again
        np.testing.assert_allclose(g, w, **TOL)


def test_jax_mixed_with_numpy_and_structures():
    x = rng.normal(size=5)

    def f(params, x):
        return np.sum(np.tanh(params["w"] * x) + params["b"] ** 2)
    params = {"w": jnp.asarray(rng.normal(size=5)), "b": 0.5}
    g, gx = pb.grad(f, argnums=(0, 1))(params, x)
    want = jax.grad(lambda p, x: jnp.sum(jnp.tanh(p["w"] * x) + p["b"] ** 2),
                    argnums=(0, 1))(params, x)
    assert isinstance(g["w"], jax.Array) and isinstance(gx, np.ndarray)
    assert isinstance(g["b"], float)          # a Python float's gradient stays a float
    np.testing.assert_allclose(g["w"], want[0]["w"], **TOL)
    np.testing.assert_allclose(g["b"], want[0]["b"], **TOL)
    np.testing.assert_allclose(gx, want[1], **TOL)


def test_jax_jvp_hands_back_jax_arrays():
    x, t = jnp.asarray(rng.normal(size=(N, 5))), jnp.asarray(rng.normal(size=(N, 5)))
    out, tan = pb.jvp(chain, (x,), (t,))
    want = jax.jvp(chain_j, (x,), (t,))
    assert isinstance(out, jax.Array) and isinstance(tan, jax.Array)
    np.testing.assert_allclose(out, want[0], **TOL)
    np.testing.assert_allclose(tan, want[1], **TOL)


def test_traced_jax_values_run_the_namespace_build():
    # under jax.jit the generated code runs on jax.numpy (test_jit.py has the rest)
    got = jax.jit(lambda x: pb.grad(chain)(x))(jnp.ones((2, 2)))
    want = jax.grad(chain_j)(jnp.ones((2, 2)))
    assert isinstance(got, jax.Array)
    np.testing.assert_allclose(got, want, **TOL)


def test_jax_arrays_are_refused_where_not_taken():
    with pytest.raises(TypeError, match="JAX array.*np.asarray"):
        pb.jacfwd(chain)(jnp.ones(3))


# -- Dask ----------------------------------------------------------------------------

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")


def _no_compute(*args, **kwargs):
    raise AssertionError("pullback computed a Dask graph while differentiating")


def _chunked(args):
    return tuple(da.from_array(a, chunks=(N // 4,) + a.shape[1:]) if a.dtype.kind == "f"
                 else a for a in args)


@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("dask.distributed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           dashboard_address=None)
        c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


@pytest.mark.parametrize("name", list(PROBLEMS))
@pytest.mark.parametrize("inplace", [True, False])
def test_dask_gradients_are_lazy_and_equal_numpy(name, inplace):
    f, _, args, argnums = PROBLEMS[name]
    want = pb.grad(f, argnums=argnums)(*args)
    dargs = _chunked(args)
    names = [getattr(a, "name", None) for a in dargs]
    with dask.config.set(scheduler=_no_compute), warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)   # dask computes what it cannot dispatch
        value, got = pb.value_and_grad(f, argnums=argnums, inplace=inplace)(*dargs)
    assert [getattr(a, "name", None) for a in dargs] == names    # the inputs untouched
    assert isinstance(value, da.Array) and value.ndim == 0
    got = dask.compute(*got, scheduler="synchronous")
    for g, w in zip(got, want):
        assert type(g) is np.ndarray and g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, **TOL)


def test_numpy_weights_over_a_dask_batch_get_lazy_gradients():
    f, _, args, argnums = PROBLEMS["mlp"]
    want = pb.grad(f, argnums=argnums)(*args)
    dargs = args[:4] + _chunked(args[4:])
    with dask.config.set(scheduler=_no_compute):
        got = pb.grad(f, argnums=argnums)(*dargs)
    assert all(isinstance(g, da.Array) for g in got)
    for g, w in zip(dask.compute(*got, scheduler="synchronous"), want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, **TOL)


def nll(w, b, x, y):
    z = x @ w + b
    return np.mean(np.logaddexp(0.0, z) - y * z)


def new_axes(scale, x):
    z = x[:, None, :] - scale[None, :, :]
    return np.sum(np.tanh(z) * scale[None, :, :] ** 2)


@pytest.mark.parametrize("name", ["nll", "new_axes"])
def test_dask_numbers_and_new_axes(name):
    if name == "nll":       # a Python float's gradient from a Dask batch: lazy, 0-d
        f, argnums = nll, (0, 1)
        x = rng.normal(size=(N, 4))
        args = (rng.normal(size=4), 0.25, x, (rng.uniform(size=N) < 0.5) * 1.0)
        dargs = args[:2] + _chunked(args[2:])
    else:                   # x[None, :, :]: Dask's item assignment takes no None
        f, argnums = new_axes, (0, 1)
        args = (rng.normal(size=(3, 2)), rng.normal(size=(N, 2)))
        dargs = _chunked(args)
    want = pb.grad(f, argnums=argnums)(*args)
    with dask.config.set(scheduler=_no_compute):
        got = pb.grad(f, argnums=argnums)(*dargs)
    assert all(isinstance(g, da.Array) for g in got)
    for g, w in zip(dask.compute(*got, scheduler="synchronous"), want):
        assert np.shape(g) == np.shape(w)
        np.testing.assert_allclose(g, w, **TOL)


def test_dask_signatures_are_cached_apart_from_numpy_scalars():
    from pullback.checks import signature_key
    from pullback.driver.cache import signature_data
    keys = [signature_key(v) for v in (np.float64(1.0), da.ones(3), np.ones(3))]
    data = [signature_data((k,)) for k in keys]
    assert len({repr(d) for d in data}) == 3, data


def test_dask_gradient_runs_on_both_workers(client):
    from dask.distributed import get_task_stream
    f, _, args, argnums = PROBLEMS["mlp"]
    want = pb.grad(f, argnums=argnums)(*args)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        got = pb.grad(f, argnums=argnums)(*_chunked(args))
    with get_task_stream(client) as stream:
        got = client.compute(list(got), sync=True)
    workers = {t["worker"] for t in stream.data}
    assert len(workers) == 2, workers
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, **TOL)


def jac_problem(w, x):
    return np.tanh(x @ w) * w[0] + np.sum(x ** 2, axis=1)


@pytest.mark.parametrize("jac", ["jacfwd", "jacrev"])
def test_dask_jacobians_are_lazy_and_equal_numpy_on_two_workers(client, jac):
    from dask.distributed import get_task_stream
    w, x = rng.normal(size=3), rng.normal(size=(12, 3))
    make = getattr(pb, jac)
    want = make(jac_problem, argnums=(0, 1))(w, x)
    dw, dx = da.from_array(w, chunks=3), da.from_array(x, chunks=(6, 3))
    with dask.config.set(scheduler=_no_compute):
        got = make(jac_problem, argnums=(0, 1))(dw, dx)
    assert all(isinstance(g, da.Array) for g in got)
    assert [g.shape for g in got] == [(12, 3), (12, 12, 3)]
    with get_task_stream(client) as stream:
        got = client.compute(list(got), sync=True)
    assert len({t["worker"] for t in stream.data}) == 2
    for g, v in zip(got, want):
        assert type(g) is np.ndarray and g.shape == v.shape and g.dtype == v.dtype
        np.testing.assert_allclose(g, v, **TOL)


def test_dask_vjp_of_a_vector_output():
    x = rng.normal(size=(N, 3))
    ct = rng.normal(size=(N, 3))
    out, back = pb.vjp(lambda x: np.tanh(x) * x, da.from_array(x, chunks=16))
    (g,) = back(da.from_array(ct, chunks=16))
    assert isinstance(out, da.Array) and isinstance(g, da.Array)
    t = np.tanh(x)
    np.testing.assert_allclose(g.compute(), ct * (t + x * (1 - t * t)), **TOL)


def test_dask_accumulation_at_a_tuple_index_is_refused():
    def f(x, idx):
        return np.sum(x[idx, :] ** 2)
    x = da.from_array(rng.normal(size=(8, 3)), chunks=4)
    with pytest.raises(pb.PullbackError, match="integer index arrays along the first axis"):
        pb.grad(f)(x, np.array([1, 1, 2]))


def test_other_libraries_are_refused():
    class Tensor:
        __module__ = "torch"
        shape, ndim = (2,), 1

        def __array_namespace__(self):
            return None
    with pytest.raises(TypeError, match="NumPy, Dask, CuPy and JAX arrays.*np.asarray"):
        pb.grad(chain)(Tensor())


# -- CuPy ----------------------------------------------------------------------------

def _gpu():
    try:
        import cupy
        return cupy.is_available()
    except Exception:
        return False


@pytest.mark.gpu
@pytest.mark.skipif(not _gpu(), reason="needs a GPU with CuPy (issue 18: run benchmarks/gpu_check.sh where one is lent)")
@pytest.mark.parametrize("name", list(PROBLEMS))
def test_cupy_gradients_stay_on_the_device_and_equal_numpy(name):
    import cupy
    f, _, args, argnums = PROBLEMS[name]
    want = pb.grad(f, argnums=argnums)(*args)
    cargs = tuple(cupy.asarray(a) if a.dtype.kind == "f" else a for a in args)
    got = pb.grad(f, argnums=argnums)(*cargs)
    for g, w in zip(got, want):
        assert isinstance(g, cupy.ndarray) and g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(cupy.asnumpy(g), w, **TOL)


def _gpu_jax():
    return _gpu() and any(d.platform == "gpu" for d in jax.devices())


@pytest.mark.gpu
@pytest.mark.skipif(not _gpu_jax(), reason="needs a GPU with CuPy and a CUDA build of JAX (issue 18: run benchmarks/gpu_check.sh where one is lent)")
def test_cupy_large_elementwise_chain_uses_the_fused_kernel():
    import cupy
    x = rng.normal(size=200_000)
    want = pb.grad(chain)(x)
    from pullback.lowering import kernels
    before = kernels.stats["jax"]
    got = pb.grad(chain)(cupy.asarray(x))
    assert isinstance(got, cupy.ndarray) and kernels.stats["jax"] > before
    np.testing.assert_allclose(cupy.asnumpy(got), want, rtol=1e-10, atol=1e-12)


# -- generated code bound to the inputs' library (backend.foreign) -------------------

def test_dask_arguments_run_the_generated_code_with_their_own_namespace():
    from pullback.backend.foreign import Twin
    from pullback.callees import derivative_of
    f, _, args, argnums = PROBLEMS["chain"]
    dargs = _chunked(args)
    pb.grad(f)(*dargs)
    handle = derivative_of(f)
    loaded = next(entry[0] for key, entry in handle.cache.items()
                  if key[0][0][0] is da.Array)
    assert isinstance(loaded.primal.__globals__["np"], Twin)
    assert loaded.primal.__globals__["np"].tanh is da.tanh
    numpy_loaded = next(entry[0] for key, entry in handle.cache.items()
                        if key[0][0][0] is np.ndarray)
    assert numpy_loaded.primal.__globals__["np"] is np       # NumPy: untouched


def test_a_function_dask_lacks_but_its_array_namespace_has_stays_lazy():
    # np.sort is not in dask.array: through NumPy's protocol it computed the
    # graph (a FutureWarning); bound to array_api_compat's namespace it is lazy
    pytest.importorskip("array_api_compat")

    def f(x):
        return np.sort(x) * 2.0 + np.tanh(x)
    x = rng.normal(size=N)
    with dask.config.set(scheduler=_no_compute), warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        out, back = pb.vjp(f, da.from_array(x, chunks=N // 4))
    assert isinstance(out, da.Array)
    ct = rng.normal(size=N)
    np.testing.assert_allclose(out.compute(), f(x), **TOL)
    with dask.config.set(scheduler=_no_compute), warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)   # sort_grad: its generic form, lazy
        got = back(da.from_array(ct, chunks=N // 4))[0]
    assert isinstance(got, da.Array)
    np.testing.assert_allclose(got.compute(), pb.vjp(f, x)[1](ct)[0], **TOL)


def mlp_params(params, x, y):
    return mlp(params["w1"], params["b1"], params["w2"], params["b2"], x, y)


def test_a_dict_of_parameters_numpy_dask_and_jax_under_jit_agree():
    w1, b1, w2, b2, x, y = PROBLEMS["mlp"][2]
    params = {"w1": w1, "b1": b1, "w2": w2, "b2": b2}
    want = pb.grad(mlp_params, argnums=(0, 1))(params, x, y)
    dparams = {k: da.from_array(v) for k, v in params.items()}
    dx, dy = _chunked((x, y))
    with dask.config.set(scheduler=_no_compute), warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        dgot = pb.grad(mlp_params, argnums=(0, 1))(dparams, dx, dy)
    assert all(isinstance(g, da.Array) for g in dgot[0].values())
    dgot = dask.compute(dgot, scheduler="synchronous")[0]
    jparams = {k: jnp.asarray(v) for k, v in params.items()}
    jgot = jax.jit(pb.grad(mlp_params, argnums=(0, 1)))(jparams, jnp.asarray(x), jnp.asarray(y))
    oracle = jax.grad(lambda p, x, y: mlp_j(p["w1"], p["b1"], p["w2"], p["b2"], x, y),
                      argnums=(0, 1))(jparams, jnp.asarray(x), jnp.asarray(y))
    for got in (dgot, jgot, want):
        for k in params:
            np.testing.assert_allclose(np.asarray(got[0][k]), np.asarray(oracle[0][k]), **TOL)
        np.testing.assert_allclose(np.asarray(got[1]), np.asarray(oracle[1]), **TOL)


@pytest.mark.parametrize("name", list(PROBLEMS))
def test_numpy_dask_and_jax_under_jit_agree(name):
    f, fj, args, argnums = PROBLEMS[name]
    want = pb.grad(f, argnums=argnums)(*args)
    with dask.config.set(scheduler=_no_compute):
        dgot = pb.grad(f, argnums=argnums)(*_chunked(args))
    dgot = dask.compute(*dgot, scheduler="synchronous")
    jargs = tuple(jnp.asarray(a) if a.dtype.kind == "f" else a for a in args)
    if name in ("indexed_loop", "gather"):      # integer indices: constants of the trace
        jf = jax.jit(lambda *a: pb.grad(f, argnums=argnums)(*a, args[-1]))
        jgot = jf(*jargs[:-1])
    else:
        jgot = jax.jit(pb.grad(f, argnums=argnums))(*jargs)
    for g, d, j in zip(want, dgot, jgot):
        np.testing.assert_allclose(d, g, **TOL)
        np.testing.assert_allclose(np.asarray(j), g, **TOL)


@pytest.mark.gpu
@pytest.mark.skipif(not _gpu(), reason="needs a GPU with CuPy (issue 18: run benchmarks/gpu_check.sh where one is lent)")
def test_cupy_dict_of_parameters_runs_bound_to_cupy_and_equals_numpy():
    import cupy
    from pullback.backend.foreign import Twin
    from pullback.callees import derivative_of
    w1, b1, w2, b2, x, y = PROBLEMS["mlp"][2]
    params = {"w1": w1, "b1": b1, "w2": w2, "b2": b2}
    want = pb.grad(mlp_params, argnums=(0, 1))(params, x, y)
    cparams = {k: cupy.asarray(v) for k, v in params.items()}
    got = pb.grad(mlp_params, argnums=(0, 1))(cparams, cupy.asarray(x), cupy.asarray(y))
    for k in params:
        assert isinstance(got[0][k], cupy.ndarray)
        np.testing.assert_allclose(cupy.asnumpy(got[0][k]), want[0][k], **TOL)
    np.testing.assert_allclose(cupy.asnumpy(got[1]), want[1], **TOL)
    bound = [e[0] for k, e in derivative_of(mlp_params).cache.items()
             if isinstance(e[0].primal.__globals__.get("np"), Twin)]
    assert bound and bound[0].primal.__globals__["np"].tanh is cupy.tanh


def test_the_cupy_binding_without_a_gpu(monkeypatch):
    """The CuPy path of ``backend.foreign`` with a stand-in library (no GPU
    here): NumPy's names resolve to the library's first, NumPy's last, and a
    transform's functions are built again over it."""
    import types as types_
    from pullback.backend import foreign
    fake = types_.ModuleType("cupy")
    calls = []

    def tanh(x):
        calls.append("tanh")
        return np.tanh(x)
    fake.tanh = tanh
    fake.linalg = types_.ModuleType("cupy.linalg")
    fake.linalg.inv = np.linalg.inv
    twin = foreign.Twin(fake, None, "cupy")
    assert twin.tanh is tanh and twin.sum is np.sum and twin.linalg.inv is np.linalg.inv
    assert twin.linalg.det is np.linalg.det

    def f(x):
        return np.sum(np.tanh(x) * x)
    from pullback.callees import derivative_of
    x = rng.normal(size=5)
    loaded = derivative_of(f).specialize((x,), (0,), False)
    bound = foreign.bind(loaded, f, twin)
    assert bound is not loaded and bound.primal is not loaded.primal
    assert foreign.bind(loaded, f, twin) is bound          # one build per library
    out, res = bound.primal(x)
    (g,) = bound.adjoint(res, 1.0)
    assert calls == ["tanh"]
    np.testing.assert_allclose(g, pb.grad(f)(x), **TOL)
    assert loaded.primal.__globals__["np"] is np            # the NumPy build untouched
