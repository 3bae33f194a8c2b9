"""Checks that need values, for helpers running on traced or lazy arrays, and
the jit forms of ``np.linalg.eig``/``eigvals`` (issue 18).

A helper that refuses a cotangent at run time on NumPy arrays (a function
of complex singular vectors that depends on their phases) cannot raise on a
traced value (JAX under ``jax.jit``) or a lazy one (Dask): the check's result
is known only when the computation runs.  The helper makes its result NaN
where the check fails, and ``raise_when`` raises the same ``PullbackError``
for JAX from the host when the compiled function runs one (JAX reports it as
a ``JaxRuntimeError`` quoting it); the NaN stays where that is not seen.

Under ``jax.jit``, ``np.linalg.eig`` of a real matrix runs ``eig`` below:
jax.numpy's is complex whatever the eigenvalues, NumPy's is real when they
all are, and the transform (made for NumPy's) expects NumPy's dtypes.  Real
eigenvalues give NumPy's real arrays (LAPACK's ``geev`` in both: the same
vectors); complex ones give NaN and the error below, since the traced code
cannot change its dtype with the values.  A complex matrix is refused when
traced: its eigenvectors' phases are checked on values.

>>> import numpy as np
>>> raise_when(np.array([False, True]), ValueError("bad"))
Traceback (most recent call last):
...
ValueError: bad
"""
from __future__ import annotations

import numpy as np

from ..errors import NonDifferentiableError, NotTraceableError

__all__ = ["raise_when", "eig", "eigvals"]


def _is_jax(x):
    return (type(x).__module__ or "").startswith(("jax", "jaxlib"))


def raise_when(bad, error):
    """Raise ``error`` where ``bad`` (a boolean array) holds a true value:
    now for a NumPy ``bad``; for a traced one from the host, when JAX runs
    the compiled function; never for a lazy (Dask) one, whose caller makes
    its result NaN there."""
    if isinstance(bad, (np.ndarray, np.generic, bool)):
        if np.any(bad):
            raise error
    elif _is_jax(bad):
        import jax

        def check(flag):
            if flag:
                raise error
        jax.debug.callback(check, bad.any())


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
    raise_when(bad, NonDifferentiableError(_COMPLEX, hint=_HINT))
    w = jnp.where(bad[..., None], jnp.nan, jnp.real(w))
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
