"""Cases of ``test_rules``' table (the randomized dot-product check, reverse
and, through ``test_forward``, forward) for the rules of issue 13, round 6:
``np.block``, ``np.choose``, ``np.modf``, ``np.frexp``, ``np.ldexp``,
``np.logspace``, ``np.histogram``, ``np.histogram_bin_edges``, ``np.unique`` and the set operations,
``np.vecdot``, ``np.matvec``, ``np.vecmat``.  ``test_rules`` calls
``register`` with its ``case``.

Central differences need a function smooth where it is checked: the set
operations get distinct values (a tie between two inputs moves apart under a
random direction), so which occurrence gets ``g`` is checked by exact values
in ``test_rules_round6``; histogram samples sit inside their bins.
"""
import numpy as np

R = ("f64", "f32")
RC = ("f64", "f32", "c128")


def _away_from_integers(G, shape):
    """Values at least 0.15 from an integer, either sign (np.modf's jumps)."""
    n = 1 if shape is None else int(np.prod(shape, dtype=int))
    q = G.rng.integers(-3, 4, n) + G.rng.uniform(0.15, 0.85, n)
    x = G._out(q, np.zeros(n), shape)
    return x


def _away_from_powers_of_two(G, shape):
    """Mantissas in (0.55, 0.95), exponents in -3..3, either sign (np.frexp)."""
    n = 1 if shape is None else int(np.prod(shape, dtype=int))
    m = G.rng.uniform(0.55, 0.95, n) * G.rng.choice([-1.0, 1.0], n)
    return G._out(np.ldexp(m, G.rng.integers(-3, 4, n)), np.zeros(n), shape)


def _samples(G, n=9):
    """Samples of 0..4 whose extremes sit near 0 and 4 (the edges of 4 bins
    spread from them) and the others near the middle of a bin."""
    ends = np.array([0.0, 4.0]) + G.rng.uniform(-0.05, 0.05, 2)
    inner = G.rng.integers(0, 4, n - 2) + G.rng.uniform(0.3, 0.7, n - 2)
    x = G.rng.permutation(np.concatenate([ends, inner]))
    return G._out(x, np.zeros(n), (n,))


def _distinct(G, shape, shift=0.0):
    x = G.distinct(shape)
    return x + np.asarray(shift, x.dtype)


