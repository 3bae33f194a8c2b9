"""End-to-end tests of the SciPy rules (issue 14): realistic models written
with ``scipy.special``, ``scipy.stats``, ``scipy.linalg``, ``scipy.signal``
and ``scipy.integrate.odeint``, differentiated with ``pb.grad`` and checked
against central differences and against ``jax.grad`` of the same source run
with ``jax.numpy`` and ``jax.scipy`` (float64).  Then refusals, float32, and
pullback without SciPy.
"""
import inspect
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pullback as pb

from fd_helpers import central_differences

scipy = pytest.importorskip("scipy")
import scipy.linalg as linalg  # noqa: E402
import scipy.signal as signal  # noqa: E402
import scipy.special as special  # noqa: E402
import scipy.stats as stats  # noqa: E402
from scipy.integrate import odeint  # noqa: E402
from scipy.special import logsumexp  # noqa: E402

RTOL = 1e-6


# --- the models ------------------------------------------------------------------


def probit_glm(w, X, y):
    """A probit regression's log posterior, stable in the tails (log_ndtr)."""
    z = X @ w
    return np.sum(y * special.log_ndtr(z) + (1.0 - y) * special.log_ndtr(-z)) - 0.5 * np.sum(w * w)


def mixture(logits, mu, log_s, x):
    """A Gaussian mixture's log-likelihood with logsumexp over components."""
    logw = logits - logsumexp(logits)
    lp = stats.norm.logpdf(x[:, None], mu, np.exp(log_s)) + logw
    return np.sum(logsumexp(lp, axis=1))


def student_t(loc, log_scale, df, x):
    """A Student-t likelihood in the location, the log scale and the degrees of freedom."""
    return np.sum(stats.t.logpdf(x, df, loc, np.exp(log_scale))) + np.sum(stats.t.pdf(x, df))


def distribution_functions(x, loc, scale, mu):
    """cdf and logcdf in x, loc, scale (jax.scipy lacks several: central differences only)."""
    return (np.sum(stats.t.logcdf(x, 4.0, loc, scale)) + np.sum(stats.t.cdf(x, 2.5, loc))
            + np.sum(stats.gamma.cdf(np.exp(x), 2.0, loc - 3.0, scale))
            + np.sum(stats.gamma.logcdf(np.exp(x), 1.5, 0.0, scale))
            + np.sum(stats.beta.logcdf(special.expit(x), 2.0, 3.0, loc - 2.0, scale + 3.0))
            + np.sum(stats.poisson.logcdf(np.array([0, 2, 4]), mu))
            + np.sum(stats.poisson.pmf(np.array([1, 3, 2]), mu))
            + np.sum(stats.norm.pdf(x, loc, scale)) + np.sum(stats.gamma.logpdf(np.exp(x), mu))
            + np.sum(stats.dirichlet.pdf(np.array([0.2, 0.5, 0.3]), mu)))


def special_mix(a, b, x):
    return np.sum(special.gammaln(a) + special.betaln(a, b) + special.erf(x) * special.expit(x)
                  + special.xlogy(a, b) + special.log_softmax(x) * a + special.i0e(x)
                  + special.digamma(b) * x + special.entr(b) + special.polygamma(1, a)
                  + special.softmax(x) * b + special.xlog1py(a, b) + special.ndtri(special.expit(x))
                  + special.erfinv(0.5 * np.tanh(x)) + special.multigammaln(a + 2.0, 2)
                  + special.kl_div(a, b) + special.rel_entr(b, a) + special.i1(x)
                  + special.logsumexp(x, b=b) + special.ndtr(x) + special.gamma(b)
                  + special.erfc(x) + special.logit(special.expit(x)) + special.beta(a, b))


