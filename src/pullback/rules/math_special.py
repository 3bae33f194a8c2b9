"""Rules for ``math``'s gamma functions, which have no NumPy twin:
``math.lgamma`` (``log |Gamma(x)|``, so its derivative is digamma for
negative ``x`` too) and ``math.gamma``.  Digamma is computed without SciPy
(``runtime.special_support.digamma``); at the poles (0, -1, -2...) it is
NaN, where Python's own ``math.gamma`` raises.

Before, a log-gamma in a scalar loop; after, its rule in the adjoint:

>>> import math, pullback as pb
>>> from pullback.testing import adjoint_source, function_from_source
>>> f = function_from_source('''
... def f(x):
...     return math.lgamma(x)
... ''')
>>> print(adjoint_source(f, 2.5))
def f_adjoint(residuals, out_bar):
    x, = residuals
    x_bar = out_bar * digamma(x)
    return (x_bar if type(x_bar) is float else project(x_bar, x),)
>>> round(pb.grad(f)(1.0), 12)                 # digamma(1) = -0.5772...
-0.577215664902
"""
import math

from pullback.rules.registry import vjp
from pullback.runtime import digamma


@vjp(math.lgamma)
def lgamma(g, ans, x):
    return g * digamma(x)


@vjp(math.gamma)
def gamma(g, ans, x):
    return g * ans * digamma(x)
