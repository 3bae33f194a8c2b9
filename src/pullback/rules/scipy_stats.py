"""Rules for ``scipy.stats`` distributions (registered only when SciPy imports).

``norm``, ``t``, ``gamma``, ``beta`` (``logpdf``, ``pdf``, ``cdf``,
``logcdf``; ``norm`` also ``sf``, ``logsf``), ``chi2`` (``logpdf``, ``pdf``,
``cdf``), ``poisson`` (``logpmf``, ``pmf``, ``cdf``, ``logcdf``),
``dirichlet`` and ``multivariate_normal`` (``logpdf``, ``pdf``; and the
latter's ``entropy``), keyed by
the frozen methods of SciPy's distribution objects (``scipy.stats.norm.logpdf``).
Before/after::

    lp = norm.logpdf(x, mu, s)         z = (x - mu) / s
                                       x_bar = -lp_bar * z / s
                                       mu_bar = lp_bar * z / s
                                       s_bar = lp_bar * (z * z - 1) / s

Conventions:

- Densities differentiate with respect to ``x``, ``loc``, ``scale`` and the
  shape parameters (``df``, ``a``, ``b``, ``alpha``, ``mu``, ``mean``,
  ``cov``); distribution functions with respect to ``x``, ``loc`` and
  ``scale`` (and ``poisson``'s ``mu``).  The shape parameters of ``t``,
  ``gamma`` and ``beta``'s ``cdf`` (incomplete-function derivatives in the
  order) are refused when they carry a gradient, as autograd and JAX do.
- ``poisson``'s ``k`` and ``loc`` are integers: no cotangent.
- ``dirichlet``: ``x`` is differentiated as an unconstrained point (not on
  the simplex), with its components on the first axis as SciPy reads them.
- ``multivariate_normal``: ``cov`` is read by SciPy from its lower triangle
  (an eigendecomposition), so its cotangent lies there, as for
  ``np.linalg.eigh``; for a ``cov`` symmetric by construction it equals
  JAX's.  A 1-d ``cov`` (a diagonal) gets the diagonal's cotangent, a number
  the trace.
"""
from scipy import stats

from pullback.rules.registry import RULES, elementwise, jvp
from pullback.rules.scipy_common import vjp_diff
from pullback.runtime import dirichlet_grad, mvn_entropy_grad, mvn_grad, stats_grad
from pullback.runtime.scipy_linalg_forward import dirichlet_jvp, mvn_entropy_jvp, mvn_jvp

# --- norm ---


@vjp_diff(stats.norm.logpdf, diff=("x", "loc", "scale"), broadcasts=True)
def norm_logpdf(g, ans, x, loc=0.0, scale=1.0):
    return (stats_grad(g, ans, "norm", "logpdf", "x", x, None, None, loc, scale),
            stats_grad(g, ans, "norm", "logpdf", "loc", x, None, None, loc, scale),
            stats_grad(g, ans, "norm", "logpdf", "scale", x, None, None, loc, scale))


@vjp_diff(stats.norm.pdf, diff=("x", "loc", "scale"), broadcasts=True)
def norm_pdf(g, ans, x, loc=0.0, scale=1.0):
    return (stats_grad(g, ans, "norm", "pdf", "x", x, None, None, loc, scale),
            stats_grad(g, ans, "norm", "pdf", "loc", x, None, None, loc, scale),
            stats_grad(g, ans, "norm", "pdf", "scale", x, None, None, loc, scale))


@vjp_diff(stats.norm.cdf, diff=("x", "loc", "scale"), broadcasts=True)
def norm_cdf(g, ans, x, loc=0.0, scale=1.0):
    return (stats_grad(g, ans, "norm", "cdf", "x", x, None, None, loc, scale),
            stats_grad(g, ans, "norm", "cdf", "loc", x, None, None, loc, scale),
            stats_grad(g, ans, "norm", "cdf", "scale", x, None, None, loc, scale))


@vjp_diff(stats.norm.logcdf, diff=("x", "loc", "scale"), broadcasts=True)
def norm_logcdf(g, ans, x, loc=0.0, scale=1.0):
    return (stats_grad(g, ans, "norm", "logcdf", "x", x, None, None, loc, scale),
            stats_grad(g, ans, "norm", "logcdf", "loc", x, None, None, loc, scale),
            stats_grad(g, ans, "norm", "logcdf", "scale", x, None, None, loc, scale))


