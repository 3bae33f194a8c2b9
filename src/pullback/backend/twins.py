"""The jax.numpy twins of what generated code holds: ``np``/``numpy``,
``numpy.linalg``, ``numpy.fft``, ``math`` and ``scipy.special`` (and the
functions taken from them by name) as the namespace build
(``backend.namespace``) binds them under ``jax.jit``, and what jax.numpy
has, which the traceability check (``backend.traceability``) asks.

Before, NumPy's and SciPy's functions; after, their twins:

>>> import math, numpy as np, scipy.special
>>> import jax.numpy as jnp
>>> _numpy_twin(np, jnp).tanh is jnp.tanh, _numpy_twin(np.tanh, jnp) is jnp.tanh
(True, True)
>>> w = _numpy_twin(np, jnp).linalg.eigvalsh(np.array([[2.0, 5.0], [0.3, 3.0]]))
>>> [round(float(v), 4) for v in w]       # NumPy's: the lower triangle read
[1.9169, 3.0831]
>>> _numpy_twin(scipy.special.erf, jnp).__module__.startswith("jax")
True
>>> _numpy_twin(math, jnp).log(8.0, 2.0).item()
3.0
"""
from __future__ import annotations

import types

import numpy as np

_CACHE = {}


# -- what jax.numpy has ------------------------------------------------------------

def _numpy_function(value):
    return isinstance(value, np.ufunc) or (
        callable(value) and (getattr(value, "__module__", "") or "").split(".")[0] == "numpy")


_JNP_NAMES = None


def _jnp_has(name):
    global _JNP_NAMES
    if _JNP_NAMES is None:
        try:
            import jax.numpy as jnp
        except ImportError:
            return False
        _JNP_NAMES = frozenset([n for n in dir(jnp) if not n.startswith("_")]
                               + [f"{m}.{n}" for m in ("linalg", "fft")
                                  for n in dir(getattr(jnp, m)) if not n.startswith("_")])
    return name in _JNP_NAMES


def _twin_name(value):
    """The name a NumPy function taken by name has in jax.numpy (``eigh``
    from ``numpy.linalg`` is ``linalg.eigh``), for ``_jnp_has``."""
    name = getattr(value, "__name__", "")
    module = getattr(value, "__module__", None)
    return f"{module[6:]}.{name}" if module in ("numpy.linalg", "numpy.fft") else name


# -- jax.numpy twins -------------------------------------------------------------

#: ``math`` functions and their jax.numpy twins (the same function of one
#: number; math.log with a base, math.pow and the rest are refused)
_MATH_TWINS = {"sin": "sin", "cos": "cos", "tan": "tan", "asin": "arcsin", "acos": "arccos",
               "atan": "arctan", "atan2": "arctan2", "sinh": "sinh", "cosh": "cosh",
               "tanh": "tanh", "asinh": "arcsinh", "acosh": "arccosh", "atanh": "arctanh",
               "exp": "exp", "expm1": "expm1", "log1p": "log1p", "sqrt": "sqrt",
               "fabs": "abs", "hypot": "hypot", "log": "log", "log10": "log10",
               "log2": "log2", "pi": None, "e": None, "tau": None, "inf": None, "nan": None}


def _math_twin(math, jnp):
    twin = types.SimpleNamespace(**vars(math))
    for name, jname in _MATH_TWINS.items():
        if jname is not None:
            setattr(twin, name, getattr(jnp, jname))

    def log(x, base=None):          # math.log(x, base) is log(x) / log(base)
        return jnp.log(x) if base is None else jnp.log(x) / jnp.log(base)
    twin.log = log
    twin.__name__ = "math"
    return twin


#: SciPy's special functions that jax.scipy.special has with the same
#: meaning (what generated code and the rebound helpers call them by)
_SPECIAL_TWINS = frozenset((
    "erf", "erfc", "erfinv", "expit", "logit", "gammaln", "gamma", "digamma", "polygamma",
    "xlogy", "xlog1py", "logsumexp", "ndtr", "ndtri", "log_ndtr", "i0e", "i1e", "i0", "i1",
    "entr", "betaln", "softmax", "log_softmax", "multigammaln", "rel_entr", "gammainc",
    "gammaincc"))


