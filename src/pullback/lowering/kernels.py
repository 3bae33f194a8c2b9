"""Fused elementwise kernels: the runtime side of ``lower_broadcasts``.

A ``Kernel`` stands for one region of pure elementwise statements.  To the
reverse pass it is a callee with its own rule (``custom_rules.CustomVJP``'s
protocol): its primal returns the region's value and, as residuals, the
elementwise partial derivatives of the value with respect to each
differentiated input; its adjoint returns ``project(unbroadcast(g * partial,
x), x)`` per input.  The region's intermediates are never kept: memory is
O(inputs + partials).  The partials come from one of two paths, chosen at
each call by the cost model:

* **JAX** (large arrays): one ``jax.jit`` kernel computes the value and, by
  ``jax.jvp`` with one tangent per differentiated input, the partials, in
  one fused loop.  float64 is computed in float64 and float32 in float32
  without touching the user's JAX configuration (``jax.enable_x64`` is
  entered for the call only).  Inputs go to JAX without a copy where they
  can (C-contiguous, 64-byte aligned; else one NumPy copy, several times
  faster than JAX's own), results come back as read-only views.  CuPy
  arrays go through DLPack, no copy either way.
* **NumPy** (small arrays, complex values, JAX absent or switched off):
  generated forward-mode code, each step's value then its tangents, each
  rule's contribution taken as the linear map it is (``tanh``: ``t * (1 -
  ans * ans)``); temporaries are freed as soon as they are dead.

Both paths are forward mode, so they agree (also where the unlowered
reverse path differs: at a point where an untaken ``np.where`` branch has an
infinite derivative, forward mode gives 0 and reverse mode NaN).  NumPy's
``np.errstate`` does not reach a JAX kernel: where NumPy would raise under
``errstate(all="raise")``, the kernel returns inf or NaN.

The cost model.  A JAX call costs about 20 µs here, and a fused kernel runs
the region at a fraction of NumPy's time from about 100,000 elements on
(``benchmarks/elementwise.py --threshold``), so:

* a transform is made for arguments of a *size class* (``size_class``):
  small arrays get plain NumPy code, exactly as without this pass; an
  argument of ``threshold`` elements or more (or a CuPy array) gets the
  lowered code (``sizing``, ``lowering_wanted``);
* inside lowered code, each kernel call uses JAX only if its output has at
  least ``threshold`` elements.

``threshold`` is ``DEFAULT_THRESHOLD``, or ``PULLBACK_JAX_THRESHOLD`` (read
when a function is transformed), or ``options(threshold=...)`` around a
call.  ``PULLBACK_JAX=0`` or ``options(jax=False)`` turns JAX off;
``options(lower=True/False)`` forces the lowering on or off.

Each kernel's code is readable: ``kernel.source`` (or
``sources.kernel_sources(fn)``) shows the region, its ``jax.numpy`` translation
and the NumPy forward mode.

This module holds the settings and the cost model, and ``Kernel``.  The
region a kernel runs, and the code made from it, is a
``kernel_programs.Program``; moving arrays to JAX and back is ``jax_bridge``; ``PerElement``, the path for a map that cannot be fused, is
``per_element``'s (and is importable from here too).

Before, a region's statements; after, its kernel, run by the NumPy path
here (``jax=False``), whose partial is the region's derivative:

>>> import numpy as np, pullback as pb
>>> from pullback.testing import function_from_source
>>> f = function_from_source('''
... def f(x):
...     return np.sum(np.tanh(x) * x + 1.0)
... ''')
>>> x = np.array([0.0, 0.5, 1.0])
>>> with options(lower=True, jax=False):
...     'fused_tanh_sum_primal(x)' in pb.source(f), pb.grad(f)(x)
(True, array([0.        , 0.855...,  1.181...]))
>>> np.allclose(pb.grad(f)(x), (1 - np.tanh(x) ** 2) * x + np.tanh(x))
True
"""
from __future__ import annotations

import contextlib
import contextvars
import importlib.util
import os

import numpy as np

from .. import runtime
from ..custom_rules import CustomVJP
from .jax_bridge import (from_jax, from_jax_gpu, inexact, is_cupy, load_jax, region_size,
                         takes, to_jax, x64)
