"""Ahead of time: write a module's primals and adjoints to an importable file.

``write(module, outdir)`` transforms every ``@differentiable`` function
defined in ``module``, and the user functions they call, and writes
``<name>_pullback.py``: one factory per transform, holding exactly the
source the just-in-time path compiles, and the names it binds::

    def _make_loss(unbroadcast, project):         # helpers become parameters
        def loss_primal(w, x, y): ...
        def loss_adjoint(residuals, out_bar): ...
        return loss_primal, loss_adjoint

    loss_primal, loss_adjoint = _make_loss(_runtime.unbroadcast, _runtime.project)

Each function gets a generic transform (every argument a real number or
array of any dtype and rank, gradients for all of them), which serves any
real arguments, plus one per signature given (``loss(complex128[:], float)``,
see ``parse_spec``).  In a generic transform a call to another user function
binds that callee's own transform in the file; elsewhere (``custom_vjp``
callees, specialised transforms) it binds pullback's dispatch, as just in
time.  Importing the file needs NumPy and ``pullback.runtime``, plus the
module itself only where generated code reads a global defined there: those
functions then read that module's globals, live, as the originals do.

A function with ``*args``, ``**kwargs`` or keyword-only parameters is
transformed once per layout of its arguments, so it is written only per
signature (``star(float64[:], float64[:])``: the positional arguments fill
``*args``), taking one argument per value of the layout (``star_primal_1(xs_0,
xs_1, k)``).  Functions the front end made from the user's code (a nested
function lifted out, the body of a ``try`` run by ``runtime.control.attempt``)
are written into the file as they were made, reading the module's globals;
a call of a function that writes into its arguments goes to that function's
variant (``frontend.written``), which gets an entry of its own
(``step_writes_primal``) or, in a specialised transform, is made again by
``runtime.derivative_of(step, writes=True)`` (the decorator does not take such
a caller from the file: its code depends on what the callee writes into, which
the file's checks do not see, so it is transformed just in time);
one that is called as a value (a ``try`` body) is differentiated through the
dispatcher, which transforms that copy the first time it runs.

Fused elementwise kernels (``lower_broadcasts``) are not written ahead of
time yet: a function whose transform has them is written as transformed with
the lowering off (``PULLBACK_JAX=0``): plain NumPy, the same gradients, no
fusion; its entry says so.  The file's text is written by ``aot_text``;
reading artifacts back for the decorator (``lookup``) is in ``artifacts``.
"""
from __future__ import annotations

import contextlib
import dis
import inspect
import os
import re
import types

from . import cache, descriptions
from .aot_text import _Entry, _render
from .artifacts import artifact_name, write_file

__all__ = ["write", "parse_spec", "artifact_name", "Result"]


# -- signatures given on the command line ---------------------------------------

_SPEC = re.compile(r"^\s*([A-Za-z_]\w*)\s*\((.*)\)\s*$")
_ARG = re.compile(r"^\s*([A-Za-z_]\w*)\s*(\[[\s:,]*\])?\s*$")


def parse_spec(text):
    """Read a signature: ``"name(float64[:,:], complex128, float)"`` gives
    ``("name", examples)``, one example argument per entry: ``float``,
    ``complex``, ``int`` are Python scalars, a NumPy dtype alone a NumPy
    scalar, with ``[:]`` per axis an array of that rank.

    >>> parse_spec("loss(float32[:, :], float)")
    ('loss', (array([[0.]], dtype=float32), 0.0))
    """
    import numpy as np
    m = _SPEC.match(text)
    if not m:
        raise ValueError(f"cannot read the signature {text!r}: write it as "
                         "'name(float64[:,:], float64[:], float)'")
    args = []
    for part in re.split(r",(?![^\[]*\])", m.group(2)) if m.group(2).strip() else []:
        a = _ARG.match(part)
        if not a:
            raise ValueError(f"cannot read {part.strip()!r} in {text!r}: write a NumPy dtype "
                             "(float64, complex128, ...) with [:] per axis, or float")
        dtype, dims = a.groups()
        if dtype in ("float", "complex", "int") and not dims:
            args.append({"float": 0.0, "complex": 0j, "int": 0}[dtype])
            continue
        try:
            dt = np.dtype(dtype)
        except TypeError:
            raise ValueError(f"{dtype!r} in {text!r} is not a NumPy dtype") from None
        args.append(np.zeros((1,) * dims.count(":"), dt) if dims else dt.type(0))
    return m.group(1), tuple(args)


# -- transforming ------------------------------------------------------------------

class Result:
    """What ``write`` did: the file, its entries and the functions skipped."""

    def __init__(self, path, entries, skipped, needs_module):
        self.path, self.entries, self.skipped = path, entries, skipped
        self.needs_module = needs_module