def distributions(x, a, b, mu):
    p = special.expit(x)
    return (np.sum(stats.gamma.logpdf(a, b, 0.1, mu)) + np.sum(stats.beta.logpdf(p, a, b))
            + np.sum(stats.poisson.logpmf(np.array([0, 2, 5]), a * mu))
            + np.sum(stats.norm.cdf(x, mu, b)) + np.sum(stats.gamma.pdf(b, a))
            + np.sum(stats.beta.cdf(p, 2.0, 3.0))
            + np.sum(stats.poisson.cdf(np.array([1, 3, 4]), a))
            + np.sum(stats.norm.logcdf(x, mu)) + np.sum(stats.t.pdf(x, a + 1.0)))


def gaussian_models(L, m, X, alpha):
    C = L @ L.T + np.eye(L.shape[0])
    p = np.exp(alpha) / np.sum(np.exp(alpha))
    return (np.sum(stats.multivariate_normal.logpdf(X, m, C))
            + stats.dirichlet.logpdf(p, np.exp(alpha) + 1.0))


def triangular(A, B, b):
    L = np.tril(A) + 3.0 * np.eye(A.shape[0])
    x = linalg.solve_triangular(L, b, lower=True)
    y = linalg.solve_triangular(L, B, trans=1, lower=True)
    S = L @ L.T
    c, low = linalg.cho_factor(S, lower=True)
    z = linalg.cho_solve((c, low), b)
    U = linalg.cholesky(S)
    return (np.sum(x ** 2) + np.sum(y * B) + np.sum(z ** 3) + np.sum(np.log(np.diag(U)))
            + np.sum(linalg.expm(0.3 * A) * B) + linalg.det(S) * 0.01
            + np.sum(linalg.inv(S) * B) + np.sum(linalg.solve(S, b) ** 2))


def square_root(A, B):
    S = A @ A.T + np.eye(A.shape[0])
    return np.sum(linalg.sqrtm(S) * B)


def smoothing(img, kernel):
    out = signal.convolve(img, kernel, mode="same")
    edge = signal.convolve(img, kernel[::-1, :], mode="valid")
    return np.sum(out ** 2) + np.sum(np.tanh(edge)) + np.sum(signal.convolve(img[0], kernel[0]))


JAX_NAMES = {"special": "jax.scipy.special", "stats": "jax.scipy.stats",
             "linalg": "jax.scipy.linalg", "signal": "jax.scipy.signal"}


def _inputs(seed):
    rng = np.random.default_rng(seed)

    def n(*shape):
        return rng.normal(size=shape)

    def pos(*shape):
        return rng.uniform(0.5, 2.0, size=shape)

    X = n(20, 3)
    w_true = np.array([1.0, -2.0, 0.5])
    y = (X @ w_true + 0.3 * n(20) > 0).astype(float)
    X[0] *= 12.0                      # a point deep in the tail
    return {
        probit_glm: ((n(3), X, y), (0,)),
        mixture: ((n(3), n(3), 0.3 * n(3), n(12)), (0, 1, 2)),
        student_t: ((0.3, -0.2, 4.5, n(15)), (0, 1, 2)),
        distribution_functions: ((n(3), 0.2, 1.3, pos(3)), (0, 1, 2, 3)),
        special_mix: ((pos(4), pos(4), n(4)), (0, 1, 2)),
        distributions: ((n(3), pos(3) + 1.0, pos(3) + 1.0, pos(3)), (0, 1, 2, 3)),
        gaussian_models: ((n(3, 3), n(3), n(6, 3), n(4)), (0, 1, 2, 3)),
        triangular: ((n(3, 3), n(3, 3), n(3)), (0, 1, 2)),
        square_root: ((n(3, 3), n(3, 3)), (0, 1)),
        smoothing: ((n(5, 6), n(2, 3)), (0, 1)),
    }


def jax_version(f):
    """The same source, run with jax.numpy as ``np`` and jax.scipy as SciPy."""
    import importlib

    import jax.numpy as jnp
    namespace = {"np": jnp, "logsumexp": importlib.import_module("jax.scipy.special").logsumexp}
    for name, module in JAX_NAMES.items():
        namespace[name] = importlib.import_module(module)
    exec(compile(textwrap.dedent(inspect.getsource(f)), "<jax>", "exec"), namespace)
    return namespace[f.__name__]