@vjp_diff(stats.norm.sf, diff=("x", "loc", "scale"), broadcasts=True)
def norm_sf(g, ans, x, loc=0.0, scale=1.0):
    return (stats_grad(g, ans, "norm", "sf", "x", x, None, None, loc, scale),
            stats_grad(g, ans, "norm", "sf", "loc", x, None, None, loc, scale),
            stats_grad(g, ans, "norm", "sf", "scale", x, None, None, loc, scale))


@vjp_diff(stats.norm.logsf, diff=("x", "loc", "scale"), broadcasts=True)
def norm_logsf(g, ans, x, loc=0.0, scale=1.0):
    return (stats_grad(g, ans, "norm", "logsf", "x", x, None, None, loc, scale),
            stats_grad(g, ans, "norm", "logsf", "loc", x, None, None, loc, scale),
            stats_grad(g, ans, "norm", "logsf", "scale", x, None, None, loc, scale))


# --- expon and laplace (location-scale families without shape parameters) ---


@vjp_diff(stats.expon.logpdf, diff=("x", "loc", "scale"), broadcasts=True)
def expon_logpdf(g, ans, x, loc=0.0, scale=1.0):
    return (stats_grad(g, ans, "expon", "logpdf", "x", x, None, None, loc, scale),
            stats_grad(g, ans, "expon", "logpdf", "loc", x, None, None, loc, scale),
            stats_grad(g, ans, "expon", "logpdf", "scale", x, None, None, loc, scale))


@vjp_diff(stats.expon.pdf, diff=("x", "loc", "scale"), broadcasts=True)
def expon_pdf(g, ans, x, loc=0.0, scale=1.0):
    return (stats_grad(g, ans, "expon", "pdf", "x", x, None, None, loc, scale),
            stats_grad(g, ans, "expon", "pdf", "loc", x, None, None, loc, scale),
            stats_grad(g, ans, "expon", "pdf", "scale", x, None, None, loc, scale))


@vjp_diff(stats.expon.cdf, diff=("x", "loc", "scale"), broadcasts=True)
def expon_cdf(g, ans, x, loc=0.0, scale=1.0):
    return (stats_grad(g, ans, "expon", "cdf", "x", x, None, None, loc, scale),
            stats_grad(g, ans, "expon", "cdf", "loc", x, None, None, loc, scale),
            stats_grad(g, ans, "expon", "cdf", "scale", x, None, None, loc, scale))


@vjp_diff(stats.laplace.logpdf, diff=("x", "loc", "scale"), broadcasts=True)
def laplace_logpdf(g, ans, x, loc=0.0, scale=1.0):
    return (stats_grad(g, ans, "laplace", "logpdf", "x", x, None, None, loc, scale),
            stats_grad(g, ans, "laplace", "logpdf", "loc", x, None, None, loc, scale),
            stats_grad(g, ans, "laplace", "logpdf", "scale", x, None, None, loc, scale))


@vjp_diff(stats.laplace.pdf, diff=("x", "loc", "scale"), broadcasts=True)
def laplace_pdf(g, ans, x, loc=0.0, scale=1.0):
    return (stats_grad(g, ans, "laplace", "pdf", "x", x, None, None, loc, scale),
            stats_grad(g, ans, "laplace", "pdf", "loc", x, None, None, loc, scale),
            stats_grad(g, ans, "laplace", "pdf", "scale", x, None, None, loc, scale))


@vjp_diff(stats.laplace.cdf, diff=("x", "loc", "scale"), broadcasts=True)
def laplace_cdf(g, ans, x, loc=0.0, scale=1.0):
    return (stats_grad(g, ans, "laplace", "cdf", "x", x, None, None, loc, scale),
            stats_grad(g, ans, "laplace", "cdf", "loc", x, None, None, loc, scale),
            stats_grad(g, ans, "laplace", "cdf", "scale", x, None, None, loc, scale))


# --- chi2 (gamma with a = df / 2 and twice the scale) ---


@vjp_diff(stats.chi2.logpdf, diff=("x", "df", "loc", "scale"), broadcasts=True)
def chi2_logpdf(g, ans, x, df, loc=0.0, scale=1.0):
    return (stats_grad(g, ans, "chi2", "logpdf", "x", x, df, None, loc, scale),
            stats_grad(g, ans, "chi2", "logpdf", "p1", x, df, None, loc, scale),
            stats_grad(g, ans, "chi2", "logpdf", "loc", x, df, None, loc, scale),
            stats_grad(g, ans, "chi2", "logpdf", "scale", x, df, None, loc, scale))


