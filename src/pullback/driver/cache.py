"""The on-disk cache of transforms, and where a transform comes from.

A transform's result is text (the factory source of ``loader.Loaded``) plus
the values bound to the helper names that text uses.  Each helper is stored
as a description of where to find it again, so that a second process
rebuilds the pair without running the compiler::

    unbroadcast     ->  ["object", "pullback.runtime", "unbroadcast"]
    np              ->  ["module", "numpy"]
    dense_primal    ->  ["callee", ".", "dense", [0, 1, 2], "primal"]
    dense_primal    ->  ["callee", ".", "dense", [0, 2], "primal", True, ["compact"]]

(``"."`` is the function's own module, found through its globals, so a
script run as ``__main__`` and the same file imported share entries.)  A
helper that cannot be described makes the transform uncacheable; nothing is
ever cached that could be rebuilt wrongly.

The key hashes everything the transform depends on: pullback's version and a
hash of its own sources, the Python version, the function's file (the hash
of its whole text, as for artifacts), first line, qualified name and
bytecode, the abstract signature, ``wrt`` and ``has_aux``, the ``PULLBACK_*``
settings in the environment, and a fingerprint
of every global and closure name the function mentions (a module by name, a
function by import path and parameters, data by type), so that rebinding a
global that a call resolved to misses.

``PULLBACK_CACHE_DIR`` sets the directory (default ``~/.cache/pullback``, or
``$XDG_CACHE_HOME/pullback``); ``PULLBACK_CACHE=0`` turns the cache off.

JAX's own persistent compilation cache goes in its ``jax`` subdirectory
(``jax_compilation_cache``, run when pullback first imports jax): the fused
kernels a second process needs are loaded, not compiled again.  A cache
directory the user gave JAX is left as it is.
How helpers and globals are described is ``descriptions``'.
``driver.jit.obtain`` is the single entry point: an up-to-date artifact
first (see ``artifacts``), then this cache, then the compiler.
"""
from __future__ import annotations

import functools
import hashlib
import json
import linecache
import os
import sys
import tempfile
import types

from ..version import __version__
from .descriptions import describe, fingerprint, resolve

__all__ = ["load", "store", "enabled", "directory", "compiler_version", "describe", "resolve",
           "fingerprint", "stats", "jax_compilation_cache"]

#: How each transform this process needed was obtained (tests read these).
stats = {"transforms": 0, "cache_hits": 0, "cache_stores": 0, "artifact_hits": 0,
         "stale_artifacts": 0}

_OFF = ("0", "false", "no", "off")


def enabled():
    """Whether the on-disk cache is on (``PULLBACK_CACHE=0`` turns it off)."""
    return os.environ.get("PULLBACK_CACHE", "1").strip().lower() not in _OFF


def directory():
    """The cache directory: ``$PULLBACK_CACHE_DIR``, else a per-user cache dir."""
    path = os.environ.get("PULLBACK_CACHE_DIR")
    if path:
        return path
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "pullback")


_JAX_MIN_COMPILE_S = 0.1


def jax_compilation_cache(jax):
    """Point JAX's persistent compilation cache at ``<cache dir>/jax``, made
    private (0700) and checked like the cache directory, and keep what took
    a tenth of a second to compile (JAX's default keeps only what took a
    second; a fused kernel takes a few tenths, JAX's own eager operations a
    few hundredths, and those are not worth a file each).  Nothing is
    changed when the cache is off, the directory cannot be used, or the user
    has already given JAX a cache directory.  Returns the directory used,
    or None."""
    if not enabled():
        return None
    try:
        if jax.config.jax_compilation_cache_dir:
            return None                 # the user's own
    except AttributeError:              # a JAX without a persistent cache
        return None
    from . import trust
    where = os.path.join(directory(), "jax")
    try:
        trust.make_private_dir(directory())
        trust.make_private_dir(where)
    except OSError:
        return None
    if not (trust.trusted_dir(directory(), "cache directory")
            and trust.trusted_dir(where, "JAX compilation cache directory")):
        return None
    try:
        jax.config.update("jax_compilation_cache_dir", where)
        if jax.config.jax_persistent_cache_min_compile_time_secs > _JAX_MIN_COMPILE_S:
            jax.config.update("jax_persistent_cache_min_compile_time_secs", _JAX_MIN_COMPILE_S)
    except (AttributeError, KeyError, ValueError):
        return None
    return where


def _install_jax_hook():
    from ..lowering import jax_bridge
    jax_bridge.on_import = jax_compilation_cache


_install_jax_hook()


@functools.lru_cache(maxsize=None)
def compiler_version():
    """pullback's version and a hash of its own source files: any change to
    the compiler makes every cache entry and artifact stale."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))    # src/pullback
    paths = sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs
                   if f.endswith(".py"))
    h = hashlib.sha256()
    for p in paths:
        h.update(os.path.relpath(p, root).encode() + b"\0")
        with open(p, "rb") as fh:
            h.update(fh.read())
    return f"{__version__}+{h.hexdigest()[:16]}"


def file_sha256(path):
    """The SHA-256 of a file's bytes, in hex."""
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


# -- keys and entries -----------------------------------------------------------

