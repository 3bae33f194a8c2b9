"""Rules for quantiles, integration, grids and polynomial series:
``np.quantile``, ``np.percentile``, ``np.median``, ``np.trapezoid``,
``np.meshgrid``, ``np.polyval`` and ``np.polynomial``'s ``polyval``,
``chebval``, ``legval``, ``hermval``, ``hermeval``, ``lagval``; ``np.histogram``
and ``np.histogram_bin_edges``.

A quantile interpolates two sorted elements (NumPy's default
``method='linear'``; ``np.median`` is ``q = 0.5``), so its cotangent goes to
those two, weighted as they are; another ``method`` or ``weights`` is refused
when the gradient runs, and ``q`` carries no gradient (a ``q`` computed from
the inputs is refused).  ``np.trapezoid`` is linear in ``y`` (``x`` and
``dx`` are held fixed).  A series' derivative in ``x`` is its derivative
series, in its coefficients the basis at ``x`` (1-d coefficients).
``np.histogram``: a weight gets its bin's ``g`` (of the normalised heights
with ``density=True``: they move with the total and the widths); the counts
are piecewise constant in ``a``, which moves only the edges, and only where
NumPy spreads them from ``min(a)`` to ``max(a)`` (``bins`` a number, no
``range``; tied extremes share), as JAX differentiates ``jnp.histogram``.

Before, a median and a polynomial; after, the rules inlined:

>>> import numpy as np, pullback as pb
>>> from pullback.testing import adjoint_source, function_from_source
>>> f = function_from_source('''
... def f(x, p):
...     return np.median(np.polyval(p, x))
... ''')
>>> print(adjoint_source(f, np.array([0.0, 1.0, 3.0]), np.array([1.0, 0.0, 2.0])))
def f_adjoint(residuals, out_bar):
    polyval_p_x, x, p = residuals
    polyval_p_x_bar = quantile_grad(out_bar, polyval_p_x, 0.5)
    p_bar = series_grad(polyval_p_x_bar, x, p, 'polyval', 'c')
    x_bar = series_grad(polyval_p_x_bar, x, p, 'polyval', 'x')
    return (project(x_bar, x, copy=True), project(p_bar, p, copy=True))
>>> pb.grad(f)(np.array([0.0, 1.0, 3.0]), np.array([1.0, 0.0, 2.0]))   # 2 x at x = 1
array([0., 2., 0.])
"""
import numpy as np

from pullback.rules.registry import elementwise, facts, jvp, linear, nondifferentiable, vjp
from pullback.runtime import (bin_edges_grad, bin_edges_tangent, delete_grad, ediff1d_grad,
                              histogram_grads, histogram_tangent,
                              meshgrid_grads, prod_grad, quantile_grad, series_grad, trapezoid_grad, unreduce, vander_grad)
from pullback.runtime.forward_support import prod_jvp as prod_jvp_helper
from pullback.runtime.reduction_forward import (ediff1d_jvp as ediff1d_jvp_helper,
                                                quantile_jvp as quantile_jvp_helper,
                                                series_jvp as series_jvp_helper,
                                                vander_jvp as vander_jvp_helper)

# --- quantiles ---


@vjp(np.quantile, nondiff=("q",))
def quantile(g, ans, a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, *, weights=None, interpolation=None):
    return quantile_grad(g, a, q, axis, keepdims, method, weights)


@vjp(np.percentile, nondiff=("q",))
def percentile(g, ans, a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, weights=None, interpolation=None):
    return quantile_grad(g, a, np.true_divide(q, 100), axis, keepdims, method, weights)


@vjp(np.median)
def median(g, ans, a, axis=None, out=None, overwrite_input=False, keepdims=False):
    return quantile_grad(g, a, 0.5, axis, keepdims)


# --- integration and grids ---


@vjp(np.trapezoid)
def trapezoid(g, ans, y, x=None, dx=1.0, axis=-1):
    return trapezoid_grad(g, y, x, dx, axis)


@vjp(np.meshgrid)
def meshgrid(g, ans, *xi, copy=True, sparse=False, indexing="xy"):
    return meshgrid_grads(g, xi, indexing)


# --- polynomial series: derivative in x, the basis at x for the coefficients ---


@vjp(np.polyval)
def polyval(g, ans, p, x):
    return series_grad(g, x, p, "polyval", "c"), series_grad(g, x, p, "polyval", "x")


@vjp(np.polynomial.polynomial.polyval)
def polynomial_polyval(g, ans, x, c, tensor=True):
    return series_grad(g, x, c, "polynomial", "x"), series_grad(g, x, c, "polynomial", "c")


