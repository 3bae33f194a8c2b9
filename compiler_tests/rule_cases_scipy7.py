"""Cases of ``test_rules``' table (the randomized dot-product check, reverse
and, through ``test_forward``, forward) for the SciPy rules of round 7:
``scipy.stats.expon`` and ``laplace`` (``logpdf``, ``pdf``, ``cdf``),
``scipy.special.kv``/``kve``/``loggamma`` (real and complex),
``scipy.linalg.lu_factor``/``lu_solve`` and ``qr``.  ``test_rules`` calls
``register`` with its ``case`` and its table of names.

Points sit where the functions are smooth: ``expon``'s ``x`` above ``loc``,
``laplace``'s away from it (its kink); the matrices are well conditioned
with distinct pivots (an LU's pivoting does not change under a small move).
"""
import numpy as np

R = ("f64", "f32")
RC = ("f64", "f32", "c128")
F = ("f64",)


def _wellcond(G, shape):
    x = G.normal(shape)
    return x + (3.0 * np.eye(shape[-1])).astype(x.dtype)


def _pivoted(G, n):
    """A matrix whose partial pivoting swaps rows, the pivots well apart."""
    a = np.asarray(G.normal((n, n)))
    a = a + np.diag(np.linspace(3.0, 1.0, n)).astype(a.dtype) * (2 if a.dtype.kind == "c" else 1)
    return a[::-1].copy()


def register(case, names):
    try:
        import scipy.linalg as sla
        import scipy.special as sps
        import scipy.stats as sst
    except ImportError:
        return
    for dist in ("expon", "laplace"):
        for fn in ("logpdf", "pdf", "cdf"):
            names[getattr(getattr(sst, dist), fn)] = f"scipy.stats.{dist}.{fn}"
    for name in ("kv", "kve", "loggamma"):
        names[getattr(sps, name)] = f"scipy.special.{name}"
    for name in ("lu_factor", "lu_solve", "qr"):
        names[getattr(sla, name)] = f"scipy.linalg.{name}"

    for fn in ("logpdf", "pdf", "cdf"):
        key = getattr(sst.expon, fn)
        case(key, lambda G: [G.pos((3, 4)) + 0.3, G.uniform(-0.3, 0.2, (4,)), G.pos((3, 1))], R,
             f32_exact=False)
        case(key, lambda G: [G.pos((5,))], R, f32_exact=False)
        case(key, lambda G: [G.pos(None), G.uniform(-0.3, 0.2), G.pos(None)], F)
        key = getattr(sst.laplace, fn)
        case(key, lambda G: [G.away((3, 4)), G.uniform(-0.1, 0.1, ()), G.pos((4,))], R,
             f32_exact=False)
        case(key, lambda G: [G.away((5,))], R, f32_exact=False)
    for key in (sps.kv, sps.kve):
        case(key, lambda G: [1.5, G.pos((3, 4))], R)
        case(key, lambda G: [np.array([0.0, 1.0, 2.5]), G.pos((2, 1))], R)
        case(key, lambda G: [0, G.pos(None)], F)
    case(sps.loggamma, lambda G: [G.pos((3, 4))], RC)
    case(sps.loggamma, lambda G: [G.uniform(2.0, 5.0, (5,))], RC)
    case(sps.loggamma, lambda G: [G.pos(None)], RC)

    # lu_factor's (lu, piv): piv is integer (no cotangent); lu_solve with the pair
    for n in (3, 4):
        case(sla.lu_factor, lambda G, n=n: [_pivoted(G, n)], RC)
    for trans in (0, 1):
        case(sla.lu_solve, lambda G: [sla.lu_factor(_pivoted(G, 3)), G.normal((3,))], RC,
             trans=trans)
        case(sla.lu_solve, lambda G: [sla.lu_factor(_pivoted(G, 4)), G.normal((4, 2))], RC,
             trans=trans)
    case(sla.lu_solve, lambda G: [sla.lu_factor(_pivoted(G, 3)), G.normal((3, 2))], R, trans=2)
    # qr: 'full' (square, or the extra columns unused) and 'economic', 'r'
    for shape in ((3, 3), (5, 3)):
        case(sla.qr, lambda G, s=shape: [_wellcond(G, s) if s[0] == s[1] else G.normal(s)], RC,
             mode="economic")
        case(sla.qr, lambda G, s=shape: [_wellcond(G, s) if s[0] == s[1] else G.normal(s)], RC,
             mode="r")
    case(sla.qr, lambda G: [_wellcond(G, (3, 3))], RC)
