"""Artifacts read back: a transform rebuilt from ``pullback compile``'s output.

When a function's module ``dir/mod.py`` has an artifact ``mod_pullback.py``
in ``dir/__pullback__/`` (where ``pullback compile`` writes by default),
``dir/`` itself, or a directory of ``PULLBACK_PATH`` (and nowhere else: not
``sys.path``, not the current directory), whose ``__pullback__`` records
this compiler's version and the SHA-256 of every file its functions were
transformed from (``mod.py`` and the modules of the helpers it calls) as
they are now, the transform is rebuilt from the artifact's factory: its code
compiled from the file, its helpers bound as the just-in-time path binds
them (callees through pullback's dispatch), the user's globals and cells as
in ``loader``.  A stale artifact (a source or pullback changed) is counted in
``cache.stats["stale_artifacts"]`` and ignored; so is one that another user
could have written (see ``trust``).  An entry serves a call when it is for
the same function, its globals still resolve as when it was written
(``cache.fingerprint``), the ``PULLBACK_*`` settings are the same, the
arguments have its signature (or are real, for a generic entry), and it
computes at least the gradients asked for (an adjoint computing more is
narrowed to those).  ``PULLBACK_ARTIFACTS=0`` turns artifacts off.
"""
from __future__ import annotations

import ast
import os
import tempfile

from . import cache, trust
from ..backend import loader
from ..backend.codegen import source_lines

__all__ = ["lookup", "search_dirs", "forget", "artifact_name", "sources", "write_file",
           "FORMAT"]

#: The version of the ``__pullback__`` metadata an artifact carries.
FORMAT = 2

_found = {}             # source file -> _Artifact, or None where there is none (fresh)


def artifact_name(source_file):
    """``examples/mlp.py`` -> ``mlp_pullback.py``."""
    return os.path.splitext(os.path.basename(source_file))[0] + "_pullback.py"


def search_dirs(source_file):
    """Where the artifact of ``source_file`` is looked for, in order: beside
    it (``__pullback__/``, then its own directory) and on ``PULLBACK_PATH``."""
    here = os.path.dirname(os.path.abspath(source_file))
    dirs = [os.path.join(here, "__pullback__"), here]
    dirs += [p for p in os.environ.get("PULLBACK_PATH", "").split(os.pathsep) if p]
    out = []
    for d in dirs:
        d = os.path.abspath(d)
        if d not in out:
            out.append(d)
    return out


def sources(files, source_file):
    """``{path: SHA-256}`` of ``files`` and ``source_file``, paths relative to
    ``source_file``'s directory where they can be (so that a project moved
    whole keeps its artifacts), with ``/`` between their parts."""
    here = os.path.dirname(os.path.abspath(source_file))
    out = {}
    # (a function the front end made has a name for its text, not a file: its
    # text comes from the user's file)
    files = {f for f in files if not f.startswith("<")}
    for f in sorted({os.path.abspath(f) for f in files} | {os.path.abspath(source_file)}):
        try:
            rel = os.path.relpath(f, here)
        except ValueError:          # (another drive)
            rel = f
        out[rel.replace(os.sep, "/")] = cache.file_sha256(f)
    return out


def _stale(meta, source_file):
    """Whether a file the artifact was transformed from changed (or is gone)."""
    here = os.path.dirname(os.path.abspath(source_file))
    recorded = meta.get("sources")
    if not isinstance(recorded, dict) or not recorded:
        return True
    for rel, digest in recorded.items():
        path = os.path.join(here, *rel.split("/"))
        try:
            if cache.file_sha256(path) != digest:
                return True
        except OSError:
            return True
    return False


