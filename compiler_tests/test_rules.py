"""Tests of the differentiation rules (``pullback.rules``).

Every registered rule is checked by a randomized dot-product test (as in
autograd's ``test_systematic.py``): for random inputs ``x_k``, an output
cotangent ``u`` and input directions ``v_k``,

    Re<u, J v> (central differences, float64)  ==  sum_k Re<vjp_k(u), v_k>

with ``<a, b> = sum(a * b)`` unconjugated (JAX's convention).  The rule is
called directly; its contributions are unbroadcast (``broadcasts=True``) and
realified onto real inputs as the machinery does.  ``CASES`` holds one or
more entries per primitive; ``test_every_rule_has_a_case`` fails for a rule
that has none.  Exact-value tests follow: ties, zeros in ``prod``, the
complex convention, repeated indices.
"""
import ast
import copy
import dataclasses
import inspect
import math
import operator
import textwrap
import zlib

import numpy as np
import pytest

import pullback.rules  # noqa: F401  (registers the rules)
from pullback import runtime
from pullback.rules import registry

RULES = registry.RULES
STEP = 1e-6
R = ("f64", "f32")            # real inputs, float64 and float32
RC = ("f64", "f32", "c128")   # and complex
F = ("f64",)                  # float64 (or Python float) only


# --- random inputs ----------------------------------------------------------


class Gen:
    """Random inputs of one kind: ``f64``, ``f32`` or ``c128``.

    ``shape=None`` gives a Python float (complex for ``c128``), ``()`` a 0-d
    array.  Complex values get a small imaginary part that keeps them off
    the branch cuts of the functions they feed.
    """

    def __init__(self, rng, kind):
        self.rng, self.kind = rng, kind

    def _out(self, re, im, shape):
        val = re + 1j * im if self.kind == "c128" else re
        if shape is None:
            return complex(val[0]) if self.kind == "c128" else float(val[0])
        arr = np.reshape(val, shape)
        return arr.astype(np.float32) if self.kind == "f32" else arr

    def _size(self, shape):
        return 1 if shape is None else int(np.prod(shape, dtype=int))

    def uniform(self, lo, hi, shape=None, im=0.5):
        n = self._size(shape)
        return self._out(self.rng.uniform(lo, hi, n), self.rng.uniform(-im, im, n), shape)

    def normal(self, shape=None):
        n = self._size(shape)
        return self._out(self.rng.normal(size=n), 0.5 * self.rng.normal(size=n), shape)

    def pos(self, shape=None):
        return self.uniform(0.5, 2.0, shape)

    def unit(self, shape=None):
        return self.uniform(-0.8, 0.8, shape, im=0.3)

    def gt1(self, shape=None):
        return self.uniform(1.5, 3.0, shape)

    def away(self, shape=None):
        """Magnitudes in (0.3, 2) with random signs: away from kinks at 0."""
        n = self._size(shape)
        re = self.rng.uniform(0.3, 2.0, n) * self.rng.choice([-1.0, 1.0], n)
        return self._out(re, 0.5 * self.rng.normal(size=n), shape)

    def distinct(self, shape=None):
        """Real values at least 0.2 apart: no ties for max/min."""
        n = self._size(shape)
        re = self.rng.permutation(n) * 0.25 + self.rng.uniform(0, 0.05, n) - 0.125 * n
        return self._out(re, np.zeros(n), shape)

    def bools(self, shape):
        return self.rng.random(shape) > 0.5

    def mod_pair(self, xshape=None, yshape=None):
        """(x, y) with x / y away from integers: no jump of x mod y nearby."""
        n = self._size(xshape)
        q = self.rng.integers(-3, 4, n) + self.rng.uniform(0.15, 0.85, n)
        y = self.pos(yshape)
        return [self._out(q, np.zeros(n), xshape) * y, y]


# --- the table ----------------------------------------------------------------


@dataclasses.dataclass
class Case:
    key: object
    make: object                 # Gen -> list of positional arguments
    kinds: tuple = R
    kw: dict = dataclasses.field(default_factory=dict)
    f32_exact: bool = True       # contributions stay float32 without projection
    quiet: bool = False          # an unused contribution may warn (log of x < 0)
    fixed: tuple = ()            # differentiable parameters held fixed (SciPy refuses moves)
    tol: float = None            # rtol for float64, when finite differences are noisy


CASES = []


def case(key, make, kinds=R, f32_exact=True, quiet=False, fixed=(), tol=None, **kw):
    CASES.append(Case(key, make, kinds, kw, f32_exact, quiet, fixed, tol))


def unary(keys, gen, kinds, shapes=((3, 4), (5,), (), None)):
    for key in keys:
        for s in shapes:
            case(key, lambda G, s=s: [getattr(G, gen)(s)], kinds)


def binary(keys, gen1, gen2, kinds, pairs, **opts):
    for key in keys:
        for s1, s2 in pairs:
            case(key, lambda G, s1=s1, s2=s2: [getattr(G, gen1)(s1), getattr(G, gen2)(s2)],
                 kinds, **opts)


BROADCAST_PAIRS = [((3, 4), (3, 4)), ((3, 1), (4,)), ((2, 3), ()), (None, None),
                   ((3,), None), (None, (2, 2))]
MOD_SHAPES = [((3, 4), (3, 4)), ((3, 4), ()), ((3, 4), None), (None, None)]
MATMUL_PAIRS = [((3, 4), (4, 2)), ((4,), (4,)), ((4,), (4, 2)), ((3, 4), (4,)),
                ((2, 3, 4), (4, 5)), ((2, 3, 4), (2, 4, 5)), ((1, 3, 4), (2, 4, 5)),
                ((4,), (2, 4, 5)), ((2, 3, 4), (4,))]

# operators and their ufunc twins
binary([operator.add, np.add, operator.sub, np.subtract, operator.mul, np.multiply],
       "normal", "normal", RC, BROADCAST_PAIRS)
binary([operator.truediv, np.divide], "normal", "pos", RC, BROADCAST_PAIRS)
for key in (operator.mod, np.mod, np.fmod):
    for s1, s2 in MOD_SHAPES:
        case(key, lambda G, s1=s1, s2=s2: G.mod_pair(s1, s2))
binary([operator.pow, np.power], "pos", "normal", RC, BROADCAST_PAIRS[:-1])
# log of a Python float base is a float64 scalar: the exponent's cotangent is
# float64 until projected
binary([operator.pow, np.power], "pos", "normal", RC, BROADCAST_PAIRS[-1:], f32_exact=False)
binary([np.float_power], "pos", "normal", RC, BROADCAST_PAIRS[:3], f32_exact=False)
# a constant integer exponent with negative bases: the exponent's contribution
# (log of a negative number) is NaN, and unused
for key in (operator.pow, np.power):
    case(key, lambda G: [G.normal((3, 4)), 2], quiet=True)
    case(key, lambda G: [G.normal(None), 3], quiet=True)
binary([operator.matmul, np.matmul], "normal", "normal", RC, MATMUL_PAIRS)
unary([operator.neg, np.negative, operator.pos, np.positive], "normal", RC)

# elementwise NumPy
unary([np.exp, np.exp2, np.expm1, np.square, np.sin, np.cos, np.sinh, np.cosh,
       np.real, np.imag, np.conjugate], "normal", RC)
unary([np.log, np.log2, np.log10, np.log1p, np.sqrt], "pos", RC)
unary([np.tan, np.arcsin, np.arccos, np.arctan, np.tanh, np.arcsinh, np.arctanh],
      "unit", RC)
unary([np.arccosh], "gt1", RC)
case(np.arccosh, lambda G: [-G.gt1((3,))], ("c128",))   # left half plane
unary([np.cbrt, np.fabs], "away", R)
unary([np.reciprocal, np.abs, np.angle], "away", RC)
case(np.angle, lambda G: [G.away((3,))], RC, deg=True)
unary([np.deg2rad, np.radians, np.rad2deg, np.degrees], "normal", R)
binary([np.arctan2, np.logaddexp, np.logaddexp2], "normal", "normal", R,
       BROADCAST_PAIRS[:4])
binary([np.hypot], "away", "away", R, BROADCAST_PAIRS[:4])
binary([np.maximum, np.minimum, np.fmax, np.fmin], "normal", "normal", R,
       BROADCAST_PAIRS)


def _clipped(G, shape):
    """Values near -1.5, 0 and 1.5: away from bounds near +-0.5."""
    centre = G.rng.choice([-1.5, 0.0, 1.5], shape)
    return (centre + G.uniform(-0.3, 0.3, shape)).astype(G.normal(shape).dtype)


case(np.clip, lambda G: [_clipped(G, (3, 4)), -0.5, 0.5])
case(np.clip, lambda G: [_clipped(G, (3, 4)), G.uniform(-0.55, -0.45, (4,)),
                         G.uniform(0.45, 0.55, (3, 1))])
case(np.clip, lambda G: [_clipped(G, (5,)), None, 0.5])
case(np.clip, lambda G: [_clipped(G, (5,)), -0.5, None])
case(np.where, lambda G: [G.bools((3, 4)), G.normal((3, 4)), G.normal((4,))], RC)
case(np.where, lambda G: [G.bools((3, 4)), G.normal(None), G.normal((3, 1))], RC)
case(np.full_like, lambda G: [G.normal((3, 4)), G.normal(None)])
case(np.full_like, lambda G: [G.normal((3, 4)), G.normal((4,))])
case(np.full, lambda G: [(3, 4), G.normal(None)])
case(np.full, lambda G: [(3, 4), G.normal((3, 1))])

# reductions, as functions and as methods
AXES = [{}, {"axis": 0}, {"axis": 1, "keepdims": True}, {"axis": -1},
        {"keepdims": True}]


def reductions(keys, gen, kinds, extra=()):
    for key in keys:
        for kw in AXES + list(extra):
            case(key, lambda G: [getattr(G, gen)((3, 4))], kinds, **kw)
        case(key, lambda G: [getattr(G, gen)((2, 3, 4))], kinds, axis=(0, 2))
        if not isinstance(key, str):
            case(key, lambda G: [getattr(G, gen)((5,))], kinds)


reductions([np.sum, "ndarray.sum", np.mean, "ndarray.mean"], "normal", RC)
reductions([np.prod, "ndarray.prod"], "pos", RC)
reductions([np.max, np.amax, np.min, np.amin, "ndarray.max", "ndarray.min"],
           "distinct", R)
reductions([np.var, "ndarray.var", np.std, "ndarray.std"], "normal", RC,
           extra=[{"ddof": 1}, {"axis": 0, "ddof": 1, "keepdims": True}])
for key in (np.cumsum, "ndarray.cumsum"):
    for kw in ({}, {"axis": 0}, {"axis": 1}, {"axis": -1}):
        case(key, lambda G: [G.normal((3, 4))], RC, **kw)

# ufunc methods (rules.numpy_ufunc_methods): axis=0 unless told, axis=None all axes
UFUNC_AXES = [{}, {"axis": 1}, {"axis": -1, "keepdims": True}, {"axis": None},
              {"axis": (0, 1)}, {"axis": 0, "keepdims": True}]
for key, gen, kinds in [(np.add.reduce, "normal", RC), (np.multiply.reduce, "pos", RC),
                        (np.maximum.reduce, "distinct", R), (np.minimum.reduce, "distinct", R),
                        (np.fmax.reduce, "distinct", R), (np.fmin.reduce, "distinct", R),
                        (np.logaddexp.reduce, "normal", R), (np.logaddexp2.reduce, "normal", R)]:
    for kw in UFUNC_AXES:
        case(key, lambda G, gen=gen: [getattr(G, gen)((3, 4))], kinds, **kw)
    case(key, lambda G, gen=gen: [getattr(G, gen)((5,))], kinds)
for key, gen, kinds in [(np.add.accumulate, "normal", RC), (np.multiply.accumulate, "away", RC),
                        (np.maximum.accumulate, "normal", R),
                        (np.minimum.accumulate, "normal", R)]:
    for kw in ({}, {"axis": 1}, {"axis": -1}):
        case(key, lambda G, gen=gen: [getattr(G, gen)((3, 4))], kinds, **kw)
    case(key, lambda G, gen=gen: [getattr(G, gen)((5,))], kinds)
for key in (np.add.outer, np.subtract.outer, np.multiply.outer):
    for sa, sb in [((3,), (4,)), ((2, 3), (4,)), ((3,), ()), ((), (2, 2)), (None, (3,))]:
        case(key, lambda G, sa=sa, sb=sb: [G.normal(sa), G.normal(sb)], RC,
             f32_exact=sa is not None)

# products
DOT_PAIRS = [((3, 4), (4, 2)), ((4,), (4,)), ((4,), (4, 2)), ((3, 4), (4,)),
             ((2, 3, 4), (4, 5)), ((3, 4), (2, 4, 5)), ((2, 3, 4), (5, 4, 2)),
             ((), (3,)), ((3, 4), ())]
binary([np.dot, "ndarray.dot"], "normal", "normal", RC,
       [p for p in DOT_PAIRS if p[0] != ()])
case(np.dot, lambda G: [G.normal(()), G.normal((3,))], RC)
binary([np.inner], "normal", "normal", RC,
       [((3, 4), (5, 4)), ((4,), (4,)), ((2, 3, 4), (4,)), ((4,), (2, 3, 4)),
        ((), (3,)), ((3,), ())])
binary([np.outer], "normal", "normal", RC, [((3,), (4,)), ((2, 2), (3,))])
binary([np.vdot], "normal", "normal", RC, [((4,), (4,)), ((2, 3), (6,))])

# shape changes
for axes in (None, (1, 0, 2), (-1, 0, 1)):
    case(np.transpose, lambda G, axes=axes: [G.normal((2, 3, 4)), axes], RC)
