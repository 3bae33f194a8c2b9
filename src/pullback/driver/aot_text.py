"""The text of an artifact: what ``pullback compile`` writes for a module's
entries (``aot``).

``_render(writer, entries)`` names each entry (``loss_primal``,
``loss_adjoint``, ``_make_loss``; a suffix per signature or set of
gradients), then writes the module: its docstring listing the entries, the
import lines, the preamble functions the factories use (``_PREAMBLE``), the
copies of functions the front end made, each entry's factory and the call
binding its helpers, and ``__pullback__``, what ``artifacts`` checks before
using the file (``_meta``).
"""
from __future__ import annotations

import inspect
import os
import pprint

from . import cache, descriptions
from .artifacts import FORMAT, sources
from ..backend.codegen import source_lines


_PREAMBLE = {
    "_callee_adjoint": '''
def _callee_adjoint(adjoint, n, mask):
    """A callee's adjoint returning one cotangent per parameter (None for
    those not asked for), as its call sites index them."""
    def full_adjoint(residuals, out_bar):
        grads = [None] * n
        for i, g in zip(mask, adjoint(residuals, out_bar)):
            grads[i] = g
        return tuple(grads)
    return full_adjoint
''',
    "_callee_primal": '''
def _callee_primal(primal, adjoint):
    """A callee's primal for call sites that find its adjoint in the
    residuals: ``res[0](res[1], out_bar)`` gives the cotangents asked for."""
    def compact_primal(*args):
        out, residuals = primal(*args)
        return out, (adjoint, residuals)
    return compact_primal
''',
    "_check_sources": '''
def _check_sources(root, sources):
    """Refuse to be imported once a file these functions were transformed
    from changed (their code would give the old function's gradients); a
    file not found under ``root`` (shipped without its sources) is not checked."""
    for rel, digest in sources.items():
        path = _os.path.join(root, *rel.split("/"))
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        if _hashlib.sha256(data).hexdigest() != digest:
            raise ImportError(f"{__name__} is out of date: {path} changed after `pullback "
                              "compile` wrote it; run `pullback compile` again")
''',
    "_in_module": '''
def _in_module(functions, module):
    """The functions again, reading ``module``'s globals (live, as its own do)."""
    return tuple(_types.FunctionType(f.__code__, vars(module), f.__name__, f.__defaults__,
                                     f.__closure__) for f in functions)
''',
}


class _Entry:
    def __init__(self, fn, mask, examples=None, spec=None):
        self.fn, self.mask, self.examples, self.spec = fn, tuple(mask), examples, spec
        # the user's function whose code this is: for a writer's variant (a call
        # that must see the writes goes to it: frontend.written), the writer
        self.home = getattr(fn, "__pullback_variant__", (fn,))[0]
        self.params = list(inspect.signature(fn, follow_wrapped=False).parameters)
        self.loaded = None          # None while transforming, or if it failed
        self.exprs = {}             # helper name -> expression (or callee entry)
        self.needs_module = False   # reads globals defined in its own module
        self.depends = []


def _names(w, entries):
    taken = set(w.imports) | set(_PREAMBLE) | {"__pullback__", "_types", "_os", "_hashlib"} | {
        line.split()[-1] for line in w.aliases.values()}
    count = {}
    for e in entries:
        base = e.fn.__name__
        if e.spec is not None:
            count[base] = count.get(base, 0) + 1
            suffix = f"_{count[base]}"
        elif len(e.mask) < len(e.params):
            suffix = "_wrt_" + "_".join(e.params[i] for i in e.mask)
        else:
            suffix = ""
        k = 1
        while True:
            tail = suffix + ("" if k == 1 else f"_{k}")
            names = (f"{base}_primal{tail}", f"{base}_adjoint{tail}", f"_make_{base}{tail}")
            if not taken & set(names):
                break
            k += 1
        taken.update(names)
        e.public, e.factory = names[:2], names[2]


def _call_arg(x):
    if isinstance(x, _Entry):
        return x.public[0]
    if isinstance(x, tuple):
        fn, sub, n, mask = x
        if fn == "_callee_primal":
            return f"{fn}({sub.public[0]}, {sub.public[1]})"
        return f"{fn}({sub.public[1]}, {n}, {mask!r})"
    return x


