"""Fused elementwise kernels: the runtime side of ``lower_broadcasts``.

A ``Kernel`` stands for one region of pure elementwise statements.  To the
reverse pass it is a callee with its own rule (``api.CustomVJP``'s
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
the region at a fraction of NumPy's time from about 20,000 elements on
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

Each kernel's code is readable: ``kernel.source`` (or ``sources(fn)``) shows
the region, its ``jax.numpy`` translation and the NumPy forward mode.
"""
from __future__ import annotations

import contextlib
import contextvars
import importlib.util
import itertools
import math
import operator
import os

import numpy as np

from . import runtime
from .api import CustomVJP

__all__ = ["Kernel", "PerElement", "options", "sizing", "size_class", "jax_available",
           "threshold_from_env", "current_threshold", "lowering_wanted", "DEFAULT_THRESHOLD",
           "sources"]

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
_counter = itertools.count()


def jax_available():
    """Whether JAX may be used: installed, and not switched off by
    ``PULLBACK_JAX=0``."""
    if os.environ.get("PULLBACK_JAX", "1").strip().lower() in _OFF:
        return False
    return importlib.util.find_spec("jax") is not None


def threshold_from_env():
    """``PULLBACK_JAX_THRESHOLD``, else ``DEFAULT_THRESHOLD``."""
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

        with pullback.kernels.options(threshold=0):       # always JAX
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
    if not any(isinstance(a, (np.ndarray, tuple, list)) or _is_cupy(a) for a in args):
        return False            # scalars only: nothing to fuse (and no setting to read)
    threshold = current_threshold()
    for a in args:
        for x in (a if isinstance(a, (tuple, list)) else (a,)):
            if isinstance(x, np.ndarray):
                if x.size >= threshold:
                    return True
            elif _is_cupy(x):
                return True
    return False


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

    Built by ``lower_broadcasts`` from ``program`` (a ``kernels.Program``: the
    region as steps over named inputs) and the names of the inputs the call
    site passes (``params``).  ``ambient`` holds getters for values the
    region reads from a user function's globals or cells at call time.
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

    def for_callers(self, mask):
        pair = self._pairs.get(mask)
        if pair is None:
            pair = self._pairs[mask] = self._make_pair(tuple(mask))
        return pair

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
        size, gpu = _region_size(args)
        if size is None or not all(_takes(a) for a in amb):
            return False
        return size >= threshold and size > 0 or (gpu and size > 0)

    def _jax_primal(self, args, amb, mask):
        jx = _jax()
        if jx is None:
            return None
        gpu = any(_is_cupy(a) for a in args)
        diff = tuple(k for k in mask if _inexact(args[k]))
        fn = self._jax.get(diff)
        if fn is None:
            fn = self._jax[diff] = (self.program.jax_kernel(diff, self.__name__),
                                    self.program.constant_partials(diff))
        fn, constants = fn
        inputs = tuple(_to_jax(a, jx, gpu) for a in args) + tuple(
            _to_jax(a, jx, gpu) for a in amb)
        try:
            with _x64(jx):
                out, parts = fn(*inputs)
        except Exception as err:            # a translation JAX cannot run: NumPy it is
            if isinstance(err, (KeyboardInterrupt, MemoryError)):
                raise
            import warnings
            warnings.warn(f"pullback: the JAX kernel {self.__name__} failed ({err!r}); "
                          "it runs on NumPy from now on.", RuntimeWarning, stacklevel=3)
            self.use_jax = False
            return None
        convert = _from_jax_gpu if gpu else _from_jax
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
    if _is_cupy(c):
        return runtime.unbroadcast(c, x)
    return runtime.project(c, x)


def _broadcast_shape(args):
    return np.broadcast_shapes(*(np.shape(a) for a in args)) if args else ()


def _region_size(args):
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
        elif _is_cupy(a):
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


def _takes(a):
    """Whether JAX takes ``a`` (a value read from a user function's globals)
    as a kernel argument: a real number or an array of them."""
    if isinstance(a, (np.ndarray, np.generic)) or _is_cupy(a):
        return a.dtype.kind in "biuf"
    return isinstance(a, (bool, int, float))


def _inexact(x):
    dtype = getattr(x, "dtype", None)
    if dtype is not None:
        return dtype.kind in "fc"
    return isinstance(x, (float, complex))


def _is_cupy(x):
    return type(x).__module__.startswith("cupy")