from .per_element import PerElement

__all__ = ["Kernel", "PerElement", "options", "sizing", "size_class", "jax_available",
           "threshold_from_env", "current_threshold", "lowering_wanted", "DEFAULT_THRESHOLD"]

#: Elements in a region's output from which the JAX kernel is used (see the
#: module docstring and benchmarks/elementwise.py --threshold).
DEFAULT_THRESHOLD = 100_000

#: Fewest elementwise operations a region needs to be lowered.  One or two
#: operations fuse too little: on a CPU their kernel (which writes the value
#: and a partial per input) is slower than NumPy's ufuncs, 1.1x to 6x at a
#: million elements, while three or more run at 0.4x to 0.9x of the NumPy
#: gradient (benchmarks/elementwise.py --threshold).  A np.vectorize call is
#: always lowered: the alternative is a Python call per element.
MIN_OPERATIONS = 3

_OFF = ("0", "false", "no", "off")

#: How many kernel calls took each path in this process (tests read these).
stats = {"jax": 0, "numpy": 0}
_options = contextvars.ContextVar("pullback_kernel_options", default=None)


def option(name, default=None):
    """What ``options(...)`` set for ``name`` around this call, else ``default``."""
    return (_options.get() or {}).get(name, default)


def jax_available():
    """Whether JAX may be used: installed, and not switched off by
    ``PULLBACK_JAX=0``."""
    if os.environ.get("PULLBACK_JAX", "1").strip().lower() in _OFF:
        return False
    return importlib.util.find_spec("jax") is not None


# read on every call with an array argument (size_class): os.environ.get of an
# unset name raises and catches a KeyError (~1 us), so CPython's dict of the
# environment (bytes, POSIX) is asked first when it is there
_ENV_DATA = getattr(os.environ, "_data", None) if os.name == "posix" else None
if not isinstance(_ENV_DATA, dict):
    _ENV_DATA = None


def threshold_from_env():
    """``PULLBACK_JAX_THRESHOLD``, else ``DEFAULT_THRESHOLD``."""
    if _ENV_DATA is not None and b"PULLBACK_JAX_THRESHOLD" not in _ENV_DATA:
        return DEFAULT_THRESHOLD
    value = os.environ.get("PULLBACK_JAX_THRESHOLD")
    if value is None or not value.strip():
        return DEFAULT_THRESHOLD
    try:
        return int(float(value))
    except ValueError:
        raise ValueError(f"PULLBACK_JAX_THRESHOLD must be a number of elements, not "
                         f"{value!r}.") from None


def current_threshold():
    """The threshold in force: ``options(threshold=...)``, else the environment."""
    opts = _options.get()
    if opts is not None and "threshold" in opts:
        return opts["threshold"]
    return threshold_from_env()


def min_operations():
    """The fewest operations a region needs to be lowered (``MIN_OPERATIONS``,
    or ``options(min_operations=...)``)."""
    opts = _options.get()
    if opts is not None and "min_operations" in opts:
        return opts["min_operations"]
    return MIN_OPERATIONS


@contextlib.contextmanager
def options(jax=None, threshold=None, lower=None, min_operations=None):
    """Override, inside the ``with`` block, whether fused kernels may use JAX
    (``jax``), from how many elements they do (``threshold``), whether
    transforms made inside lower elementwise regions at all (``lower``:
    True always, False never; by default when an argument is large), and
    how many operations a region needs for that (``min_operations``)::

        with pullback.lowering.kernels.options(threshold=0):       # always JAX
            g = pb.grad(f)(x)
    """
    old = _options.get()
    new = dict(old or {})
    for key, value in (("jax", jax), ("threshold", threshold), ("lower", lower),
                       ("min_operations", min_operations)):
        if value is not None:
            new[key] = int(value) if key in ("threshold", "min_operations") else bool(value)
    token = _options.set(new)
    try:
        yield
    finally:
        _options.reset(token)