@vjp_diff(stats.chi2.pdf, diff=("x", "df", "loc", "scale"), broadcasts=True)
def chi2_pdf(g, ans, x, df, loc=0.0, scale=1.0):
    return (stats_grad(g, ans, "chi2", "pdf", "x", x, df, None, loc, scale),
            stats_grad(g, ans, "chi2", "pdf", "p1", x, df, None, loc, scale),
            stats_grad(g, ans, "chi2", "pdf", "loc", x, df, None, loc, scale),
            stats_grad(g, ans, "chi2", "pdf", "scale", x, df, None, loc, scale))


@vjp_diff(stats.chi2.cdf, diff=("x", "loc", "scale"), broadcasts=True)
def chi2_cdf(g, ans, x, df, loc=0.0, scale=1.0):
    return (stats_grad(g, ans, "chi2", "cdf", "x", x, df, None, loc, scale),
            stats_grad(g, ans, "chi2", "cdf", "loc", x, df, None, loc, scale),
            stats_grad(g, ans, "chi2", "cdf", "scale", x, df, None, loc, scale))


# --- t ---


@vjp_diff(stats.t.logpdf, diff=("x", "df", "loc", "scale"), broadcasts=True)
def t_logpdf(g, ans, x, df, loc=0.0, scale=1.0):
    return (stats_grad(g, ans, "t", "logpdf", "x", x, df, None, loc, scale),
            stats_grad(g, ans, "t", "logpdf", "p1", x, df, None, loc, scale),
            stats_grad(g, ans, "t", "logpdf", "loc", x, df, None, loc, scale),
            stats_grad(g, ans, "t", "logpdf", "scale", x, df, None, loc, scale))


@vjp_diff(stats.t.pdf, diff=("x", "df", "loc", "scale"), broadcasts=True)
def t_pdf(g, ans, x, df, loc=0.0, scale=1.0):
    return (stats_grad(g, ans, "t", "pdf", "x", x, df, None, loc, scale),
            stats_grad(g, ans, "t", "pdf", "p1", x, df, None, loc, scale),
            stats_grad(g, ans, "t", "pdf", "loc", x, df, None, loc, scale),
            stats_grad(g, ans, "t", "pdf", "scale", x, df, None, loc, scale))


@vjp_diff(stats.t.cdf, diff=("x", "loc", "scale"), broadcasts=True)
def t_cdf(g, ans, x, df, loc=0.0, scale=1.0):
    return (stats_grad(g, ans, "t", "cdf", "x", x, df, None, loc, scale),
            stats_grad(g, ans, "t", "cdf", "loc", x, df, None, loc, scale),
            stats_grad(g, ans, "t", "cdf", "scale", x, df, None, loc, scale))


@vjp_diff(stats.t.logcdf, diff=("x", "loc", "scale"), broadcasts=True)
def t_logcdf(g, ans, x, df, loc=0.0, scale=1.0):
    return (stats_grad(g, ans, "t", "logcdf", "x", x, df, None, loc, scale),
            stats_grad(g, ans, "t", "logcdf", "loc", x, df, None, loc, scale),
            stats_grad(g, ans, "t", "logcdf", "scale", x, df, None, loc, scale))


# --- gamma ---


@vjp_diff(stats.gamma.logpdf, diff=("x", "a", "loc", "scale"), broadcasts=True)
def gamma_logpdf(g, ans, x, a, loc=0.0, scale=1.0):
    return (stats_grad(g, ans, "gamma", "logpdf", "x", x, a, None, loc, scale),
            stats_grad(g, ans, "gamma", "logpdf", "p1", x, a, None, loc, scale),
            stats_grad(g, ans, "gamma", "logpdf", "loc", x, a, None, loc, scale),
            stats_grad(g, ans, "gamma", "logpdf", "scale", x, a, None, loc, scale))