_JAX = []


def _jax():
    """The jax module, imported on first use (None if it cannot be)."""
    if not _JAX:
        try:
            import jax
            import jax.numpy  # noqa: F401
            _JAX.append(jax)
        except Exception:       # pragma: no cover - an install without jax
            _JAX.append(None)
    return _JAX[0]


def _x64(jx):
    """A context in which JAX computes float64 as float64 (the user's own
    configuration is left as it is)."""
    ctx = getattr(jx, "enable_x64", None)
    if ctx is None:                           # older JAX
        from jax.experimental import enable_x64 as ctx
        return ctx()
    return ctx(True)


def _to_jax(a, jx, gpu):
    if isinstance(a, np.ndarray):
        if a.ndim == 0:
            return a[()]
        return _aligned(a)
    if _is_cupy(a):
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


def _from_jax(x):
    return np.asarray(x)


def _from_jax_gpu(x):
    import cupy
    return cupy.from_dlpack(x)


# -- programs: a region as steps, and the code made from it ----------------------

class Step:
    """``target = prim(*args)``: one elementwise operation of a region.

    ``args`` are gast atoms over the region's names.  ``prim`` is the NumPy
    primitive (an ``operator`` function for Python's operators, a ufunc,
    ``np.where``, ``np.clip``); None for a step computed from values that do
    not vary per element (``expr`` holds it, e.g. ``c[0]``)."""

    def __init__(self, target, prim, args, expr=None, lineno=None):
        self.target, self.prim, self.args, self.expr = target, prim, list(args), expr
        self.lineno = lineno


class Cast:
    """The step ``np.asarray(x, dtype)``: np.vectorize's ``otypes``.  Linear,
    so a tangent is cast the same way."""

    __name__ = "astype"

    def __init__(self, dtype):
        self.dtype = np.dtype(dtype)

    def text(self, arg, flavour):
        module = "jnp" if flavour == "jax" else "np"
        return f"{module}.asarray({arg}, dtype={self.dtype.name!r})"


def _passes_tangent(prim):
    """Steps whose tangent is their argument's, transformed alike."""
    return getattr(prim, "__name__", "") == "_identity" or isinstance(prim, Cast)


class Program:
    """A region: named inputs, steps, one output; with ``summed``, the
    kernel's value is the output's sum (``np.sum`` of the region fused in:
    the elementwise value is never stored), its partials still elementwise."""

    def __init__(self, inputs, steps, output, ambient_names=(), summed=False):
        self.inputs = list(inputs)          # call-site inputs, then ambient ones
        self.ambient_names = list(ambient_names)
        self.steps = steps
        self.output = output
        self.summed = summed

    @property
    def all_inputs(self):
        return self.inputs + self.ambient_names

    def differentiable_inputs(self):
        """The inputs through which a gradient reaches the output."""
        from .rules.registry import lookup
        import gast
        deps = {n: {n} for n in self.inputs}
        for step in self.steps:
            got = set()
            if step.prim is not None:
                if _passes_tangent(step.prim):
                    params, diff = ("x",), ("x",)
                else:
                    rule = lookup(step.prim)
                    params, diff = (rule.params, rule.diff) if rule else ((), ())
                for p, a in zip(params, step.args):
                    if p in diff and isinstance(a, gast.Name):
                        got |= deps.get(a.id, set())
            deps[step.target] = got
        return deps.get(self.output, set())

    # code text ------------------------------------------------------------------

    def render(self, flavour, name):
        return _render_values(self, flavour, name)[0]

    def render_partials(self, mask, name):
        return _render_partials(self, mask, name)[0]

    def constant_partials(self, mask):
        """{input index: value} for the partials that are constants (the 1 of
        ``x + c`` with respect to ``c``): no kernel need compute them."""
        return _render_partials(self, mask, "_")[2]

    def compile(self, flavour, name):
        text, namespace = _render_values(self, flavour, name)
        return _exec(_free_early(text) if flavour == "numpy" else text, namespace, name)

    def compile_partials(self, mask, name):
        text, namespace, _ = _render_partials(self, mask, name)
        return _exec(_free_early(text), namespace, name)

    def jax_kernel(self, diff, name):
        """A jitted function of all inputs returning the value and the partial
        derivatives with respect to the inputs at positions ``diff``."""
        jx = _jax()
        jnp = jx.numpy
        text, namespace = _render_values(self, "jax", name + "_jax", summed=False)
        f = _exec(text, namespace, name + "_jax")
        constants = self.constant_partials(diff)

        def kernel(*args):
            out, parts = None, []
            for k in diff:
                if k in constants:
                    parts.append(None)
                    continue
                def along(a, k=k):
                    return f(*args[:k], a, *args[k + 1:])
                out, t = jx.jvp(along, (args[k],), (jnp.ones_like(args[k]),))
                parts.append(t)
            if out is None:
                out = f(*args)
            if self.summed:
                out = namespace["strong"](jnp.sum(out))
            return out, tuple(parts)

        kernel.__name__ = name
        return jx.jit(kernel)