def signature_data(key):
    """The JSON-able form of the abstract signature of the arguments (``checks.signature_key``)."""
    import numpy as np
    out = []
    for k in key:
        if isinstance(k, tuple) and k[0] is np.ndarray:
            out.append(["ndarray", k[1], k[2]])
        elif isinstance(k, tuple) and len(k) == 3:     # a Dask or CuPy array
            out.append(["array", k[0].__module__, k[0].__qualname__, k[1], k[2]])
        elif isinstance(k, tuple):
            out.append(["generic", k[1]])
        else:
            out.append(["type", k.__module__, k.__qualname__])
    return out


def identity(fn, sig_key, wrt, has_aux):
    """The key material of a transform of ``fn``, or None if it cannot be
    cached (no source, or a global that cannot be described)."""
    if not isinstance(fn, types.FunctionType) or getattr(fn, "__pullback_variant__", None) \
            or getattr(fn, "__pullback_rewrite__", None):
        # (a variant's code is frontend.written's, not its function's; a state
        # function or a rewritten __init__ shares its code with the method's)
        return None
    code = fn.__code__
    linecache.checkcache(code.co_filename)
    lines = linecache.getlines(code.co_filename, fn.__globals__)
    fp = fingerprint(fn) if lines else None
    if fp is None:
        return None
    text = "".join(lines).encode()
    return {"pullback": compiler_version(), "python": list(sys.version_info[:2]),
            "file": os.path.abspath(code.co_filename), "line": code.co_firstlineno,
            "qualname": fn.__qualname__, "source_sha256": hashlib.sha256(text).hexdigest(),
            "code": hashlib.sha256(code.co_code + repr(code.co_varnames).encode()).hexdigest(),
            "signature": signature_data(sig_key), "wrt": list(wrt), "has_aux": bool(has_aux),
            "globals": fp, "env": settings()}


_NOT_SETTINGS = {"PULLBACK_CACHE", "PULLBACK_CACHE_DIR", "PULLBACK_ARTIFACTS", "PULLBACK_PATH"}


def settings():
    """The ``PULLBACK_*`` environment variables that may change a transform
    (``PULLBACK_INPLACE``, ``PULLBACK_JAX_THRESHOLD``, ...): part of the key."""
    return {k: v for k, v in sorted(os.environ.items())
            if k.startswith("PULLBACK_") and k not in _NOT_SETTINGS}


def _key(material):
    blob = json.dumps(material, sort_keys=True, default=repr).encode()
    return hashlib.sha256(blob).hexdigest()


def used_helpers(loaded):
    """The helper names the primal and adjoint really read."""
    free = set(loaded.primal.__code__.co_freevars) | set(loaded.adjoint.__code__.co_freevars)
    return [n for n in loaded.helpers if n in free]


def _digest(entry):
    """The SHA-256 an entry carries of everything else in it: an entry whose
    code text was edited, or torn, no longer matches it."""
    body = {k: v for k, v in entry.items() if k != "sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def store(fn, material, loaded):
    from . import trust
    helpers = {}
    for name in used_helpers(loaded):
        d = describe(loaded.helpers[name], fn.__globals__)
        if d is None:
            return
        helpers[name] = d
    entry = {"material": json.loads(json.dumps(material, default=repr)), "text": loaded.text,
             "source": loaded.source,
             "names": [loaded.primal.__name__, loaded.adjoint.__name__], "helpers": helpers,
             "user_file": loaded.user_file}
    entry["sha256"] = _digest(entry)
    where = directory()
    path = os.path.join(where, _key(material) + ".json")
    try:
        trust.make_private_dir(where)
        if not trust.trusted_dir(where, "cache directory"):
            return
        fd, tmp = tempfile.mkstemp(dir=where, suffix=".tmp")        # (mode 0600)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(entry, fh)
            os.replace(tmp, path)
        except BaseException:
            _remove(tmp)
            raise
        stats["cache_stores"] += 1
    except OSError:
        pass            # a read-only or full disk only costs the next process a transform


def _remove(path):
    try:
        os.unlink(path)
    except OSError:
        pass


def load(fn, material):
    """The cached transform for ``material``, or None.  An entry that cannot
    be used (torn, edited, no longer resolvable, not a regular file) is
    deleted, so that the transform made instead replaces it; one that is
    not trusted (see ``trust``) is left alone and ignored."""
    from ..backend import loader
    from . import trust
    where = directory()
    path = os.path.join(where, _key(material) + ".json")
    if not os.path.lexists(path) or not trust.trusted_dir(where, "cache directory"):
        return None
    try:
        data = trust.read_bytes(path, "cache entry")
        if data is None:
            return None                 # not trusted: warned about, never read
        entry = json.loads(data.decode("utf-8"))
        if not isinstance(entry, dict) or entry.get("sha256") != _digest(entry):
            raise ValueError("the entry does not match its own hash")
        if entry["material"] != json.loads(json.dumps(material, default=repr)):
            raise ValueError("the entry is for another transform")
        helpers = {n: resolve(d, fn) for n, d in entry["helpers"].items()}
        return loader.rebuild(fn, entry["text"], helpers, entry["names"], entry["source"],
                              entry["user_file"])
    except FileNotFoundError:
        return None
    except Exception:
        _remove(path)       # torn, edited or no longer resolvable: transform again
        return None