def write_file(path, text):
    """Write ``text`` to ``path`` as it is read back: UTF-8, lines ended by
    ``\\n`` only, the file (0644) and a directory it creates (0755) writable
    by their owner alone, whatever the umask (see ``trust``)."""
    outdir = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(outdir):
        os.makedirs(outdir, mode=0o755, exist_ok=True)
        os.chmod(outdir, 0o755)
    fd, tmp = tempfile.mkstemp(dir=outdir, suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def forget():
    """Forget which artifacts were found (they are looked for once per file)."""
    _found.clear()


def lookup(fn, material):
    """The ``Loaded`` transform for ``material`` (``cache.identity``) from an
    up-to-date artifact of ``fn``'s module, or None."""
    if os.environ.get("PULLBACK_ARTIFACTS", "1").strip().lower() in cache._OFF:
        return None
    src = material["file"]
    if src not in _found:
        _found[src] = _find(src)
    art = _found[src]
    return None if art is None else art.load(fn, material)


def _find(source_file):
    if not os.path.isfile(source_file):
        return None                 # (source kept only in linecache: a notebook cell, ...)
    name = artifact_name(source_file)
    for d in search_dirs(source_file):
        path = os.path.join(d, name)
        if not os.path.lexists(path) or not trust.trusted_dir(d, "artifact directory"):
            continue
        try:
            data = trust.read_bytes(path, "artifact")
            if data is None:
                continue                    # not trusted: warned about, never read
            text = data.decode("utf-8")
            tree = ast.parse(text, path)
            meta = _metadata(tree)
            if meta.get("pullback") != cache.compiler_version() \
                    or _stale(meta, source_file):
                cache.stats["stale_artifacts"] += 1
                continue
            return _Artifact(path, text, compile(tree, path, "exec"), meta)
        except (OSError, SyntaxError, ValueError, TypeError):
            continue        # (ValueError: also undecodable, or null bytes)
    return None


def _metadata(tree):
    for stmt in reversed(tree.body):
        if isinstance(stmt, ast.Assign) and [getattr(t, "id", None) for t in stmt.targets] \
                == ["__pullback__"]:
            meta = ast.literal_eval(stmt.value)
            if isinstance(meta, dict) and meta.get("format") == FORMAT:
                return meta
    raise ValueError("not a pullback artifact")


def _all_real(signature):
    import numpy as np
    for s in signature:
        if s[0] == "type":
            if s[1:] not in (["builtins", "float"], ["builtins", "int"]):
                return False
        elif np.dtype(s[1]).kind not in "fiu":
            return False
    return True


class _Artifact:
    def __init__(self, path, text, code, meta):
        self.path, self.text, self.code, self.meta = path, text, code, meta

    def choose(self, material):
        best = None
        for e in self.meta["entries"]:
            if not e["own"] or e["qualname"] != material["qualname"] or e["helpers"] is None \
                    or e["fingerprint"] != material["globals"] \
                    or e["env"] != material["env"] or not set(material["wrt"]) <= set(e["wrt"]):
                continue
            if e["signature"] == material["signature"]:
                rank = 0
            elif e["signature"] is None and _all_real(material["signature"]):
                rank = 1
            else:
                continue
            rank = (rank, e["wrt"] != material["wrt"])
            if best is None or rank < best[0]:
                best = (rank, e)
        return None if best is None else best[1]

    def load(self, fn, material):
        e = self.choose(material)
        if e is None:
            return None
        try:
            helpers = {n: cache.resolve(d, fn) for n, d in e["helpers"].items()}
            first, last = e["lines"]
            body = source_lines(self.text, True)[first:last - 1]
            source = f"# generated by pullback from {fn.__qualname__} (from {self.path})\n" \
                + "".join(line[4:] if line.startswith("    ") else line for line in body)
            loaded = loader.rebuild(fn, self.text, helpers, e["names"], source,
                                    fn.__code__.co_filename, code=self.code,
                                    filename=self.path, factory=e["factory"])
        except Exception:
            return None         # (not resolvable now, or a damaged entry: transform instead)
        if e["wrt"] != material["wrt"]:
            loaded.adjoint = _narrowed(loaded.adjoint, [e["wrt"].index(i)
                                                        for i in material["wrt"]])
        return loaded


def _narrowed(adjoint, positions):
    def adjoint_narrowed(residuals, out_bar):
        grads = adjoint(residuals, out_bar)
        return tuple(grads[k] for k in positions)
    return adjoint_narrowed