def _free_early(text):
    """``text`` (a generated function of assignments and a return) with a
    ``del`` after the last use of each temporary: an intermediate array is
    freed as soon as nothing needs it, so the NumPy path holds a few arrays
    at a time, not the whole region."""
    import ast
    lines = text.splitlines()
    header, body = lines[0], lines[1:]
    params = {a.arg for a in ast.parse(header + " pass").body[0].args.args}
    assigned, last = set(), {}
    for i, line in enumerate(body):
        tree = ast.parse(line.strip())
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                if isinstance(node.ctx, ast.Store):
                    assigned.add(node.id)
                last[node.id] = i
    returned = {n.id for n in ast.walk(ast.parse(body[-1].strip())) if isinstance(n, ast.Name)}
    out = [header]
    for i, line in enumerate(body):
        out.append(line)
        dead = sorted(n for n in assigned if last.get(n) == i and n not in returned
                      and n not in params)
        if dead and i < len(body) - 1:
            out.append(f"    del {', '.join(dead)}")
    return "\n".join(out) + "\n"


def _exec(text, namespace, name):
    from .codegen import register_source
    filename = f"<pullback kernel {name} #{next(_counter)}>"
    register_source(filename, text)
    exec(compile(text, filename, "exec"), namespace)
    return namespace[name]


def sources(fn, *example_args, argnums=None):
    """The source of every fused kernel in ``fn``'s transform (for the same
    arguments as ``pb.source``; without example arguments, the transform for
    large arrays)."""
    from . import api
    handle = api.derivative_of(fn)
    n = len(handle.params)
    wrt = tuple(range(n)) if argnums is None else api._check_argnums(argnums)
    if example_args:
        with sizing(example_args):
            loaded = handle.transform(tuple(example_args), tuple(sorted(set(wrt))))
    else:
        from .analyses import kinds as kinds_
        from .pipeline import transform
        forced = (_options.get() or {}).get("lower", True)
        with options(lower=forced):
            loaded = transform(fn, {p: kinds_.NUMBER for p in handle.params},
                               [handle.params[i] for i in sorted(set(wrt))])
    seen, out = set(), []
    for value in loaded.helpers.values():
        tag = getattr(value, "__pullback_kernel__", None)
        if tag is not None and id(tag[0]) not in seen:
            seen.add(id(tag[0]))
            out.append(tag[0].source)
    return "\n\n\n".join(out)


# -- the per-element path ---------------------------------------------------------