def register(case):
    # np.block: nested lists of blocks, numbers too
    case(np.block, lambda G: [[[G.normal((2, 3)), G.normal((2, 1))], [G.normal((1, 4))]]], RC)
    case(np.block, lambda G: [[G.normal((2,)), G.normal((3,)), G.normal(None)]], RC,
         f32_exact=False)                # a Python float makes the result float64
    case(np.block, lambda G: [[[G.normal(None), G.normal(None)], [G.normal(()), 2.0]]], RC,
         f32_exact=False)
    case(np.block, lambda G: [G.normal((2, 2))], RC)
    # np.choose: broadcast choices, wrapped and clipped indices, an array of choices
    case(np.choose, lambda G: [np.array([0, 2, 1, 1]),
                               [G.normal((4,)), G.normal(None), G.normal((3, 1))]], RC)
    case(np.choose, lambda G: [np.array([[0, 5], [-1, 2]]), (G.normal((2, 2)), G.normal((2,)),
                                                           G.normal(()))], RC, mode="wrap")
    case(np.choose, lambda G: [np.array([0, 7, -3]), G.normal((2, 3))], RC, mode="clip")
    # a number's parts
    for shape in ((3, 4), (5,), (), None):
        case(np.modf, lambda G, s=shape: [_away_from_integers(G, s)])
        case(np.frexp, lambda G, s=shape: [_away_from_powers_of_two(G, s)])
    case(np.ldexp, lambda G: [G.normal((3, 4)), np.array([1, -2, 0, 3])])
    case(np.ldexp, lambda G: [G.normal((3, 1)), np.array([[1, 2]])])
    case(np.ldexp, lambda G: [G.normal(None), 3])
    case(np.ldexp, lambda G: [G.normal(()), np.array([-1, 2])])
    # np.logspace: scalar and array ends, another base and axis, no endpoint
    case(np.logspace, lambda G: [G.normal(None), G.normal(None)], RC, num=5)
    case(np.logspace, lambda G: [G.normal((2,)), G.normal((3, 2))], RC, num=4, base=2.0,
         axis=1)
    case(np.logspace, lambda G: [G.normal(()), G.normal((2,))], R, num=3, endpoint=False,
         base=np.array([2.0, 3.0]), axis=-1, f32_exact=False)    # a float64 base
    # np.histogram: edges from the data (a moves them), a range, edges given
    case(np.histogram, lambda G: [_samples(G)], R, bins=4)
    case(np.histogram, lambda G: [_samples(G)], R, bins=4, weights=None, density=True)
    case(np.histogram, lambda G: [_samples(G), 4], R, weights=np.linspace(0.5, 2.0, 9))
    case(np.histogram, lambda G: [_samples(G), 4, None, True, G.pos((9,))], R)
    case(np.histogram, lambda G: [_samples(G), 5, (-0.5, 4.5), True, G.pos((9,))], R)
    case(np.histogram, lambda G: [_samples(G), np.array([-1.0, 1.0, 2.0, 5.0]), None, None,
                                  G.normal((9,))], R)
    case(np.histogram_bin_edges, lambda G: [_samples(G)], R, bins=4)
    case(np.histogram_bin_edges, lambda G: [_samples(G).reshape(3, 3), "auto"], R)
    case(np.histogram_bin_edges, lambda G: [_samples(G), 3, (0.0, 5.0)], R)
    # unique values and set operations (distinct values: see the docstring)
    case(np.unique, lambda G: [_distinct(G, (6,))], R)
    case(np.unique, lambda G: [_distinct(G, (2, 3))], R, return_index=True, return_counts=True)
    case(np.unique, lambda G: [_distinct(G, (4, 3))], R, axis=0)
    case(np.unique, lambda G: [_distinct(G, (3, 4))], R, axis=1, return_inverse=True)
    for key in (getattr(np, n) for n in ("unique_values", "unique_counts", "unique_inverse",
                                          "unique_all") if hasattr(np, n)):      # NumPy 2
        case(key, lambda G: [_distinct(G, (5,))], R)
    for key in (np.union1d, np.setxor1d, np.intersect1d, np.setdiff1d):
        case(key, lambda G: [_distinct(G, (4,)), _distinct(G, (2, 2), 0.1)], RC)
    case(np.intersect1d, lambda G: [_distinct(G, (4,)), _distinct(G, (3,), 0.1)], R,
         return_indices=True)
    case(np.setdiff1d, lambda G: [_distinct(G, (5,)), _distinct(G, (3,), 0.1)], R,
         assume_unique=True)
    # NumPy 2's gufuncs
    if hasattr(np, "vecdot"):
        for s1, s2, kw in [((3, 4), (4,), {}), ((2, 1, 4), (3, 4), {}), ((4,), (4,), {}),
                           ((4, 3), (4,), {"axis": 0}), ((2, 4, 3), (4, 1), {"axis": -2})]:
            case(np.vecdot, lambda G, s1=s1, s2=s2: [G.normal(s1), G.normal(s2)], RC, **kw)
    if hasattr(np, "matvec"):
        for s1, s2 in [((3, 4), (4,)), ((2, 3, 4), (1, 4)), ((3, 4), (2, 4)), ((1, 3, 4), (2, 4))]:
            case(np.matvec, lambda G, s1=s1, s2=s2: [G.normal(s1), G.normal(s2)], RC)
        for s1, s2 in [((4,), (4, 3)), ((2, 4), (4, 3)), ((4,), (2, 4, 3)), ((2, 1, 4), (3, 4, 2))]:
            case(np.vecmat, lambda G, s1=s1, s2=s2: [G.normal(s1), G.normal(s2)], RC)