case(np.reshape, lambda G: [G.normal((3, 4)), (2, 6)], RC)
case(np.reshape, lambda G: [G.normal((3, 4)), (-1,)], RC)
case(np.reshape, lambda G: [G.normal((3, 4)), (4, 3)], RC, order="F")
for key in (np.ravel, "ndarray.ravel", "ndarray.flatten"):
    case(key, lambda G: [G.normal((3, 4))], RC)
    case(key, lambda G: [G.normal((3, 4))], RC, order="F")
    case(key, lambda G: [np.asfortranarray(G.normal((3, 4)))], RC, order="A")
    case(key, lambda G: [G.normal((4, 3)).T[::-1]], RC, order="K")
    case(key, lambda G: [G.normal((3, 4, 2)).transpose(2, 0, 1)], RC, order="K")
for key in (np.squeeze, "ndarray.squeeze"):
    case(key, lambda G: [G.normal((3, 1, 4))], RC)
    case(key, lambda G: [G.normal((3, 1, 4))], RC, axis=1)
case(np.expand_dims, lambda G: [G.normal((3, 4)), 1], RC)
case(np.expand_dims, lambda G: [G.normal((3, 4)), (0, 2)], RC)
case(np.broadcast_to, lambda G: [G.normal((3, 1)), (2, 3, 4)], RC)
case(np.broadcast_to, lambda G: [G.normal(()), (3,)], RC)
case(np.broadcast_to, lambda G: [G.normal(None), (3,)], RC)
for key in (np.swapaxes, "ndarray.swapaxes"):
    case(key, lambda G: [G.normal((2, 3, 4)), 0, 2], RC)
case(np.moveaxis, lambda G: [G.normal((2, 3, 4)), 0, -1], RC)
case(np.moveaxis, lambda G: [G.normal((2, 3, 4)), (0, 1), (2, 0)], RC)

# joins
case(np.concatenate, lambda G: [[G.normal((2, 3)), G.normal((4, 3))]], RC)
case(np.concatenate, lambda G: [(G.normal((2, 3)), G.normal((2, 1)))], RC, axis=1)
case(np.concatenate, lambda G: [[G.normal((2, 3)), G.normal((4,))]], RC, axis=None)
case(np.stack, lambda G: [[G.normal((3,)) for _ in range(3)]], RC)
case(np.stack, lambda G: [(G.normal((2, 3)), G.normal((2, 3)))], RC, axis=1)
case(np.stack, lambda G: [[G.normal((2, 3)), G.normal((2, 3))]], RC, axis=-1)
case(np.stack, lambda G: [[G.normal(None), G.normal(None)]], RC)
case(np.hstack, lambda G: [[G.normal((3,)), G.normal((2,))]], RC)
case(np.hstack, lambda G: [(G.normal((2, 3)), G.normal((2, 1)))], RC)
# a Python float joins as float64, so the result (and g) is float64
case(np.hstack, lambda G: [[G.normal(None), G.normal((2,))]], RC, f32_exact=False)
case(np.vstack, lambda G: [[G.normal((3,)), G.normal((3,))]], RC)
case(np.vstack, lambda G: [(G.normal((2, 3)), G.normal((1, 3)), G.normal((3,)))], RC)

# copies, conversions
for key in (np.copy, "ndarray.copy"):
    case(key, lambda G: [G.normal((3, 4))], RC)
case(np.asarray, lambda G: [G.normal((3, 4))], RC)
case(np.asarray, lambda G: [[G.normal(None) for _ in range(3)]], RC)
case(np.asarray, lambda G: [[G.normal((3,)), G.normal((3,))]], RC)
case(np.array, lambda G: [[G.normal(None) for _ in range(3)]], RC)
case(np.array, lambda G: [[[G.normal(None), G.normal(None)], (G.normal(None), G.normal(None))]], RC)
case(np.array, lambda G: [(G.normal((2,)), G.normal((2,)))], RC)
case(np.array, lambda G: [G.normal((3,))], RC, ndmin=3)
case(np.array, lambda G: [[G.normal(None), G.normal(None)]], RC, ndmin=2)
for key in (np.astype, "ndarray.astype"):
    case(key, lambda G: [G.normal((3, 4)), np.float64], R, f32_exact=False)
    case(key, lambda G: [G.normal((3, 4)), np.complex128], R, f32_exact=False)

# indexing
for index in (2, -1, slice(1, 3), (slice(None), 1), (Ellipsis, 0), (None, 1),
              np.array([0, 0, 3]), (np.array([0, 2, 0]), np.array([1, 1, 1])),
              [4, 4, 4]):
    case(operator.getitem, lambda G, index=index: [G.normal((5, 4)), index], RC)
case(operator.getitem, lambda G: [G.normal((5,)), G.bools((5,))], RC)
case(np.take, lambda G: [G.normal((5,)), np.array([3, 0, 3])], RC)
case(np.take, lambda G: [G.normal((4, 3)), np.array([[2, 0], [2, 1]])], RC, axis=1)
case(operator.getitem, lambda G: [G.normal((5, 4)), G.bools((5, 4))], RC)
case(operator.getitem, lambda G: [[G.normal(None) for _ in range(4)], 1], RC)
case(operator.getitem, lambda G: [[G.normal(None) for _ in range(4)], slice(1, 3)], RC)
case(operator.getitem, lambda G: [(G.normal((2,)), G.normal(None)), 0], RC)
case(operator.getitem, lambda G: [{"a": G.normal(None), "b": G.normal((2,))}, "b"], RC)

# math module: Python floats
unary([math.exp, math.exp2, math.expm1, math.sin, math.cos, math.atan, math.sinh,
       math.cosh, math.asinh, math.degrees, math.radians, math.erf, math.erfc,
       float], "normal", F, shapes=(None,))
unary([math.log, math.log1p, math.log2, math.log10, math.sqrt], "pos", F, shapes=(None,))
unary([math.tan, math.asin, math.acos, math.tanh, math.atanh], "unit", F, shapes=(None,))
unary([math.acosh], "gt1", F, shapes=(None,))
unary([math.cbrt, math.fabs], "away", F, shapes=(None,))
case(math.log, lambda G: [G.pos(), 2.0], F)
binary([math.pow], "pos", "normal", F, [(None, None)])
case(math.pow, lambda G: [G.normal(), 3.0], F)
binary([math.atan2], "normal", "normal", F, [(None, None)])
binary([math.hypot, math.copysign], "away", "away", F, [(None, None)])
for key in (math.fmod, math.remainder):
    case(key, lambda G: G.mod_pair(), F)
case(math.ldexp, lambda G: [G.normal(), 3], F)
case(float, lambda G: [np.float64(G.normal())], F)
case(float, lambda G: [G.normal(())], F)

# builtins
for key in (abs, operator.abs):
    for s in (None, (3, 4), ()):
        case(key, lambda G, s=s: [G.away(s)], RC)
binary([pow], "pos", "normal", RC, [(None, None), ((3,), (3,)), ((2, 3), None)])
case(pow, lambda G: [G.normal(None), 2], F, quiet=True)
case(complex, lambda G: [G.normal(), G.normal()], F)
case(sum, lambda G: [[G.normal() for _ in range(4)]], RC)
case(sum, lambda G: [G.normal((3, 4))], RC)
case(sum, lambda G: [(G.normal((2,)), G.normal((2,)), G.normal(None))], RC)
case(sum, lambda G: [[G.normal(), G.normal()], G.normal()], RC)   # start is static
# dicts the function builds (frontend/dict_stores.py): new dicts
case(runtime.control.dict_set,
     lambda G: [{"a": G.normal((3,)), "b": G.normal(None)}, "b", G.normal((2,))])
case(runtime.control.dict_set, lambda G: [{"a": G.normal((3,))}, "c", G.normal(None)])
case(runtime.control.dict_setdefault, lambda G: [{"a": G.normal((3,))}, "c", G.normal(None)])
case(runtime.control.dict_setdefault, lambda G: [{"a": G.normal((3,))}, "a", G.normal((3,))])
case(runtime.control.dict_merge,
     lambda G: [{"a": G.normal((3,)), "b": G.normal(None)}, {"b": G.normal((2,)), "c": 1.0}])
# (changed in place, frontend/dict_in_place.py: sparse cotangents, the stored key last)
case(runtime.control.dict_store,
     lambda G: [{"a": G.normal((3,)), "b": G.normal(None)}, "b", G.normal((2,))])
case(runtime.control.dict_store, lambda G: [{"a": G.normal((3,))}, "c", G.normal(None)])
case(runtime.control.dict_item, lambda G: [{"a": G.normal((3,)), "b": G.normal(None)}, "a"])
case(runtime.r_items, lambda G: [G.normal((3,)), G.normal(None), G.normal((2,))], RC)
case(runtime.r_items, lambda G: [G.normal((2, 3)), G.normal((1, 3))], RC)
case(runtime.c_items, lambda G: [G.normal((3,)), G.normal((3,))], RC)
case(runtime.c_items, lambda G: [G.normal((3, 2)), G.normal((3,))], RC)
for key in (tuple, list):
    case(key, lambda G: [[G.normal((2,)), G.normal(None)]], RC)
    case(key, lambda G: [(G.normal((3, 2)), G.normal(()))], RC)
    case(key, lambda G: [G.normal((3, 2))], RC)
case(math.fsum, lambda G: [[G.normal() for _ in range(4)]], F)
for key in (max, min):
    case(key, lambda G: [G.normal(), G.normal()], R)
    case(key, lambda G: [G.normal(), G.normal(), G.normal()], R)
    case(key, lambda G: [[G.normal() for _ in range(4)]], R)
    case(key, lambda G: [(G.normal(), G.normal())], R)
    case(key, lambda G: [G.distinct((5,))], R)

# array methods and attributes
case("ndarray.reshape", lambda G: [G.normal((3, 4)), 2, 6], RC)
case("ndarray.reshape", lambda G: [G.normal((3, 4)), (6, -1)], RC)
case("ndarray.reshape", lambda G: [G.normal((3, 4)), (4, 3)], RC, order="F")
case("ndarray.transpose", lambda G: [G.normal((2, 3, 4))], RC)
case("ndarray.transpose", lambda G: [G.normal((2, 3, 4)), 1, 0, 2], RC)
case(copy.copy, lambda G: [G.normal((3, 4))], RC)
case(copy.deepcopy, lambda G: [G.normal((3, 4))], RC)
case(copy.deepcopy, lambda G: [G.normal(None)], RC)
case("ndarray.transpose", lambda G: [G.normal((2, 3, 4)), (2, 0, 1)], RC)
case("ndarray.transpose", lambda G: [G.normal((2, 3, 4)), None], RC)
case("ndarray.T", lambda G: [G.normal((3, 4))], RC)
case("ndarray.T", lambda G: [G.normal((2, 3, 4))], RC)
case("ndarray.mT", lambda G: [G.normal((2, 3, 4))], RC)
for key in ("ndarray.real", "ndarray.imag", "ndarray.conj", "ndarray.conjugate"):
    case(key, lambda G: [G.normal((3, 4))], RC)
    case(key, lambda G: [G.normal(())], RC)
case("ndarray.clip", lambda G: [_clipped(G, (3, 4)), -0.5, 0.5])
case("ndarray.clip", lambda G: [_clipped(G, (3, 4))], max=0.5)
case("ndarray.clip", lambda G: [_clipped(G, (3, 4))], min=-0.5)
case("ndarray.item", lambda G: [G.normal((3, 4)), 5], RC)
case("ndarray.item", lambda G: [G.normal((3, 4)), 1, 2], RC)
case("ndarray.item", lambda G: [G.normal((3, 4)), (2, 3)], RC)
case("ndarray.item", lambda G: [G.normal((1, 1))], RC)
for s in ((3, 4), (3,), ()):
    case("ndarray.tolist", lambda G, s=s: [G.normal(s)], RC, f32_exact=False)


# --- issue 14: np.linalg (rules.numpy_linalg) ---------------------------------
# Inputs are built well-conditioned (solve, inv, det), Hermitian positive
# definite (cholesky), with well separated eigenvalues or singular values
# (eigh, svd, norm ord=2), so that finite differences see a smooth function.
# Eigenvectors and singular vectors of complex matrices are defined up to a
# phase that LAPACK and JAX fix differently, so their raw values are checked
# for real kinds only (test_linalg checks phase-invariant complex functions).


def _la_cast(G, x):
    if G.kind == "f32":
        return np.asarray(np.real(x), np.float32)
    return np.asarray(np.real(x)) if G.kind == "f64" else np.asarray(x, np.complex128)


def _la_unitary(G, batch, n):
    q, r = np.linalg.qr(np.asarray(G.normal(batch + (n, n)), np.complex128)
                        if G.kind == "c128" else np.asarray(G.normal(batch + (n, n)), float))
    return q * np.sign(np.diagonal(r, 0, -2, -1))[..., None, :]


def _wellcond(G, shape):
    """Near 2 I: det and inverse well away from singular."""
    return _la_cast(G, 0.4 * np.asarray(G.normal(shape)) + 2.0 * np.eye(shape[-1]))


def _spd(G, shape):
    """Hermitian positive definite (its upper triangle is not read)."""
    m = np.asarray(G.normal(shape))
    return _la_cast(G, m @ np.conj(np.swapaxes(m, -1, -2)) / shape[-1] + np.eye(shape[-1]))


def _separated(G, shape, values=None):
    """Hermitian with eigenvalues -1.5, -0.3, 1, 2.2, ... (distinct, gaps >= 0.7)."""
    n = shape[-1]
    q = _la_unitary(G, shape[:-2], n)
    w = np.array([-1.5, -0.3, 1.0, 2.2, 3.0, 4.1][:n] if values is None else values)
    return _la_cast(G, (q * w) @ np.conj(np.swapaxes(q, -1, -2)))