@vjp_diff(stats.gamma.pdf, diff=("x", "a", "loc", "scale"), broadcasts=True)
def gamma_pdf(g, ans, x, a, loc=0.0, scale=1.0):
    return (stats_grad(g, ans, "gamma", "pdf", "x", x, a, None, loc, scale),
            stats_grad(g, ans, "gamma", "pdf", "p1", x, a, None, loc, scale),
            stats_grad(g, ans, "gamma", "pdf", "loc", x, a, None, loc, scale),
            stats_grad(g, ans, "gamma", "pdf", "scale", x, a, None, loc, scale))


@vjp_diff(stats.gamma.cdf, diff=("x", "loc", "scale"), broadcasts=True)
def gamma_cdf(g, ans, x, a, loc=0.0, scale=1.0):
    return (stats_grad(g, ans, "gamma", "cdf", "x", x, a, None, loc, scale),
            stats_grad(g, ans, "gamma", "cdf", "loc", x, a, None, loc, scale),
            stats_grad(g, ans, "gamma", "cdf", "scale", x, a, None, loc, scale))


@vjp_diff(stats.gamma.logcdf, diff=("x", "loc", "scale"), broadcasts=True)
def gamma_logcdf(g, ans, x, a, loc=0.0, scale=1.0):
    return (stats_grad(g, ans, "gamma", "logcdf", "x", x, a, None, loc, scale),
            stats_grad(g, ans, "gamma", "logcdf", "loc", x, a, None, loc, scale),
            stats_grad(g, ans, "gamma", "logcdf", "scale", x, a, None, loc, scale))


# --- beta ---


@vjp_diff(stats.beta.logpdf, diff=("x", "a", "b", "loc", "scale"), broadcasts=True)
def beta_logpdf(g, ans, x, a, b, loc=0.0, scale=1.0):
    return (stats_grad(g, ans, "beta", "logpdf", "x", x, a, b, loc, scale),
            stats_grad(g, ans, "beta", "logpdf", "p1", x, a, b, loc, scale),
            stats_grad(g, ans, "beta", "logpdf", "p2", x, a, b, loc, scale),
            stats_grad(g, ans, "beta", "logpdf", "loc", x, a, b, loc, scale),
            stats_grad(g, ans, "beta", "logpdf", "scale", x, a, b, loc, scale))


@vjp_diff(stats.beta.pdf, diff=("x", "a", "b", "loc", "scale"), broadcasts=True)
def beta_pdf(g, ans, x, a, b, loc=0.0, scale=1.0):
    return (stats_grad(g, ans, "beta", "pdf", "x", x, a, b, loc, scale),
            stats_grad(g, ans, "beta", "pdf", "p1", x, a, b, loc, scale),
            stats_grad(g, ans, "beta", "pdf", "p2", x, a, b, loc, scale),
            stats_grad(g, ans, "beta", "pdf", "loc", x, a, b, loc, scale),
            stats_grad(g, ans, "beta", "pdf", "scale", x, a, b, loc, scale))


@vjp_diff(stats.beta.cdf, diff=("x", "loc", "scale"), broadcasts=True)
def beta_cdf(g, ans, x, a, b, loc=0.0, scale=1.0):
    return (stats_grad(g, ans, "beta", "cdf", "x", x, a, b, loc, scale),
            stats_grad(g, ans, "beta", "cdf", "loc", x, a, b, loc, scale),
            stats_grad(g, ans, "beta", "cdf", "scale", x, a, b, loc, scale))


@vjp_diff(stats.beta.logcdf, diff=("x", "loc", "scale"), broadcasts=True)
def beta_logcdf(g, ans, x, a, b, loc=0.0, scale=1.0):
    return (stats_grad(g, ans, "beta", "logcdf", "x", x, a, b, loc, scale),
            stats_grad(g, ans, "beta", "logcdf", "loc", x, a, b, loc, scale),
            stats_grad(g, ans, "beta", "logcdf", "scale", x, a, b, loc, scale))


# --- poisson (k and loc are integers) ---


@vjp_diff(stats.poisson.logpmf, diff=("mu",), broadcasts=True)
def poisson_logpmf(g, ans, k, mu, loc=0):
    return stats_grad(g, ans, "poisson", "logpmf", "p1", k, mu, None, loc)


@vjp_diff(stats.poisson.pmf, diff=("mu",), broadcasts=True)
def poisson_pmf(g, ans, k, mu, loc=0):
    return stats_grad(g, ans, "poisson", "pmf", "p1", k, mu, None, loc)


