"""Checks that need values, for helpers running on traced or lazy arrays, and
the jit forms of ``np.linalg.eig``/``eigvals`` (issue 18).

A helper that refuses a cotangent at run time on NumPy arrays (a function
of complex singular vectors that depends on their phases) cannot raise on a
traced value (JAX under ``jax.jit``) or a lazy one (Dask): the check's result
is known only when the computation runs.  ``poisoned`` makes the result NaN
where the check fails, and for JAX raises the same ``PullbackError`` from the
host when the compiled function runs one (JAX reports it as a
``JaxRuntimeError`` quoting it); the NaN stays where that report is not seen.

Under ``jax.jit``, ``np.linalg.eig`` of a real matrix runs ``eig`` below:
jax.numpy's is complex whatever the eigenvalues, NumPy's is real when they
all are, and the transform (made for NumPy's) expects NumPy's dtypes.  Real
eigenvalues give NumPy's real arrays (LAPACK's ``geev`` in both: the same
vectors); complex ones give NaN and the error below, since the traced code
cannot change its dtype with the values.  A complex matrix is refused when
traced: its eigenvectors' phases are checked on values.

>>> import numpy as np
>>> poisoned(np.array([1.0, 2.0]), np.array([False, True]), ValueError("bad"))
Traceback (most recent call last):
...
ValueError: bad
"""
from __future__ import annotations

import numpy as np

from ..errors import NonDifferentiableError, NotTraceableError

__all__ = ["poisoned", "eig", "eigvals"]


def _is_jax(x):
    return (type(x).__module__ or "").startswith(("jax", "jaxlib"))


def poisoned(out, bad, error):
    """``out``, refused where ``bad``: NumPy raises ``error`` now; a traced
    or lazy ``bad`` gives NaN there (``bad`` broadcast against ``out``), and
    JAX raises ``error`` from the host when it runs a bad one."""
    if isinstance(bad, (np.ndarray, np.generic, bool)):
        if np.any(bad):
            raise error
        return out
    if _is_jax(bad):
        import jax

        def check(flag):
            if flag:
                raise error
        jax.debug.callback(check, bad.any())
    xp = type(out).__module__.split(".")[0]
    where = __import__("jax.numpy", fromlist=["where"]).where if _is_jax(out) else \
        __import__(xp + ".array", fromlist=["where"]).where if xp == "dask" else np.where
    return where(bad, np.nan, out)


_COMPLEX = ("np.linalg.eig of a real matrix with complex eigenvalues under jax.jit: NumPy "
            "returns complex arrays for it, and traced code cannot change its dtype with "
            "the values (its results are NaN).")
_HINT = ("Call the pullback function outside jax.jit (it takes concrete JAX arrays), or use "
         "np.linalg.eigh for a symmetric matrix.")


def _real_eig(a, vectors):
    import jax.numpy as jnp
    if jnp.iscomplexobj(a):
        raise NotTraceableError(
            "pullback runs np.linalg.eig under jax.jit for real matrices with real "
            "eigenvalues; this matrix is complex (its eigenvectors' phases are checked on "
            "values).", hint=_HINT)
    w, v = jnp.linalg.eig(a)
    bad = jnp.any(jnp.imag(w) != 0, axis=-1)
    w = poisoned(jnp.real(w), bad[..., None], NonDifferentiableError(_COMPLEX, hint=_HINT))
    if not vectors:
        return w
    v = jnp.where(bad[..., None, None], jnp.nan, jnp.real(v))
    return type(np.linalg.eig(np.eye(1)))(w, v)       # NumPy's EigResult


def eig(a):
    """``np.linalg.eig`` under jax.jit: NumPy's real ``(w, v)`` for a real
    matrix with real eigenvalues, NaN and an error for complex ones."""
    return _real_eig(a, True)


def eigvals(a):
    """``np.linalg.eigvals`` under jax.jit, as ``eig``."""
    return _real_eig(a, False)