class PerElement(CustomVJP):
    """``np.vectorize(fn)(*args)`` for a ``fn`` that cannot be fused (it has
    effects, or is not elementwise): ``fn``'s own primal and adjoint run once
    per element, in order, as NumPy calls ``fn``."""

    fresh_cotangents = True

    def __init__(self, fn, params, otypes=None):
        self.fn = self.fun = fn
        self.__name__ = self.__qualname__ = f"{getattr(fn, '__name__', 'fn')}_each"
        self.__doc__ = f"np.vectorize({getattr(fn, '__name__', 'fn')}), element by element"
        self.params = list(params)
        self.otypes = otypes
        self._pairs = {}

    def __call__(self, *args):
        return np.vectorize(self.fn, otypes=self.otypes)(*args)

    def for_callers(self, mask):
        pair = self._pairs.get(mask)
        if pair is None:
            pair = self._pairs[mask] = self._make_pair(tuple(mask))
        return pair

    def _make_pair(self, mask):
        from .api import derivative_of
        fn, otypes = self.fn, self.otypes

        def primal(*args):
            arrays = np.broadcast_arrays(*[np.asarray(a) for a in args])
            shape = arrays[0].shape if arrays else ()
            flat = [a.ravel() for a in arrays]
            diff = tuple(k for k in mask if np.asarray(args[k]).dtype.kind in "fc")
            prim, _ = derivative_of(fn).for_callers(diff)
            if otypes is None and flat and flat[0].size:
                fn(*[f[0] for f in flat])      # NumPy's vectorize probes the first element
            outs, ress = [], []
            for i in range(flat[0].size if flat else 1):
                o, r = prim(*[f[i].item() for f in flat])
                outs.append(o)
                ress.append(r)
            dtype = otypes[0] if otypes else (np.result_type(*[np.asarray(o) for o in outs[:1]])
                                              if outs else float)
            out = np.array(outs, dtype=dtype).reshape(shape)
            return out, (ress, diff, tuple(runtime.meta(a) for a in args), shape)

        def adjoint(res, g):
            ress, diff, metas, shape = res
            _, adj = derivative_of(fn).for_callers(diff)
            g = np.broadcast_to(g, shape).ravel()
            sums = {k: np.zeros(len(ress)) for k in diff}
            for i, r in enumerate(ress):
                grads = adj(r, g[i].item())
                for k in diff:
                    if grads[k] is not None:
                        sums[k][i] = grads[k]
            out = [None] * len(metas)
            for k in mask:
                if k in sums:
                    out[k] = runtime.project(sums[k].reshape(shape), metas[k])
                else:
                    out[k] = runtime.zeros_like(metas[k])
            return tuple(out)

        primal.__name__, adjoint.__name__ = f"{self.__name__}_primal", f"{self.__name__}_adjoint"
        return primal, adjoint

    @property
    def source(self):
        return f"# {self.__name__}: {self.__doc__}"


def is_kernel_helper(value):
    return getattr(value, "__pullback_kernel__", None) is not None


# operators the generated code writes as Python syntax
BINARY = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
          operator.floordiv: "//", operator.mod: "%", operator.pow: "**",
          operator.lt: "<", operator.le: "<=", operator.gt: ">", operator.ge: ">=",
          operator.eq: "==", operator.ne: "!="}
UNARY = {operator.neg: "-", operator.pos: "+"}


# -- rendering a program as Python ---------------------------------------------------

def _atom_text(node):
    from .codegen import unparse
    return unparse(node)


def _callee_text(prim, flavour):
    """How generated code of ``flavour`` ("numpy" or "jax") calls ``prim``."""
    name = prim.__name__ if isinstance(prim, np.ufunc) else {
        np.where: "where", np.clip: "clip"}[prim]
    return f"{'jnp' if flavour == 'jax' else 'np'}.{name}"


def _step_text(step, flavour):
    if step.prim is None:
        return _atom_text(step.expr)
    args = [_atom_text(a) for a in step.args]
    if step.prim in BINARY:
        return f"{args[0]} {BINARY[step.prim]} {args[1]}"
    if step.prim in UNARY:
        return f"{UNARY[step.prim]}{args[0]}"
    if getattr(step.prim, "__name__", "") == "_identity":
        return args[0]
    if isinstance(step.prim, Cast):
        return step.prim.text(args[0], flavour)
    call = f"{_callee_text(step.prim, flavour)}({', '.join(args)})"
    # a NumPy function returns an array or a NumPy scalar even for Python
    # numbers, never a weakly typed value: so must the translation
    return f"strong({call})" if flavour == "jax" else call


def _namespace(flavour):
    if flavour == "jax":
        jx = _jax()

        def strong(v):
            return v.astype(v.dtype) if getattr(v, "weak_type", False) else v
        return {"jnp": jx.numpy, "np": np, "strong": strong}
    return {"np": np}


def _render_values(program, flavour, name, summed=None):
    """The region as a function of its inputs returning its value (summed if
    the program is, unless ``summed=False``: the JAX kernel sums after jvp)."""
    summed = program.summed if summed is None else summed
    lines = [f"def {name}({', '.join(program.all_inputs)}):"]
    for step in program.steps:
        lines.append(f"    {step.target} = {_step_text(step, flavour)}")
    out = program.output
    if summed:
        out = f"jnp.sum({out})" if flavour == "jax" else f"np.sum({out})"
    lines.append(f"    return {out}")
    return "\n".join(lines) + "\n", _namespace(flavour)


