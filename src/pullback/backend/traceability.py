"""The traceability check: whether a transform's generated code can run on
JAX tracers under ``jax.jit`` (the namespace build of ``backend.namespace``).

The check reads the generated source, not the user's: a forward scan of the
primal (then the adjoint, with the residuals the primal returned traced or
not) marks the names that hold values computed from the traced inputs, to a
fixed point for loops, and stops at the first construct that needs such a
value concrete: a Python ``if``/``while``/conversion to a number on it, a
write into an array, a helper or NumPy function without a generic form (the
scan: ``backend.trace_scan``).
``pb.source`` states the answer in its header (``header``); a call under
``jax.jit`` that is not traceable raises ``NotTraceableError`` with the
first reason and the user's line.

Before, a function with a Python branch on its input; after, the header
line ``pb.source`` writes for it:

>>> from pullback.testing import function_from_source
>>> import numpy as np, pullback as pb
>>> f = function_from_source('''
... def f(x):
...     if np.sum(x) > 0:
...         return np.sum(x ** 2)
...     return np.sum(x)
... ''')
>>> print(pb.source(f, np.ones(3)).splitlines()[1])
# jax.jit: not traceable: a Python `if` on a value computed from the inputs (line 2: if np.sum(x) > 0:)
"""
from __future__ import annotations

import ast

from .generic import _callee_of
from .trace_scan import Reason, Scan

__all__ = ["traceability", "header", "with_header", "Reason"]


def traceability(loaded, fn, traced=None):
    """``None`` if the generated functions of ``loaded`` (a ``Loaded``) can
    run on JAX tracers, else the first ``Reason`` they cannot.  ``traced``:
    the indices of the parameters that are tracers (default: all)."""
    key = "_traceable" if traced is None else ("_traceable", tuple(traced))
    cache = loaded.__dict__.setdefault("_traceability", {})
    if key in cache:
        return cache[key]
    tree = ast.parse(loaded.text)
    factory = tree.body[0]
    inner = {node.name: node for node in factory.body if isinstance(node, ast.FunctionDef)}
    primal = inner[loaded.primal.__name__]
    adjoint = inner.get(loaded.adjoint.__name__)
    scan = Scan(loaded, fn)
    params = [a.arg for a in primal.args.args]
    seeds = set(params if traced is None else [params[i] for i in traced if i < len(params)])
    seeds |= {a.arg for a in (primal.args.vararg, primal.args.kwarg) if a is not None}
    reason = scan.function(primal, seeds)
    if reason is None and adjoint is not None and adjoint is not primal:
        residuals = scan.residual_taint(primal)
        # the cotangent is traced; so is the residual tuple, read as a whole
        # (unpacked, each residual is as traced as the primal's value was)
        reason = scan.function(adjoint, {a.arg for a in adjoint.args.args}, residuals)
    cache[key] = reason
    return reason


def _callee_fun(value):
    """The user function whose derivative ``value`` (a helper of generated
    code) runs: a callee's primal or adjoint, or its tangent function."""
    handle = _callee_of(value)
    if handle is None:
        handle = getattr(value, "__pullback_forward__", (None,))[0]
    return None if handle is None else handle.fun


def header(loaded, fn):
    """The ``pb.source`` header line that says whether ``jax.jit`` traces it."""
    try:
        reason = traceability(loaded, fn)
    except Exception as err:            # never let the header hide the source
        return f"# jax.jit: not known ({type(err).__name__})\n"
    if reason is None:
        callees = sorted({getattr(_callee_fun(v), "__name__", "?")
                          for v in loaded.helpers.values() if _callee_fun(v) is not None})
        also = (f"; not decided here for the calls of {', '.join(callees)}: their derivatives "
                "are built for the arguments they get and checked when jax.jit traces them, "
                "and an untraceable one raises NotTraceableError at its line") if callees else ""
        return ("# jax.jit: traceable (JAX arrays under jax.jit run this code on jax.numpy"
                f"{also})\n")
    return f"# jax.jit: not traceable: {reason.text()}\n"


def with_header(loaded, fn):
    """``loaded.source`` with the ``header`` line after its first line."""
    first, _, rest = loaded.source.partition("\n")
    return first + "\n" + header(loaded, fn) + rest
