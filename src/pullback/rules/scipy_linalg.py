"""Rules for ``scipy.linalg`` (registered only when SciPy imports).

``solve_triangular``, ``cho_factor``/``cho_solve``, ``cholesky``, ``sqrtm``,
``expm``, ``solve_sylvester``, ``lu_factor``/``lu_solve``, ``qr``, and the twins of
``np.linalg``'s ``inv``, ``det``, ``solve``, each with a forward rule.
Formulas live in ``runtime.scipy_solvers`` (and ``linalg_support`` for the
twins).  Before/after::

    x = solve_triangular(a, b, lower=True)
                               b_bar = solve_triangular(a, x_bar, trans=1, lower=True)
                               a_bar = tril(-b_bar @ x.T)

Conventions (the project's ``np.linalg`` ones, JAX's where they agree):

- A function that reads one triangle of ``a`` gives a cotangent in that
  triangle: ``solve_triangular`` (strictly below or above the diagonal with
  ``unit_diagonal=True``), ``cholesky`` (the upper one by default, as SciPy),
  ``cho_factor``, ``solve(assume_a='sym'/'pos')``.  ``cho_factor``'s ``c``
  holds a copy of ``a``'s other triangle: that part's cotangent passes
  through unchanged.  For a matrix symmetric by construction this equals
  JAX's (which symmetrizes).
- ``cho_solve`` is differentiated for real matrices; the cotangent of
  ``(c, lower)`` is ``(c_bar, None)`` on the factor's triangle.
- ``sqrtm``: the principal root, through the Sylvester equation
  ``X^T G + G X^T = X_bar``; ``expm``: the Frechet derivative at ``A^T``.
- ``lu_factor``/``lu_solve`` and ``qr``: ``runtime.scipy_factor``'s docstring
  (``piv`` is integer: no cotangent; ``qr``'s pivoting and ``'raw'`` refused).
- ``inv(assume_a=...)`` and ``solve(assume_a='her')`` and the banded or
  diagonal kinds are refused.
"""
import scipy.linalg as linalg

import pullback.runtime as runtime

from pullback.rules.registry import facts, jvp, vjp
from pullback.runtime.forward_support import det_jvp as det_jvp_helper
from pullback.runtime import cholesky_grad, det_grad
from pullback.runtime.scipy_linalg_grads import (cho_factor_grad, cho_solve_grad, expm_grad,
                                                 scipy_inv_grad, scipy_solve_grad,
                                                 solve_triangular_grad, sqrtm_grad,
                                                 sylvester_grad)
from pullback.runtime.scipy_factor import (lu_factor_grad, lu_factor_jvp as lu_factor_jvp_helper,
                                           lu_solve_grad, lu_solve_jvp as lu_solve_jvp_helper,
                                           sp_qr_grad, sp_qr_jvp)
from pullback.runtime.scipy_linalg_forward import (
    cho_factor_jvp as cho_factor_jvp_helper, cho_solve_jvp as cho_solve_jvp_helper,
    expm_jvp as expm_jvp_helper, scipy_inv_jvp, scipy_solve_jvp, solve_triangular_jvp as
    solve_triangular_jvp_helper, sp_cholesky_jvp, sqrtm_jvp as sqrtm_jvp_helper, sylvester_jvp)

from pullback.runtime import scipy_factor, scipy_linalg_grads

# the helpers of SciPy's rules join pullback.runtime when they load (import pullback
# does not import SciPy; these modules import it at module level, so that forward
# mode differentiates them from their source under pb.hessian)
for _module in (scipy_factor, scipy_linalg_grads):
    runtime.__all__ += [n for n in _module.__all__ if n not in runtime.__all__]
    vars(runtime).update({n: getattr(_module, n) for n in _module.__all__})


@vjp(linalg.solve_triangular)
def solve_triangular(g, ans, a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
                     check_finite=True):
    return (solve_triangular_grad(g, ans, a, b, trans, lower, unit_diagonal, "a"),
            solve_triangular_grad(g, ans, a, b, trans, lower, unit_diagonal, "b"))


@vjp(linalg.cholesky)
def cholesky(g, ans, a, lower=False, overwrite_a=False, check_finite=True):
    return cholesky_grad(g, ans, a, not lower)


@vjp(linalg.cho_factor)
def cho_factor(g, ans, a, lower=False, overwrite_a=False, check_finite=True):
    return cho_factor_grad(g, ans, a, lower)


@vjp(linalg.cho_solve)
def cho_solve(g, ans, c_and_lower, b, overwrite_b=False, check_finite=True):
    return (cho_solve_grad(g, ans, c_and_lower, b, "c"),
            cho_solve_grad(g, ans, c_and_lower, b, "b"))


@vjp(linalg.sqrtm)
def sqrtm(g, ans, A, disp=None, blocksize=None):
    return sqrtm_grad(g, ans)