class _Writer:
    def __init__(self, module):
        self.module = module
        self.imports = {}           # global name -> import line (what generated code reads)
        self.aliases = {}           # module -> import line (what helper expressions name)
        self.entries = {}           # (fn, mask, spec) -> _Entry
        self.skipped = []           # (qualname, reason, whether it failed to transform)
        self.preamble = set()
        self.sourced = {}           # function -> name of its copy in the artifact
        self.sourced_defs = []      # (name, factory source, its arguments, module)

    def entry(self, fn, mask, examples=None, spec=None):
        key = (fn, tuple(mask), spec)
        if key not in self.entries:
            self.entries[key] = e = _Entry(fn, mask, examples, spec)
            self.transform(e)
        return self.entries[key]

    def transform(self, e):
        from ..analyses import kinds
        from ..errors import PullbackError
        from ..pipeline import transform
        if e.home.__closure__:
            self.skip(e, "it reads variables of an enclosing function "
                      f"({', '.join(e.home.__code__.co_freevars)}); it is differentiated "
                      "just in time instead", failed=False)
            return
        layout = None
        if any(p.kind not in (p.POSITIONAL_OR_KEYWORD, p.POSITIONAL_ONLY)
               for p in inspect.signature(e.fn, follow_wrapped=False).parameters.values()):
            # *args, **kwargs, keyword-only: one transform per layout, so per signature
            if e.examples is None:
                self.skip(e, "it takes *args, **kwargs or keyword-only parameters, which are "
                          "compiled ahead of time per signature: give one with --signature "
                          f"'{e.fn.__name__}(float64[:], float)' (positional arguments "
                          "filling *args); it is differentiated just in time otherwise",
                          failed=False)
                return
            from ..call_layouts import flatten_call
            flat = flatten_call(e.fn, inspect.signature(e.fn, follow_wrapped=False),
                                e.examples, {})
            layout = flat.layout
            e.params = list(layout.params)
        if e.examples is None:
            param_kinds = {p: kinds.NUMBER for p in e.params}
        else:
            values = tuple(flat) if layout is not None else e.examples
            param_kinds = {p: kinds.of_value(a) for p, a in zip(e.params, values)}
        wrt = [e.params[i] for i in e.mask]
        try:
            loaded = transform(e.fn, param_kinds, wrt, layout=layout)
            if _kernels(loaded):
                with _unfused():                # see the module docstring
                    loaded = transform(e.fn, param_kinds, wrt, layout=layout)
                e.unfused = True
        except PullbackError as err:
            self.skip(e, str(err), failed=True)
            return
        if _kernels(loaded):
            self.skip(e, "its fused kernels (np.vectorize) cannot be written ahead of time "
                      "yet; it is differentiated just in time instead", failed=False)
            return
        e.used = cache.used_helpers(loaded)
        e.exprs = {n: self.helper_expr(e, loaded.helpers[n]) for n in e.used}
        self.read_globals(e, loaded)
        e.loaded = loaded

    def skip(self, e, reason, failed):
        item = (e.fn.__qualname__, reason, failed)
        if item not in self.skipped:
            self.skipped.append(item)

    def helper_expr(self, e, value):
        from ..custom_rules import CustomVJP
        callee = descriptions._callee(value)
        if callee is None:
            if isinstance(value, types.ModuleType):
                return self.module_alias(value.__name__)
            return self.object_expr(e, value)
        handle, mask, which, _, flags = callee      # (artifacts accumulate in place)
        compact = "compact" in flags
        target = descriptions._target(handle)
        if e.examples is None and mask is not None and not isinstance(target, CustomVJP):
            sub = self.entry(target, mask)
            if sub.loaded is not None:          # (not a cycle, not skipped)
                e.depends.append(sub)
                if which == "primal" and not compact:
                    return sub
                helper = "_callee_primal" if compact else "_callee_adjoint"
                self.preamble.add(helper)
                return (helper, sub, len(sub.params), tuple(mask))
        home = getattr(target, "__pullback_variant__", None)
        if home is not None:        # a writer's variant (frontend.written), made again
            handle_src = f"{self.module_alias('pullback.runtime')}.derivative_of(" \
                         f"{self.object_expr(e, home[0])}, writes=True)"
        else:
            handle_src = f"{self.module_alias('pullback.runtime')}.derivative_of(" \
                         f"{self.object_expr(e, target)})"
        if which == "adjoint":
            return f"{handle_src}.call_adjoint"
        if compact:
            return f"{handle_src}.for_callers({tuple(mask)!r}, True, True)[0]"
        return f"{handle_src}.for_callers({tuple(mask)!r})[0]"

    def module_alias(self, module):
        if module == "pullback.runtime":
            self.aliases[module] = "from pullback import runtime as _runtime"
            return "_runtime"
        alias = "_" + module.replace(".", "_")
        self.aliases[module] = f"import {module} as {alias}"
        return alias

    def object_expr(self, e, value):
        if getattr(value, "__pullback_lifted_source__", None) is not None:
            return self.source_expr(e, value)
        path = descriptions.path_of(value, e.home.__globals__)
        if path is None:
            raise ValueError(f"{e.fn.__qualname__}: its generated code uses {value!r}, which "
                             "cannot be imported by name, so it cannot be compiled ahead of time")
        module, qualname = path
        if module == ".":
            e.needs_module, module = True, e.fn.__module__
        return f"{self.module_alias(module)}.{qualname}"

    def source_expr(self, e, fn):
        """The name of a copy, written into the artifact, of ``fn``: a
        function the front end made from the user's code (a lifted nested
        function, the body of a ``try``), which reads the globals of the
        user's module."""
        name = self.sourced.get(fn)
        if name is not None:
            return name
        base = "".join(c if c.isalnum() else "_" for c in fn.__name__).strip("_")
        name = f"_{base}"
        taken = {n for n, *_ in self.sourced_defs}
        k = 1
        while name in taken:
            k += 1
            name = f"_{base}_{k}"
        self.sourced[fn] = name
        free = fn.__code__.co_freevars
        args = [self.helper_expr(e, c.cell_contents) for c in fn.__closure__ or ()]
        text = fn.__pullback_lifted_source__.strip("\n")
        factory = f"def _make{name}({', '.join(free)}):\n" + "".join(
            f"    {line}\n" if line.strip() else "\n" for line in text.splitlines()) \
            + f"    return {fn.__name__}\n"
        e.needs_module = True               # it reads the user's module's globals
        self.sourced_defs.append((name, factory, args, fn.__module__))
        return name

    def read_globals(self, e, loaded):
        """Import at module level the globals generated code reads, or mark
        the entry as reading its own module's globals."""
        names, codes = set(), [loaded.primal.__code__, loaded.adjoint.__code__]
        while codes:
            code = codes.pop()
            names.update(i.argval for i in dis.get_instructions(code)
                         if i.opname == "LOAD_GLOBAL")
            codes.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
        home = e.home.__globals__
        for name in sorted(n for n in names if n in home):
            line = _import_line(name, home[name], home)
            if line is None or name.startswith("_") or self.imports.get(name, line) != line:
                e.needs_module = True
            else:
                self.imports[name] = line