@vjp_diff(stats.poisson.cdf, diff=("mu",), broadcasts=True)
def poisson_cdf(g, ans, k, mu, loc=0):
    return stats_grad(g, ans, "poisson", "cdf", "p1", k, mu, None, loc)


@vjp_diff(stats.poisson.logcdf, diff=("mu",), broadcasts=True)
def poisson_logcdf(g, ans, k, mu, loc=0):
    return stats_grad(g, ans, "poisson", "logcdf", "p1", k, mu, None, loc)


# --- dirichlet, multivariate_normal ---


@vjp_diff(stats.dirichlet.logpdf, diff=("x", "alpha"))
def dirichlet_logpdf(g, ans, x, alpha):
    return (dirichlet_grad(g, ans, "logpdf", "x", x, alpha),
            dirichlet_grad(g, ans, "logpdf", "alpha", x, alpha))


@vjp_diff(stats.dirichlet.pdf, diff=("x", "alpha"))
def dirichlet_pdf(g, ans, x, alpha):
    return (dirichlet_grad(g, ans, "pdf", "x", x, alpha),
            dirichlet_grad(g, ans, "pdf", "alpha", x, alpha))


@vjp_diff(stats.multivariate_normal.logpdf, diff=("x", "mean", "cov"))
def mvn_logpdf(g, ans, x, mean=None, cov=1, allow_singular=False):
    return (mvn_grad(g, ans, "logpdf", "x", x, mean, cov),
            mvn_grad(g, ans, "logpdf", "mean", x, mean, cov),
            mvn_grad(g, ans, "logpdf", "cov", x, mean, cov))


@vjp_diff(stats.multivariate_normal.pdf, diff=("x", "mean", "cov"))
def mvn_pdf(g, ans, x, mean=None, cov=1, allow_singular=False):
    return (mvn_grad(g, ans, "pdf", "x", x, mean, cov),
            mvn_grad(g, ans, "pdf", "mean", x, mean, cov),
            mvn_grad(g, ans, "pdf", "cov", x, mean, cov))


@vjp_diff(stats.multivariate_normal.entropy, diff=("mean", "cov"))
def mvn_entropy(g, ans, mean=None, cov=1):
    # the entropy does not depend on the mean: its cotangent is zero
    return mvn_entropy_grad(g, mean, cov, "mean"), mvn_entropy_grad(g, mean, cov, "cov")


# --- forward rules: the elementwise ones are their reverse rules read forwards ---

_FAMILIES = ("norm", "expon", "laplace", "chi2", "t", "gamma", "beta", "poisson")
elementwise(*[m for d in _FAMILIES for f in ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf",
                                              "logpmf", "pmf")
              if (m := getattr(getattr(stats, d), f, None)) is not None and m in RULES])


@jvp(stats.dirichlet.logpdf)
def dirichlet_logpdf_jvp(t, ans, x, alpha):
    return dirichlet_jvp(t, ans, "logpdf", "x", x, alpha), dirichlet_jvp(t, ans, "logpdf",
                                                                         "alpha", x, alpha)


@jvp(stats.dirichlet.pdf)
def dirichlet_pdf_jvp(t, ans, x, alpha):
    return dirichlet_jvp(t, ans, "pdf", "x", x, alpha), dirichlet_jvp(t, ans, "pdf", "alpha",
                                                                      x, alpha)


@jvp(stats.multivariate_normal.logpdf)
def mvn_logpdf_jvp(t, ans, x, mean=None, cov=1, allow_singular=False):
    return (mvn_jvp(t, ans, "logpdf", "x", x, mean, cov),
            mvn_jvp(t, ans, "logpdf", "mean", x, mean, cov),
            mvn_jvp(t, ans, "logpdf", "cov", x, mean, cov))


@jvp(stats.multivariate_normal.pdf)
def mvn_pdf_jvp(t, ans, x, mean=None, cov=1, allow_singular=False):
    return (mvn_jvp(t, ans, "pdf", "x", x, mean, cov), mvn_jvp(t, ans, "pdf", "mean", x, mean, cov),
            mvn_jvp(t, ans, "pdf", "cov", x, mean, cov))


@jvp(stats.multivariate_normal.entropy)
def mvn_entropy_jvp_rule(t, ans, mean=None, cov=1):
    return mvn_entropy_jvp(t, ans, mean, cov, "mean"), mvn_entropy_jvp(t, ans, mean, cov, "cov")
