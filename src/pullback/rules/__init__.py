"""Differentiation rules, kept apart from the machinery.

Importing this package registers every rule (see ``registry``).  One module
per family: Python operators, NumPy elementwise functions, reductions,
products and shape changes, the ``math`` module and builtins, and array
methods and attributes.  SciPy's (``scipy_*``) are optional: they are
registered the first time a lookup misses while ``scipy`` is imported
(``load_scipy_rules`` below), so ``import pullback`` neither needs
SciPy nor pays for importing ``scipy.stats``.
"""
from pullback.rules import registry
from pullback.rules import (math_rules, methods, numpy_elementwise,  # noqa: F401
                            numpy_linalg_shape, numpy_reductions, operators)
from pullback.rules import numpy_contractions, numpy_layout, numpy_linalg  # noqa: F401
from pullback.rules import numpy_fft, numpy_misc, numpy_statistics, numpy_ufunc_methods  # noqa: F401,E501
from pullback.rules import objects, runtime_helpers  # noqa: F401
from pullback.rules import complex_tangents  # noqa: F401
from pullback.rules import dicts  # noqa: F401
from pullback.rules import math_special, numpy_assorted, numpy_series_classes  # noqa: F401
from pullback.rules import numpy_array_api, numpy_callbacks, numpy_selections  # noqa: F401
from pullback.rules import numpy_poly_arithmetic  # noqa: F401
from pullback.rules import numpy_vectorize  # noqa: F401
from pullback.rules import assorted_helpers  # noqa: F401  (round 6: their helpers' forward rules)
from pullback.rules.registry import (NONDIFF, RULES, Rule, is_nondifferentiable,
                                     lookup, nondifferentiable, register_lazily, vjp)

__all__ = ["registry", "Rule", "vjp", "nondifferentiable", "lookup",
           "is_nondifferentiable", "RULES", "NONDIFF"]


def load_scipy_rules():
    """Register the SciPy rules; False when SciPy does not import."""
    try:
        import scipy  # noqa: F401
    except ImportError:
        return False
    try:
        from pullback.rules import (scipy_integrate, scipy_linalg,  # noqa: F401
                                    scipy_signal, scipy_special, scipy_stats)
    except (ImportError, AttributeError) as err:     # a SciPy without some function
        import warnings
        warnings.warn(f"pullback: the SciPy rules could not be registered ({err!r}); "
                      "SciPy functions will be refused.", RuntimeWarning, stacklevel=2)
        return False
    return True


register_lazily("scipy", load_scipy_rules)
