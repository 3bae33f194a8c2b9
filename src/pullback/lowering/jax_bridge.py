"""What a fused kernel needs of JAX: which arguments a JAX kernel takes, and
how arrays go there and back.

``jax`` is imported on first use (``load_jax``), never at import.  NumPy
arrays go to JAX without a copy where they can (C-contiguous and 64-byte
aligned; else one NumPy copy, several times faster than JAX's own), results
come back as read-only views; CuPy arrays go through DLPack, no copy either
way.  ``x64`` computes float64 as float64 for one call without touching the
user's JAX configuration.  ``region_size`` and ``takes`` are the cost model's
view of the arguments (``kernels.Kernel`` decides by them).
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["region_size", "takes", "inexact", "is_cupy", "load_jax", "x64", "to_jax",
           "from_jax", "from_jax_gpu"]


def region_size(args):
    """Elements of the broadcast output, and whether a GPU array is among the
    inputs; size None when an input is not a number or an array JAX takes."""
    biggest, shapes, gpu = 0, [], False
    for a in args:
        if isinstance(a, np.ndarray):
            if a.dtype.kind not in "biuf":
                return None, False
            shapes.append(a.shape)
            biggest = max(biggest, a.size)
        elif isinstance(a, (bool, int, float, np.bool_, np.integer, np.floating)):
            continue
        elif is_cupy(a):
            if a.dtype.kind not in "biuf":
                return None, False
            gpu = True
            shapes.append(a.shape)
            biggest = max(biggest, a.size)
        else:
            return None, False
    if len(shapes) > 1:
        try:
            return math.prod(np.broadcast_shapes(*shapes)), gpu
        except ValueError:
            return None, False
    return biggest, gpu


def takes(a):
    """Whether JAX takes ``a`` (a value read from a user function's globals)
    as a kernel argument: a real number or an array of them."""
    if isinstance(a, (np.ndarray, np.generic)) or is_cupy(a):
        return a.dtype.kind in "biuf"
    return isinstance(a, (bool, int, float))


def inexact(x):
    dtype = getattr(x, "dtype", None)
    if dtype is not None:
        return dtype.kind in "fc"
    return isinstance(x, (float, complex))


def is_cupy(x):
    return type(x).__module__.startswith("cupy")


_JAX = []

#: Called with the jax module once it is imported: ``driver.cache`` sets it
#: (``jax_compilation_cache``) so that JAX keeps the kernels it compiles under
#: pullback's cache directory and a second process does not compile them again.
on_import = None


def load_jax():
    """The jax module, imported on first use (None if it cannot be)."""
    if not _JAX:
        try:
            import jax
            import jax.numpy  # noqa: F401
            _JAX.append(jax)
        except Exception:       # pragma: no cover - an install without jax
            _JAX.append(None)
        if _JAX[0] is not None and on_import is not None:
            on_import(_JAX[0])
    return _JAX[0]


def x64(jx):
    """A context in which JAX computes float64 as float64 (the user's own
    configuration is left as it is)."""
    ctx = getattr(jx, "enable_x64", None)
    if ctx is None:                           # older JAX
        from jax.experimental import enable_x64 as ctx
        return ctx()
    return ctx(True)


def to_jax(a, jx, gpu):
    if isinstance(a, np.ndarray):
        if a.ndim == 0:
            return a[()]
        return _aligned(a)
    if is_cupy(a):
        return jx.dlpack.from_dlpack(a)
    return a


def _aligned(a, alignment=64):
    """``a`` itself if JAX can take it without a copy (C-contiguous and 64-byte
    aligned), else such a copy; NumPy's copy is several times faster than the
    one JAX makes of an unaligned buffer."""
    if a.flags.c_contiguous and a.ctypes.data % alignment == 0:
        return a
    buf = np.empty(a.nbytes + alignment, dtype=np.uint8)
    offset = (-buf.ctypes.data) % alignment
    out = buf[offset:offset + a.nbytes].view(a.dtype).reshape(a.shape)
    np.copyto(out, a)
    return out


def from_jax(x):
    return np.asarray(x)


def from_jax_gpu(x):
    import cupy
    return cupy.from_dlpack(x)