def _distinct_sv(G, shape):
    """Singular values 3, 2, 1.2, 0.6 ... (distinct, away from 0)."""
    m, n = shape[-2:]
    k = min(m, n)
    u = _la_unitary(G, shape[:-2], m)[..., :k]
    v = _la_unitary(G, shape[:-2], n)[..., :k]
    s = np.array([3.0, 2.0, 1.2, 0.6, 0.3][:k])
    return _la_cast(G, (u * s) @ np.conj(np.swapaxes(v, -1, -2)))


for sa, sb in [((3, 3), (3,)), ((3, 3), (3, 2)), ((2, 3, 3), (2, 3, 2)), ((2, 3, 3), (3,)),
               ((2, 3, 3), (1, 3, 2)), ((3, 3), (2, 3, 4))]:
    case(np.linalg.solve, lambda G, sa=sa, sb=sb: [_wellcond(G, sa), G.normal(sb)], RC)
for s in ((3, 3), (2, 4, 4), (1,)):
    if len(s) > 1:
        case(np.linalg.inv, lambda G, s=s: [_wellcond(G, s)], RC)
        case(np.linalg.det, lambda G, s=s: [_wellcond(G, s)], RC)
        case(np.linalg.slogdet, lambda G, s=s: [_wellcond(G, s)], RC)
case(np.linalg.slogdet, lambda G: [-_wellcond(G, (3, 3))], RC)        # negative determinant
case(np.linalg.det, lambda G: [np.array([[1.0, 2.0], [2.0, 4.0]])], F)  # singular: adjugate
case(np.linalg.det, lambda G: [np.array([[1.0, 2.0, 0.5], [2.0, 4.0, 1.0], [0.3, 1.0, 2.0]])], F)
for n in (0, 1, 2, 3, -1, -2):
    case(np.linalg.matrix_power, lambda G, n=n: [_wellcond(G, (3, 3)), n], RC)
case(np.linalg.matrix_power, lambda G: [_wellcond(G, (2, 3, 3)), 3], RC)
case(np.linalg.multi_dot, lambda G: [[G.normal((2, 3)), G.normal((3, 4)), G.normal((4, 2))]], RC)
case(np.linalg.multi_dot, lambda G: [[G.normal((3,)), G.normal((3, 4)), G.normal((4,))]], RC)
case(np.linalg.multi_dot, lambda G: [(G.normal((3,)), G.normal((3, 4)), G.normal((4, 5)),
                                      G.normal((5, 2)))], RC)
for s in ((3, 3), (2, 4, 4)):
    case(np.linalg.cholesky, lambda G, s=s: [_spd(G, s)], RC)
    case(np.linalg.cholesky, lambda G, s=s: [np.swapaxes(_spd(G, s), -1, -2)], RC, upper=True)
    case(np.linalg.eigh, lambda G, s=s: [_separated(G, s)], R)
    case(np.linalg.eigvalsh, lambda G, s=s: [_separated(G, s)], RC)
case(np.linalg.eigh, lambda G: [_separated(G, (3, 3))], R, UPLO="U")
case(np.linalg.eigvalsh, lambda G: [_separated(G, (3, 3))], RC, UPLO="U")
for s in ((4, 3), (3, 4), (3, 3), (2, 4, 3), (2, 3, 4)):
    case(np.linalg.svd, lambda G, s=s: [_distinct_sv(G, s)], R, full_matrices=False)
    case(np.linalg.svd, lambda G, s=s: [_distinct_sv(G, s)], RC, compute_uv=False)
case(np.linalg.svd, lambda G: [_distinct_sv(G, (3, 3))], R)
case(np.linalg.svd, lambda G: [_distinct_sv(G, (2, 4, 4))], R, full_matrices=True)
for s in ((4, 3), (3, 3), (2, 5, 3)):
    case(np.linalg.qr, lambda G, s=s: [_distinct_sv(G, s)], RC)
    case(np.linalg.qr, lambda G, s=s: [_distinct_sv(G, s)], RC, mode="r")
case(np.linalg.qr, lambda G: [_distinct_sv(G, (3, 3))], RC, mode="complete")
for s in ((4, 3), (3, 4), (2, 3, 3)):
    case(np.linalg.pinv, lambda G, s=s: [_distinct_sv(G, s)], RC)
case(np.linalg.pinv, lambda G: [_separated(G, (3, 3))], RC, hermitian=True)
case(np.linalg.lstsq, lambda G: [_distinct_sv(G, (5, 3)), G.normal((5,))], R)
case(np.linalg.lstsq, lambda G: [_distinct_sv(G, (5, 3)), G.normal((5, 2))], RC)
case(np.linalg.lstsq, lambda G: [_distinct_sv(G, (3, 3)), G.normal((3,))], RC)
case(np.linalg.lstsq, lambda G: [_distinct_sv(G, (3, 5)), G.normal((3, 2))], RC)
# vector norms
for kw in ({}, {"ord": 2}, {"ord": 1}, {"ord": 3}, {"ord": 0.5}, {"ord": -1.5},
           {"ord": np.inf}, {"ord": -np.inf}, {"ord": 0}):
    case(np.linalg.norm, lambda G: [G.distinct((5,)) + 0.05], RC, **kw)
case(np.linalg.norm, lambda G: [G.normal((3, 4))], RC, axis=1)
case(np.linalg.norm, lambda G: [G.normal((3, 4))], RC, ord=3, axis=0, keepdims=True)
case(np.linalg.norm, lambda G: [G.distinct((3, 4)) + 0.05], RC, ord=np.inf, axis=-1)
case(np.linalg.norm, lambda G: [G.normal((2, 3, 4))], RC)
case(np.linalg.norm, lambda G: [G.normal((2, 3, 4))], RC, keepdims=True)
# matrix norms
for ord_ in (None, "fro", "nuc", 2, -2):
    case(np.linalg.norm, lambda G: [_distinct_sv(G, (3, 4))], RC, ord=ord_)
    case(np.linalg.norm, lambda G: [np.moveaxis(_distinct_sv(G, (2, 3, 4)), 0, -1)], RC,
         ord=ord_, axis=(0, 1))
    case(np.linalg.norm, lambda G: [_distinct_sv(G, (2, 3, 4))], RC, ord=ord_, axis=(2, 1),
         keepdims=True)
for ord_ in (1, -1, np.inf, -np.inf):
    case(np.linalg.norm, lambda G: [G.distinct((3, 4)) + 0.05], RC, ord=ord_)
    case(np.linalg.norm, lambda G: [G.distinct((2, 3, 4)) + 0.05], RC, ord=ord_, axis=(1, 2))
    case(np.linalg.norm, lambda G: [G.distinct((2, 3, 4)) + 0.05], RC, ord=ord_, axis=(-1, 0),
         keepdims=True)