@vjp(linalg.solve_sylvester)
def solve_sylvester(g, ans, a, b, q):
    return (sylvester_grad(g, ans, a, b, "a"), sylvester_grad(g, ans, a, b, "b"),
            sylvester_grad(g, ans, a, b, "q"))


@vjp(linalg.expm)
def expm(g, ans, A):
    return expm_grad(g, A)


@vjp(linalg.inv)
def inv(g, ans, a, overwrite_a=False, check_finite=True, assume_a=None, lower=False):
    return scipy_inv_grad(g, ans, assume_a)


@vjp(linalg.det)
def det(g, ans, a, overwrite_a=False, check_finite=True):
    return det_grad(g, ans, a)


@vjp(linalg.solve)
def solve(g, ans, a, b, lower=False, overwrite_a=False, overwrite_b=False, check_finite=True,
          assume_a=None, transposed=False):
    return (scipy_solve_grad(g, ans, a, b, assume_a, lower, transposed, "a"),
            scipy_solve_grad(g, ans, a, b, assume_a, lower, transposed, "b"))


@vjp(linalg.lu_factor)
def lu_factor(g, ans, a, overwrite_a=False, check_finite=True):
    return lu_factor_grad(g, ans, a)


@vjp(linalg.lu_solve)
def lu_solve(g, ans, lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
    return (lu_solve_grad(g, ans, lu_and_piv, b, trans, "lu_and_piv"),
            lu_solve_grad(g, ans, lu_and_piv, b, trans, "b"))


@vjp(linalg.qr)
def qr(g, ans, a, overwrite_a=False, lwork=None, mode="full", pivoting=False,
       check_finite=True):
    return sp_qr_grad(g, ans, a, mode, pivoting)


# --- forward rules (runtime.scipy_linalg_forward, scipy_factor) ---


@jvp(linalg.det)
def det_jvp(t, ans, a, overwrite_a=False, check_finite=True):
    return det_jvp_helper(t, ans, a)


@jvp(linalg.solve_triangular)
def solve_triangular_jvp(t, ans, a, b, trans=0, lower=False, unit_diagonal=False,
                         overwrite_b=False, check_finite=True):
    return (solve_triangular_jvp_helper(t, ans, a, b, trans, lower, unit_diagonal, "a"),
            solve_triangular_jvp_helper(t, ans, a, b, trans, lower, unit_diagonal, "b"))


@jvp(linalg.cholesky)
def cholesky_jvp(t, ans, a, lower=False, overwrite_a=False, check_finite=True):
    return sp_cholesky_jvp(t, ans, a, lower)


@jvp(linalg.cho_factor)
def cho_factor_jvp(t, ans, a, lower=False, overwrite_a=False, check_finite=True):
    return cho_factor_jvp_helper(t, ans, a, lower)


@jvp(linalg.cho_solve)
def cho_solve_jvp(t, ans, c_and_lower, b, overwrite_b=False, check_finite=True):
    return (cho_solve_jvp_helper(t, ans, c_and_lower, b, "c"),
            cho_solve_jvp_helper(t, ans, c_and_lower, b, "b"))


@jvp(linalg.sqrtm)
def sqrtm_jvp(t, ans, A, disp=None, blocksize=None):
    return sqrtm_jvp_helper(t, ans)


@jvp(linalg.solve_sylvester)
def solve_sylvester_jvp(t, ans, a, b, q):
    return (sylvester_jvp(t, ans, a, b, "a"), sylvester_jvp(t, ans, a, b, "b"),
            sylvester_jvp(t, ans, a, b, "q"))


@jvp(linalg.expm)
def expm_jvp(t, ans, A):
    return expm_jvp_helper(t, ans, A)


@jvp(linalg.inv)
def inv_jvp(t, ans, a, overwrite_a=False, check_finite=True, assume_a=None, lower=False):
    return scipy_inv_jvp(t, ans, assume_a)


@jvp(linalg.solve)
def solve_jvp(t, ans, a, b, lower=False, overwrite_a=False, overwrite_b=False,
              check_finite=True, assume_a=None, transposed=False):
    return (scipy_solve_jvp(t, ans, a, b, assume_a, lower, transposed, "a"),
            scipy_solve_jvp(t, ans, a, b, assume_a, lower, transposed, "b"))


@jvp(linalg.lu_factor)
def lu_factor_jvp(t, ans, a, overwrite_a=False, check_finite=True):
    return lu_factor_jvp_helper(t, ans, a)


@jvp(linalg.lu_solve)
def lu_solve_jvp(t, ans, lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
    return (lu_solve_jvp_helper(t, ans, lu_and_piv, b, trans, "lu_and_piv"),
            lu_solve_jvp_helper(t, ans, lu_and_piv, b, trans, "b"))


@jvp(linalg.qr)
def qr_jvp(t, ans, a, overwrite_a=False, lwork=None, mode="full", pivoting=False,
           check_finite=True):
    return sp_qr_jvp(t, ans, a, mode, pivoting)


# -- facts (rules/registry.py: facts): a real matrix may have a complex root -------
facts(linalg.sqrtm, complex_output="maybe")
