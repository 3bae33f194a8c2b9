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
then in NumPy's (a ``dask.array`` function NumPy also has runs as NumPy's
when no argument is a Dask array: ``da.triu`` takes Dask arrays only).  The
structural and accumulating runtime helpers stay NumPy's: they test for
foreign arrays themselves (``runtime.backends``); for Dask, the helpers with
a namespace-generic form (``sort_grad``, ``prod_grad``, ``norm_grad``, ...)
run that form made over the twin, since their NumPy code would compute the
graph (``np.argsort`` Dask lacks, ``if not zero.any()``).  NumPy arguments
never come here.

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
            return _numpy_unless_dask(value, getattr(fallback, name, None)) \
                if m.__name__ == "dask.array" else value
    return getattr(fallback, name)


def _numpy_unless_dask(value, numpy_value):
    """A ``dask.array`` function that NumPy has too, run as NumPy's when an
    argument is a NumPy array and none is a Dask array: some take only Dask
    arrays (``da.triu`` of a NumPy cotangent: no ``.chunks``), and NumPy's
    dispatch did the same.  Made from shapes and lists (``np.zeros(n)``), an
    array stays Dask's, so that writes of Dask values into it stay lazy."""
    if not isinstance(value, types.FunctionType) or not callable(numpy_value):
        return value

    def either(*args, **kwargs):
        numpy = False
        for a in args:
            for x in (a if isinstance(a, (list, tuple)) else (a,)):
                if hasattr(x, "__dask_graph__"):
                    return value(*args, **kwargs)
                numpy = numpy or isinstance(x, np.ndarray)
        return (numpy_value if numpy else value)(*args, **kwargs)
    either.__name__, either.__wrapped__ = value.__name__, value
    return either


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
        if name == "dask":
            twin.reshape = _reshape
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
    generic = _generic_helpers(twin)

    def function(f):
        # the same code object (whatever factory made it: a transform, the
        # disk cache, an artifact), its user closure cells twinned and its
        # helpers replaced by their forms over the twin where they have one
        cells = tuple(_helper_cell(cell, generic) if v in helpers else _twin_cell(cell, twin)
                      for v, cell in zip(f.__code__.co_freevars, f.__closure__ or ()))
        return types.FunctionType(f.__code__, globals_, f.__name__, f.__defaults__, cells)

    bound = copy.copy(loaded)
    del bound.__dict__["_foreign"]
    bound.primal = function(loaded.primal)
    bound.adjoint = function(loaded.adjoint)
    made[twin.__name__] = bound
    return bound


#: helpers whose NumPy code computes a Dask graph (a NumPy function Dask
#: lacks: ``np.argsort``, ``np.size``; a Python branch on values:
#: ``prod_grad``'s ``if not zero.any()``; ``np.asarray``): their
#: namespace-generic forms (``backend.generic``) made over the Dask twin run
#: instead, lazily.  The structural and accumulating helpers (``project``,
#: ``unindex``, ``owned_zeros``) stay NumPy's: they take Dask arrays
#: themselves (``runtime.backends``); SciPy's helpers too (SciPy's special
#: functions are ufuncs Dask runs lazily).
_NOT_FOR_DASK = frozenset({"meta", "unbroadcast", "unreduce", "realify", "project",
                           "zeros_like", "owned_zeros", "unindex", "per_output", "pack_like",
                           "join_grads", "take_grad", "unarray", "zeros_tangent",
                           "broadcast_tangent", "output_tangent", "add_cotangents", "indexable",
                           "field_cotangent", "mapping_keys", "plain_operands", "loops_over_keys", "no_float_in",
                           "sp_digamma", "sp_polygamma",
                           "logsumexp_grad", "xlogy_grad", "multigammaln_grad"})


#: helpers of ``runtime.layout_support`` that run lazily on the Dask twin
#: (``np.size`` of a Dask array computes it) but not on jax.numpy
_DASK_ONLY = ("repeat_grad", "average_grad")


def _generic_helpers(twin):
    """NumPy helper -> its generic form over ``twin``'s namespace, for Dask
    (CuPy keeps NumPy's helpers: CuPy has NumPy's functions, by protocol)."""
    if twin.__name__ != "numpy for dask":
        return {}
    made = twin.__dict__.get("_generic")
    if made is None:
        from ..runtime import layout_support
        from .generic import GENERIC, _make_generic, _rebind
        xp = _DaskHelpers(twin)
        over = _make_generic(xp)
        made = {fn: over[name] for fn, name in GENERIC.items() if name not in _NOT_FOR_DASK}
        rebound = _rebind(layout_support, xp, over)      # (no generic form: a NumPy size)
        made.update({getattr(layout_support, n): rebound[n] for n in _DASK_ONLY})
        twin.__dict__["_generic"] = made
    return made


def _helper_cell(cell, generic):
    if not generic:
        return cell
    try:
        value = generic.get(cell.cell_contents)
    except (ValueError, TypeError):     # an empty cell; an unhashable value
        return cell
    return cell if value is None else types.CellType(value)


class _DaskHelpers:
    """The Dask twin with lazy forms of the few NumPy functions the generic
    helpers call that Dask lacks (NumPy's would compute the graph)."""

    def __init__(self, twin):
        self._twin = twin
        self.linalg, self.fft = twin.linalg, twin.fft

    def __getattr__(self, name):
        return getattr(self._twin, name)

    @staticmethod
    def size(x, axis=None):
        shape = np.shape(x) if not hasattr(x, "shape") else x.shape
        return int(np.prod(shape)) if axis is None else shape[axis]

    reshape = staticmethod(lambda x, shape, order="C": _reshape(x, shape, order))

    @staticmethod
    def iscomplexobj(x):
        return np.dtype(x.dtype).kind == "c" if hasattr(x, "dtype") else np.iscomplexobj(x)

    def argsort(self, a, axis=-1, stable=True, kind=None):
        if axis is None:
            a, axis = a.reshape(-1), -1
        return self._twin.argsort(a, axis=axis, stable=True)

    def take_along_axis(self, a, indices, axis):
        """``np.take_along_axis`` for indices of ``a``'s shape: one gather
        from the flattened array at row offsets."""
        import dask.array as xp
        a = xp.asarray(a)               # (a NumPy cotangent indexed by a Dask index)
        if axis is None:
            a, axis = a.reshape(-1), 0
        am, im = xp.moveaxis(a, axis, -1), xp.moveaxis(indices, axis, -1)
        rows = int(np.prod(im.shape[:-1]))
        offsets = xp.reshape(xp.arange(rows) * am.shape[-1], im.shape[:-1] + (1,))
        out = xp.reshape(xp.reshape(am, (-1,))[xp.reshape(im + offsets, (-1,))], im.shape)
        return xp.moveaxis(out, -1, axis)


def _reshape(x, shape, order="C"):
    """``np.reshape`` for Dask arrays, ``order`` too (Dask's reshape takes
    none: F order is C order of the axes reversed); NumPy's for others."""
    if not hasattr(x, "__dask_graph__"):
        return np.reshape(x, shape, order=order)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    return x.T.reshape(shape[::-1]).T if order == "F" else x.reshape(shape)


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