# --- issue 14: contractions and matrix parts (rules.numpy_contractions) -------
for spec, shapes in [("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 4)]),
                     ("ii->i", [(3, 3)]), ("ii", [(3, 3)]), ("ij->", [(2, 3)]),
                     ("ij->ji", [(2, 3)]), ("i,i", [(3,), (3,)]), ("i,j->ij", [(2,), (3,)]),
                     ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
                     ("...ij,...jk", [(2, 3, 4), (4, 5)]),
                     ("...i,...i->...", [(2, 3), (1, 3)]), ("iij->j", [(3, 3, 2)]),
                     ("ij,ij,ij->i", [(2, 3), (2, 3), (1, 3)]), ("ijk,k->", [(2, 3, 4), (4,)]),
                     ("Ab,bA", [(2, 3), (3, 2)]), ("i,jk->ijk", [(2,), (3, 1)]),
                     ("ab,c->ac", [(2, 3), (4,)])]:
    case(np.einsum, lambda G, spec=spec, shapes=shapes: [spec] + [G.normal(s) for s in shapes],
         RC)
case(np.einsum, lambda G: ["ij,jk->ik", G.normal((2, 3)), G.normal((3, 4))], RC, optimize=True)
for sa, sb, axes in [((2, 3, 4), (3, 4, 5), 2), ((3, 4), (4, 5), 1), ((3,), (4,), 0),
                     ((2, 3, 4), (4, 2), ([0, 2], [1, 0])), ((2, 3), (3, 2), (1, 0)),
                     ((3, 4), (4, 3), ((-1,), (0,)))]:
    case(np.tensordot, lambda G, sa=sa, sb=sb, axes=axes: [G.normal(sa), G.normal(sb), axes], RC)
case(np.tensordot, lambda G: [G.normal((2, 3, 4)), G.normal((3, 4, 5))], RC, axes=2)
for sa, sb in [((2, 3), (4, 5)), ((3,), (4,)), ((2, 3), (4,)), ((3,), (2, 2)),
               ((2, 1, 3), (2, 2))]:
    case(np.kron, lambda G, sa=sa, sb=sb: [G.normal(sa), G.normal(sb)], RC)
for sa, sb, kw in [((3,), (3,), {}), ((4, 3), (4, 3), {}), ((4, 3), (3,), {}),
                   ((3, 4), (4, 3), {"axisa": 0}), ((3, 4), (3, 4), {"axis": 0}),
                   ((2, 3), (2, 3), {"axisc": 0}), ((2,), (2,), {}), ((4, 2), (4, 3), {}),
                   ((4, 2), (4, 2), {})]:
    case(np.cross, lambda G, sa=sa, sb=sb: [G.normal(sa), G.normal(sb)], RC, **kw)
for key in (np.trace, "ndarray.trace", np.diagonal, "ndarray.diagonal"):
    case(key, lambda G: [G.normal((3, 4))], RC)
    case(key, lambda G: [G.normal((3, 4))], RC, offset=1)
    case(key, lambda G: [G.normal((4, 3))], RC, offset=-2)
    case(key, lambda G: [G.normal((2, 3, 4))], RC, axis1=1, axis2=2)
    case(key, lambda G: [G.normal((3, 2, 4))], RC, offset=1, axis1=2, axis2=0)
for s, k in [((4,), 0), ((3,), 1), ((3,), -2), ((3, 4), 0), ((3, 4), 1), ((4, 3), -1)]:
    case(np.diag, lambda G, s=s, k=k: [G.normal(s), k], RC)
for key in (np.tril, np.triu):
    for k in (0, 1, -1):
        case(key, lambda G, k=k: [G.normal((3, 4)), k], RC)
    case(key, lambda G: [G.normal((2, 3, 3))], RC)


# --- issue 14: layout, order, statistics (rules.numpy_layout) ------------------
for key in (np.repeat, "ndarray.repeat"):
    case(key, lambda G: [G.normal((2, 3)), 2], RC)
    case(key, lambda G: [G.normal((2, 3)), 3], RC, axis=1)
    case(key, lambda G: [G.normal((2, 3)), [1, 0, 2]], RC, axis=-1)
    case(key, lambda G: [G.normal((3,)), np.array([2, 1, 3])], RC)
case(np.repeat, lambda G: [G.normal(None), 3], RC)
for reps in (2, (2, 1), (1, 2, 3), (3,)):
    case(np.tile, lambda G, reps=reps: [G.normal((2, 3)), reps], RC)
case(np.tile, lambda G: [G.normal((3,)), (2, 2)], RC)
for mode, kw in [("constant", {}), ("constant", {"constant_values": 1.5}), ("edge", {}),
                 ("reflect", {}), ("symmetric", {}), ("wrap", {})]:
    for width in (1, ((1, 2), (0, 3)), (2, 1)):
        case(np.pad, lambda G, width=width: [G.normal((3, 4)), width], RC, mode=mode, **kw)
case(np.pad, lambda G: [G.normal((3,)), 5], RC, mode="reflect")
case(np.pad, lambda G: [G.normal((3,)), (4, 7)], RC, mode="wrap")
case(np.pad, lambda G: [G.normal((3,)), 2], RC)
for shift, kw in [(1, {}), (-2, {"axis": 1}), ((1, 2), {"axis": (0, 1)}), (5, {"axis": 0})]:
    case(np.roll, lambda G, shift=shift: [G.normal((3, 4)), shift], RC, **kw)
for kw in ({}, {"k": 2}, {"k": -1}, {"k": 3, "axes": (1, 0)}, {"axes": (0, 2)}):
    case(np.rot90, lambda G: [G.normal((2, 3, 4))], RC, **kw)
for kw in ({}, {"axis": 0}, {"axis": (0, 2)}, {"axis": -1}):
    case(np.flip, lambda G: [G.normal((2, 3, 4))], RC, **kw)
case(np.fliplr, lambda G: [G.normal((3, 4))], RC)
case(np.flipud, lambda G: [G.normal((3, 4))], RC)
case(np.flipud, lambda G: [G.normal((3,))], RC)
for axis, start in [(2, 0), (0, 3), (1, 0), (-1, 1), (0, 2)]:
    case(np.rollaxis, lambda G, axis=axis, start=start: [G.normal((2, 3, 4)), axis, start], RC)
case(np.rollaxis, lambda G: [G.normal((2, 3, 4)), 2], RC)
for key in (np.atleast_1d, np.atleast_2d, np.atleast_3d):
    case(key, lambda G: [G.normal(None)], RC)
    case(key, lambda G: [G.normal((3,))], RC)
    case(key, lambda G: [G.normal((2, 3))], RC)
    case(key, lambda G: [G.normal(()), G.normal((3,)), G.normal((2, 3, 4))], RC)
for key in (np.split, np.array_split):
    case(key, lambda G: [G.normal((6, 2)), 3], RC)
    case(key, lambda G: [G.normal((3, 5)), [1, 3]], RC, axis=1)
case(np.array_split, lambda G: [G.normal((7,)), 3], RC)
case(np.hsplit, lambda G: [G.normal((2, 4)), 2], RC)
case(np.hsplit, lambda G: [G.normal((6,)), [2, 3]], RC)
case(np.vsplit, lambda G: [G.normal((4, 3)), 2], RC)
case(np.dsplit, lambda G: [G.normal((2, 3, 4)), [1]], RC)
case(np.column_stack, lambda G: [[G.normal((3,)), G.normal((3, 2)), G.normal((3,))]], RC)
case(np.dstack, lambda G: [[G.normal((2, 3)), G.normal((2, 3, 2))]], RC)
case(np.dstack, lambda G: [(G.normal((3,)), G.normal((3,)))], RC)
if hasattr(np, "row_stack"):
    case(np.row_stack, lambda G: [[G.normal((3,)), G.normal((2, 3))]], RC)
case(np.append, lambda G: [G.normal((2, 3)), G.normal((4,))], RC)
case(np.append, lambda G: [G.normal((2, 3)), G.normal((1, 3))], RC, axis=0)
case(np.append, lambda G: [G.normal((2, 3)), G.normal((2, 2))], RC, axis=1)
for kw in ({}, {"axis": 0}, {"axis": None}, {"axis": 1}):
    case(np.sort, lambda G: [G.distinct((3, 4))], R, **kw)
case(np.sort, lambda G: [G.distinct((5,))], R, kind="stable")
for axis in (0, 1, -1, None):
    case(np.take_along_axis, lambda G, axis=axis: [
        G.normal((3, 4)), np.argsort(G.rng.normal(size=(3, 4)), axis=axis)], RC, axis=axis)
case(np.take_along_axis, lambda G: [G.normal((3, 4)), np.array([[0, 0], [3, 0], [1, 1]])], RC,
     axis=1)
case(np.take_along_axis, lambda G: [G.normal((3, 4)), np.array([[2, 0, 2, 1]])], RC, axis=0)
case(np.select, lambda G: [[G.bools((3, 4)), G.bools((3, 4))],
                           [G.normal((3, 4)), G.normal((4,))]], RC)
case(np.select, lambda G: [[G.bools((5,)), G.bools((5,)), G.bools((5,))],
                           (G.normal((5,)), G.normal(None), G.normal((5,)))], RC, default=1.5)


def _with_nonfinite(G, shape):
    x = np.array(G.normal(shape))
    x.flat[[1, 4, 6]] = [np.nan, np.inf, -np.inf]
    return x


case(np.nan_to_num, lambda G: [_with_nonfinite(G, (3, 4))], RC, quiet=True)
case(np.nan_to_num, lambda G: [G.normal((3,))], RC, nan=1.0)
for kw in ({}, {"axis": 0}, {"n": 2}, {"n": 3, "axis": 1}, {"prepend": 0.5},
           {"append": np.ones((3, 2))}, {"n": 2, "prepend": 1.0, "append": np.zeros((3, 1))},
           {"axis": 0, "prepend": np.arange(5.0)[None], "append": np.array([[1.0, 2, 3, 4, 5]])},
           {"n": 4, "axis": 1, "append": np.full((3, 3), 0.5)}):
    # a float64 prepend or append makes the result (and g) float64; both are
    # differentiable (moved with a, by keyword)
    case(np.diff, lambda G: [G.normal((3, 5))], RC, f32_exact=not set(kw) & {"prepend", "append"},
         **kw)
case(np.diff, lambda G: [G.normal((4,)), 2, 0, G.normal((2,)), G.normal(None)], RC,
     f32_exact=False)
case(np.diff, lambda G: [G.normal((5,)), 0], RC)
for key in (np.cumprod, "ndarray.cumprod"):
    for kw in ({}, {"axis": 0}, {"axis": 1}, {"axis": -1}):
        case(key, lambda G: [G.pos((3, 4))], RC, **kw)
        case(key, lambda G: [G.pos((3, 4)) * np.array([1, 0, 1, 1])], RC, **kw)
case(np.cumprod, lambda G: [G.normal((5,)) * np.array([1, 0, 1, 0, 1])], RC)
unary([np.sinc], "normal", RC)
case(np.sinc, lambda G: [np.array([0.0, 1.0, -2.0, 0.5])], F)


def _with_nans(G, shape):
    x = np.array(G.normal(shape))
    x.flat[[1, 6, 7]] = np.nan
    return x


for key in (np.nansum, np.nanmean):
    for kw in AXES:
        case(key, lambda G: [_with_nans(G, (3, 4))], RC, **kw)
    case(key, lambda G: [G.normal((2, 3, 4))], RC, axis=(0, 2))
# (rules.numpy_statistics)
for key in (np.nanvar, np.nanstd):
    for kw in AXES + [{"ddof": 1}, {"axis": 0, "ddof": 1, "keepdims": True}]:
        case(key, lambda G: [_with_nans(G, (3, 4))], R, **kw)
for kw in AXES:
    case(np.nanprod, lambda G: [np.where(np.isnan(_with_nans(G, (3, 4))), np.nan,
                                         G.pos((3, 4)))], R, **kw)
for kw in ({}, {"axis": 0}, {"axis": 1}):
    case(np.nancumsum, lambda G: [_with_nans(G, (3, 4))], R, **kw)
for kw in ({}, {"axis": 0}, {"axis": 1, "keepdims": True}, {"axis": (0, 1)}, {"axis": -1}):
    case(np.median, lambda G: [G.distinct((3, 4))], R, **kw)
    case(np.quantile, lambda G: [G.distinct((3, 4)), 0.3], R, **kw)
    case(np.quantile, lambda G: [G.distinct((3, 4)), np.array([0.1, 0.5, 1.0])], R,
         f32_exact=False, **kw)         # (q of float64 makes the result float64)
    case(np.percentile, lambda G: [G.distinct((3, 4)), 65.0], R, **kw)
case(np.median, lambda G: [G.distinct((5,))], R)
case(np.median, lambda G: [G.distinct((6,))], R)
for kw in ({}, {"dx": 0.5}, {"axis": 0}, {"x": np.array([0.0, 0.5, 2.0, 2.5])},
           {"x": np.array([0.0, 1.0, 3.0]), "axis": 0}):
    case(np.trapezoid, lambda G: [G.normal((3, 4))], RC, f32_exact=False, **kw)
for kw in ({}, {"indexing": "ij"}, {"sparse": True}):
    case(np.meshgrid, lambda G: [G.normal((3,)), G.normal((4,))], RC, **kw)
    case(np.meshgrid, lambda G: [G.normal((3,)), G.normal((4,)), G.normal((2,))], RC, **kw)
case(np.meshgrid, lambda G: [G.normal((3,))], RC)
for make in (lambda G: [G.normal((4,)), G.normal((3, 2))], lambda G: [G.normal((3,)), G.normal()],
             lambda G: [G.normal((1,)), G.normal((5,))]):
    case(np.polyval, make, RC, f32_exact=False)
for key in (np.polynomial.polynomial.polyval, np.polynomial.chebyshev.chebval,
            np.polynomial.legendre.legval, np.polynomial.hermite.hermval,
            np.polynomial.hermite_e.hermeval, np.polynomial.laguerre.lagval):
    case(key, lambda G: [G.unit((3, 2)), G.normal((4,))], RC, f32_exact=False)
    case(key, lambda G: [G.unit(), G.normal((3,))], RC, f32_exact=False)
binary([np.copysign], "away", "away", R, BROADCAST_PAIRS)
for kw in ({}, {"to_end": np.array([1.0, 2.0])}, {"to_begin": 3.0, "to_end": 1.0}):
    case(np.ediff1d, lambda G: [G.normal((5,))], RC, f32_exact=False, **kw)
case(np.ediff1d, lambda G: [G.normal((2, 3))], RC)
for kw in ({}, {"N": 2}, {"N": 4, "increasing": True}):
    case(np.vander, lambda G: [G.normal((3,))], RC, f32_exact=False, **kw)   # (float64 result)
case(np.delete, lambda G: [G.normal((5,)), 1], RC)
case(np.delete, lambda G: [G.normal((3, 4)), [0, 2]], RC, axis=1)
case(np.delete, lambda G: [G.normal((3, 4)), slice(1, 3)], RC)
for kw in AXES:
    case(np.ptp, lambda G: [G.distinct((3, 4))], R, **kw)
case(np.ptp, lambda G: [np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])], F, axis=1)
for kw in ({}, {"axis": 0}, {"axis": 1, "keepdims": True}, {"axis": (0, 1)}):
    case(np.average, lambda G: [G.normal((3, 4))], RC, **kw)
case(np.average, lambda G: [G.normal((3, 4))], RC, axis=1, weights=np.array([1.0, 2, 3, 4]),
     f32_exact=False)
case(np.average, lambda G: [G.normal((3, 4))], RC, axis=0, weights=np.array([1.0, 2, 3]),
     returned=True, f32_exact=False)
case(np.average, lambda G: [G.normal((3, 4))], RC, weights=np.arange(1.0, 13).reshape(3, 4),
     f32_exact=False)
for kw in ({}, {"rowvar": False}, {"bias": True}, {"ddof": 2},
           {"fweights": np.array([1, 2, 1, 3, 1])},
           {"aweights": np.array([0.5, 1.0, 2.0, 1.0, 1.5]), "ddof": 1},
           {"y": np.arange(5.0) ** 2}):
    # cov and corrcoef compute in float64 at least
    case(np.cov, lambda G: [G.normal((3, 5))], RC, f32_exact=False, **kw)
case(np.cov, lambda G: [G.normal((5,))], RC, f32_exact=False)
case(np.cov, lambda G: [G.normal((5, 2))], RC, f32_exact=False, rowvar=False, y=np.arange(5.0))
for kw in ({}, {"rowvar": False}, {"y": np.arange(5.0) ** 2}):
    case(np.corrcoef, lambda G: [G.normal((3, 5))], R, f32_exact=False, **kw)
case(np.corrcoef, lambda G: [G.normal((5,))], R, f32_exact=False, y=np.sin(np.arange(5.0)))

for kth, kw in [(2, {}), ([0, 3], {}), (1, {"axis": 0}), (5, {"axis": None})]:
    case(np.partition, lambda G, kth=kth: [G.distinct((3, 4)), kth], R, **kw)
case(np.real_if_close, lambda G: [G.normal((3, 4))], RC)
case(np.real_if_close, lambda G: [G.normal((3,)).real + 1e-20j], F)
for kw in ({}, {"num": 5}, {"num": 4, "endpoint": False}, {"num": 1}, {"num": 6, "retstep": True}):
    case(np.linspace, lambda G: [G.normal(None), G.normal(None)], RC, **kw)
case(np.linspace, lambda G: [G.normal((3,)), G.normal((2, 1))], RC, num=4)
case(np.linspace, lambda G: [G.normal((3,)), G.normal(None)], RC, num=4, axis=-1, retstep=True)

case(np.diff, lambda G: [G.normal((1, 3))], RC, axis=0)
case(np.diff, lambda G: [G.normal((2,))], RC, n=3)
case(np.append, lambda G: [[G.normal(None), G.normal(None)], G.normal(None)], F)

# the interleaved form (a sublist between operands is checked in test_linalg: this
# table's pairing flattens a sublist into several leaves)
case(np.einsum, lambda G: [G.normal((3, 3)), [0, 0]], RC)


# --- issue 14: np.fft (rules.numpy_fft) and signal, interpolation, eig (rules.numpy_misc) ---

FFT_KWS = [{}, {"n": 3}, {"n": 7}, {"axis": 0}, {"norm": "ortho"}, {"norm": "forward"},
           {"n": 6, "axis": 0, "norm": "backward"}]
for key in (np.fft.fft, np.fft.ifft):
    for kw in FFT_KWS:
        case(key, lambda G: [G.normal((4, 5))], RC, **kw)
    case(key, lambda G: [G.normal((6,))], RC)
for kw in FFT_KWS + [{"n": 2}, {"n": 8, "norm": "ortho"}]:
    case(np.fft.rfft, lambda G: [G.normal((4, 5))], R, **kw)
    case(np.fft.rfft, lambda G: [G.normal((3, 6))], R, **kw)
for kw in [{}, {"n": 4}, {"n": 5}, {"n": 2}, {"n": 9}, {"n": 10}, {"axis": 0},
           {"norm": "ortho"}, {"norm": "forward", "n": 7}, {"axis": 0, "n": 3, "norm": "ortho"}]:
    case(np.fft.irfft, lambda G: [G.normal((4, 4))], RC, **kw)
case(np.fft.irfft, lambda G: [G.normal((5,))], RC)
NFFT_KWS = [{}, {"axes": (0, 2)}, {"s": (5, 3), "axes": (0, 2)}, {"axes": (1,)},
            {"s": (6, 2), "axes": (2, 0), "norm": "ortho"}, {"norm": "forward"},
            {"axes": (1, 1)}, {"s": (5, 3), "axes": (1, 1)}]
for key in (np.fft.fftn, np.fft.ifftn):
    for kw in NFFT_KWS:
        case(key, lambda G: [G.normal((3, 4, 5))], RC, **kw)
for key in (np.fft.fft2, np.fft.ifft2):
    for kw in [{}, {"s": (3, 6)}, {"axes": (0, 2)}, {"s": (2, 7), "axes": (2, 1), "norm": "ortho"},
               {"norm": "forward"}]:
        case(key, lambda G: [G.normal((3, 4, 5))], RC, **kw)
    case(key, lambda G: [G.normal((4, 4))], RC)
