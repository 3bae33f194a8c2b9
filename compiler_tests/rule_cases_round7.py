"""Cases of ``test_rules``' table (the randomized dot-product check, reverse
and, through ``test_forward``, forward) for arguments round 7 made
differentiable: ``np.select``'s ``default`` and ``np.average``'s ``weights``
(``runtime.weighted_choices``).  ``test_rules`` calls ``register`` with its
``case``.  Weights are positive (a sum of weights near zero is a pole).
"""
import numpy as np

R = ("f64", "f32")
RC = ("f64", "f32", "c128")


def register(case):
    # np.select(condlist, choicelist, default): the default broadcast, and of its own shape
    case(np.select, lambda G: [[G.bools((3, 4)), G.bools((3, 4))],
                               [G.normal((3, 4)), G.normal((4,))], G.normal((4,))], RC)
    case(np.select, lambda G: [[G.bools((5,))], [G.normal((5,))], G.normal(None)], RC)
    case(np.select, lambda G: [[G.bools((2, 3)), G.bools((2, 3))],
                               [G.normal((2, 3)), G.normal((2, 3))], G.normal((2, 3))], RC)
    # np.average(a, axis, weights): weights along an axis, of a's shape, with returned
    case(np.average, lambda G: [G.normal((3, 4)), 1, G.pos((4,))], R, f32_exact=False)
    case(np.average, lambda G: [G.normal((3, 4)), 0, G.pos((3,))], R, f32_exact=False)
    case(np.average, lambda G: [G.normal((3, 4)), None, G.pos((3, 4))], R, f32_exact=False)
    case(np.average, lambda G: [G.normal((3, 4)), 1, G.pos((3, 4))], R, f32_exact=False,
         keepdims=True)
    case(np.average, lambda G: [G.normal((3, 4)), 0, G.pos((3,))], R, f32_exact=False,
         returned=True)
    case(np.average, lambda G: [G.normal((5,)), None, G.pos((5,))], R, f32_exact=False,
         returned=True)
