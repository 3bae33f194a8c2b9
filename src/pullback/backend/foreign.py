"""The foreign build: a transform's generated primal and adjoint, run on Dask
or CuPy arrays with NumPy's names bound to the arrays' own library.

Dask and CuPy arrays implement NumPy's dispatch protocols, so the generated
NumPy-API code runs on them as written; but a function the library does not
implement goes through ``__array_function__`` to NumPy's, which *computes* a
Dask graph (with a ``FutureWarning``) or copies a CuPy array to the host.
For such arguments the driver (``driver.jit.specialize``) keeps the same
generated source and builds its functions again (``bind``) with the names
that held NumPy (``np``, ``from numpy import sin``, NumPy reached through
closure variables) bound to a ``Twin`` of the inputs' namespace
(``array_api_compat.array_namespace``): a name is looked up first in the
library's NumPy-compatible module (``dask.array``, ``cupy``: NumPy's
semantics, what the protocol dispatches to), then in the array-API namespace
(``array_api_compat.dask.array`` has a lazy ``sort``, ``argsort``), and only
then in NumPy's.  The runtime helpers stay NumPy's: they test for foreign
arrays themselves (``runtime.backends``).  NumPy arguments never come here.

Before, generated code with NumPy's ``np``; after, the same code bound for a
Dask batch:

>>> import numpy as np, dask.array as da
>>> t = twin_for((da.ones(4, chunks=2),))
>>> t.tanh is da.tanh, t.sort.__module__.startswith("array_api_compat"), t.ndarray is np.ndarray
(True, True, True)
"""
from __future__ import annotations

import copy
import types

import numpy as np

from .twins import _numpy_function
from ..runtime.backends import backend_of, foreign_arguments

__all__ = ["twin_for", "bind", "Twin"]


class Twin:
    """NumPy's names for arrays of one foreign library: the library's
    NumPy-compatible module first, its array-API namespace next, NumPy's
    last (``np.ndarray``, ``np.float64``, what neither has)."""

    def __init__(self, library, namespace, name):
        self._sources = tuple(m for m in (library, namespace) if m is not None)
        self.__name__ = f"numpy for {name}"
        self.linalg = _Sub(self._sources, "linalg", np.linalg)
        self.fft = _Sub(self._sources, "fft", np.fft)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        value = _lookup(self._sources, name, np)
        setattr(self, name, value)      # once per name
        return value


class _Sub:
    """``np.linalg`` and ``np.fft`` of a ``Twin``."""

    def __init__(self, sources, name, fallback):
        self._sources = tuple(getattr(m, name) for m in sources
                              if isinstance(getattr(m, name, None), types.ModuleType))
        self._fallback = fallback

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        value = _lookup(self._sources, name, self._fallback)
        setattr(self, name, value)
        return value


def _lookup(sources, name, fallback):
    for m in sources:
        value = getattr(m, name, None)
        if value is not None:
            return value
    return getattr(fallback, name)


_TWINS = {}


def twin_for(args):
    """The ``Twin`` for the foreign arrays among ``args`` (one library), else
    None."""
    found = foreign_arguments(args)
    if not found:
        return None
    name = backend_of(found[0])
    twin = _TWINS.get(name)
    if twin is None:
        library = __import__("dask.array", fromlist=["Array"]) if name == "dask" else \
            __import__(name)
        try:
            import array_api_compat
            namespace = array_api_compat.array_namespace(*found)
        except (ImportError, TypeError):     # (the optional dependency; mixed libraries)
            namespace = None
        twin = _TWINS[name] = Twin(library, namespace, name)
    return twin


def bind(loaded, fn, twin):
    """A copy of ``loaded`` whose primal and adjoint are made again from their
    code with NumPy's names bound to ``twin`` (kept on ``loaded``: one
    build per library)."""
    made = loaded.__dict__.setdefault("_foreign", {})
    bound = made.get(twin.__name__)
    if bound is not None:
        return bound
    globals_ = {k: _twin(v, twin) for k, v in fn.__globals__.items()}
    helpers = loaded.helpers

    def function(f):
        # the same code object (whatever factory made it: a transform, the
        # disk cache, an artifact), its user closure cells twinned
        cells = tuple(cell if v in helpers else _twin_cell(cell, twin)
                      for v, cell in zip(f.__code__.co_freevars, f.__closure__ or ()))
        return types.FunctionType(f.__code__, globals_, f.__name__, f.__defaults__, cells)

    bound = copy.copy(loaded)
    del bound.__dict__["_foreign"]
    bound.primal = function(loaded.primal)
    bound.adjoint = function(loaded.adjoint)
    made[twin.__name__] = bound
    return bound


def _twin(value, twin):
    """NumPy (the module, its linalg and fft, a function of it taken by name)
    as ``twin``'s; anything else as it is."""
    if isinstance(value, types.ModuleType):
        if value is np:
            return twin
        if value is np.linalg:
            return twin.linalg
        if value is np.fft:
            return twin.fft
        return value
    if _numpy_function(value) and not isinstance(value, type):
        name = getattr(value, "__name__", None)
        if name and getattr(np, name, None) is value:
            return getattr(twin, name)
    return value


def _twin_cell(cell, twin):
    try:
        value = cell.cell_contents
    except ValueError:          # an empty cell
        return cell
    new = _twin(value, twin)
    return cell if new is value else types.CellType(new)
