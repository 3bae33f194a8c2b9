"""Forward rules of the helpers the round-6 rules' adjoints call
(``runtime.assorted_support``), so that a gradient through them can be
differentiated again (``pb.hessian``: forward over reverse; see
``rules.runtime_helpers``).  Each moves the cotangent ``g`` linearly, reading
its other arguments for shapes, indices and masks (piecewise constant:
``discrete``), except the products: ``logspace_start_grad`` and ``logspace_stop_grad`` are
bilinear in ``g`` and the result, the gufuncs' helpers in ``g`` and the other
operand (one helper per cotangent: the terms of a multilinear tangent are
added with ``+``, which would join tuples).
``histogram_grads`` with ``density=True`` is not linear in ``g`` and gets
none: a second derivative through it is refused.

>>> import numpy as np, pullback as pb
>>> from pullback.testing import function_from_source
>>> f = function_from_source('''
... def f(x):
...     return np.vecdot(x, x * x)
... ''')
>>> pb.hessian(f)(np.array([1.0, 2.0]))        # sum x**3: diag(6 x)
array([[ 6.,  0.],
       [ 0., 12.]])
"""
from pullback.rules.runtime_helpers import _declare
from pullback.runtime import assorted_support as s

__all__ = []

for _helper in (s.result_part, s.block_grads, s.choose_grads, s.selection_grads, s.bin_edges_grad,
                s.unique_grad, s.setdiff1d_grad):
    _declare(_helper, (0,))
_declare(s.logspace_start_grad, (0, 1), "multilinear")
_declare(s.logspace_stop_grad, (0, 1), "multilinear")
for _lhs, _rhs in ((s.vecdot_lhs_grad, s.vecdot_rhs_grad), (s.matvec_lhs_grad, s.matvec_rhs_grad),
                   (s.vecmat_lhs_grad, s.vecmat_rhs_grad)):
    _declare(_lhs, (0, 2), "multilinear")
    _declare(_rhs, (0, 1), "multilinear")
