"""Central finite differences: the oracle the gradient tests share.

``central(f, x)`` is the gradient of the scalar ``f`` at ``x`` (an array or
a number), one central difference per element; a complex ``x`` gets
``dL/dRe - i dL/dIm`` (JAX's convention, the one pullback follows).  ``f``
is always given a fresh array (never ``x`` itself, so a function that writes
into its argument cannot change the point), and a plain number for a 0-d
``x``.  ``central_differences(f, args, k)`` is the same for the argument
``k`` of ``f(*args)``.

>>> central(lambda v: float(np.sum(v ** 3)), np.array([1.0, 2.0]))
array([ 3., 12.])
>>> complex(np.round(central(lambda z: float(abs(z) ** 2), 1.0 + 2.0j), 6))
(2-4j)
"""
import numpy as np


def central(f, x, h=1e-6):
    """d f / d x by central differences of step ``h``: float64 for a real
    ``x`` (an integer or float32 one too), complex128 for a complex one."""
    x = np.asarray(x)
    x = x.astype(np.complex128 if np.iscomplexobj(x) else np.float64)
    out = np.zeros_like(x)
    parts = (1.0, 1j) if np.iscomplexobj(x) else (1.0,)
    for i in np.ndindex(x.shape):
        for unit in parts:
            d = np.zeros_like(x)
            d[i] = h * unit
            up, down = f((x + d)[()]), f((x - d)[()])
            out[i] += np.conj(unit) * (up - down) / (2 * h)
    return out[()]


def central_differences(f, args, k, eps=1e-6):
    """d f(*args) / d args[k] by ``central``, the other arguments as given."""
    return central(lambda v: f(*args[:k], v, *args[k + 1:]), args[k], eps)