for key in (np.fft.rfftn, np.fft.rfft2):
    for kw in [{}, {"axes": (0, 2)}, {"s": (5, 3), "axes": (0, 2)}, {"s": (3, 6), "axes": (1, 2)},
               {"norm": "ortho"}, {"s": (2, 7), "axes": (2, 1), "norm": "forward"}]:
        case(key, lambda G: [G.normal((3, 4, 5))], R, **kw)
        case(key, lambda G: [G.normal((2, 4, 4))], R, **kw)
case(np.fft.rfftn, lambda G: [G.normal((4, 6))], R, axes=(1,))
for key in (np.fft.irfftn, np.fft.irfft2):
    for kw in [{}, {"axes": (0, 2)}, {"s": (5, 3), "axes": (0, 2)}, {"s": (3, 6), "axes": (1, 2)},
               {"norm": "ortho"}, {"s": (2, 7), "axes": (2, 1), "norm": "forward"}]:
        case(key, lambda G: [G.normal((3, 4, 3))], RC, **kw)
case(np.fft.irfftn, lambda G: [G.normal((4, 3))], RC, s=(4, 5), axes=(1, 0))
for key in (np.fft.fftshift, np.fft.ifftshift):
    for kw in ({}, {"axes": 1}, {"axes": (0,)}, {"axes": (0, 1)}):
        case(key, lambda G: [G.normal((4, 5))], RC, **kw)
    case(key, lambda G: [G.normal((5,))], RC)
    case(key, lambda G: [[G.normal(None), G.normal(None), G.normal(None)]], F)

for kw in ({}, {"axis": 0}, {"axis": (0, 1)}, {"axis": -1, "edge_order": 2}, {"edge_order": 2},
           {"axis": (1, 0)}):
    case(np.gradient, lambda G: [G.normal((4, 5))], RC, **kw)
case(np.gradient, lambda G: [G.normal((6,))], RC)
case(np.gradient, lambda G: [G.normal((6,)), 0.5], RC, edge_order=2)
case(np.gradient, lambda G: [G.normal((4, 5)), 0.5, 2.0], RC)
case(np.gradient, lambda G: [G.normal((3, 5)), 2.0], RC, axis=1, edge_order=2)
case(np.gradient, lambda G: [G.normal((5,)), np.array([0.0, 0.5, 1.5, 1.75, 3.0])], RC)
case(np.gradient, lambda G: [G.normal((3, 5)), np.array([0.0, 1.0, 3.0]),
                             np.array([0.0, 0.5, 1.5, 1.75, 3.0])], RC, edge_order=2)
case(np.gradient, lambda G: [G.normal((2, 3, 4))], RC, axis=(0, 2))

KNOTS = np.array([0.0, 1.0, 1.5, 3.0])


def _points(G, shape):
    """Real points spread over and beyond the knots."""
    return np.real(G.uniform(-0.7, 3.7, shape))[()]


for kw in ({}, {"left": -1.0}, {"right": 2.0, "left": 0.5}, {"period": 3.5}):
    case(np.interp, lambda G: [_points(G, (9,)), KNOTS, G.normal((4,))], RC, f32_exact=False,
         **kw)
case(np.interp, lambda G: [_points(G, (2, 3)), KNOTS, G.normal((4,))], RC, f32_exact=False)
case(np.interp, lambda G: [np.real(G.uniform(0.1, 2.9)), KNOTS, G.normal((4,))], F)
case(np.interp, lambda G: [_points(G, (6,)), np.array([2.0, -1.0, 0.5]), G.normal((3,))], F,
     period=4.0)
for key in (np.convolve, np.correlate):
    for n, m in ((5, 3), (3, 5), (4, 4), (1, 3), (2, 6), (6, 1)):
        for mode in ("full", "same", "valid"):
            case(key, lambda G, n=n, m=m: [G.normal((n,)), G.normal((m,))], RC, mode=mode)
    case(key, lambda G: [G.normal((4,)), G.normal((2,))], RC)
case(np.convolve, lambda G: [G.normal((4,)), G.normal(None)], F)


def _distinct_with_nans(G, shape):
    x = np.array(G.distinct(shape))
    x.flat[[1, 6, 7]] = np.nan
    return x


for key in (np.nanmax, np.nanmin):
    for kw in AXES:
        case(key, lambda G: [_distinct_with_nans(G, (3, 4))], R, **kw)
    case(key, lambda G: [G.distinct((2, 3, 4))], R, axis=(0, 2))
case(np.broadcast_arrays, lambda G: [G.normal((3, 1)), G.normal((4,)), G.normal(None)], RC)
case(np.broadcast_arrays, lambda G: [G.normal((2, 3)), G.normal((2, 3))], RC)
case(np.broadcast_arrays, lambda G: [G.normal((3,))], RC)
case(np.broadcast_arrays, lambda G: [G.normal(()), G.normal((2, 1, 3))], RC)


def _real_spectrum(G, shape):
    """Non-symmetric matrices with real eigenvalues about 1 apart."""
    x = 0.15 * G.normal(shape)
    n = shape[-1]
    return x + np.diag(np.arange(1.0, n + 1)).astype(x.dtype)


case(np.linalg.eig, lambda G: [_real_spectrum(G, (4, 4))], R)
case(np.linalg.eig, lambda G: [_real_spectrum(G, (2, 3, 3))], R)
case(np.linalg.eigvals, lambda G: [_real_spectrum(G, (4, 4))], RC)
case(np.linalg.eigvals, lambda G: [G.normal((4, 4))], RC)
case(np.linalg.eigvals, lambda G: [G.normal((2, 3, 3))], RC)


# --- issue 13: functions real programs call (rules.numpy_series_classes, ...) -----

_P = np.polynomial
for series in (_P.Polynomial([0.5, -1.0, 2.0, 0.25]), _P.Chebyshev([1.0, 2.0, -3.0]),
               _P.Legendre([0.3, 0.0, 1.5, -0.5], domain=[-2.0, 3.0]),
               _P.Hermite([1.0, -0.5, 0.25]), _P.HermiteE.basis(4),
               _P.Laguerre([2.0, 1.0, -1.0], window=[0.0, 2.0]), _P.Polynomial([1.5])):
    # (the coefficients are float64: so is the result)
    case(_P._polybase.ABCPolyBase.__call__, lambda G, p=series: [p, G.unit((3, 2))], RC,
         f32_exact=False)
    case(_P._polybase.ABCPolyBase.__call__, lambda G, p=series: [p, G.unit()], RC,
         f32_exact=False)

for cls, kw in ((_P.Polynomial, {}), (_P.Chebyshev, {"domain": [-2.0, 3.0]}),
                (_P.Laguerre, {"window": [0.0, 2.0]}), (_P.HermiteE, {})):   # (coefficients too)
    case(runtime.series_value, lambda G, cls=cls: [cls, G.unit((4,)), G.unit((3, 2))], RC,
         f32_exact=False, **kw)
    for m in (1, 2):
        case(runtime.series_derivative, lambda G, cls=cls: [cls, G.unit((4,)), G.unit((3,))],
             RC, f32_exact=False, m=m, **kw)
    case(runtime.series_basis_cotangent,
         lambda G, cls=cls: [G.unit((3, 2)), cls, 4, G.unit((3, 2))], RC, f32_exact=False, **kw)

# (rules.math_special, rules.numpy_assorted)
for key in (math.lgamma, math.gamma):
    case(key, lambda G: [G.uniform(0.2, 6.0)], F)
    case(key, lambda G: [-G.uniform(0.2, 0.8)], F)
    case(key, lambda G: [-1.0 - G.uniform(0.2, 0.8)], F)
case(math.lgamma, lambda G: [G.uniform(20.0, 60.0)], F)
for make, kw in ((lambda G: [G.normal((5,)), 2, G.normal(None)], {}),
                 (lambda G: [G.normal((5,)), [1, 3, 3], G.normal((3,))], {}),
                 (lambda G: [G.normal((3, 4)), 1, G.normal((4,))], {"axis": 0}),
                 (lambda G: [G.normal((3, 4)), [0, 2], G.normal((3, 1))], {"axis": 1}),
                 (lambda G: [G.normal((3, 4)), slice(1, 3), G.normal(None)], {"axis": 1}),
                 (lambda G: [G.normal((2, 3)), 4, G.normal((2,))], {})):
    case(np.insert, make, RC, **kw)
for kw in AXES + [{"axis": (0, 1)}]:
    case(np.nanmedian, lambda G: [_with_nans(G, (3, 4))], R, **kw)
    case(np.nanquantile, lambda G: [_with_nans(G, (3, 4)), 0.3], R, **kw)
    case(np.nanquantile, lambda G: [_with_nans(G, (3, 4)), np.array([0.0, 0.6, 1.0])], R,
         f32_exact=False, **kw)
    case(np.nanpercentile, lambda G: [_with_nans(G, (3, 4)), 65.0], R, **kw)
case(np.nanmedian, lambda G: [G.normal((2, 3, 4))], R, axis=1, keepdims=True)
for kw in ({}, {"axis": 0}, {"period": 4.0}, {"discont": 4.0, "axis": 1}):
    case(np.unwrap, lambda G: [3.0 * G.normal((3, 5))], R, **kw)
unary([np.i0], "normal", R, shapes=((3, 4), (5,), ()))
case(np.i0, lambda G: [G.uniform(20.0, 40.0, (3,))], F)
for p in (None, 2, -2, "fro", "nuc", 1, -1, np.inf, -np.inf):
    case(np.linalg.cond, lambda G: [G.normal((3, 3))], RC, p=p)
case(np.linalg.cond, lambda G: [G.normal((2, 3, 3))], RC)
case(np.linalg.cond, lambda G: [G.normal((2, 4, 3))], RC, p=-2)
case(np.linalg.cond, lambda G: [G.normal((3, 5))], RC)


# (rules.numpy_callbacks: the user functions they call, differentiated by pullback)
def _centered(t):
    return t - np.mean(t)


def _cube(t):
    return t * t * t


def _outer_self(r):
    return np.outer(r, np.sin(r))


def _norm2(r, scale=1.0):
    return scale * np.sum(r * r)


def _pieces_case(shape, conds, funcs):
    def make(G):
        x = G.normal(shape)
        return [x, [c(x) for c in conds], funcs]
    return make


case(np.piecewise, _pieces_case((5,), [lambda x: x < 0], [_centered, np.sin]), R)
case(np.piecewise, _pieces_case((3, 4), [lambda x: x < -0.5, lambda x: x > 0.5],
                                [_centered, 2.0, np.exp]), R)
case(np.piecewise, _pieces_case((6,), [lambda x: x < 0.5, lambda x: x > -0.5],
                                [np.sin, _cube]), R)           # overlapping: the last wins
case(np.piecewise, _pieces_case((), [lambda x: x > 0], [_cube, np.cos]), R)
case(np.apply_along_axis, lambda G: [_outer_self, 1, G.normal((3, 4))], R)
case(np.apply_along_axis, lambda G: [np.cumsum, 0, G.normal((3, 4))], R)
case(np.apply_along_axis, lambda G: [_norm2, -1, G.normal((2, 3, 4))], R)
case(np.apply_along_axis, lambda G: [_norm2, 0, G.normal((3, 2)), 1.5], R)


def _kinked(r, s):
    return r * r * s if r > 0 else np.sin(r) + s


class _Vectorized(np.vectorize):
    """An np.vectorize equal to its copy (``same`` compares the inputs after the rule)."""

    def __eq__(self, other):
        return isinstance(other, _Vectorized) and other.pyfunc is self.pyfunc

    __hash__ = object.__hash__


# (rules.numpy_vectorize: the scalar function per element, broadcast; excluded: summed)
case(np.vectorize.__call__, lambda G: [_Vectorized(_kinked), G.normal((3, 2)),
                                       G.normal((2,))], R)
case(np.vectorize.__call__, lambda G: [_Vectorized(_norm2, excluded={0}), G.normal((3,)),
                                       G.normal(())], R)
import rule_cases_round6  # noqa: E402  (issue 13, round 6: block, choose, sets, vecdot...)
rule_cases_round6.register(case)
import rule_cases_round7  # noqa: E402  (round 7: np.select's default, np.average's weights)
rule_cases_round7.register(case)

# (rules.numpy_array_api: the array API's names, the matrix axes last)
_LA = np.linalg
unary([np.asanyarray, np.ascontiguousarray, np.asfortranarray, np.asarray_chkfinite,
       np.require], "normal", RC, shapes=((3, 4), (5,)))
binary([_LA.matmul], "normal", "normal", RC, MATMUL_PAIRS)
case(_LA.outer, lambda G: [G.normal((3,)), G.normal((4,))], RC)
case(_LA.tensordot, lambda G: [G.normal((2, 3, 4)), G.normal((3, 4, 5))], RC)
case(_LA.tensordot, lambda G: [G.normal((3, 4)), G.normal((4, 2))], RC, axes=1)
for key in (_LA.diagonal, _LA.trace):
    case(key, lambda G: [G.normal((3, 4))], RC)
    case(key, lambda G: [G.normal((2, 3, 3))], RC, offset=1)
for key in (np.matrix_transpose, _LA.matrix_transpose):
    case(key, lambda G: [G.normal((2, 3, 4))], RC)
case(_LA.vecdot, lambda G: [G.normal((3, 4)), G.normal((4,))], RC)
case(_LA.vecdot, lambda G: [G.normal((3, 4)), G.normal((3, 4))], RC, axis=0)
for kw in ({}, {"include_initial": True}):
    case(np.cumulative_sum, lambda G: [G.normal((5,))], RC, **kw)
    case(np.cumulative_sum, lambda G: [G.normal((3, 4))], RC, axis=1, **kw)
