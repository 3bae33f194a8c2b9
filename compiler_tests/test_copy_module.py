"""``copy.copy`` and ``copy.deepcopy`` of the values being differentiated:
the copy holds the same values, so each leaf's cotangent goes to the leaf it
was copied from (``rules.math_rules.copied``); a write into the copy stays
refused (the mutation analysis does not see a deep copy as new)."""
import copy

import numpy as np
import pytest

import pullback as pb
from pullback.errors import UnsupportedSyntaxError

W = np.array([0.3, -0.7])


class Holder:
    def __init__(self, w):
        self.w = w


def read_deep_copy(w):
    p = {"w": w, "s": 2.0, "l": [w ** 2, 3.0]}
    q = copy.deepcopy(p)
    return np.sum(q["w"] ** 2) * q["s"] + np.sum(q["l"][0]) + np.sum(p["w"])


def shared_leaves(w):
    q = copy.deepcopy([w, w])          # one array twice: the copy shares it too
    return np.sum(q[0] * 2.0 + q[1] ** 2)


def shallow_then_append(w):
    a = [w, w * 2]
    b = copy.copy(a)
    b.append(w ** 3)
    return sum(np.sum(v) for v in b) + len(a)


def object_copy(w):
    return np.sum(copy.deepcopy(Holder(w)).w ** 3)


@pytest.mark.parametrize("fn, exact", [
    (read_deep_copy, lambda w: 4 * w + 2 * w + 1),
    (shared_leaves, lambda w: 2.0 + 2 * w),
    (shallow_then_append, lambda w: 3.0 + 3 * w ** 2),
    (object_copy, lambda w: 3 * w ** 2),
])
def test_gradient_through_copies_is_exact_in_both_modes(fn, exact):
    assert np.allclose(pb.grad(fn)(W), exact(W), rtol=1e-12)
    t = np.array([0.4, -1.3])
    _, tangent = pb.jvp(fn, (W,), (t,))
    assert np.isclose(tangent, exact(W) @ t, rtol=1e-12)


def test_a_write_into_a_deep_copy_is_refused():
    def f(w):
        c = copy.deepcopy(w)
        c[0] = 5.0
        return np.sum(c ** 2)
    with pytest.raises(UnsupportedSyntaxError, match="may share memory"):
        pb.grad(f)(W)