def size_class(args):
    """True if some argument is an array of at least the threshold's number
    of elements (or a GPU array): a transform for such arguments lowers its
    elementwise regions; one for small arrays keeps plain NumPy code.  Part
    of the specialization key."""
    threshold = None            # read only when there is an array to size
    large = False
    for a in args:
        if type(a) in _NUMBERS:
            continue            # scalar code: the common case, nothing to fuse
        for x in (a if isinstance(a, (tuple, list)) else (a,)):
            if isinstance(x, np.ndarray):
                if large:
                    continue
                if threshold is None:
                    threshold = current_threshold()
                if x.size >= threshold:
                    large = True
            elif is_cupy(x):
                large = True
            elif hasattr(x, "__dask_graph__"):
                return False    # Dask fuses its own graph; a kernel would compute it
    return large


_NUMBERS = frozenset({float, int, bool, complex})


_sizing = contextvars.ContextVar("pullback_sizing", default=None)


@contextlib.contextmanager
def sizing(args):
    """Transforms made inside are for arguments like ``args`` (see
    ``size_class``); the lowering pass reads it."""
    token = _sizing.set(size_class(args))
    try:
        yield
    finally:
        _sizing.reset(token)


def lowering_wanted():
    """Whether the transform being made should lower its regions: forced by
    ``options(lower=...)``, else only for large arguments (``sizing``)."""
    opts = _options.get()
    if opts is not None and "lower" in opts:
        return opts["lower"]
    return bool(_sizing.get())


# -- the kernel ------------------------------------------------------------------

