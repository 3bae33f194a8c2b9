"""Rules for ``scipy.special`` (registered only when SciPy imports).

The elementwise functions are NumPy ufuncs and their rules read like the
derivative (``gammaln``: ``g * digamma(x)``); SciPy itself is reached only
through ``runtime.scipy_support`` (``sp_digamma``, ``bessel_grad``...), so
rule bodies stay inlinable.  Before/after::

    y = scipy.special.gammaln(x)          x_bar = y_bar * sp_digamma(x)

Conventions (JAX's where the derivative is not unique):

- ``jn`` is SciPy's ``jv`` (one rule).  ``kv``/``kve`` (real ``x > 0``) by the
  recurrence ``K'_v = -(K_{v-1} + K_{v+1}) / 2``; ``loggamma`` of a real or
  complex argument is ``digamma`` (holomorphic off its branch cut).
- ``gammainc``/``gammaincc``/``betainc`` differentiate in ``x`` only; their
  shape parameters are refused when they carry a gradient (as autograd; JAX
  has no derivative in them either).  ``gammasgn`` is piecewise constant.
- Orders and integer arguments get no cotangent: ``polygamma``'s ``n``,
  ``jv``/``yv``/``jn``/``yn``'s order ``v``, ``multigammaln``'s ``d``
  (JAX's ``jv`` does not differentiate its order either).
- ``xlogy(x, y)``/``xlog1py``: ``d/dx = log(y)`` everywhere (``-inf`` at
  ``y == 0`` as in JAX), ``d/dy = x / y`` taken as 0 where ``x == 0``.
- ``i1``'s derivative at 0 is its limit 1/2; ``i0e``/``i1e`` use
  ``sign(x)`` (0 at ``x == 0``, the average of the one-sided slopes).
- ``entr``, ``kl_div``, ``rel_entr`` use their formulas for positive
  arguments; at ``x == 0`` the ``log`` makes the cotangent infinite, as
  the one-sided derivative is.
- ``logsumexp``: ``b`` gets a cotangent; ``return_sign=True`` is refused.

Fused kernels: the ufuncs that ``jax.scipy.special`` computes alike (the
same values, infinities included) are declared elementwise below, so they
join fused regions (JAX kernels above the size threshold, NumPy forward mode
with these rules below it); the others (``digamma`` and ``beta``/``betaln``,
which JAX gives NaN at poles where SciPy gives infinities, ``rgamma``, the
Bessel functions of any order, and the non-ufuncs) stay NumPy calls.
"""
import math

import numpy as np
import scipy.special as special

from pullback.rules.registry import declare_elementwise, elementwise, jvp, nondifferentiable, vjp
from pullback.rules.scipy_common import vjp_diff
from pullback.runtime.reduction_forward import logsumexp_jvp as logsumexp_jvp_helper
from pullback.runtime import (bessel_grad, incomplete_grad, logsumexp_grad, multigammaln_grad,
                              sp_digamma, sp_polygamma, xlogy_grad)

# --- gamma and beta functions ---


@vjp(special.gammaln)
def gammaln(g, ans, x):
    return g * sp_digamma(x)


@vjp(special.digamma, special.psi)
def digamma(g, ans, x):
    return g * sp_polygamma(1, x)


@vjp(special.polygamma, nondiff=("n",), broadcasts=True)
def polygamma(g, ans, n, x):
    return g * sp_polygamma(n + 1, x)


# the run-time helpers the rules above call, differentiated again by
# pb.hessian (forward over the adjoint of gammaln, digamma, gamma)
@vjp(sp_digamma)
def sp_digamma_vjp(g, ans, x):
    return g * sp_polygamma(1, x)


@vjp(sp_polygamma, nondiff=("n",), broadcasts=True)
def sp_polygamma_vjp(g, ans, n, x):
    return g * sp_polygamma(n + 1, x)


elementwise(sp_digamma, sp_polygamma)


@vjp(special.loggamma)
def loggamma(g, ans, x):
    # holomorphic off the branch cut: g * digamma(z), unconjugated (JAX's convention)
    return g * sp_digamma(x)


