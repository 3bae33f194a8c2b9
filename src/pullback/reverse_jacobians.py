"""``pb.jacrev`` and ``pb.jacobian``: Jacobians by reverse mode, one primal
run and one adjoint sweep per output element (as JAX's).  ``__init__``
re-exports them; forward mode's ``jacfwd`` is ``api``'s.

>>> import numpy as np
>>> jacrev(lambda x: x ** 2)(np.array([1.0, 3.0]))
array([[2., 0.],
       [0., 6.]])
"""
from __future__ import annotations

import functools

import numpy as np

from .callees import derivative_of
from .higher import Made
from .checks import (check_argnum_range, check_argnums, check_callable,
                     check_differentiable_input, fresh_grad, fun_name, is_inexact, split_aux)
from .runtime.backends import is_foreign
from . import pytree_boundary, pytrees, runtime
from .pytree_boundary import to_user_grad
from .pytrees import needs_boundary

__all__ = ["jacrev", "jacobian"]


def jacrev(fun, argnums=0, has_aux=False):
    """The Jacobian of ``fun`` with respect to the arguments ``argnums``, by
    reverse mode (as JAX's ``jacrev``): one primal run, then one adjoint
    sweep per output element.  An output of shape ``S`` and an input of
    shape ``T`` give a Jacobian of shape ``S + T``; pytrees on either side
    give JAX's nesting (the output's structure outside, the inputs'
    inside), and a tuple ``argnums`` a tuple.  Inputs must be float or
    complex, outputs real floats (``pb.vjp`` takes the others).

    >>> import numpy as np
    >>> jacrev(lambda x: x[0] * x[1:])(np.array([2.0, 3.0, 5.0]))
    array([[3., 2., 0.],
           [5., 0., 2.]])
    """
    check_callable(fun, "pb.jacrev")
    argnums_t = check_argnums(argnums)

    @functools.wraps(fun)
    def jacrev_f(*args, **kwargs):
        from .forward import jacobian
        handle = derivative_of(fun)
        args = handle.bind(args, kwargs)
        n = len(args)
        check_argnum_range(fun, argnums_t, n)
        picked = tuple(i % n for i in argnums_t)
        for i in picked:
            _check_jacobian_input(fun, handle, i, args[i], "pb.jacrev")
        wrt = tuple(sorted(set(picked)))
        out, res = handle.call_primal(args, wrt, has_aux, None)
        value, aux = split_aux(fun, out, has_aux)
        out_leaves = list(jacobian.leaves(value))
        for path, leaf in out_leaves:
            _check_jacobian_output(fun, path, leaf)
        objects = needs_boundary(value)     # registered and plain objects: user's view
        zero_ct = pytrees.zero_tree(value) if objects else runtime.zeros_like(value)
        in_leaves = {i: list(jacobian.leaves(args[i])) for i in wrt}

        shape_of, dtype_of = jacobian.shape_of, jacobian.dtype_of   # (Dask: not computed)

        def per_output(opath, oleaf):
            rows = {(i, path): [] for i in wrt for path, _ in in_leaves[i]}
            oshape = shape_of(oleaf)
            array = isinstance(oleaf, np.ndarray) or is_foreign(oleaf)
            for k in range(int(np.prod(oshape))):
                unit = np.zeros(oshape, dtype=dtype_of(oleaf))
                unit.reshape(-1)[k] = 1
                ct = jacobian.with_leaf(zero_ct, opath, unit if array
                                        else type(oleaf)(1) if isinstance(oleaf, float)
                                        else unit[()])
                if objects:
                    ct = pytree_boundary.to_internal_cotangent(ct, value)
                grads = handle.call_adjoint(res, ct)
                for i in wrt:
                    g = fresh_grad(grads[i], args[i])
                    if needs_boundary(args[i]):
                        g = to_user_grad(g, args[i])
                    for path, leaf in in_leaves[i]:
                        row = jacobian.at(g, path)
                        rows[(i, path)].append(row if is_foreign(row) else np.asarray(row))
            by_arg = {}
            for i in wrt:
                pieces = []
                for path, leaf in in_leaves[i]:
                    shape = oshape + shape_of(leaf)
                    got = rows[(i, path)]
                    jac = (np.stack(got) if got else np.zeros((0,) + shape_of(leaf),
                                                            dtype=dtype_of(leaf)))
                    jac = jac.reshape(shape)
                    if not jac.ndim and not array:
                        jac = jac[()]
                    pieces.append((path, jac))
                by_arg[i] = jacobian.rebuild(args[i], pieces)
            inner = tuple(by_arg[i] for i in picked)
            return inner[0] if isinstance(argnums, int) else inner

        result = jacobian.rebuild(value, [(opath, per_output(opath, oleaf))
                                          for opath, oleaf in out_leaves])
        return (result, aux) if has_aux else result

    jacrev_f.__pullback_api__ = "pb.jacrev"
    jacrev_f.__pullback_made__ = Made("jacrev", fun, argnums, has_aux)   # (higher.handles)
    return jacrev_f


def jacobian(fun, argnums=0, has_aux=False):
    """The Jacobian of ``fun``: ``jacrev`` (as JAX's ``jax.jacobian``).

    >>> import numpy as np
    >>> jacobian(lambda x: np.sin(x))(np.zeros(2))
    array([[1., 0.],
           [0., 1.]])
    """
    check_callable(fun, "pb.jacobian")
    jac = jacrev(fun, argnums, has_aux)
    jac.__pullback_api__ = "pb.jacobian"
    return jac


def _check_jacobian_input(fun, handle, i, x, api):
    if is_inexact(x):
        return
    try:
        check_differentiable_input(fun, handle, i, x)
    except TypeError as err:
        raise TypeError(str(err).replace("pb.grad", api)) from None


def _check_jacobian_output(fun, path, leaf):
    where = "" if not path else " at " + "".join(f"[{k!r}]" for k in path)
    if is_foreign(leaf) and leaf.dtype.kind == "f":
        return                  # a Dask or CuPy array (not computed to be checked)
    if isinstance(leaf, (bool, np.bool_)) or not isinstance(
            leaf, (float, int, np.ndarray, np.generic, complex)) \
            or np.result_type(leaf).kind not in "f":
        kind = type(leaf).__name__ if not isinstance(leaf, (np.ndarray, np.generic)) \
            else f"an array of {leaf.dtype}"
        raise TypeError(
            f"pb.jacrev needs real float outputs, but {fun_name(fun)} returned {kind}{where}. "
            "Return floats (for a complex output, its real and imaginary parts), or use "
            "pb.vjp with cotangents of your own.")