case(np.cumulative_sum, lambda G: [G.normal((3, 4))], RC, axis=0)
for kw in ({}, {"axis": 0}, {"axis": (0, 2), "keepdims": True}, {"ord": 1}, {"ord": np.inf},
           {"axis": -1, "ord": 3}):
    case(_LA.vector_norm, lambda G: [G.distinct((2, 3, 4))], R, **kw)
case(_LA.vector_norm, lambda G: [G.away((3, 4))], RC, axis=1)
for kw in ({}, {"ord": "nuc"}, {"ord": 2}, {"ord": 1, "keepdims": True}, {"ord": -np.inf}):
    case(_LA.matrix_norm, lambda G: [G.distinct((2, 3, 3))], R, **kw)
case(_LA.matrix_norm, lambda G: [G.normal((3, 4))], RC)
case(_LA.svdvals, lambda G: [G.normal((3, 4))], RC)
for kw in ({}, {"include_initial": True}):
    case(np.cumulative_prod, lambda G: [G.pos((5,))], RC, **kw)
    case(np.cumulative_prod, lambda G: [G.pos((3, 4)) * np.array([1, 0, 1, 1])], RC, axis=1,
         **kw)
case(np.unstack, lambda G: [G.normal((3, 4))], RC)
case(np.unstack, lambda G: [G.normal((2, 3, 4))], RC, axis=2)
for kw in ({}, {"axis": 0}, {"axis": 1}):
    case(np.nancumprod, lambda G: [np.where(np.isnan(_with_nans(G, (3, 4))), np.nan,
                                            G.pos((3, 4)))], R, **kw)
case(_LA.svdvals, lambda G: [G.normal((2, 3, 3))], RC)

# (rules.numpy_selections)
case(np.compress, lambda G: [np.array([True, False, True]), G.normal((3, 4))], RC, axis=0)
case(np.compress, lambda G: [[False, True, True, False, True], G.normal((2, 3))], RC)
case(np.extract, lambda G: [G.bools((3, 4)), G.normal((3, 4))], RC)
case(np.resize, lambda G: [G.normal((2, 3)), (4, 4)], RC)
case(np.resize, lambda G: [G.normal((5,)), 3], RC)
case(np.diagflat, lambda G: [G.normal((3,))], RC)
case(np.diagflat, lambda G: [G.normal((2, 2))], RC, k=-1)
case(np.bincount, lambda G: [np.array([0, 2, 2, 5, 1]), G.normal((5,))], R, f32_exact=False)
case(np.bincount, lambda G: [np.array([3, 0, 3]), G.normal((3,))], R, minlength=6,
     f32_exact=False)
for kw in ({}, {"w": np.array([1.0, 2.0, 0.5, 1.0, 1.5, 1.0])}):
    case(np.polyfit, lambda G: [np.linspace(-1.0, 2.0, 6), G.normal((6,)), 2], R,
         f32_exact=False, **kw)
case(np.polyfit, lambda G: [np.linspace(0.0, 1.0, 5), G.normal((5, 3)), 3], R, f32_exact=False)

# (rules.numpy_poly_arithmetic)
for key in (np.polyadd, np.polysub, np.polymul):
    case(key, lambda G: [G.normal((3,)), G.normal((5,))], RC)
    case(key, lambda G: [G.normal((4,)), G.normal((2,))], RC)
for kw in ({}, {"m": 2}, {"m": 4}):
    case(np.polyder, lambda G: [G.normal((4,))], RC, f32_exact=False, **kw)
    case(np.polyint, lambda G: [G.normal((4,))], RC, f32_exact=False, **kw)
case(np.polyint, lambda G: [G.normal((3,))], R, f32_exact=False, m=2, k=[1.0, 2.0])


# --- issue 14: SciPy (rules.scipy_*), registered when SciPy imports ---------------

SCIPY_NAMES = {}
try:
    import scipy  # noqa: F401
except ImportError:
    scipy = None
if scipy is not None:
    import scipy.integrate
    import scipy.linalg
    import scipy.signal
    import scipy.special as sps
    import scipy.stats as sst

    from pullback.rules import load_scipy_rules
    load_scipy_rules()
    for _name in ("gammaln digamma polygamma gamma rgamma beta betaln multigammaln erf erfc "
                  "erfinv erfcinv ndtr log_ndtr ndtri expit logit xlogy xlog1py entr kl_div "
                  "rel_entr i0 i1 i0e i1e jv yv yn logsumexp softmax log_softmax j0 j1 y0 y1 "
                  "iv ive gammainc gammaincc betainc").split():
        SCIPY_NAMES[getattr(sps, _name)] = f"scipy.special.{_name}"
    for _dist in ("norm", "t", "gamma", "beta", "poisson", "dirichlet", "multivariate_normal",
                  "chi2"):
        for _fn in ("logpdf", "pdf", "cdf", "logcdf", "logpmf", "pmf", "sf", "logsf", "entropy"):
            _m = getattr(getattr(sst, _dist), _fn, None)
            if _m is not None:
                SCIPY_NAMES[_m] = f"scipy.stats.{_dist}.{_fn}"
    for _name in ("solve_triangular", "cholesky", "cho_factor", "cho_solve", "sqrtm", "expm",
                  "inv", "det", "solve", "solve_sylvester"):
        SCIPY_NAMES[getattr(scipy.linalg, _name)] = f"scipy.linalg.{_name}"
    SCIPY_NAMES[scipy.signal.convolve] = "scipy.signal.convolve"
    SCIPY_NAMES[scipy.signal.correlate] = "scipy.signal.correlate"
    SCIPY_NAMES[scipy.integrate.odeint] = "scipy.integrate.odeint"

    # elementwise special functions
    unary([sps.gammaln, sps.digamma, sps.gamma, sps.rgamma, sps.entr], "pos", R)
    unary([sps.erf, sps.erfc, sps.expit, sps.ndtr, sps.log_ndtr, sps.i0, sps.i1], "normal", R)
    unary([sps.i0e, sps.i1e], "away", R)
    unary([sps.erfinv], "unit", R)
    for key, lo, hi in ((sps.erfcinv, 0.2, 1.8), (sps.logit, 0.1, 0.9), (sps.ndtri, 0.1, 0.9)):
        for s in ((3, 4), (), None):
            case(key, lambda G, s=s, lo=lo, hi=hi: [G.uniform(lo, hi, s)], R)
    case(sps.log_ndtr, lambda G: [G.uniform(-30.0, -20.0, (4,))], R)   # the far left tail
    case(sps.i1, lambda G: [np.array([0.0, 0.5, -1.0])], F)            # the limit at 0
    # SciPy's binary ufuncs compute float32 with a Python float in float64
    ARRAY_PAIRS = [p for p in BROADCAST_PAIRS if None not in p]
    MIXED_PAIRS = [p for p in BROADCAST_PAIRS if None in p]
    binary([sps.beta, sps.betaln, sps.kl_div, sps.rel_entr], "pos", "pos", R, ARRAY_PAIRS)
    binary([sps.beta, sps.betaln, sps.kl_div, sps.rel_entr], "pos", "pos", R, MIXED_PAIRS,
           f32_exact=False)
    binary([sps.xlogy], "normal", "pos", R, ARRAY_PAIRS)
    binary([sps.xlogy], "normal", "pos", R, MIXED_PAIRS, f32_exact=False)
    for s1, s2 in BROADCAST_PAIRS:
        case(sps.xlog1py, lambda G, s1=s1, s2=s2: [G.normal(s1), G.uniform(-0.5, 2.0, s2)], R,
             f32_exact=None not in (s1, s2))
    case(sps.xlogy, lambda G: [np.array([0.0, 1.0, 0.0]), G.pos((3,))], F)
    # polygamma and multigammaln compute in float64 whatever their input
    case(sps.polygamma, lambda G: [1, G.pos((3, 4))], R, f32_exact=False)
    case(sps.polygamma, lambda G: [np.array([0, 1, 2]), G.pos((2, 1))], R, f32_exact=False)
    case(sps.polygamma, lambda G: [2, G.pos(None)], F)
    from pullback.runtime.scipy_support import sp_digamma, sp_polygamma  # (for pb.hessian)
    unary([sp_digamma], "pos", R)
    case(sp_polygamma, lambda G: [1, G.pos((3, 4))], R, f32_exact=False)
    case(sps.multigammaln, lambda G: [G.uniform(2.5, 4.0, (3,)), 3], R, f32_exact=False)
    case(sps.multigammaln, lambda G: [G.uniform(2.5, 4.0), 2], F)
    for key in (sps.jv, sps.yv):
        case(key, lambda G: [1.5, G.pos((3, 4))], R)
        case(key, lambda G: [np.array([0.0, 1.0, 2.5]), G.pos((2, 1))], R)
        case(key, lambda G: [0, G.pos(None)], F)
    case(sps.yn, lambda G: [2, G.pos((3,))], R)
    for kw in AXES + [{"axis": (0, 1)}]:
        case(sps.logsumexp, lambda G: [G.normal((3, 4))], R, **kw)
    case(sps.logsumexp, lambda G: [G.normal((3, 4)), 1, G.pos((3, 4))], R)
    case(sps.logsumexp, lambda G: [G.normal((3, 4)), 0, G.pos((4,))], R, keepdims=True)
    case(sps.logsumexp, lambda G: [G.normal((3, 4)), None, G.pos(())], R)
    case(sps.logsumexp, lambda G: [G.normal((5,))], R, b=np.array([1.0, 2, 0.5, 1, 3]),
         f32_exact=False, fixed=("b",))
    for key in (sps.softmax, sps.log_softmax):
        for kw in ({}, {"axis": 0}, {"axis": -1}, {"axis": (0, 1)}):
            case(key, lambda G: [G.normal((3, 4))], R, **kw)
        case(key, lambda G: [G.normal((5,))], R)

    # distributions (the shape parameters of t, gamma and beta stay positive)
    def _sp_spread(G, shape):
        return G.uniform(0.2, 0.8, shape)

    for fn in ("logpdf", "pdf", "cdf", "logcdf"):
        key = getattr(sst.norm, fn)
        case(key, lambda G: [G.normal((3, 4)), G.normal((4,)), G.pos(())], R)
        case(key, lambda G: [G.normal((5,))], R)
        case(key, lambda G: [G.normal(None), G.normal(None), G.pos(None)], F)
        key = getattr(sst.t, fn)
        case(key, lambda G: [G.normal((3, 4)), G.uniform(1.5, 5.0, (4,)), G.normal(()),
                             G.pos((3, 1))], R, f32_exact=False)
        case(key, lambda G: [G.normal((5,)), G.uniform(1.5, 5.0)], R, f32_exact=False)
        key = getattr(sst.gamma, fn)
        case(key, lambda G: [G.pos((3, 4)), G.gt1((4,)), G.uniform(-0.3, 0.2, ()),
                             G.pos((3, 1))], R, f32_exact=False)
        case(key, lambda G: [G.pos((5,)), G.gt1()], R, f32_exact=False)
        key = getattr(sst.beta, fn)
        case(key, lambda G: [_sp_spread(G, (3, 4)), G.pos((4,)), G.pos((3, 1)),
                             G.uniform(-0.1, 0.05, ()), G.uniform(1.2, 1.5, ())], R,
             f32_exact=False)
        case(key, lambda G: [_sp_spread(G, (5,)), G.gt1(), G.pos()], R, f32_exact=False)
    for fn in ("logpmf", "pmf", "cdf", "logcdf"):
        key = getattr(sst.poisson, fn)
        case(key, lambda G: [np.array([0, 1, 3, 7]), G.pos((4,))], R, f32_exact=False)
        case(key, lambda G: [np.array([[2], [5]]), G.gt1((3,)), 1], R, f32_exact=False)

    def _sp_simplex(G, shape):
        x = np.real(G.uniform(0.5, 2.0, shape))
        return (x / np.sum(x, axis=0)).astype(x.dtype)

    for key in (sst.dirichlet.logpdf, sst.dirichlet.pdf):
        # SciPy refuses points off the simplex: only alpha is moved here
        # (x is checked against jax in test_scipy); a float32 point is off the
        # simplex to SciPy's float64 check
        case(key, lambda G: [_sp_simplex(G, (3,)), G.pos((3,))], F, fixed=("x",))
        case(key, lambda G: [_sp_simplex(G, (3, 5)), G.pos((3,))], F, fixed=("x",))

    def _sp_spd(G, n, scale=1.0):
        b = np.real(G.normal((n, n)))
        return ((b @ b.T + n * np.eye(n)) * scale).astype(b.dtype)

    for key in (sst.multivariate_normal.logpdf, sst.multivariate_normal.pdf):
        case(key, lambda G: [G.normal((5, 3)), G.normal((3,)), _sp_spd(G, 3)], R, f32_exact=False)
        case(key, lambda G: [G.normal((3,)), G.normal((3,)), _sp_spd(G, 3)], R, f32_exact=False)
        case(key, lambda G: [G.normal((2, 4, 3)), G.normal((3,)), G.pos((3,)) + 1.0], R,
             f32_exact=False)
        case(key, lambda G: [G.normal((4, 2)), G.normal((2,)), G.pos()], F)
        case(key, lambda G: [G.normal((4,)), G.normal(()), G.pos()], F)
        case(key, lambda G: [G.normal((2,))], F, cov=np.array([[2.0, 0.3], [0.3, 1.0]]),
             fixed=("cov",))

    # scipy.linalg
    def _sp_wellcond(G, shape):
        x = G.normal(shape)
        return x + (3.0 * np.eye(shape[-1])).astype(x.dtype)

    for kw in ({}, {"lower": True}, {"trans": 1}, {"trans": "T", "lower": True},
               {"trans": 2}, {"trans": "C", "lower": True, "unit_diagonal": True},
               {"unit_diagonal": True}):
        case(scipy.linalg.solve_triangular, lambda G: [_sp_wellcond(G, (3, 3)), G.normal((3,))],
             RC, **kw)
        case(scipy.linalg.solve_triangular, lambda G: [_sp_wellcond(G, (4, 4)), G.normal((4, 2))],
             RC, **kw)
    for kw in ({}, {"lower": True}):
        case(scipy.linalg.cholesky, lambda G: [_sp_spd(G, 3)], R, **kw)
        case(scipy.linalg.cho_factor, lambda G: [_sp_spd(G, 4)], R, **kw)
    for lower in (False, True):
        case(scipy.linalg.cho_solve, lambda G, lower=lower: [
            scipy.linalg.cho_factor(_sp_spd(G, 3), lower=lower), G.normal((3,))], R)
        case(scipy.linalg.cho_solve, lambda G, lower=lower: [
            scipy.linalg.cho_factor(_sp_spd(G, 4), lower=lower), G.normal((4, 2))], R)
    case(scipy.linalg.sqrtm, lambda G: [_sp_spd(G, 3, 0.3)], R, f32_exact=False)
    case(scipy.linalg.sqrtm, lambda G: [_sp_wellcond(G, (3, 3))], R, f32_exact=False)
    case(scipy.linalg.expm, lambda G: [0.5 * G.normal((3, 3))], RC)
    case(scipy.linalg.expm, lambda G: [0.5 * G.normal((2, 3, 3))], RC)
    case(scipy.linalg.inv, lambda G: [_sp_wellcond(G, (3, 3))], RC)
    case(scipy.linalg.inv, lambda G: [_sp_wellcond(G, (2, 3, 3))], RC)
    # SciPy's det of float32 is float64
    case(scipy.linalg.det, lambda G: [_sp_wellcond(G, (3, 3))], RC, f32_exact=False)
    case(scipy.linalg.det, lambda G: [_sp_wellcond(G, (2, 3, 3))], RC, f32_exact=False)
    for kw in ({}, {"transposed": True}, {"assume_a": "gen"}):
        # SciPy solves a^T x = b for real matrices only
        kinds = R if kw.get("transposed") else RC
        case(scipy.linalg.solve, lambda G: [_sp_wellcond(G, (3, 3)), G.normal((3,))], kinds, **kw)
        case(scipy.linalg.solve, lambda G: [_sp_wellcond(G, (3, 3)), G.normal((3, 2))], kinds,
             **kw)
    for kw in ({"assume_a": "pos"}, {"assume_a": "sym", "lower": True},
               {"assume_a": "pos", "lower": True}):
        case(scipy.linalg.solve, lambda G: [_sp_spd(G, 3), G.normal((3, 2))], R, **kw)

    # added for autograd's test_scipy: more Bessel, incomplete functions, chi2, sf
    unary([sps.j0, sps.j1, sps.y0, sps.y1], "pos", R)
    for key in (sps.iv, sps.ive):
        case(key, lambda G: [1.5, G.pos((3, 4))], R)
        case(key, lambda G: [np.array([0.0, 2.0, 3.5]), G.pos((2, 1))], R)
        case(key, lambda G: [np.array([0.0, 1.0, 2.0]), G.away((2, 1))], R)
    for key in (sps.gammainc, sps.gammaincc):
        case(key, lambda G: [np.array([0.5, 1.0, 2.5]), G.pos((2, 3))], R)
        case(key, lambda G: [1.5, G.pos(None)], F)
    case(sps.betainc, lambda G: [np.array([0.5, 2.0, 3.0]), 1.5, _sp_spread(G, (2, 3))], R,
         f32_exact=False)
    for fn in ("sf", "logsf"):
        case(getattr(sst.norm, fn), lambda G: [G.normal((3, 4)), G.normal((4,)), G.pos(())], R)
        case(getattr(sst.norm, fn), lambda G: [np.array([-30.0, -2.0, 0.5, 8.0, 30.0])], F)
    for fn in ("logpdf", "pdf", "cdf"):
        case(getattr(sst.chi2, fn), lambda G: [G.pos((3, 4)), G.uniform(1.5, 4.0, (4,)),
                                               G.uniform(-0.3, 0.2, ()), G.pos((3, 1))], R,
             f32_exact=False)
        case(getattr(sst.chi2, fn), lambda G: [G.pos((5,)), 3], R, f32_exact=False)
    case(sst.multivariate_normal.entropy, lambda G: [G.normal((3,)), _sp_spd(G, 3)], R,
         f32_exact=False)
    case(sst.multivariate_normal.entropy, lambda G: [G.normal((3,)), G.pos((3,)) + 1.0], R,
         f32_exact=False)
    case(sst.multivariate_normal.entropy, lambda G: [None, _sp_spd(G, 2)], R, f32_exact=False)
    case(sst.multivariate_normal.entropy, lambda G: [G.normal(()), G.pos()], F)
    case(scipy.linalg.solve_sylvester, lambda G: [_sp_wellcond(G, (3, 3)), _sp_wellcond(G, (2, 2)),
                                                  G.normal((3, 2))], RC)

    # scipy.signal
    for key in (scipy.signal.convolve, scipy.signal.correlate):
        for n, m in ((5, 3), (3, 5), (4, 4), (1, 3)):
            for mode in ("full", "same", "valid"):
                case(key, lambda G, n=n, m=m: [G.normal((n,)), G.normal((m,))], RC, mode=mode)
        for mode in ("full", "same", "valid"):
            case(key, lambda G: [G.normal((4, 5)), G.normal((2, 3))], RC, mode=mode)
            case(key, lambda G: [G.normal((2, 3)), G.normal((3, 4))], RC, mode=mode,
                 method="fft")
        case(key, lambda G: [G.normal((3, 4, 2)), G.normal((2, 2, 2))], RC, mode="same")

    # scipy.integrate.odeint: the adjoint is as accurate as the solves
    case(scipy.integrate.odeint, lambda G: [
        _decay, G.normal((2,)), np.array([0.0, 0.3, 0.7, 1.0]), (G.pos(), G.normal((2,)))],
        F, tol=1e-5, rtol=1e-11, atol=1e-11)
    case(scipy.integrate.odeint, lambda G: [
        _decay_tfirst, G.normal((2,)), np.array([0.0, 0.5, 1.2]), (G.pos(), G.normal((2,)))],
        F, tol=1e-5, rtol=1e-11, atol=1e-11, tfirst=True)
    # a repeated time (moving it would make t non-monotonic: held fixed)
    case(scipy.integrate.odeint, lambda G: [
        _decay_tfirst, G.normal((2,)), np.array([0.0, 0.5, 0.5, 1.2]), (G.pos(), G.normal((2,)))],
        F, tol=1e-5, rtol=1e-11, atol=1e-11, tfirst=True, fixed=("t",))