def close(got, want, rtol=RTOL):
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    assert got.shape == want.shape
    scale = max(np.max(np.abs(want)), 1.0)
    assert np.max(np.abs(got - want), initial=0.0) <= rtol * scale, (got, want)


MODELS = list(_inputs(0))


@pytest.mark.parametrize("f", MODELS, ids=lambda f: f.__name__)
def test_against_central_differences(f):
    args, argnums = _inputs(1)[f]
    grads = pb.grad(f, argnums=argnums)(*args)
    for k, g in zip(argnums, grads):
        close(g, central_differences(f, args, k), rtol=1e-5)


@pytest.mark.parametrize("f", [m for m in MODELS if m not in (square_root,
                                                                distribution_functions)],
                         ids=lambda f: f.__name__)
def test_against_jax(f):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    args, argnums = _inputs(2)[f]
    want = jax.grad(jax_version(f), argnums=argnums)(*args)
    got = pb.grad(f, argnums=argnums)(*args)
    for g, w in zip(got, want):
        close(g, w)


def test_probit_glm_far_tail_is_finite():
    X = np.array([[40.0, 0.0], [-40.0, 1.0]])
    g = pb.grad(probit_glm)(np.array([1.0, 0.5]), X, np.array([0.0, 1.0]))
    # d/dz log_ndtr(-z) at z = 40 is about -40 (the tail's slope), not 0 / 0
    assert np.all(np.isfinite(g)) and -3200 < g[0] < -3150
    close(g, central_differences(probit_glm, (np.array([1.0, 0.5]), X, np.array([0.0, 1.0])),
                                 0))


# --- odeint: a Lotka-Volterra parameter fit ----------------------------------------


def lotka_volterra(y, t, theta):
    prey, pred = y[0], y[1]
    a, b, c, d = theta[0], theta[1], theta[2], theta[3]
    return np.array([a * prey - b * prey * pred, c * prey * pred - d * pred])


T_OBS = np.linspace(0.0, 4.0, 9)
THETA_TRUE = np.array([1.0, 0.4, 0.3, 0.8])


def _observed():
    return odeint(lotka_volterra, np.array([2.0, 1.0]), T_OBS, args=(THETA_TRUE,),
                  rtol=1e-10, atol=1e-10)


def lv_loss(theta, y0, obs):
    ys = odeint(lotka_volterra, y0, T_OBS, args=(theta,), rtol=1e-10, atol=1e-10)
    return np.sum((ys - obs) ** 2)


def test_odeint_against_central_differences_and_jax():
    obs = _observed()
    theta = np.array([1.1, 0.35, 0.32, 0.7])
    y0 = np.array([2.2, 0.9])
    g_theta, g_y0 = pb.grad(lv_loss, argnums=(0, 1))(theta, y0, obs)
    close(g_theta, central_differences(lv_loss, (theta, y0, obs), 0, eps=1e-5), rtol=1e-5)
    close(g_y0, central_differences(lv_loss, (theta, y0, obs), 1, eps=1e-5), rtol=1e-5)
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    from jax.experimental.ode import odeint as jodeint

    def field(y, t, th):
        return jnp.array([th[0] * y[0] - th[1] * y[0] * y[1], th[2] * y[0] * y[1] - th[3] * y[1]])

    def loss(th, y):
        return jnp.sum((jodeint(field, y, jnp.asarray(T_OBS), th, rtol=1e-10, atol=1e-10)
                        - obs) ** 2)
    want = jax.grad(loss, argnums=(0, 1))(theta, y0)
    close(g_theta, want[0], rtol=1e-6)
    close(g_y0, want[1], rtol=1e-6)


