"""Rules for ``np.linalg``: solves, inverses, determinants, decompositions, norms.

Every rule accepts stacks of matrices (``(..., m, n)``) where NumPy does, and
follows JAX's complex convention (the derivative's adjoint under
``Re sum(a * b)``, no conjugation); the formulas live in
``runtime.linalg_support``.  Decompositions return tuples (NumPy's named
results), so their ``g`` is a tuple with one cotangent per part (zeros for an
unused part).

Conventions where the derivative is not unique, or not defined:

- ``eigh``/``eigvalsh``/``cholesky`` read one triangle of ``a`` (``UPLO``,
  ``upper``) and the real part of its diagonal, as NumPy does: the cotangent
  is the derivative of exactly that, so it lies in that triangle.  For an
  input that is symmetric by construction it equals JAX's (which
  symmetrizes).
- ``eigh`` with repeated eigenvalues: the eigenvalue part is exact; the
  eigenvector part divides by the gaps ``w_j - w_i`` (as JAX: infinite at an
  exact tie) and is skipped when the eigenvectors' cotangent is zero.
- ``svd``, ``eig``: vectors are defined up to sign (phase for complex, checked
  at run time: a phase-dependent loss is refused); the
  cotangent is that of JAX's derivative, which is exact for any function
  that does not depend on that choice.  ``full_matrices=True`` is
  differentiated for square matrices, and for others as long as the
  cotangent does not reach the extra, non-unique singular vectors.
- ``qr``: ``m >= n`` (as JAX); ``R``'s diagonal stays real.
- ``norm``: ties (``inf`` norms, the extreme singular value of ``ord=2``/
  ``-2``, the largest column or row sum) share ``g`` equally, as in JAX; the
  cotangent at ``x == 0`` is 0 (JAX gives NaN), like ``abs`` at 0.
- ``det`` of a singular matrix: the adjugate (through the SVD) instead of
  ``det * inv``; ``pinv`` and ``lstsq``: at constant rank.

Before, a decomposition-based function; after, its rule in the adjoint (the
gradient of ``det a`` is ``det(a) inv(a)^T``):

>>> import numpy as np, pullback as pb
>>> from pullback.testing import adjoint_source, function_from_source
>>> f = function_from_source('''
... def f(a):
...     return np.linalg.det(a)
... ''')
>>> print(adjoint_source(f, np.array([[2.0, 1.0], [1.0, 3.0]])))
def f_adjoint(residuals, out_bar):
    out, a = residuals
    a_bar = det_grad(out_bar, out, a)
    return (project(a_bar, a, copy=True),)
>>> a = np.array([[2.0, 1.0], [1.0, 3.0]])
>>> np.allclose(pb.grad(f)(a), np.linalg.det(a) * np.linalg.inv(a).T)
True
"""
import numpy as np

from pullback.rules.registry import facts, vjp, jvp
from pullback.runtime.forward_support import (cholesky_jvp as cholesky_jvp_helper,
                                      det_jvp as det_jvp_helper,
                                      norm_jvp as norm_jvp_helper,
                                      slogdet_jvp as slogdet_jvp_helper, solve_a_jvp)
from pullback.runtime.linalg_forward import (eigh_jvp as eigh_jvp_helper, eigvalsh_jvp as
                                             eigvalsh_jvp_helper, lstsq_jvp as lstsq_jvp_helper,
                                             matrix_power_jvp as matrix_power_jvp_helper,
                                             multi_dot_jvp as multi_dot_jvp_helper,
                                             pinv_jvp as pinv_jvp_helper, qr_jvp as qr_jvp_helper,
                                             svd_jvp as svd_jvp_helper)
from pullback.runtime import (cholesky_grad, det_grad, eigh_grad, lstsq_grad,
                              matrix_power_grad, multi_dot_grad, norm_grad, pinv_grad,
                              qr_grad, slogdet_grad, solve_lhs_grad, solve_rhs_grad, svd_grad,
                              unbroadcast)

# --- solves, inverses, determinants (holomorphic: plain transposes) ---


@vjp(np.linalg.solve)
def solve(g, ans, a, b):
    # x = inv(a) b: b's cotangent is solve(a^T, g), a's is -(that) x^T
    gb = solve_rhs_grad(g, a, b)
    return solve_lhs_grad(gb, ans, a, b), unbroadcast(gb, b)


@vjp(np.linalg.inv)
def inv(g, ans, a):
    # d inv(a) = -inv(a) da inv(a)
    return -np.matmul(np.matmul(np.swapaxes(ans, -1, -2), g), np.swapaxes(ans, -1, -2))


@vjp(np.linalg.det)
def det(g, ans, a):
    # d det(a) = det(a) tr(inv(a) da)
    return det_grad(g, ans, a)


