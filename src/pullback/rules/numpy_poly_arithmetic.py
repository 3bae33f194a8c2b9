"""Rules for the arithmetic of coefficient arrays (highest power first, as
``np.polyval`` reads them): ``np.polyadd``, ``np.polysub``, ``np.polymul``,
``np.polyder`` and ``np.polyint``; ``np.poly1d`` objects are not arrays and
get no rule.  Sums align the shorter array on the right (its constant term
with the other's), so each gets the trailing part of ``g``; a product is a
convolution; ``polyder`` and ``polyint`` scale each coefficient by a factor
that depends on its power only (``polyint``'s constants ``k`` carry no
gradient).

Before, a derivative polynomial evaluated; after, its rule in the adjoint:

>>> import numpy as np, pullback as pb
>>> from pullback.testing import adjoint_source, function_from_source
>>> f = function_from_source('''
... def f(p):
...     return np.polyval(np.polyder(p), 2.0)
... ''')
>>> print(adjoint_source(f, np.array([1.0, 0.0, 3.0])))
def f_adjoint(residuals, out_bar):
    polyder_p, p = residuals
    polyder_p_bar = series_grad(out_bar, 2.0, polyder_p, 'polyval', 'c')
    p_bar = np.concatenate([polyder_p_bar * np.polyder(np.ones(np.shape(p)), 1), np.zeros(np.size(p) - np.size(polyder_p_bar))])
    return (project(p_bar, p),)
>>> pb.grad(f)(np.array([1.0, 0.0, 3.0]))        # d/dp of 2 p0 x + p1 at x = 2
array([4., 1., 0.])
"""
import numpy as np

from pullback.rules.registry import facts, jvp, linear, multilinear, vjp
from pullback.runtime import convolve_grads


@vjp(np.polyadd)
def polyadd(g, ans, a1, a2):
    return (np.reshape(np.asarray(g)[np.size(g) - np.size(a1):], np.shape(a1)),
            np.reshape(np.asarray(g)[np.size(g) - np.size(a2):], np.shape(a2)))


@vjp(np.polysub)
def polysub(g, ans, a1, a2):
    return (np.reshape(np.asarray(g)[np.size(g) - np.size(a1):], np.shape(a1)),
            -np.reshape(np.asarray(g)[np.size(g) - np.size(a2):], np.shape(a2)))


@vjp(np.polymul)
def polymul(g, ans, a1, a2):
    grads = convolve_grads(g, np.atleast_1d(a1), np.atleast_1d(a2), "full")
    return np.reshape(grads[0], np.shape(a1)), np.reshape(grads[1], np.shape(a2))


@vjp(np.polyder)
def polyder(g, ans, p, m=1):
    # the m lowest coefficients vanish; the others are scaled by falling factorials
    return np.concatenate([g * np.polyder(np.ones(np.shape(p)), m),
                           np.zeros(np.size(p) - np.size(g))])


@vjp(np.polyint)
def polyint(g, ans, p, m=1, k=None):
    return g[:np.size(p)] * np.polyint(np.ones(np.shape(p)), m)[:np.size(p)]


# --- forward rules ---

linear(np.polyadd, np.polysub, np.polyder)
multilinear(np.polymul)


@jvp(np.polyint)
def polyint_jvp(t, ans, p, m=1, k=None):
    # the integration constants k are constants: their tangent is zero
    return np.polyint(t, m)


# -- facts (rules/registry.py: facts) ------------------------------------------------
facts(np.polyadd, np.polysub, np.polymul, np.polyder, np.polyint, fresh=True)