@vjp(special.gamma)
def gamma(g, ans, x):
    return g * ans * sp_digamma(x)


@vjp(special.rgamma)
def rgamma(g, ans, x):
    return -g * ans * sp_digamma(x)


@vjp(special.beta, broadcasts=True)
def beta(g, ans, a, b):
    both = sp_digamma(a + b)
    return g * ans * (sp_digamma(a) - both), g * ans * (sp_digamma(b) - both)


@vjp(special.betaln, broadcasts=True)
def betaln(g, ans, a, b):
    both = sp_digamma(a + b)
    return g * (sp_digamma(a) - both), g * (sp_digamma(b) - both)


@vjp(special.multigammaln, nondiff=("d",))
def multigammaln(g, ans, a, d):
    return multigammaln_grad(g, a, d)


# --- error functions and the normal distribution ---


@vjp(special.erf)
def erf(g, ans, z):
    return g * (2.0 / math.sqrt(math.pi)) * np.exp(-z * z)


@vjp(special.erfc)
def erfc(g, ans, x):
    return -g * (2.0 / math.sqrt(math.pi)) * np.exp(-x * x)


@vjp(special.erfinv)
def erfinv(g, ans, y):
    return g * (math.sqrt(math.pi) / 2.0) * np.exp(ans * ans)


@vjp(special.erfcinv)
def erfcinv(g, ans, y):
    return -g * (math.sqrt(math.pi) / 2.0) * np.exp(ans * ans)


@vjp(special.ndtr)
def ndtr(g, ans, x):
    return g * np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)


@vjp(special.log_ndtr)
def log_ndtr(g, ans, x):
    # the density over the distribution function, in logs: finite far in the left tail
    return g * np.exp(-0.5 * x * x - 0.5 * math.log(2.0 * math.pi) - ans)


@vjp(special.ndtri)
def ndtri(g, ans, y):
    return g * math.sqrt(2.0 * math.pi) * np.exp(0.5 * ans * ans)


# --- logistic ---


@vjp(special.expit)
def expit(g, ans, x):
    return g * ans * (1.0 - ans)


@vjp(special.logit)
def logit(g, ans, x):
    return g / (x * (1.0 - x))


# --- x log y and entropies ---


@vjp(special.xlogy, broadcasts=True)
def xlogy(g, ans, x, y):
    return xlogy_grad(g, x, y, "x"), xlogy_grad(g, x, y, "y")


@vjp(special.xlog1py, broadcasts=True)
def xlog1py(g, ans, x, y):
    return xlogy_grad(g, x, y, "x", 1.0), xlogy_grad(g, x, y, "y", 1.0)


@vjp(special.entr)
def entr(g, ans, x):
    return -g * (np.log(x) + 1.0)


@vjp(special.kl_div, broadcasts=True)
def kl_div(g, ans, x, y):
    # x log(x / y) - x + y
    return g * np.log(x / y), g * (1.0 - x / y)


@vjp(special.rel_entr, broadcasts=True)
def rel_entr(g, ans, x, y):
    # x log(x / y)
    return g * (np.log(x / y) + 1.0), -g * x / y


# --- Bessel functions ---


@vjp(special.i0)
def i0(g, ans, x):
    return bessel_grad(g, "i0", 0, x)


@vjp(special.i1)
def i1(g, ans, x):
    return bessel_grad(g, "i1", 1, x)


@vjp(special.i0e)
def i0e(g, ans, x):
    return bessel_grad(g, "i0e", 0, x)


@vjp(special.i1e)
def i1e(g, ans, x):
    return bessel_grad(g, "i1e", 1, x)


@vjp(special.jv, special.jn, nondiff=("v",), broadcasts=True)
def jv(g, ans, v, z):
    return bessel_grad(g, "jv", v, z)


@vjp(special.yv, nondiff=("v",), broadcasts=True)
def yv(g, ans, v, z):
    return bessel_grad(g, "yv", v, z)


@vjp(special.yn, nondiff=("n",), broadcasts=True)
def yn(g, ans, n, x):
    return bessel_grad(g, "yn", n, x)


@vjp(special.j0)
def j0(g, ans, x):
    return bessel_grad(g, "j0", 0, x)