class Kernel(CustomVJP):
    """One fused elementwise region, callable as ``kernel(*inputs)``.

    Built by ``lower_broadcasts`` from ``program`` (a
    ``kernel_programs.Program``: the region as steps over named inputs) and
    the names of the inputs the call site passes (``params``).  ``ambient``
    holds getters for values the region reads from a user function's globals
    or cells at call time.
    """

    #: The cotangents the adjoint returns are new arrays that nothing else
    #: holds, so the reverse pass may own them (no defensive copy).
    fresh_cotangents = True

    def __init__(self, name, program, params, ambient=(), copy_out=False,
                 threshold=None, use_jax=True, doc=""):
        self.__name__ = self.__qualname__ = name
        self.__doc__ = doc
        self.program = program
        self.params = list(params)
        self.ambient = tuple(ambient)
        self.copy_out = copy_out
        self.threshold = threshold_from_env() if threshold is None else threshold
        self.use_jax = use_jax
        self._value = None
        self._partials = {}
        self._jax = {}
        self._pairs = {}

    # CustomVJP's protocol ----------------------------------------------------

    def __call__(self, *args):
        return self.value_fn()(*args, *self._ambient_values())

    def defvjp(self, fwd, bwd):
        raise TypeError("a fused kernel has its own rule")

    def for_callers(self, mask, inplace=True):     # (no gradient buffers to accumulate into)
        pair = self._pairs.get(mask)
        if pair is None:
            pair = self._pairs[mask] = self._make_pair(tuple(mask))
        return pair

    def for_forward(self, mask):
        """``tangent(*inputs, tangents) -> (value, tangent)`` for forward mode's
        call sites (``kernel_tangents``), cached per mask."""
        key = ("forward", tuple(mask))
        fn = self._pairs.get(key)
        if fn is None:
            from .kernel_tangents import for_forward
            fn = self._pairs[key] = for_forward(self, tuple(mask), stats)
        return fn

    @property
    def source(self):
        """The region, its jax.numpy translation and its NumPy forward mode."""
        p = self.program
        mask = tuple(range(len(self.params)))
        return "\n\n".join([f"# {self.__name__}: {self.__doc__}".rstrip(),
                            p.render("numpy", self.__name__),
                            p.render("jax", self.__name__ + "_jax"),
                            p.render_partials(mask, self.__name__ + "_partials")])

    def __repr__(self):
        return f"<pullback fused kernel {self.__name__}({', '.join(self.params)})>"

    # the two paths -------------------------------------------------------------

    def value_fn(self):
        if self._value is None:
            self._value = self.program.compile("numpy", self.__name__)
        return self._value

    def partials_fn(self, mask):
        fn = self._partials.get(mask)
        if fn is None:
            fn = self._partials[mask] = self.program.compile_partials(
                mask, self.__name__ + "_partials")
        return fn

    def _ambient_values(self):
        return tuple(get() for get in self.ambient) if self.ambient else ()

    def _make_pair(self, mask):
        n = len(self.params)
        summed = self.program.summed

        def primal(*args):
            if len(args) != n:
                raise TypeError(f"{self.__name__} takes {n} arguments, got {len(args)}")
            amb = self._ambient_values()
            got = self._jax_primal(args, amb, mask) if self._jax_pays(args, amb) else None
            if got is not None:
                stats["jax"] += 1
                out, partials, metas = got
            else:
                stats["numpy"] += 1
                out, partials = self.partials_fn(mask)(*args, *amb)
                metas = tuple(runtime.meta(args[k]) for k in mask)
            shape = _broadcast_shape(args) if summed else None
            return out, (partials, metas, shape)

        def adjoint(res, g):
            partials, metas, shape = res
            grads = [None] * n
            for k, p, m in zip(mask, partials, metas):
                grads[k] = runtime.zeros_like(m) if p is None else _cotangent(g, p, m, shape)
            return tuple(grads)

        primal.__pullback_kernel__ = (self, mask)
        adjoint.__pullback_kernel__ = (self, mask)
        primal.__name__, adjoint.__name__ = f"{self.__name__}_primal", f"{self.__name__}_adjoint"
        return primal, adjoint

    def _jax_pays(self, args, amb=()):
        if not self.use_jax:
            return False
        opts = _options.get()
        if opts is not None:
            if opts.get("jax") is False:
                return False
            threshold = opts.get("threshold", self.threshold)
        else:
            threshold = self.threshold
        size, gpu = region_size(args)
        if size is None or not all(takes(a) for a in amb):
            return False
        return size >= threshold and size > 0 or (gpu and size > 0)

    def _jax_primal(self, args, amb, mask):
        jx = load_jax()
        if jx is None:
            return None
        gpu = any(is_cupy(a) for a in args)
        diff = tuple(k for k in mask if inexact(args[k]))
        fn = self._jax.get(diff)
        if fn is None:
            fn = self._jax[diff] = (self.program.jax_kernel(diff, self.__name__),
                                    self.program.constant_partials(diff))
        fn, constants = fn
        inputs = tuple(to_jax(a, jx, gpu) for a in args) + tuple(
            to_jax(a, jx, gpu) for a in amb)
        try:
            with x64(jx):
                out, parts = fn(*inputs)
        except Exception as err:            # a translation JAX cannot run: NumPy it is
            if isinstance(err, (KeyboardInterrupt, MemoryError)):
                raise
            import warnings
            warnings.warn(f"pullback: the JAX kernel {self.__name__} failed ({err!r}); "
                          "it runs on NumPy from now on.", RuntimeWarning, stacklevel=3)
            self.use_jax = False
            return None
        convert = from_jax_gpu if gpu else from_jax
        out = convert(out)
        if self.copy_out and not gpu:
            out = np.array(out)
        if not gpu and out.ndim == 0:
            out = out[()]
        by_k = dict(zip(diff, parts))
        partials = tuple(constants[k] if k in constants else
                         convert(by_k[k]) if k in by_k else None for k in mask)
        metas = tuple(runtime.meta(args[k]) if not gpu else args[k] for k in mask)
        return out, partials, metas


def _cotangent(g, partial, x, shape=None):
    """``x``'s share of ``g``: ``project(unbroadcast(g * partial, x), x)``,
    always a new array (the product is one even where the partial is 1, but
    for an ``x`` smaller than ``g``, summing makes one anyway).  ``shape`` is
    the elementwise value's where the kernel returned its sum (``g`` is then
    the sum's cotangent)."""
    if type(partial) is float and partial == 1.0 and np.shape(x) != np.shape(g) \
            and shape is None:
        c = g
    else:
        c = g * partial
    if shape is not None and np.shape(c) != shape:
        c = np.broadcast_to(c, shape)
        if np.shape(x) == shape:
            c = np.array(c)               # a new array, not a view of one number
    if is_cupy(c):
        return runtime.unbroadcast(c, x)
    return runtime.project(c, x)


def _broadcast_shape(args):
    return np.broadcast_shapes(*(np.shape(a) for a in args)) if args else ()


def is_kernel_helper(value):
    return getattr(value, "__pullback_kernel__", None) is not None
