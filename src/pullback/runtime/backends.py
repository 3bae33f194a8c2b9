"""Array backends: which library an argument's arrays come from, and the few
things the runtime does differently for arrays that are not NumPy's.

The generated primal and adjoint are NumPy-API code, and NumPy stays the fast
path: every runtime helper tests ``type(x) is np.ndarray`` (or a Python
float) first and comes here only when that fails.  Three more array types are
accepted (issue 18); any other library's arrays are refused (``checks``).

* **Dask and CuPy** arrays implement NumPy's dispatch protocols
  (``__array_function__``, ``__array_ufunc__``), so the generated code runs on
  them as written and its results stay lazy (Dask) or on the device (CuPy)::

      # generated adjoint, NumPy arguments       # ... Dask arguments (functional)
      x_bar = owned_zeros(x)                     x_bar = owned_zeros(x)   # lazy zeros
      for i in reversed(range_n[:trips]):        for i in reversed(range_n[:trips]):
          x_item_bar = s_bar * np.cos(x[i])          x_item_bar = s_bar * np.cos(x[i])
          x_bar[i] += x_item_bar                     x_bar = x_bar + unindex(x_item_bar, x, i)

  The generated functions are built again for such arguments with NumPy's
  names bound to the arrays' library (``backend.foreign``: ``dask.array`` or
  ``cupy``, then ``array_api_compat.array_namespace``'s, then NumPy's), so a
  function Dask implements only in its array-API namespace (``sort``) stays
  lazy instead of being computed by NumPy's protocol.
  What does not dispatch is what the runtime does itself: allocating
  (``np.zeros(shape)``), converting (``np.asarray``) and indexed accumulation
  (``np.add.at``).  For those arrays the runtime calls ``zeros_for``,
  ``to_namespace`` (the array's own namespace, by ``array_api_compat`` where
  installed, else NumPy's ``like=``) and ``add_repeated`` below.  Repeated
  integer indices are summed first (one 0/1 matrix product) and then added at
  unique positions (at a Dask index array, whose values are known only when
  the graph runs, one 0/1 matrix product into the whole buffer), because a scatter-add on a Dask array keeps only the last
  write of a repeated index (``array_api_extra.at(x, [0, 0]).add(g)`` does so
  too: measured).  A Dask array is a graph, not a buffer, and Dask's item
  assignment takes fewer indices than NumPy's (no ``None``), so a transform
  for Dask arguments accumulates out of place (``functional_only``: the
  driver's ``inplace=False``, the right column above); CuPy arrays are
  buffers and accumulate in place, as NumPy's.  The fused elementwise kernels (``lowering``) are not used for Dask: Dask
  fuses its own graph; CuPy buffers reach them by DLPack.
* **JAX** arrays implement neither protocol (``np.tanh(jax_array)`` converts
  it) and are immutable, so they are taken at the public API's boundary
  (``checks.jax_boundary``): read as NumPy arrays (without a copy for arrays
  in host memory), differentiated on the NumPy path, and the value and gradients
  handed back as JAX arrays on the input's device.  JAX *tracers* (a call
  under ``jax.jit``) run the generated code itself, with ``np`` bound to
  ``jax.numpy`` and namespace-generic helpers (``backend.namespace``).
"""
from __future__ import annotations

import numpy as np

__all__ = ["backend_of", "is_foreign", "zeros_for", "to_namespace", "add_repeated",
           "set_basic", "functional_only", "foreign_arguments", "FOREIGN_BACKENDS"]

# arrays that run through the generated NumPy-API code by NumPy's protocols
FOREIGN_BACKENDS = ("dask", "cupy")

_ROOTS = {}        # type -> its library ("numpy", "dask", "cupy", "jax", or the module's root)


def backend_of(x):
    """The library of the array ``x``: "numpy", "dask", "cupy", "jax", or the
    root of its type's module for any other type."""
    t = type(x)
    if t is np.ndarray:
        return "numpy"
    root = _ROOTS.get(t)
    if root is None:
        root = (getattr(t, "__module__", "") or "").split(".")[0]
        if root == "jaxlib":
            root = "jax"
        if root == "dask" and not hasattr(x, "__dask_graph__"):
            root = "dask-other"      # a Dask collection that is not an array
        _ROOTS[t] = root
    return root


def is_foreign(x):
    """A Dask or CuPy array: one the generated code runs on by NumPy's
    dispatch protocols."""
    return type(x) is not np.ndarray and backend_of(x) in FOREIGN_BACKENDS \
        and hasattr(x, "__array_function__")


