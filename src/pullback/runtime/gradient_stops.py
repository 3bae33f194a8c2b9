"""``pb.stop_gradient``: a value that carries no gradient, as JAX's
``jax.lax.stop_gradient``.  Registered nondifferentiable (``rules.math_rules``):
what is computed from it is a constant to both modes, and to the derivatives
of derivatives.

>>> import numpy as np
>>> v = stop_gradient(np.array([1.0, 2.0]))
>>> v.flags.writeable
False
>>> stop_gradient({"w": 2.0, "b": (np.ones(1), 3)})["b"][1]
3
"""
from __future__ import annotations

import numpy as np

__all__ = ["stop_gradient"]


def stop_gradient(x):
    """``x`` itself as a value, with no gradient flowing back through it (nor
    a tangent forward).  A NumPy array comes back as a read-only view (no
    copy): a write into it would change ``x``, which the caller still holds;
    lists, tuples and dicts are walked, other values returned as they are."""
    if type(x) is np.ndarray:
        v = x.view()
        v.flags.writeable = False
        return v
    if isinstance(x, (list, tuple)) and not hasattr(x, "_fields"):
        return type(x)(stop_gradient(v) for v in x)
    if type(x) is dict:
        return {k: stop_gradient(v) for k, v in x.items()}
    return x
