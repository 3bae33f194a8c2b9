"""Rules for contractions and matrix parts: einsum, tensordot, kron, cross,
NumPy 2's gufuncs vecdot, matvec and vecmat, trace, diag, diagonal, tril, triu.

Contractions are multilinear, so each operand's cotangent is ``g``
contracted with the others, unconjugated (JAX's convention); ``tensordot``
is differentiated as the ``einsum`` it spells.  ``vecdot`` (``sum(conj(x1) *
x2)``) and ``vecmat`` conjugate ``x1``, so its cotangent is conjugated (JAX's
``vjp`` of ``conj``); their ``axes=`` is refused (move the axes last).  Taking a part of a matrix
(a diagonal, a triangle) puts ``g`` back on that part, zeros elsewhere.
The helpers are in ``runtime.layout_support``.

Before, a contraction; after, its rule in the adjoint:

>>> import numpy as np, pullback as pb
>>> from pullback.testing import adjoint_source, function_from_source
>>> f = function_from_source('''
... def f(a, b):
...     return np.sum(np.einsum('ij,jk->ik', a, b))
... ''')
>>> print(adjoint_source(f, np.ones((2, 3)), np.ones((3, 2))))
def f_adjoint(residuals, out_bar):
    einsum_a, a, b = residuals
    einsum_a_bar = unreduce(out_bar, einsum_a)
    a_bar = einsum_grads(einsum_a_bar, ('ij,jk->ik', a, b))[1]
    b_bar = einsum_grads(einsum_a_bar, ('ij,jk->ik', a, b))[2]
    return (project(a_bar, a, copy=True), project(b_bar, b, copy=True))
>>> a, b = np.ones((2, 3)), np.ones((3, 2))
>>> [g.tolist() for g in pb.grad(f, argnums=(0, 1))(a, b)]
[[[2.0, 2.0, 2.0], [2.0, 2.0, 2.0]], [[2.0, 2.0], [2.0, 2.0], [2.0, 2.0]]]
"""
import numpy as np

from pullback.rules.registry import facts, jvp, vjp, linear, multilinear
from pullback.rules.runtime_helpers import _register_linear
from pullback.runtime.reduction_forward import einsum_grads_tangent
from pullback.runtime import (cross_grads, diag_grad, diagonal_grad, einsum_grads,
                              kron_grads, matvec_lhs_grad, matvec_rhs_grad,
                              tensordot_subscripts, trace_grad, vecdot_lhs_grad,
                              vecdot_rhs_grad, vecmat_lhs_grad, vecmat_rhs_grad)


@vjp(np.einsum)
def einsum(g, ans, *operands, optimize=False, dtype=None, order="K", casting="safe"):
    # (subscripts, *operands) or interleaved (op, sublist, ..., [out]); any
    # subscripts: implicit output, '...', repeated labels ('ii->i', 'ii')
    return einsum_grads(g, operands, optimize)


@vjp(np.tensordot)
def tensordot(g, ans, a, b, axes=2):
    grads = einsum_grads(g, (tensordot_subscripts(a, b, axes), a, b))
    return grads[1], grads[2]


@vjp(np.kron)
def kron(g, ans, a, b):
    grads = kron_grads(g, a, b)
    return grads[0], grads[1]


@vjp(np.cross)
def cross(g, ans, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    # <g, a x b> = <a, b x g> = <b, g x a>
    grads = cross_grads(g, a, b, axisa, axisb, axisc, axis)
    return grads[0], grads[1]


@vjp(np.trace, "ndarray.trace")
def trace(g, ans, a, offset=0, axis1=0, axis2=1, dtype=None):
    return trace_grad(g, a, offset, axis1, axis2)


@vjp(np.diagonal, "ndarray.diagonal")
def diagonal(g, ans, a, offset=0, axis1=0, axis2=1):
    return diagonal_grad(g, a, offset, axis1, axis2)


@vjp(np.diag)
def diag(g, ans, v, k=0):
    # 1-d v: a matrix with v on diagonal k; 2-d v: its diagonal k
    return diag_grad(g, v, k)


@vjp(np.tril)
def tril(g, ans, m, k=0):
    return np.tril(g, k)


@vjp(np.triu)
def triu(g, ans, m, k=0):
    return np.triu(g, k)

# --- NumPy 2's gufuncs: vecdot and vecmat conjugate their first operand ---

if hasattr(np, "vecdot"):
    @vjp(np.vecdot)
    def vecdot(g, ans, x1, x2, axis=-1, axes=None):
        return (vecdot_lhs_grad(g, x1, x2, axis, axes),
                vecdot_rhs_grad(g, x1, x2, axis, axes))

    multilinear(np.vecdot)
    facts(np.vecdot, fresh=True)

if hasattr(np, "matvec"):      # NumPy 2.2+
    @vjp(np.matvec)
    def matvec(g, ans, x1, x2, axes=None):
        return matvec_lhs_grad(g, x1, x2, axes), matvec_rhs_grad(g, x1, x2, axes)

    @vjp(np.vecmat)
    def vecmat(g, ans, x1, x2, axes=None):
        return vecmat_lhs_grad(g, x1, x2, axes), vecmat_rhs_grad(g, x1, x2, axes)

    multilinear(np.matvec, np.vecmat)
    facts(np.matvec, np.vecmat, fresh=True)

# --- forward rules: contractions are multilinear, taking parts is linear ---

multilinear(np.einsum, np.tensordot, np.kron, np.cross)
linear(np.trace, "ndarray.trace", np.diagonal, "ndarray.diagonal", np.diag, np.tril, np.triu)


# the adjoint's helper, differentiated again (forward over reverse): linear in the
# cotangent, and in each operand apart (runtime.reduction_forward.einsum_grads_tangent)
_register_linear(einsum_grads, (0, 1))


@jvp(einsum_grads)
def einsum_grads_jvp(t, ans, cot, args, optimize=False):
    return einsum_grads(t, args, optimize), einsum_grads_tangent(t, cot, args, optimize)


# -- facts (rules/registry.py: facts) ----------------------------------------------
facts(np.tensordot, owned=True)
facts(np.vdot, reduction=True)