def _special_twin():
    """``scipy.special`` under jax.jit: the functions of ``_SPECIAL_TWINS``
    from ``jax.scipy.special``; any other name is missing (refused by the
    traceability check, an AttributeError if reached otherwise)."""
    made = _CACHE.get("special")
    if made is None:
        import jax.scipy.special as jsp
        made = types.SimpleNamespace(**{n: getattr(jsp, n) for n in _SPECIAL_TWINS
                                        if hasattr(jsp, n)})
        made.__name__ = "scipy.special"
        made = _CACHE["special"] = made
    return made


def _special_name(value):
    """The name of ``value`` in ``scipy.special`` if it is one of its
    functions (generated code may hold it by any name), else None."""
    import sys
    special = sys.modules.get("scipy.special")
    name = getattr(value, "__name__", None)
    if special is None or not name or getattr(special, name, None) is not value:
        return None
    return name


class _Twin(types.ModuleType):
    """A jax.numpy module with a few functions replaced (``_jax_numpy``);
    every other name is the module's own."""

    def __init__(self, name, module, replaced):
        super().__init__(name)
        self.__dict__.update(replaced)
        self._module = module

    def __getattr__(self, name):
        return getattr(self._module, name)


def _jax_linalg(jnp):
    """``jnp.linalg`` whose Hermitian decompositions read one triangle of
    their input, as NumPy's do (jax.numpy's symmetrize it by default: the
    eigenvalues of ``[[2, 5], [0.3, 3]]`` would be those of its symmetric
    part, not NumPy's)."""
    made = _CACHE.get("linalg")
    if made is None:
        def eigh(a, UPLO="L"):
            return jnp.linalg.eigh(a, UPLO, symmetrize_input=False)

        def eigvalsh(a, UPLO="L"):
            return jnp.linalg.eigvalsh(a, UPLO, symmetrize_input=False)

        def cholesky(a, /, *, upper=False):
            return jnp.linalg.cholesky(a, upper=upper, symmetrize_input=False)
        from ..runtime import linalg_jit        # (real eig of a real matrix, as NumPy's)
        made = _CACHE["linalg"] = _Twin("jax.numpy.linalg", jnp.linalg, dict(
            eigh=eigh, eigvalsh=eigvalsh, cholesky=cholesky, eig=linalg_jit.eig,
            eigvals=linalg_jit.eigvals))
    return made


def _jax_numpy(jnp):
    """jax.numpy as NumPy's twin: the module, with ``linalg`` as above."""
    made = _CACHE.get("numpy")
    if made is None:
        made = _CACHE["numpy"] = _Twin("jax.numpy", jnp, {"linalg": _jax_linalg(jnp)})
    return made


def _numpy_twin(value, jnp):
    if isinstance(value, types.ModuleType) and value.__name__ == "numpy":
        return _jax_numpy(jnp)
    if isinstance(value, types.ModuleType) and value.__name__ == "math":
        return _math_twin(value, jnp)
    if isinstance(value, types.ModuleType):
        twin = _MODULE_TWINS.get(value.__name__)
        return twin(jnp) if twin is not None else value
    special = _special_name(value)
    if special is not None:
        return getattr(_special_twin(), special, value)
    if _numpy_function(value):
        name = getattr(value, "__name__", None)
        module = getattr(value, "__module__", None)
        where = _jax_linalg(jnp) if module == "numpy.linalg" else \
            jnp.fft if module == "numpy.fft" else jnp
        if name and hasattr(where, name):
            return getattr(where, name)
    return value


def _scipy_twin(jnp):
    """``scipy`` under jax.jit: its ``special`` module's twin and nothing else."""
    made = types.SimpleNamespace(special=_special_twin())
    made.__name__ = "scipy"
    return made


#: modules generated code may hold, and their twins under jax.jit
_MODULE_TWINS = {"numpy.linalg": _jax_linalg, "numpy.fft": lambda jnp: jnp.fft,
                 "scipy.special": lambda jnp: _special_twin(), "scipy": _scipy_twin}