import rule_cases_scipy7  # noqa: E402  (round 7: expon, laplace, kv, loggamma, lu, qr)
rule_cases_scipy7.register(case, SCIPY_NAMES)


def _decay(y, t, k, c):
    return -k * y + c * np.sin(t) + 0.1 * y[::-1] * y


def _decay_tfirst(t, y, k, c):
    return -k * y + c * np.cos(2.0 * t)


# --- the dot-product check -----------------------------------------------------


def keyname(key):
    if key in SCIPY_NAMES:
        return SCIPY_NAMES[key]
    if isinstance(key, str):
        return key
    if isinstance(key, np.ufunc):
        return "np." + key.__name__
    if isinstance(getattr(key, "__self__", None), np.ufunc):     # np.add.reduce
        return f"np.{key.__self__.__name__}.{key.__name__}"
    module = {"numpy": "np", "_operator": "operator", "builtins": ""}.get(
        getattr(key, "__module__", None), getattr(key, "__module__", "") or "")
    return f"{module}.{key.__name__}" if module else key.__name__


def _params():
    seen = {}
    for c in CASES:
        n = seen[keyname(c.key)] = seen.get(keyname(c.key), -1) + 1
        for kind in c.kinds:
            yield pytest.param(c, kind, id=f"{keyname(c.key)}-{n}-{kind}")


def tmap(f, x, *rest):
    """Apply ``f`` leafwise over nested lists, tuples (named too) and dicts."""
    if isinstance(x, tuple) and hasattr(x, "_fields"):     # np.linalg's named results
        return type(x)(*(tmap(f, *z) for z in zip(x, *rest)))
    if isinstance(x, (list, tuple)):
        return type(x)(tmap(f, *z) for z in zip(x, *rest))
    if isinstance(x, dict):
        return {k: tmap(f, x[k], *(r[k] for r in rest)) for k in x}
    return f(x, *rest)


def leaves(x):
    if isinstance(x, (list, tuple)):
        return [leaf for item in x for leaf in leaves(item)]
    if isinstance(x, dict):
        return [leaf for item in x.values() for leaf in leaves(item)]
    return [x]


def is_var(x):
    """Whether a leaf carries a gradient (a float or complex number or array)."""
    if isinstance(x, (bool, np.bool_)):
        return False
    if isinstance(x, (float, complex, np.floating, np.complexfloating)):
        return True
    return isinstance(x, np.ndarray) and x.dtype.kind in "fc"


def random_like(rng, x):
    if not is_var(x):
        return None
    if isinstance(x, np.ndarray) or isinstance(x, np.generic):
        val = rng.normal(size=np.shape(x))
        if np.iscomplexobj(x):
            val = val + 1j * rng.normal(size=np.shape(x))
        return np.asarray(val, dtype=x.dtype)[()] if isinstance(x, np.generic) \
            else np.asarray(val, dtype=x.dtype)
    if isinstance(x, complex):
        return complex(rng.normal(), rng.normal())
    return float(rng.normal())


def upcast(x):
    """A float64 / complex128 copy of a float leaf, keeping an array's layout."""
    if isinstance(x, np.ndarray) and x.dtype.kind in "fc":
        out = np.empty_like(x, dtype=np.complex128 if x.dtype.kind == "c" else np.float64)
        out[...] = x
        return out
    if isinstance(x, np.generic) and x.dtype.kind in "fc":
        return np.complex128(x) if x.dtype.kind == "c" else np.float64(x)
    return x


def shifted(x, v, t):
    if v is None:
        return x
    y = upcast(x)
    if isinstance(y, np.ndarray):
        y[...] = y + t * v
        return y
    return y + t * v


def pair(a, b):
    """Re<a, b>, unconjugated, summed over leaves; None leaves count as zero."""
    total = 0.0
    for x, y in zip(leaves(a), leaves(b)):
        if x is not None and y is not None:
            total += np.real(np.sum(np.asarray(x, np.complex128) * np.asarray(y, np.complex128)))
    return total


def call(key, args, kw):
    if isinstance(key, str):
        self, *rest = args
        attr = getattr(self, key.split(".", 1)[1])
        return attr(*rest, **kw) if callable(attr) else attr
    return key(*args, **kw)


def positions(rule, nargs):
    """Where each parameter's value sits among ``nargs`` positional arguments."""
    where = {}
    for i, p in enumerate(list(rule._call_signature.parameters.values())[:nargs]):
        var = p.kind is inspect.Parameter.VAR_POSITIONAL
        where[p.name] = slice(i, nargs) if var else i
    return where


def same(a, b):
    return all(np.array_equal(x, y, equal_nan=x.dtype.kind in "fc")
               if isinstance(x, np.ndarray) else
               (x == y or (x != x and y != y)) for x, y in zip(leaves(a), leaves(b)))


@pytest.mark.parametrize("case,kind", list(_params()))
def test_dot_product(case, kind):
    rule = RULES[case.key]
    rng = np.random.default_rng(zlib.crc32(f"{keyname(case.key)}{kind}".encode()))
    args = case.make(Gen(rng, kind))
    ba = rule.bind(args, case.kw)
    ans = call(case.key, args, case.kw)
    u = tmap(lambda y: random_like(rng, y), ans)
    diff = [n for n in rule.diff if n in ba.arguments and n not in case.fixed]
    where = positions(rule, len(args))
    assert all(n in where or n in case.kw for n in diff)
    v = {n: tmap(lambda x: random_like(rng, x), ba.arguments[n]) for n in diff}

    # J v by central differences, all inputs in float64 / complex128 (a
    # differentiable keyword argument, np.diff's append=, moves too)
    def at(t):
        moved, kw = tmap(upcast, list(args)), tmap(upcast, case.kw)
        for n in diff:
            held, at_ = (moved, where[n]) if n in where else (kw, n)
            held[at_] = tmap(lambda x, d: shifted(x, d, t), held[at_], v[n])
        return call(case.key, moved, kw)

    jv = tmap(lambda p, m: (np.asarray(p) - np.asarray(m)) / (2 * STEP) if is_var(p) else None,
              at(STEP), at(-STEP))

    before = copy.deepcopy((args, u))
    with np.errstate(invalid="ignore" if case.quiet else "warn"):
        out = rule.fn(u, ans, *args, **case.kw)
    assert same(before, (args, u)), "the rule wrote to an input or to g"
    contribs = out if len(rule.diff) > 1 else (out,)
    assert isinstance(contribs, tuple) and len(contribs) == len(rule.diff)
    contribs = dict(zip(rule.diff, contribs))

    rhs, scale = 0.0, abs(pair(u, jv))
    for n in diff:
        def finish(c, x):
            if not is_var(x):
                return None
            assert c is not None
            if rule.broadcasts:
                c = runtime.unbroadcast(c, x)
            c = runtime.realify(c, x)
            assert np.shape(c) == np.shape(x)
            assert np.all(np.isfinite(c))
            if kind == "f32" and np.result_type(x) == np.float32:
                assert runtime.project(c, x).dtype == np.float32
                if case.f32_exact:
                    assert np.result_type(c) == np.float32, f"{n}: {np.result_type(c)}"
            return c
        c = tmap(finish, contribs[n], ba.arguments[n])
        rhs += pair(c, v[n])
        scale += sum(abs(pair(a, b)) for a, b in zip(leaves(c), leaves(v[n])))
    lhs = pair(u, jv)
    rtol = 2e-4 if kind == "f32" else case.tol or 1e-6
    assert abs(lhs - rhs) <= rtol * max(scale, 1.0), (lhs, rhs)


