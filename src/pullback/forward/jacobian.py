"""Jacobians from tangents (``pb.jacfwd``): pytree leaves, and one Jacobian
per pair of an output leaf and an input leaf, from the tangent outputs of one
``jvp`` per input element, in JAX's layout (the output's structure outside,
the inputs' inside; an output of shape ``S`` and an input of shape ``T``
give a Jacobian of shape ``S + T``).

>>> import numpy as np
>>> stack_columns(np.zeros(2), [np.array([1.0, 0.0]), np.array([0.0, 2.0])], (2,))
array([[1., 0.],
       [0., 2.]])
"""
from __future__ import annotations

import numpy as np

from .. import pytrees, runtime
from ..runtime.backends import is_foreign

__all__ = ["leaves", "with_leaf", "at", "stack_columns", "rebuild", "shape_of", "dtype_of"]


def shape_of(x):
    """``np.shape(x)``, read from the array itself for a Dask or CuPy array
    (NumPy's function would compute a Dask graph to answer)."""
    return tuple(x.shape) if is_foreign(x) else np.shape(x)


def dtype_of(x):
    """``np.result_type(x)``, read from a Dask or CuPy array's ``dtype``."""
    return x.dtype if is_foreign(x) else np.result_type(x)


def leaves(x, path=()):
    """``(path, leaf)`` for every leaf of the pytree ``x`` (paths: keys;
    registered and plain objects as ``pytrees.tree_items`` sees them)."""
    if runtime.is_structure(x) and not pytrees.needs_boundary(x):
        for k, v in runtime.fields_of(x):
            yield from leaves(v, path + (k,))
        return
    items = pytrees.tree_items(x) if pytrees.needs_boundary(x) else None
    if items is None:
        yield path, x
        return
    for k, v in items:
        yield from leaves(v, path + (k,))


def with_leaf(tree, path, value):
    """``tree`` with the leaf at ``path`` replaced by ``value`` (a new tree)."""
    if not path:
        return value
    k = path[0]
    if pytrees.needs_boundary(tree):
        fields = dict(pytrees.tree_items(tree))
        return pytrees.tree_replace(tree, {k: with_leaf(fields[k], path[1:], value)})
    fields = dict(runtime.fields_of(tree))
    fields[k] = with_leaf(fields[k], path[1:], value)
    return runtime.rebuild_like(tree, fields)


def at(tree, path):
    """The leaf of ``tree`` at ``path``."""
    for k in path:
        tree = dict(pytrees.tree_items(tree) if pytrees.needs_boundary(tree)
                    else runtime.fields_of(tree))[k]
    return tree


def stack_columns(out, cols, in_shape):
    """Tangents of the output leaf ``out``, one per input element, as the
    Jacobian of shape ``out.shape + in_shape``."""
    if not cols:            # an empty input
        return np.zeros(shape_of(out) + tuple(in_shape), np.result_type(dtype_of(out), float))
    lazy = any(is_foreign(c) for c in cols)     # Dask columns stay lazy (stacked by Dask)
    stacked = np.stack([c if is_foreign(c) else np.asarray(c) for c in cols], axis=-1)
    jac = stacked.reshape(shape_of(out) + tuple(in_shape))
    if not lazy and not np.ndim(jac) and not isinstance(out, np.ndarray) \
            and not is_foreign(out):
        return jac[()]
    return jac


def rebuild(arg, pieces):
    """``arg``'s structure with each ``(path, value)`` of ``pieces`` at its path."""
    if len(pieces) == 1 and pieces[0][0] == ():
        return pieces[0][1]
    tree = arg
    for path, jac in pieces:
        tree = with_leaf(tree, path, jac)
    return tree


def jacfwd_eval(fun, argnums, has_aux, args, column):
    """``pb.jacfwd(fun, argnums, has_aux)(*args)``, each column's
    ``(out, out_dot)`` given by ``column(args, wrt, tangents, has_aux)``
    (``higher.forward_over_forward.JacfwdForward`` passes one that differentiates it again)."""
    from ..checks import check_argnum_range, check_argnums, is_inexact
    from ..runtime.forward_support import zeros_tangent
    argnums_t = check_argnums(argnums)
    check_argnum_range(fun, argnums_t, len(args))
    for i in argnums_t:
        if not is_inexact(args[i]):
            raise TypeError(f"jacfwd requires float or complex inputs, but argument {i} "
                            f"is a {type(args[i]).__name__}.")
    wrt = tuple(sorted(set(i % len(args) for i in argnums_t)))
    in_leaves = [(i, path, leaf) for i in wrt for path, leaf in leaves(args[i])]
    zeros = {i: pytrees.zero_tree(args[i]) if pytrees.needs_boundary(args[i])
             else zeros_tangent(args[i]) for i in wrt}
    out = aux = None
    columns = []            # per input leaf: the tangent outputs, one per element
    for i, path, leaf in in_leaves:
        cols = []
        shape = shape_of(leaf)
        for k in range(int(np.prod(shape)) if shape else 1):     # none for an empty leaf
            unit = np.zeros(shape, dtype=dtype_of(leaf))
            unit.reshape(-1)[k] = 1
            tangent = {j: with_leaf(
                zeros[j], path, unit if shape
                else type(leaf)(1) if isinstance(leaf, (float, complex))
                else unit[()]) if j == i else zeros[j] for j in wrt}
            o, d = column(args, wrt, tuple(tangent[j] for j in wrt), has_aux)
            if has_aux:
                o, aux = o
            out = o
            cols.append(d)
        columns.append((i, path, leaf, cols))
    if out is None:         # every input leaf empty: the output from one run
        out = column(args, wrt, tuple(zeros[j] for j in wrt), has_aux)[0]
        out, aux = out if has_aux else (out, None)
    # JAX's layout: the output's structure outside, the inputs' inside
    out_leaves = list(leaves(out))

    def per_output(opath, oleaf):
        by_arg = {}
        for i, path, leaf, cols in columns:
            picked = [at(c, opath) for c in cols]
            by_arg.setdefault(i, []).append(
                (path, stack_columns(oleaf, picked, shape_of(leaf))))
        inner = tuple(rebuild(args[i], by_arg[i % len(args)]) for i in argnums_t)
        return inner[0] if isinstance(argnums, int) else inner
    result = rebuild(out, [(opath, per_output(opath, oleaf))
                                    for opath, oleaf in out_leaves])
    return (result, aux) if has_aux else result