def test_odeint_fit_descends():
    """Gradient descent on the parameters (steps halved until the loss drops) fits them."""
    obs = _observed()
    theta = np.array([1.2, 0.3, 0.35, 0.7])
    y0 = np.array([2.0, 1.0])
    vg = pb.value_and_grad(lv_loss)
    first, g = vg(theta, y0, obs)
    value, step = first, 0.1
    for _ in range(25):
        trial = theta - step * g / np.linalg.norm(g)
        new = lv_loss(trial, y0, obs)
        if new < value:
            theta, step = trial, step * 1.5
            value, g = vg(theta, y0, obs)
        else:
            step *= 0.5
    assert value < 0.01 * first
    assert np.max(np.abs(theta - THETA_TRUE)) < 0.15


def damped(y, s, kk):
    return -kk * y * np.cos(s)


def decay_times(t, y0, k):
    ys = odeint(damped, y0, t, args=(k,), rtol=1e-11, atol=1e-11)
    return np.sum(ys[1:] ** 2 * np.arange(1.0, t.shape[0])[:, None])


def test_odeint_time_and_scalar_args_gradients():
    t = np.array([0.1, 0.4, 0.9, 1.5])
    y0 = np.array([1.0, -0.5])
    gt, gy, gk = pb.grad(decay_times, argnums=(0, 1, 2))(t, y0, 0.7)
    close(gt, central_differences(decay_times, (t, y0, 0.7), 0, eps=1e-5), rtol=1e-5)
    close(gy, central_differences(decay_times, (t, y0, 0.7), 1, eps=1e-5), rtol=1e-5)
    assert isinstance(gk, float)
    close(gk, central_differences(decay_times, (t, y0, 0.7), 2, eps=1e-5), rtol=1e-5)


# --- conventions, float32, refusals ----------------------------------------------------


def test_float32_stays_float32():
    def f(x, a):
        return np.sum(special.gammaln(a) * special.log_ndtr(x) + special.expit(x)
                      + logsumexp(x * a) + special.erf(x) * special.softmax(a))
    x = np.linspace(-1.0, 1.0, 4).astype(np.float32)
    a = np.linspace(0.5, 2.0, 4).astype(np.float32)
    gx, ga = pb.grad(f, argnums=(0, 1))(x, a)
    assert gx.dtype == np.float32 and ga.dtype == np.float32
    want = pb.grad(f, argnums=(0, 1))(x.astype(float), a.astype(float))
    close(gx, want[0], rtol=1e-5)
    close(ga, want[1], rtol=1e-5)


def test_rules_reached_through_aliases():
    import scipy.special as sp
    from scipy.stats import norm

    def f(x):
        return np.sum(sp.gammaln(x)) + np.sum(norm.logpdf(x, 1.0, 2.0)) + sp.logsumexp(x)
    x = np.array([0.7, 1.3, 2.1])
    close(pb.grad(f)(x), central_differences(f, (x,), 0))


def t_cdf_df(df, x):
    return np.sum(stats.t.cdf(x, df))


def test_refused_shape_parameter_of_a_cdf():
    with pytest.raises(pb.PullbackError, match="df"):
        pb.grad(t_cdf_df)(3.0, np.array([0.1, 0.5]))


def lse_sign(x):
    v, s = logsumexp(x, b=np.array([1.0, -1.0]), return_sign=True)
    return v * s


def test_refused_return_sign():
    with pytest.raises(pb.PullbackError, match="return_sign"):
        pb.grad(lse_sign)(np.array([0.3, 0.1]))


def lv_full_output(theta, y0):
    ys, info = odeint(lotka_volterra, y0, T_OBS, args=(theta,), full_output=True)
    return np.sum(ys)


def test_refused_odeint_full_output():
    with pytest.raises(pb.PullbackError, match="full_output"):
        pb.grad(lv_full_output)(THETA_TRUE, np.array([2.0, 1.0]))


def test_cov_cotangent_lies_in_the_lower_triangle():
    """SciPy reads multivariate_normal's cov from its lower triangle: so does the cotangent."""
    def f(C, x):
        return np.sum(stats.multivariate_normal.logpdf(x, np.zeros(2), C))
    C = np.array([[2.0, 0.3], [0.3, 1.0]])
    x = np.array([[0.2, -0.4], [1.0, 0.5]])
    g = pb.grad(f)(C, x)
    assert g[0, 1] == 0.0
    close(g, central_differences(f, (C, x), 0))