def _what(e):
    args = ", ".join(e.params)
    wrt = ", ".join(e.params[i] for i in e.mask) or "nothing"
    kind = f"for {e.spec}" if e.spec is not None else "generic (real arguments)"
    unfused = "; elementwise regions not fused" if getattr(e, "unfused", False) else ""
    return f"{e.fn.__qualname__}({args}): {kind}; gradients for {wrt}{unfused}"


def _render(w, entries):
    _names(w, entries)
    source_file = w.module.__file__
    needs = sorted({e.fn.__module__ for e in entries if e.needs_module}
                   | {d[3] for d in w.sourced_defs})
    for m in needs:
        w.module_alias(m)
        w.preamble.add("_in_module")
    if "_in_module" in w.preamble:
        w.aliases["types"] = "import types as _types"
    w.preamble.add("_check_sources")
    w.aliases["hashlib"], w.aliases["os"] = "import hashlib as _hashlib", "import os as _os"
    listing = "\n".join(f"    {e.public[0]}, {e.public[1]}: {_what(e)}" for e in entries)
    deps = "NumPy and pullback.runtime" + "".join(f", and {m} (whose globals it reads)"
                                                  for m in needs)
    shown = " ".join(os.path.basename(source_file).split())      # (one line: a comment)
    lines = [f"# Generated by `pullback compile` from {shown}; "
             "do not edit.",
             f'"""Primals and adjoints of {w.module.__name__}, generated by pullback.',
             "", "``f_primal(*args)`` returns ``(value, residuals)``;",
             "``f_adjoint(residuals, out_bar)`` returns one cotangent per argument asked for.",
             "", listing, "", f"Importing this module needs {deps}.",
             "pullback uses it in place of a transform while the hashes of its sources",
             "match, and importing it fails once they no longer do.",
             '"""']
    if w.imports:
        lines += sorted(set(w.imports.values())) + [""]
    lines += sorted(set(w.aliases.values()))
    for name in sorted(w.preamble):
        lines += ["", _PREAMBLE[name].rstrip("\n")]
    for name, factory, args, module in w.sourced_defs:
        call = f"_make{name}({', '.join(str(_call_arg(a)) for a in args)})"
        lines += ["", "", factory.rstrip("\n"), "", "",
                  f"{name}, = _in_module(({call},), {w.module_alias(module)})"]
    meta_entries = []
    for e in entries:
        text = source_lines(e.loaded.text)       # (not splitlines: see codegen)
        text[0] = f"def {e.factory}({', '.join(e.used)}):"
        lines += ["", "", f"# {_what(e)}"]
        start = sum(line.count("\n") + 1 for line in lines) + 1    # (some hold several)
        lines += text
        args = [_call_arg(e.exprs[n]) for n in e.used]
        call = f"{e.factory}({', '.join(args)})"
        if len(call) > 60:
            call = f"{e.factory}(\n" + "".join(f"    {a},\n" for a in args) + ")"
        if e.needs_module:
            call = f"_in_module({call}, {w.module_alias(e.fn.__module__)})"
        lines += ["", "", f"{e.public[0]}, {e.public[1]} = {call}"]
        meta_entries.append(_meta(e, start, start + len(text) - 1,
                                  e.fn.__module__ == w.module.__name__ and e.home is e.fn))
    meta = {"format": FORMAT, "pullback": cache.compiler_version(),
            "source": os.path.basename(source_file),
            "source_sha256": cache.file_sha256(source_file),
            "root": os.path.dirname(os.path.abspath(source_file)),
            "sources": sources({e.home.__code__.co_filename for e in entries}, source_file),
            "module": w.module.__name__,
            "entries": meta_entries}
    lines += ["", "", "# What pullback checks before using this file in place of a transform.",
              "__pullback__ = " + pprint.pformat(meta, width=100, sort_dicts=False), "",
              '_check_sources(__pullback__["root"], __pullback__["sources"])', ""]
    return "\n".join(lines)


def _meta(e, first, last, own):
    helpers = {n: descriptions.describe(e.loaded.helpers[n], e.home.__globals__) for n in e.used}
    usable = all(d is not None for d in helpers.values())
    return {"qualname": e.fn.__qualname__, "module": e.fn.__module__, "own": own,
            "signature": getattr(e, "signature", None), "wrt": list(e.mask),
            "factory": e.factory, "lines": [first, last],
            "names": [e.loaded.primal.__name__, e.loaded.adjoint.__name__],
            "helpers": helpers if usable else None, "fingerprint": descriptions.fingerprint(e.home),
            "env": cache.settings()}