def test_every_rule_has_a_case():
    covered = {c.key for c in CASES}
    # (run-time helpers of generated code have forward rules only, checked in
    # test_higher_order.py; their reverse rules refuse)
    # (with_attribute's arguments are objects of the user's classes, outside this
    # file's array cases: test_method_state.py checks it against jax, both modes)
    from pullback.runtime.objects import with_attribute
    missing = sorted(keyname(k) for k in RULES if k not in covered and k is not with_attribute
                     and not getattr(RULES[k].fn, "__pullback_forward_only_rule__", False))
    assert not missing, f"rules without a test case: {missing}"


def test_rules_and_nondifferentiable_are_disjoint():
    assert not set(RULES) & registry.NONDIFF



# --- every function's facts in one place (rules/registry.py: facts) -----------------

# math functions with a rule and no NumPy twin declared: a scalar-only rule
# (the documented default), so a fused kernel never holds them
SCALAR_ONLY_MATH = {math.copysign, math.erf, math.erfc, math.fmod, math.fsum, math.ldexp,
                    math.log, math.remainder, math.lgamma, math.gamma}


def test_every_numpy_ufunc_rule_declares_its_facts():
    undeclared = sorted(p.__name__ for p in RULES if isinstance(p, np.ufunc)
                        and getattr(np, p.__name__, None) is p and not registry.has_facts(p))
    assert not undeclared, f"NumPy ufuncs with a rule and no facts(...): {undeclared}"


def test_every_math_rule_has_a_numpy_twin_or_is_scalar_only():
    missing = sorted(p.__name__ for p in RULES if getattr(p, "__module__", None) == "math"
                     and p not in registry.MATH_TWIN and p not in SCALAR_ONLY_MATH)
    assert not missing, f"math rules without facts(math_twin=...): {missing}"
    assert not SCALAR_ONLY_MATH & set(registry.MATH_TWIN)


def test_facts_are_consistent():
    kernel = {getattr(np, n) for n in registry.KERNEL_UFUNCS} | set(registry.KERNEL_NAMES)
    assert all(isinstance(getattr(np, n, None), np.ufunc) for n in registry.KERNEL_UFUNCS)
    assert registry.NOT_HOLOMORPHIC <= kernel
    assert set(registry.MATH_TWIN.values()) <= kernel
    assert not registry.FRESH & registry.VIEWS
    assert not registry.WRITES_INTO & (registry.FRESH | registry.VIEWS | set(RULES))
    shapes = [registry.SAME_KIND, registry.FLAT, registry.RESHAPES, registry.NEW_ARRAYS]
    assert sum(len(t) for t in shapes) == len(set().union(*shapes)), "one shape fact each"


def test_a_function_without_facts_has_the_documented_default():
    def double(x):
        return 2 * x
    assert not registry.has_facts(double) and not registry.has_facts([1])
    for table in (registry.NOT_HOLOMORPHIC, registry.FRESH, registry.OWNED, registry.VIEWS,
                  registry.REDUCTIONS, registry.REAL_OUTPUT, registry.WRITES_INTO):
        assert double not in table
    assert double not in registry.MATH_TWIN and double not in registry.KERNEL_NAMES
    assert registry.has_facts(np.tanh) and registry.has_facts(np.reshape)
    with pytest.raises(ValueError):
        registry.facts(double, shape="round")


# collections of NumPy functions still written outside rules/, with why: each is
# about a signature or a helper's own calls, not a function's facts
NAMED_OUTSIDE_RULES = {
    ("analyses/call_kinds.py", ("np.array", "np.asarray")),          # a list argument's rank
    ("analyses/call_kinds.py", ("np.split", "np.array_split")),      # return lists, not arrays
    ("analyses/call_kinds.py", ("np.zeros", "np.ones", "np.empty")),  # 2nd positional is dtype
    ("analyses/call_kinds.py", ("np.zeros_like", "np.ones_like", "np.empty_like",
                           "np.full_like")),                    # shape from an array
    ("reverse/kept_shapes.py", ("np.shape", "np.size", "np.ndim")),
}


def test_no_module_outside_rules_lists_numpy_functions():
    import pathlib
    import pullback
    root = pathlib.Path(pullback.__file__).parent
    found = set()
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if rel.parts[0] == "rules":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Set, ast.List, ast.Tuple)):
                elts = node.elts
            elif isinstance(node, ast.Dict):
                elts = node.keys
            else:
                continue
            named = tuple(ast.unparse(e) for e in elts if isinstance(e, ast.Attribute)
                          and isinstance(e.value, ast.Name) and e.value.id in ("np", "numpy")
                          and callable(getattr(np, e.attr, None))
                          and not isinstance(getattr(np, e.attr), type))
            if len(named) >= 2:
                found.add((rel.as_posix(), named))
    new = found - NAMED_OUTSIDE_RULES
    assert not new, f"declare these with facts(...) beside their rules instead: {sorted(new)}"


# --- the inlining contract -----------------------------------------------------

ALLOWED = {"np", "math"} | set(runtime.__all__)


@pytest.mark.parametrize("rule", list({id(r.fn): r for r in RULES.values()}.values()),
                         ids=lambda r: r.name)
def test_rule_body_is_inlinable(rule):
    """Assignments then one return; names: parameters, locals, np, math, runtime."""
    fn = ast.parse(textwrap.dedent(inspect.getsource(rule.fn))).body[0]
    *assigns, ret = fn.body
    assert isinstance(ret, ast.Return) and ret.value is not None
    local = set()
    for stmt in assigns:
        assert isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
        assert isinstance(stmt.targets[0], ast.Name)
        local.add(stmt.targets[0].id)
    for node in ast.walk(ast.Module(body=fn.body, type_ignores=[])):
        assert not isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
                                     ast.GeneratorExp, ast.NamedExpr, ast.Starred,
                                     ast.Yield, ast.Await))
    names = {n.id for n in ast.walk(ast.Module(body=fn.body, type_ignores=[]))
             if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    free = names - local - set(rule.params) - {"g", "ans"}
    assert free <= ALLOWED, free - ALLOWED
    for name in free - {"np", "math"}:
        assert rule.fn.__globals__[name] is getattr(runtime, name)
    if len(rule.diff) > 1:
        assert isinstance(ret.value, ast.Tuple) and len(ret.value.elts) == len(rule.diff)


# --- exact values ----------------------------------------------------------------


def vjp(key, g, *args, **kw):
    return RULES[key].fn(g, call(key, args, kw), *args, **kw)


def test_max_ties_split_equally():
    a = np.array([1.0, 3.0, 3.0, 2.0])
    np.testing.assert_array_equal(vjp(np.max, 1.0, a), [0, 0.5, 0.5, 0])
    np.testing.assert_array_equal(vjp("ndarray.min", 2.0, -a), [0, 1, 1, 0])
    m = np.array([[1.0, 1.0, 0.0], [2.0, 5.0, 5.0]])
    np.testing.assert_array_equal(vjp(np.amax, np.array([1.0, 1.0]), m, axis=1),
                                  [[0.5, 0.5, 0], [0, 0.5, 0.5]])
    np.testing.assert_array_equal(vjp(np.min, np.array([[4.0, 2.0, 6.0]]), m, axis=0, keepdims=True),
                                  [[4, 2, 6], [0, 0, 0]])
    f32 = vjp(np.max, np.float32(1), np.ones(4, np.float32))
    assert f32.dtype == np.float32 and np.all(f32 == 0.25)


def test_elementwise_ties_split_equally():
    x = np.array([1.0, 2.0, 3.0])
    gx, gy = vjp(np.maximum, np.ones(3), x, x)
    np.testing.assert_array_equal(gx, [0.5] * 3)
    np.testing.assert_array_equal(gy, [0.5] * 3)
    gx, gy = vjp(np.minimum, np.ones(3), x, np.array([1.0, 1.0, 4.0]))
    np.testing.assert_array_equal(gx, [0.5, 0, 1])
    np.testing.assert_array_equal(gy, [0.5, 1, 0])
    # fmax/fmin ignore a NaN: the other argument gets everything
    gx, gy = vjp(np.fmax, np.ones(2), np.array([np.nan, 1.0]), np.array([2.0, np.nan]))
    np.testing.assert_array_equal(gx, [0, 1])
    np.testing.assert_array_equal(gy, [1, 0])
    # clip at a bound: half to the value, half to the bound
    ga, glo, ghi = vjp(np.clip, np.ones(3), np.array([-1.0, 0.0, 2.0]), 0.0, 1.0)
    np.testing.assert_array_equal(ga, [0, 0.5, 0])
    np.testing.assert_array_equal(glo, [1, 0.5, 0])
    np.testing.assert_array_equal(ghi, [0, 0, 1])
    # builtins, and abs at its kink
    assert vjp(max, 1.0, 2.0, 2.0, 1.0) == (0.5, 0.5, 0.0)
    assert vjp(min, 1.0, [1.0, 3.0, 1.0]) == ([0.5, 0.0, 0.5],)
    np.testing.assert_array_equal(vjp(max, 1.0, np.array([3.0, 1.0, 3.0]))[0], [0.5, 0, 0.5])
    assert vjp(abs, 1.0, 0.0) == 0.0 and vjp(math.fabs, 1.0, 0.0) == 0.0
    np.testing.assert_array_equal(vjp(np.abs, np.ones(3), np.array([-2.0, 0.0, 2.0])), [-1, 0, 1])


def test_prod_with_zeros():
    np.testing.assert_array_equal(vjp(np.prod, 1.0, np.array([2.0, 0.0, 3.0])), [0, 6, 0])
    np.testing.assert_array_equal(vjp(np.prod, 1.0, np.array([2.0, 0.0, 0.0])), [0, 0, 0])
    a = np.array([[2.0, 0.0, 3.0], [1.0, 2.0, 3.0], [0.0, 0.0, 5.0]])
    np.testing.assert_array_equal(vjp("ndarray.prod", np.ones(3), a, axis=1),
                                  [[0, 6, 0], [6, 3, 2], [0, 0, 0]])
    g = vjp(np.prod, np.ones((1, 3), np.float32), a.astype(np.float32), axis=0, keepdims=True)
    assert g.dtype == np.float32
    np.testing.assert_array_equal(g, [[0, 0, 15], [0, 0, 15], [2, 0, 9]])


def test_complex_convention_abs_squared():
    """grad of |z|**2 at 3+4j is 6-8j (JAX's convention), through each path."""
    z = 3 + 4j
    gy = vjp(np.square, 1.0, np.abs(z))                     # d/dy y**2 = 2y
    assert np.isclose(vjp(np.abs, gy, z), 6 - 8j)
    gy = vjp(operator.pow, 1.0, abs(z), 2)[0]
    assert np.isclose(vjp(abs, gy, z), 6 - 8j)
    zs = np.array([z, 1j])
    gy = vjp(np.power, np.ones(2), np.abs(zs), 2)[0]
    np.testing.assert_allclose(vjp(np.abs, gy, zs), [6 - 8j, -2j])
    # and |z|**2 = z * conj(z): the sum of mul's two contributions through conj
    gz, gc = vjp(operator.mul, 1.0, z, np.conj(z))
    assert np.isclose(gz + vjp(np.conjugate, gc, z), 6 - 8j)


def test_getitem_repeated_indices_accumulate():
    a = np.zeros(3)
    np.testing.assert_array_equal(vjp(operator.getitem, np.array([1.0, 2.0, 3.0]), a, [0, 0, 2]),
                                  [3, 0, 3])
    m = np.zeros((2, 2), np.float32)
    g = vjp(operator.getitem, np.ones(3, np.float32), m, (np.array([0, 0, 1]), np.array([1, 1, 0])))
    assert g.dtype == np.float32
    np.testing.assert_array_equal(g, [[0, 2], [1, 0]])
    assert vjp(operator.getitem, 5.0, [1.0, 2.0, 3.0], -1) == [0.0, 0.0, 5.0]


def test_pow_at_zero_is_finite():
    gx, gy = vjp(operator.pow, 1.0, 0.0, 0)
    assert gx == 0 and gy == 0
    gx, gy = vjp(operator.pow, 1.0, 0.0, 2.0)
    assert gx == 0 and gy == 0
    gx, gy = vjp(np.power, np.ones(2), np.zeros(2), np.array([0.0, 3.0]))
    np.testing.assert_array_equal(gx, [0, 0])
    np.testing.assert_array_equal(gy, [0, 0])
    assert vjp(math.pow, 1.0, 0.0, 0.0) == (0.0, 0.0)
    assert math.isnan(vjp(math.pow, 1.0, -2.0, 2.0)[1])


def test_scalar_math_stays_python_float():
    for key, x in [(math.exp, 0.3), (math.sin, 0.3), (math.sqrt, 2.0), (math.log, 2.0),
                   (operator.mul, 0.5), (abs, -0.5), (math.fabs, -0.5)]:
        args = (x, 1.5) if key is operator.mul else (x,)
        out = vjp(key, 1.0, *args)
        for c in out if isinstance(out, tuple) else (out,):
            assert type(c) is float, (key, type(c))