def _render_partials(program, mask, name):
    """Forward mode over the region in NumPy: each step's value, then its
    tangent along each differentiated input, from the step's own rule taken
    as the linear map it is (``exp``: ``t * ans``).  Returns the value and one
    partial derivative per input in ``mask`` (None where none flows)."""
    import gast
    from .codegen import unparse
    from .inline import instantiate
    from .naming import Namer
    from .rules.registry import lookup

    namespace = _namespace("numpy")
    taken = set(program.all_inputs) | {s.target for s in program.steps} | set(namespace)
    namer = Namer(taken)

    def bind_global(n, value):
        if namespace.get(n) is value:
            return n
        fresh = n if n not in namer.taken else namer.fresh(n)
        namer.taken.add(fresh)
        namespace[fresh] = value
        return fresh

    def load(n):
        return gast.Name(id=n, ctx=gast.Load(), annotation=None, type_comment=None)

    seen = {}

    def emit(expr, base):
        """Bind ``expr`` to a fresh name (the same name for the same text: the
        tangents along two inputs often coincide, as for ``x + b``)."""
        if isinstance(expr, (gast.Constant, gast.Name)):
            return expr
        text = unparse(expr)
        if text not in seen:
            seen[text] = namer.fresh(base)
            lines.append(f"    {seen[text]} = {text}")
        return load(seen[text])

    inputs = program.inputs
    tangent = {inputs[k]: {k: gast.Constant(value=1.0, kind=None)} for k in mask}
    lines = [f"def {name}({', '.join(program.all_inputs)}):"]
    for step in program.steps:
        lines.append(f"    {step.target} = {_step_text(step, 'numpy')}")
        if step.prim is None:
            continue
        if _passes_tangent(step.prim):
            arg = step.args[0]
            if isinstance(arg, gast.Name) and arg.id in tangent:
                if isinstance(step.prim, Cast):
                    tangent[step.target] = {
                        k: emit(gast.parse(step.prim.text(unparse(t), "numpy"),
                                           mode="eval").body, f"{step.target}_d{inputs[k]}")
                        for k, t in tangent[arg.id].items()}
                else:
                    tangent[step.target] = dict(tangent[arg.id])
            continue
        rule = lookup(step.prim)
        if rule is None:
            continue                  # no gradient: comparisons, floor, sign...
        subst = {"ans": load(step.target)}
        for p, a in zip(rule.params, step.args):
            subst[p] = a
        for p in rule.params[len(step.args):]:
            default = rule.signature.parameters[p].default
            subst[p] = gast.Constant(value=None if default is rule.signature.empty
                                     else default, kind=None)
        mine = {}
        for k in mask:
            if step.prim is np.where:       # one select of the two branches' tangents
                branch = [tangent.get(a.id, {}).get(k) if isinstance(a, gast.Name) else None
                          for a in step.args[1:]]
                if any(t is not None for t in branch):
                    zero = gast.Constant(value=0.0, kind=None)
                    total = gast.Call(func=gast.Attribute(value=load("np"), attr="where",
                                                          ctx=gast.Load()),
                                      args=[step.args[0]] + [t or zero for t in branch],
                                      keywords=[])
                    mine[k] = emit(total, f"{step.target}_d{inputs[k]}")
                continue
            terms = []
            for p, a in zip(rule.params, step.args):
                if p not in rule.diff or not isinstance(a, gast.Name):
                    continue
                t = tangent.get(a.id, {}).get(k)
                if t is None:
                    continue
                stmts, exprs = instantiate(rule, dict(subst, g=t), [p], namer, bind_global)
                for s in stmts:
                    lines.append(f"    {unparse(s)}")
                terms.append(exprs[p])
            if not terms:
                continue
            total = terms[0]
            for t in terms[1:]:
                total = gast.BinOp(left=total, op=gast.Add(), right=t)
            mine[k] = emit(total, f"{step.target}_d{inputs[k]}")
        if mine:
            tangent[step.target] = mine
    outs = tangent.get(program.output, {})
    parts = [unparse(outs[k]) if k in outs else "None" for k in mask]
    tail = ", ".join(parts) + ("," if len(parts) == 1 else "")
    out = f"np.sum({program.output})" if program.summed else program.output
    lines.append(f"    return {out}, ({tail})")
    constants = {k: outs[k].value for k in mask
                 if isinstance(outs.get(k), gast.Constant)}
    return "\n".join(lines) + "\n", namespace, constants
