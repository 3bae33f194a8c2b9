"""Rules for finite differences, interpolation, convolutions, NaN-skipping
extrema, ``broadcast_arrays`` and the eigendecomposition of a general matrix.

The helpers are in ``runtime.fft_support``.  Conventions where the
derivative is not unique, or not defined (JAX's wherever it has one):

- ``np.gradient``: linear in ``f``; the spacings (``varargs``: scalars or
  coordinate arrays) are constants.  Several axes give a tuple, so ``g`` is
  one cotangent per axis.
- ``np.interp``: ``xp`` is a constant.  At a knot ``x == xp[j]`` the slope
  is that of the interval on the right (the last interval at ``xp[-1]``),
  as JAX's ``searchsorted(..., side='right')`` picks it; left of ``xp[0]``
  and right of ``xp[-1]`` the slope is 0 and ``g`` goes to ``fp[0]``/
  ``fp[-1]`` (to nothing where ``left``/``right`` are given).
- ``np.nanmax``/``np.nanmin``: NaNs get 0; tied extrema share ``g`` equally
  (as ``max``/``min``); an all-NaN slice gives 0 everywhere.
- ``np.convolve``/``np.correlate``: ``correlate`` conjugates ``v``, so its
  cotangent for a complex ``v`` is conjugated (``convolve`` is holomorphic).
- ``np.linalg.eig``/``eigvals``: the eigenvalues' cotangent is exact
  (``V^-T diag(g) V^T``; infinite gaps make no difference).  Eigenvectors
  are unit vectors whose phase (sign for real ones) NumPy chooses; the
  cotangent is that of JAX's derivative (unit norm kept, phase not), exact
  for functions that do not depend on the phase (``abs(v)``, ``v v^H``, or
  real eigenvectors of a real matrix), and it divides by the gaps
  ``w_j - w_i`` (infinite at a repeated eigenvalue, as in JAX).

Before, a convolution; after, its rule in the adjoint (one cotangent per
operand):

>>> import numpy as np, pullback as pb
>>> from pullback.testing import adjoint_source, function_from_source
>>> f = function_from_source('''
... def f(x):
...     return np.sum(np.convolve(x, x))
... ''')
>>> print(adjoint_source(f, np.array([1.0, 2.0])))
def f_adjoint(residuals, out_bar):
    convolve_x_x, x = residuals
    convolve_x_x_bar = unreduce(out_bar, convolve_x_x)
    convolve_grads = convolve_grads_1(convolve_x_x_bar, x, x)
    x_bar = convolve_grads[0]
    x_bar = x_bar + convolve_grads[1]
    return (project(x_bar, x),)
>>> pb.grad(f)(np.array([1.0, 2.0]))          # d/dx (sum x)^2 = 2 sum x
array([6., 6.])
"""
import numpy as np

from pullback.rules.registry import facts, jvp, vjp, linear, multilinear
from pullback.runtime.linalg_forward import (eig_jvp as eig_jvp_helper,
                                             eigvals_jvp as eigvals_jvp_helper)
from pullback.runtime.reduction_forward import (interp_fp_jvp, interp_x_jvp,
                                                nanmax_jvp as nanmax_jvp_helper)
from pullback.runtime import (broadcast_arrays_grads, convolve_grads, correlate_grads,
                              eig_grad, gradient_grad, interp_grads, unreduce)

# --- finite differences, interpolation, convolutions ---


@vjp(np.gradient, nondiff=("varargs",))
def gradient(g, ans, f, *varargs, axis=None, edge_order=1):
    return gradient_grad(g, f, varargs, axis, edge_order)


@vjp(np.interp, nondiff=("xp",))
def interp(g, ans, x, xp, fp, left=None, right=None, period=None):
    grads = interp_grads(g, x, xp, fp, left, right, period)
    return grads[0], grads[1]


@vjp(np.convolve)
def convolve(g, ans, a, v, mode="full"):
    grads = convolve_grads(g, a, v, mode)
    return grads[0], grads[1]


@vjp(np.correlate)
def correlate(g, ans, a, v, mode="valid"):
    grads = correlate_grads(g, a, v, mode)
    return grads[0], grads[1]


# --- extrema that skip NaN, broadcasting ---


@vjp(np.nanmax, np.nanmin)
def nanmax(g, ans, a, axis=None, out=None, keepdims=False):
    # NaN never equals the result, so it gets nothing; an all-NaN slice has no winner
    winners = a == unreduce(ans, a, axis, keepdims)
    return (unreduce(g, a, axis, keepdims) * winners
            / np.maximum(np.sum(winners, axis=axis, keepdims=True, dtype=np.result_type(ans)), 1))


@vjp(np.broadcast_arrays)
def broadcast_arrays(g, ans, *args, subok=False):
    return broadcast_arrays_grads(g, args)


# --- eigendecomposition of a general matrix ---


@vjp(np.linalg.eig)
def eig(g, ans, a):
    return eig_grad(g, ans, a)


@vjp(np.linalg.eigvals)
def eigvals(g, ans, a):
    # the eigenvectors are recomputed: the result holds only the eigenvalues
    return eig_grad(g, ans, a, vectors=False)

# --- forward rules ---

linear(np.gradient, np.broadcast_arrays)
multilinear(np.convolve, np.correlate)


@jvp(np.interp)
def interp_jvp(t, ans, x, xp, fp, left=None, right=None, period=None):
    return (interp_x_jvp(t, ans, x, xp, fp, left, right, period),
            interp_fp_jvp(t, ans, x, xp, fp, left, right, period))


@jvp(np.nanmax, np.nanmin)
def nanmax_jvp(t, ans, a, axis=None, out=None, keepdims=False):
    return nanmax_jvp_helper(t, ans, a, axis, out, keepdims)


@jvp(np.linalg.eig)
def eig_jvp(t, ans, a):
    return eig_jvp_helper(t, ans, a)


@jvp(np.linalg.eigvals)
def eigvals_jvp(t, ans, a):
    return eigvals_jvp_helper(t, ans, a)


# -- facts (rules/registry.py: facts): complex eigenvalues of real matrices --------
facts(np.linalg.eig, np.linalg.eigvals, complex_output="maybe")