@vjp(special.j1)
def j1(g, ans, x):
    return bessel_grad(g, "j1", 1, x)


@vjp(special.y0)
def y0(g, ans, x):
    return bessel_grad(g, "y0", 0, x)


@vjp(special.y1)
def y1(g, ans, x):
    return bessel_grad(g, "y1", 1, x)


@vjp(special.iv, nondiff=("v",), broadcasts=True)
def iv(g, ans, v, z):
    return bessel_grad(g, "iv", v, z)


@vjp(special.ive, nondiff=("v",), broadcasts=True)
def ive(g, ans, v, z):
    return bessel_grad(g, "ive", v, z)


@vjp(special.kv, nondiff=("v",), broadcasts=True)
def kv(g, ans, v, z):
    return bessel_grad(g, "kv", v, z)


@vjp(special.kve, nondiff=("v",), broadcasts=True)
def kve(g, ans, v, z):
    return bessel_grad(g, "kve", v, z)


# --- incomplete gamma and beta functions (in x only, as autograd and JAX) ---


@vjp(special.gammainc, nondiff=("a",), broadcasts=True)
def gammainc(g, ans, a, x):
    return incomplete_grad(g, "gammainc", a, None, x)


@vjp(special.gammaincc, nondiff=("a",), broadcasts=True)
def gammaincc(g, ans, a, x):
    return incomplete_grad(g, "gammaincc", a, None, x)


@vjp(special.betainc, nondiff=("a", "b"), broadcasts=True)
def betainc(g, ans, a, b, x):
    return incomplete_grad(g, "betainc", a, b, x)


nondifferentiable(special.gammasgn)


# --- reductions: logsumexp, softmax ---


@vjp_diff(special.logsumexp, diff=("a", "b"))
def logsumexp(g, ans, a, axis=None, b=None, keepdims=False, return_sign=False):
    return (logsumexp_grad(g, ans, a, axis, b, keepdims, return_sign, "a"),
            logsumexp_grad(g, ans, a, axis, b, keepdims, return_sign, "b"))


@vjp(special.softmax)
def softmax(g, ans, x, axis=None):
    return ans * (g - np.sum(g * ans, axis=axis, keepdims=True))


@vjp(special.log_softmax)
def log_softmax(g, ans, x, axis=None):
    return g - np.exp(ans) * np.sum(g, axis=axis, keepdims=True)



# --- forward rules ---

# g times an elementwise partial: the reverse rule read forwards (the fused
# kernels' ufuncs below are elementwise by their declaration)
elementwise(special.digamma, special.psi, special.polygamma, special.rgamma, special.beta,
            special.betaln, special.multigammaln, special.erfcinv, special.jv, special.jn,
            special.yv, special.yn, special.j0, special.j1, special.y0, special.y1,
            special.iv, special.ive, special.kv, special.kve, special.loggamma,
            special.gammainc, special.gammaincc, special.betainc)


@jvp(special.softmax)
def softmax_jvp(t, ans, x, axis=None):
    return ans * (t - np.sum(t * ans, axis=axis, keepdims=True))


@jvp(special.log_softmax)
def log_softmax_jvp(t, ans, x, axis=None):
    return t - np.sum(np.exp(ans) * t, axis=axis, keepdims=True)


@jvp(special.logsumexp)
def logsumexp_jvp(t, ans, a, axis=None, b=None, keepdims=False, return_sign=False):
    return (logsumexp_jvp_helper(t, ans, a, axis, b, keepdims, return_sign, "a"),
            logsumexp_jvp_helper(t, ans, a, axis, b, keepdims, return_sign, "b"))


# --- fused kernels: declared where jax.scipy.special computes the same values ---

for _name in ("gammaln", "gamma", "erf", "erfc", "erfinv", "ndtr", "log_ndtr", "ndtri", "expit",
              "logit", "i0", "i1", "i0e", "i1e", "entr", "xlogy", "xlog1py", "kl_div",
              "rel_entr"):
    declare_elementwise(getattr(special, _name), numpy=f"scipy.special.{_name}",
                        jax=f"jax.scipy.special.{_name}")
