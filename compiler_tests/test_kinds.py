"""Kinds (scalar, array of a rank, unknown) and what they buy: the kind of
what a user function returns is inferred from its own code where it is
defined in the caller's file, so a scalar helper's result needs no
unbroadcast; elsewhere it stays unknown, and gradients are right either way."""
import math

import numpy as np

import pullback as pb
from pullback import pipeline
from pullback.analyses import kinds
from pullback.testing import analyses, function_from_source

S = kinds.of_value(1.0)
V = kinds.of_value(np.ones(3))


def scalar_helper(t, a):
    return math.exp(-a * t) * a + t


def array_helper(v, s):
    return v * s


def with_default(x, k=2.0):
    return x * k


def countdown(x, n):
    if n <= 0:
        return x
    return countdown(x * 0.5, n - 1) + x


def test_kind_of_what_a_helper_returns():
    assert pipeline.return_kind(scalar_helper, {"t": S, "a": S}).shape == "scalar"
    k = pipeline.return_kind(array_helper, {"v": V, "s": S})
    assert (k.shape, k.ndim) == ("array", 1)
    assert pipeline.return_kind(with_default, {"x": S}).shape == "scalar"    # default: 2.0
    assert pipeline.return_kind(with_default, {}) == kinds.UNKNOWN           # x missing
    # a recursive call's result is unknown while its own kind is inferred
    assert pipeline.return_kind(countdown, {"x": S, "n": S}).shape == "unknown"


def scalar_caller(x, a):
    return scalar_helper(x, a) * x + a


def array_caller(v, s):
    return np.sum(array_helper(v, s) + s)


def test_scalar_helper_result_needs_no_unbroadcast():
    assert "unbroadcast" not in pb.source(scalar_caller, 0.5, 2.0, argnums=(0, 1))
    gx, ga = pb.grad(scalar_caller, argnums=(0, 1))(0.5, 2.0)
    e = math.exp(-1.0)
    assert math.isclose(gx, (-2.0 * e * 2.0 + 1.0) * 0.5 + (e * 2.0 + 0.5), rel_tol=1e-14)
    assert math.isclose(ga, (e - 0.5 * e * 2.0) * 0.5 + 1.0, rel_tol=1e-14)


def test_array_helper_result_is_summed_back_onto_a_scalar():
    v = np.array([1.0, 2.0, 4.0])
    gv, gs = pb.grad(array_caller, argnums=(0, 1))(v, 3.0)
    np.testing.assert_array_equal(gv, [3.0, 3.0, 3.0])
    assert gs == 7.0 + 3.0 and type(gs) is float


def test_helper_from_another_file_stays_unknown():
    """Its text is not part of the caller's cache key, so its kind could go
    stale: the caller's adjoint keeps the general code."""
    caller = function_from_source("""
    def caller(x, a):
        return scalar_helper(x, a) * x + a
    """, {"scalar_helper": scalar_helper})
    assert "unbroadcast" in pb.source(caller, 0.5, 2.0, argnums=(0, 1))
    np.testing.assert_allclose(pb.grad(caller, argnums=(0, 1))(0.5, 2.0),
                               pb.grad(scalar_caller, argnums=(0, 1))(0.5, 2.0), rtol=1e-15)


def reshapes(x, m, s, n):
    a = x.reshape(4)
    b = np.ravel(m)
    c = m.reshape(2, 6)
    d = np.reshape(x, (2, 2))
    shape = (3, 2, 2)
    e = m.reshape(shape)
    g = m.T
    h = x.reshape(-1, 1)
    k = m.reshape((n,))
    t = a[1] + b[2] + c[0, 1] + d[1, 1] + e[0, 0, 0] + g[0, 0] + h[0, 0] + k[3]
    s += t
    return s


def test_ravel_and_reshape_to_a_written_shape_have_a_rank():
    """So `a[1]` of them is a number: `s += a[1]` on the scalar argument s is
    then a number's update, not a possible write into a shared array (which
    make fuzz found refused)."""
    params = {"x": kinds.of_value(np.ones(4)), "m": kinds.of_value(np.ones((3, 4))), "s": S,
              "n": kinds.of_value(12)}
    kind_of = analyses(reshapes, param_kinds=params)[3]
    assert {n: kind_of[n].ndim for n in "abcdeghk"} == dict(a=1, b=1, c=2, d=2, e=3, g=2, h=2,
                                                            k=1)
    assert kind_of["t"].shape == "scalar"
    gx, gm, gs = pb.grad(reshapes, argnums=(0, 1, 2))(np.ones(4), np.ones((3, 4)), 1.0, 12)
    np.testing.assert_array_equal(gx, [1.0, 1.0, 0.0, 1.0])
    np.testing.assert_array_equal(gm, [[2.0, 1.0, 1.0, 1.0], [0.0] * 4, [0.0] * 4])
    assert gs == 1.0


def test_every_op_kind_has_an_adjoint():
    # each kind of op is differentiated by its entry in one of the adjoint tables,
    # or (two kinds) by the reverse pass itself; a kind added without one would
    # reach reverse's assertion, never a skipped gradient
    from pullback.analyses.ops import OpKind
    from pullback.reverse.adjoints import ADJOINT_OF, EFFECT_ADJOINT_OF
    elsewhere = {OpKind.UNPACK,     # `a, b = t`: reverse's tuple targets (adjoint_unpack)
                 OpKind.MAPPED}     # a fused np.vectorize call: its kernel's region
    assert not set(ADJOINT_OF) & set(EFFECT_ADJOINT_OF)
    assert set(OpKind) == set(ADJOINT_OF) | set(EFFECT_ADJOINT_OF) | elsewhere
    assert OpKind.CONSTRUCT in ADJOINT_OF        # issue 13's namedtuple/dataclass calls