@vjp(np.linalg.slogdet)
def slogdet(g, ans, a):
    # d logabsdet = Re tr(inv(a) da); a complex sign moves with Im tr(inv(a) da)
    return slogdet_grad(g, ans, a)


@vjp(np.linalg.matrix_power, nondiff=("n",))
def matrix_power(g, ans, a, n):
    return matrix_power_grad(g, a, n)


@vjp(np.linalg.multi_dot)
def multi_dot(g, ans, arrays, out=None):
    return multi_dot_grad(g, arrays)


# --- decompositions ---


@vjp(np.linalg.cholesky)
def cholesky(g, ans, a, upper=False):
    return cholesky_grad(g, ans, a, upper)


@vjp(np.linalg.eigh)
def eigh(g, ans, a, UPLO="L"):
    return eigh_grad(g, ans, a, UPLO == "L")


@vjp(np.linalg.eigvalsh)
def eigvalsh(g, ans, a, UPLO="L"):
    # the eigenvectors are recomputed: the result holds only the eigenvalues
    return eigh_grad(g, ans, a, UPLO == "L", vectors=False)


@vjp(np.linalg.svd)
def svd(g, ans, a, full_matrices=True, compute_uv=True, hermitian=False):
    # hermitian=True (an eigendecomposition, signs folded into U) is refused by the helper
    return svd_grad(g, ans, a, full_matrices, compute_uv, hermitian)


@vjp(np.linalg.qr)
def qr(g, ans, a, mode="reduced"):
    return qr_grad(g, ans, a, mode)


# --- pseudo-inverse, least squares, norms ---


@vjp(np.linalg.pinv)
def pinv(g, ans, a, rcond=None, hermitian=False, rtol=None):
    return pinv_grad(g, ans, a, hermitian)


@vjp(np.linalg.lstsq)
def lstsq(g, ans, a, b, rcond=None):
    # the rank (ans[2]) is an integer: no cotangent
    return lstsq_grad(g, ans, a, b, "a"), lstsq_grad(g, ans, a, b, "b")


@vjp(np.linalg.norm)
def norm(g, ans, x, ord=None, axis=None, keepdims=False):
    return norm_grad(g, ans, x, ord, axis, keepdims)

# --- forward rules ---


@jvp(np.linalg.solve)
def solve_jvp(t, ans, a, b):
    # d x = solve(a, db - da x)
    return solve_a_jvp(t, ans, a, b), np.linalg.solve(a, t)


@jvp(np.linalg.inv)
def inv_jvp(t, ans, a):
    return -np.matmul(np.matmul(ans, t), ans)


@jvp(np.linalg.det)
def det_jvp(t, ans, a):
    return det_jvp_helper(t, ans, a)


@jvp(np.linalg.slogdet)
def slogdet_jvp(t, ans, a):
    return slogdet_jvp_helper(t, ans, a)


@jvp(np.linalg.cholesky)
def cholesky_jvp(t, ans, a, upper=False):
    return cholesky_jvp_helper(t, ans, a, upper)


@jvp(np.linalg.norm)
def norm_jvp(t, ans, x, ord=None, axis=None, keepdims=False):
    return norm_jvp_helper(t, ans, x, ord, axis, keepdims)


@jvp(np.linalg.matrix_power)
def matrix_power_jvp(t, ans, a, n):
    return matrix_power_jvp_helper(t, ans, a, n)


@jvp(np.linalg.multi_dot)
def multi_dot_jvp(t, ans, arrays, out=None):
    # t: the tangents of the factors (zeros where a factor has none)
    return multi_dot_jvp_helper(t, ans, arrays)


@jvp(np.linalg.eigh)
def eigh_jvp(t, ans, a, UPLO="L"):
    return eigh_jvp_helper(t, ans, a, UPLO)


@jvp(np.linalg.eigvalsh)
def eigvalsh_jvp(t, ans, a, UPLO="L"):
    return eigvalsh_jvp_helper(t, ans, a, UPLO)


@jvp(np.linalg.svd)
def svd_jvp(t, ans, a, full_matrices=True, compute_uv=True, hermitian=False):
    return svd_jvp_helper(t, ans, a, full_matrices, compute_uv, hermitian)


@jvp(np.linalg.qr)
def qr_jvp(t, ans, a, mode="reduced"):
    return qr_jvp_helper(t, ans, a, mode)


@jvp(np.linalg.pinv)
def pinv_jvp(t, ans, a, rcond=None, hermitian=False, rtol=None):
    return pinv_jvp_helper(t, ans, a, rcond, hermitian)


@jvp(np.linalg.lstsq)
def lstsq_jvp(t, ans, a, b, rcond=None):
    return lstsq_jvp_helper(t, ans, a, b, "a"), lstsq_jvp_helper(t, ans, a, b, "b")


# -- facts (rules/registry.py: facts) ----------------------------------------------
facts(np.matmul, fresh=True, owned=True)