def _kernels(loaded):
    """Whether generated code binds fused kernels (``kernels.Kernel``)."""
    return any(getattr(loaded.helpers[n], "__pullback_kernel__", None) is not None
               for n in cache.used_helpers(loaded))


@contextlib.contextmanager
def _unfused():
    old = os.environ.get("PULLBACK_JAX")
    os.environ["PULLBACK_JAX"] = "0"
    try:
        yield
    finally:
        if old is None:
            del os.environ["PULLBACK_JAX"]
        else:
            os.environ["PULLBACK_JAX"] = old


def _import_line(name, value, home):
    if isinstance(value, types.ModuleType):
        m = value.__name__
        return f"import {m}" if m == name else f"import {m} as {name}"
    path = descriptions.path_of(value, home) if callable(value) else None
    if path is None or path[0] == "." or "." in path[1]:
        return None
    return f"from {path[0]} import {path[1]}" + ("" if path[1] == name else f" as {name}")


def _ordered(entries):
    """Entries, each after the callees its factory binds."""
    out, seen = [], set()

    def visit(e):
        if e in seen:
            return
        seen.add(e)
        for d in e.depends:
            visit(d)
        out.append(e)

    for e in entries:
        visit(e)
    return out


# -- writing -----------------------------------------------------------------------

def write(module, outdir, specs=()):
    """Write the artifact of ``module`` into ``outdir``; ``specs`` are
    signature strings (``parse_spec``).  Returns a ``Result``."""
    from ..checks import is_inexact, signature_key
    w = _Writer(module)
    fns = sorted((v for v in vars(module).values() if isinstance(v, types.FunctionType)
                  and getattr(v, "__pullback_differentiable__", False)
                  and v.__module__ == module.__name__),
                 key=lambda f: f.__code__.co_firstlineno)
    for f in fns:
        w.entry(f, range(len(inspect.signature(f, follow_wrapped=False).parameters)))
    by_name = {f.__name__: f for f in fns}
    for text in specs:
        name, examples = parse_spec(text)
        if name not in by_name:
            raise ValueError(f"--signature {text!r}: {module.__file__} has no "
                             f"@differentiable function {name!r}")
        e = w.entry(by_name[name], [i for i, a in enumerate(examples) if is_inexact(a)],
                    examples, " ".join(text.split()))     # (one line: it goes in comments)
        e.signature = cache.signature_data(tuple(signature_key(a) for a in examples))
    entries = [e for e in _ordered(list(w.entries.values())) if e.loaded is not None]
    path = os.path.join(outdir, artifact_name(module.__file__))
    if entries:
        write_file(path, _render(w, entries))
    return Result(path if entries else None, entries, w.skipped,
                  any(e.needs_module for e in entries))