def functional_only(args):
    """Whether ``args`` hold a Dask array: its transform then accumulates out
    of place (``inplace=False``: ``x_bar = x_bar + unindex(g, x, i)``, no
    ``x_bar[i] += g``), because a Dask array is a graph, not a buffer, and
    Dask's item assignment takes fewer indices than NumPy's.  CuPy arrays are
    buffers and accumulate in place as NumPy's do."""
    for a in args:
        for x in (a if isinstance(a, (tuple, list)) else (a,)):
            if type(x) is not np.ndarray and backend_of(x) == "dask":
                return True
    return False


def foreign_arguments(args):
    """The Dask and CuPy arrays among ``args`` (and in the tuples, lists and
    dicts among them, one level down): the generated code is then bound to
    their library (``backend.foreign``)."""
    found = []
    for a in args:
        items = a.values() if isinstance(a, dict) else a if isinstance(a, (tuple, list)) \
            else (a,)
        found.extend(x for x in items if type(x) is not np.ndarray and is_foreign(x))
    return found


def set_basic(out, index, g):
    """``out[index] = g`` for a Dask or CuPy ``out`` and a basic index, whose
    ``None`` (new) axes Dask's item assignment does not take: they are
    dropped from the index and from ``g``."""
    items = index if isinstance(index, tuple) else (index,)
    if any(i is None for i in items):
        kept = tuple(i for i in items if i is not None)
        g = np.reshape(np.broadcast_to(g, np.shape(out[index])), np.shape(out[kept]))
        index = kept
    out[index] = g


def zeros_for(x, dtype=None, shape=None):
    """Zeros of ``x``'s array type (and chunks, for Dask), of ``dtype`` (by
    default ``x``'s promoted to float) and of ``x``'s shape or ``shape``."""
    if dtype is None:
        dtype = np.result_type(x.dtype, 0.0)
    if shape is None or tuple(shape) == tuple(x.shape):
        return np.zeros_like(x, dtype=dtype)
    return np.zeros(shape, dtype=dtype, like=x)


def to_namespace(g, like):
    """``g`` (a NumPy array or a number) as an array of ``like``'s type."""
    if type(g) is type(like):
        return g
    try:
        import array_api_compat
    except ImportError:       # the optional dependency: NumPy's own dispatch
        return np.asarray(g, like=like)
    return array_api_compat.array_namespace(like).asarray(g)


def add_repeated(buffer, index, g):
    """``np.add.at(buffer, index, g)`` for a Dask or CuPy ``buffer`` (updated
    where it is: a new graph node for Dask): an integer index array along the
    first axis, whose repeated positions are summed before they are added."""
    from ..errors import UnsupportedSyntaxError
    if backend_of(index) == "cupy":
        index = index.get()
    if isinstance(index, list):
        index = np.asarray(index)
    if backend_of(index) == "dask" and index.dtype.kind in "iu" and buffer.ndim >= 1:
        _add_at_lazy_index(buffer, index, g)
        return
    if not (isinstance(index, np.ndarray) and index.dtype.kind in "iu" and buffer.ndim >= 1):
        raise UnsupportedSyntaxError(
            f"pullback accumulates into {backend_of(buffer)} arrays at integer index arrays "
            f"along the first axis only; this index is a {type(index).__name__}"
            + (f" of {index.dtype}" if hasattr(index, "dtype") else "") + ".",
            hint="Index with one integer array (x[idx]) or a slice, or pass NumPy arrays.")
    flat = index.ravel() % buffer.shape[0]
    where, inverse = np.unique(flat, return_inverse=True)
    rows = (flat.size,) + tuple(buffer.shape[1:])
    g = np.reshape(np.broadcast_to(g, index.shape + tuple(buffer.shape[1:])), rows)
    if where.size == flat.size:       # no position repeats: add in index order
        order = np.argsort(inverse)
        buffer[where] += g[order] if flat.size > 1 else g
        return
    select = np.zeros((where.size, flat.size), dtype=buffer.dtype)
    select[inverse, np.arange(flat.size)] = 1
    sums = np.tensordot(to_namespace(select, buffer), g, axes=1)
    buffer[where] += sums


def _add_at_lazy_index(buffer, index, g):
    """``add_repeated`` at a Dask index array (``x[np.argsort(x)]``, or an
    index built by ``np.array`` bound to Dask), whose values are not known
    before the graph runs: the rows of ``g`` summed into their positions by
    one 0/1 matrix product (repeats add up), the whole buffer updated."""
    n = buffer.shape[0]
    flat = index.reshape(-1) % n
    rows = (flat.shape[0],) + tuple(buffer.shape[1:])
    g = np.reshape(np.broadcast_to(g, tuple(index.shape) + tuple(buffer.shape[1:])), rows)
    select = (flat[:, None] == np.arange(n)[None, :]).astype(buffer.dtype)
    buffer[...] += np.tensordot(select, g, axes=([0], [0]))