@vjp(np.polynomial.chebyshev.chebval)
def chebval(g, ans, x, c, tensor=True):
    return series_grad(g, x, c, "chebyshev", "x"), series_grad(g, x, c, "chebyshev", "c")


@vjp(np.polynomial.legendre.legval)
def legval(g, ans, x, c, tensor=True):
    return series_grad(g, x, c, "legendre", "x"), series_grad(g, x, c, "legendre", "c")


@vjp(np.polynomial.hermite.hermval)
def hermval(g, ans, x, c, tensor=True):
    return series_grad(g, x, c, "hermite", "x"), series_grad(g, x, c, "hermite", "c")


@vjp(np.polynomial.hermite_e.hermeval)
def hermeval(g, ans, x, c, tensor=True):
    return series_grad(g, x, c, "hermite_e", "x"), series_grad(g, x, c, "hermite_e", "c")


@vjp(np.polynomial.laguerre.lagval)
def lagval(g, ans, x, c, tensor=True):
    return series_grad(g, x, c, "laguerre", "x"), series_grad(g, x, c, "laguerre", "c")


# --- NaN-ignoring statistics (NaNs get no gradient), differences, Vandermonde ---


@vjp(np.nanvar)
def nanvar(g, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    kept = np.logical_not(np.isnan(a))
    centered = np.where(kept, a - np.nanmean(a, axis=axis, keepdims=True), 0)
    count = np.sum(kept, axis=axis, keepdims=True, dtype=np.result_type(ans))
    return (unreduce(g, a, axis, keepdims) * (2.0 / (count - ddof))
            * (np.conj(centered) if np.iscomplexobj(centered) else centered))


@vjp(np.nanstd)
def nanstd(g, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    kept = np.logical_not(np.isnan(a))
    centered = np.where(kept, a - np.nanmean(a, axis=axis, keepdims=True), 0)
    count = np.sum(kept, axis=axis, keepdims=True, dtype=np.result_type(ans))
    return (unreduce(g / ans, a, axis, keepdims) * (1.0 / (count - ddof))
            * (np.conj(centered) if np.iscomplexobj(centered) else centered))


@vjp(np.nanprod)
def nanprod(g, ans, a, axis=None, dtype=None, out=None, keepdims=False):
    # NaNs count as ones
    return np.where(np.isnan(a), 0, prod_grad(g, ans, np.where(np.isnan(a), 1, a), axis,
                                              keepdims))


@vjp(np.nancumsum)
def nancumsum(g, ans, a, axis=None, dtype=None, out=None):
    along = -1 if axis is None else axis
    return np.where(np.isnan(a), 0, np.reshape(np.flip(np.cumsum(np.flip(g, along), along),
                                                       along), np.shape(a)))


@vjp(np.copysign, broadcasts=True)
def copysign(g, ans, x1, x2):
    # |x1| with x2's sign: x2's own value moves nothing (zero almost everywhere)
    slope = g * np.sign(x1)
    return np.where(np.signbit(x2), -slope, slope), 0 * g


@vjp(np.ediff1d)
def ediff1d(g, ans, ary, to_end=None, to_begin=None):
    return ediff1d_grad(g, ary, to_end, to_begin)


@vjp(np.vander)
def vander(g, ans, x, N=None, increasing=False):
    return vander_grad(g, x, N, increasing)


@vjp(np.histogram, optional=("weights",))
def histogram(g, ans, a, bins=10, range=None, density=None, weights=None):
    # the counts are piecewise constant in a: a moves only the edges, and only
    # where they span min(a)..max(a) (bins a number, no range)
    grads = histogram_grads(g, ans, a, bins, range, density, weights)
    return grads[0], grads[1]


@vjp(np.histogram_bin_edges)
def histogram_bin_edges(g, ans, a, bins=10, range=None, weights=None):
    return bin_edges_grad(g, ans, a, bins, range)


@vjp(np.delete, nondiff=("obj",))
def delete(g, ans, arr, obj, axis=None):
    return delete_grad(g, arr, obj, axis)


# --- forward rules ---

linear(np.trapezoid, np.meshgrid, np.delete)
elementwise(np.copysign)


@jvp(np.nanvar)
def nanvar_jvp(t, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    kept = np.logical_not(np.isnan(a))
    centered = np.where(kept, a - np.nanmean(a, axis=axis, keepdims=True), 0)
    return (np.sum(np.where(kept, np.real(np.conj(centered) * t), 0), axis=axis,
                   keepdims=keepdims)
            * (2.0 / (np.sum(kept, axis=axis, keepdims=keepdims, dtype=np.result_type(ans))
                      - ddof)))


@jvp(np.nanstd)
def nanstd_jvp(t, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    kept = np.logical_not(np.isnan(a))
    centered = np.where(kept, a - np.nanmean(a, axis=axis, keepdims=True), 0)
    return (np.sum(np.where(kept, np.real(np.conj(centered) * t), 0), axis=axis,
                   keepdims=keepdims)
            / (ans * (np.sum(kept, axis=axis, keepdims=keepdims, dtype=np.result_type(ans))
                      - ddof)))


@jvp(np.nanprod)
def nanprod_jvp(t, ans, a, axis=None, dtype=None, out=None, keepdims=False):
    return prod_jvp_helper(np.where(np.isnan(a), 0, t), ans, np.where(np.isnan(a), 1, a),
                           axis, keepdims)


@jvp(np.nancumsum)
def nancumsum_jvp(t, ans, a, axis=None, dtype=None, out=None):
    return np.cumsum(np.where(np.isnan(a), 0, t), axis=axis)


@jvp(np.ediff1d)
def ediff1d_jvp(t, ans, ary, to_end=None, to_begin=None):
    return ediff1d_jvp_helper(t, ary, to_end, to_begin)


@jvp(np.histogram)
def histogram_jvp(t, ans, a, bins=10, range=None, density=None, weights=None):
    return (histogram_tangent(ans, a, bins, range, density, weights, t, None),
            histogram_tangent(ans, a, bins, range, density, weights, None, t))


@jvp(np.histogram_bin_edges)
def histogram_bin_edges_jvp(t, ans, a, bins=10, range=None, weights=None):
    return bin_edges_tangent(t, ans, a, bins, range)


@jvp(np.vander)
def vander_jvp(t, ans, x, N=None, increasing=False):
    return vander_jvp_helper(t, x, N, increasing)


@jvp(np.quantile)
def quantile_jvp(t, ans, a, q, axis=None, out=None, overwrite_input=False, method="linear",
                 keepdims=False, *, weights=None, interpolation=None):
    return quantile_jvp_helper(t, ans, a, q, axis, keepdims, method, weights)


@jvp(np.percentile)
def percentile_jvp(t, ans, a, q, axis=None, out=None, overwrite_input=False, method="linear",
                   keepdims=False, *, weights=None, interpolation=None):
    return quantile_jvp_helper(t, ans, a, np.true_divide(q, 100), axis, keepdims, method,
                               weights)


@jvp(np.median)
def median_jvp(t, ans, a, axis=None, out=None, overwrite_input=False, keepdims=False):
    return quantile_jvp_helper(t, ans, a, 0.5, axis, keepdims)


@jvp(np.polyval)
def polyval_jvp(t, ans, p, x):
    return series_jvp_helper(t, x, p, "polyval", "c"), series_jvp_helper(t, x, p, "polyval", "x")


@jvp(np.polynomial.polynomial.polyval)
def polynomial_polyval_jvp(t, ans, x, c, tensor=True):
    return (series_jvp_helper(t, x, c, "polynomial", "x"),
            series_jvp_helper(t, x, c, "polynomial", "c"))


@jvp(np.polynomial.chebyshev.chebval)
def chebval_jvp(t, ans, x, c, tensor=True):
    return series_jvp_helper(t, x, c, "chebyshev", "x"), series_jvp_helper(t, x, c, "chebyshev", "c")


@jvp(np.polynomial.legendre.legval)
def legval_jvp(t, ans, x, c, tensor=True):
    return series_jvp_helper(t, x, c, "legendre", "x"), series_jvp_helper(t, x, c, "legendre", "c")


@jvp(np.polynomial.hermite.hermval)
def hermval_jvp(t, ans, x, c, tensor=True):
    return series_jvp_helper(t, x, c, "hermite", "x"), series_jvp_helper(t, x, c, "hermite", "c")


@jvp(np.polynomial.hermite_e.hermeval)
def hermeval_jvp(t, ans, x, c, tensor=True):
    return series_jvp_helper(t, x, c, "hermite_e", "x"), series_jvp_helper(t, x, c, "hermite_e", "c")


@jvp(np.polynomial.laguerre.lagval)
def lagval_jvp(t, ans, x, c, tensor=True):
    return series_jvp_helper(t, x, c, "laguerre", "x"), series_jvp_helper(t, x, c, "laguerre", "c")


# an integer: no gradient
nondifferentiable(np.linalg.matrix_rank)

# -- facts (rules/registry.py: facts) ------------------------------------------------
facts(np.histogram, np.histogram_bin_edges, fresh=True)