def test_pullback_works_without_scipy(tmp_path):
    script = tmp_path / "no_scipy.py"
    script.write_text(textwrap.dedent("""
        import sys
        sys.modules["scipy"] = None          # import scipy raises ImportError
        import numpy as np
        import pullback as pb
        from pullback.rules import registry
        def f(x):
            return np.sum(np.exp(x) * x)
        g = pb.grad(f)(np.array([0.5, 1.0]))
        assert np.allclose(g, np.exp([0.5, 1.0]) * (1 + np.array([0.5, 1.0])))
        assert not any("scipy" in repr(k) for k in registry.RULES)
        print("ok")
    """))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_import_does_not_load_scipy():
    code = "import sys, pullback; print('scipy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "False", out.stderr


# --- fused kernels -------------------------------------------------------------------


def fused_special(x, w):
    z = x * w + 0.5
    return np.sum(special.log_ndtr(z) * special.expit(x) + special.gammaln(np.exp(z))
                  + special.xlogy(x * x, np.exp(w)) + special.erf(w) * special.i0e(z))


def unfusable_special(x, w):
    z = x * w + 0.5
    return np.sum(special.digamma(np.exp(z)) * special.expit(x) + np.sin(z) * w)


def test_declared_special_functions_fuse_into_kernels():
    """The ufuncs declared elementwise join one fused kernel, whose JAX and NumPy
    forward-mode paths agree with each other and with central differences."""
    from pullback.lowering import kernels
    rng = np.random.default_rng(3)
    x, w = rng.normal(size=50), rng.normal(size=50)
    with kernels.options(lower=True):
        text = pb.source(fused_special, x, w)
        code = [line for line in text.splitlines() if not line.strip().startswith("#")]
        assert any("fused_" in line for line in code)
        assert not any("special." in line for line in code)       # all inside the kernel
        want = [central_differences(fused_special, (x, w), k) for k in (0, 1)]
        paths = []
        for opts in ({"jax": False}, {"threshold": 0}):
            if opts.get("threshold") == 0:
                pytest.importorskip("jax")
            with kernels.options(**opts):
                paths.append(pb.grad(fused_special, argnums=(0, 1))(x, w))
    for got in paths:
        for g, wnt in zip(got, want):
            close(g, wnt, rtol=1e-6)
    for a, b in zip(*paths):
        close(a, b, rtol=1e-12)


def test_undeclared_special_functions_stay_numpy_calls():
    from pullback.lowering import kernels
    rng = np.random.default_rng(4)
    x, w = rng.normal(size=20), rng.normal(size=20)
    with kernels.options(lower=True):
        text = pb.source(unfusable_special, x, w)
        g = pb.grad(unfusable_special, argnums=(0, 1))(x, w)
    code = [line for line in text.splitlines() if not line.strip().startswith("#")]
    assert any("special.digamma(" in line for line in code)
    for k in (0, 1):
        close(g[k], central_differences(unfusable_special, (x, w), k))


def keyword_calls(x, mu, s, w):
    return (np.sum(stats.norm.logpdf(x, loc=mu, scale=s)) + logsumexp(x, b=w, axis=0)
            + np.sum(stats.t.logpdf(x, df=s + 2.0, scale=s))
            + np.sum(special.softmax(x, axis=0) * w)
            + np.sum(stats.multivariate_normal.logpdf(x, mean=w, cov=s * np.eye(3))))


def test_keyword_arguments():
    args = (np.array([0.3, -1.2, 0.8]), 0.1, 1.3, np.array([0.5, 1.0, 2.0]))
    grads = pb.grad(keyword_calls, argnums=(0, 1, 2, 3))(*args)
    for k, g in enumerate(grads):
        close(g, central_differences(keyword_calls, args, k))
    assert isinstance(grads[1], float) and isinstance(grads[2], float)
