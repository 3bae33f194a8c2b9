"""The cost of a call to a user function from generated code (issue 17).

Counted, not timed: a recursion or a loop of calls in scalar code finds its
callee's transform by the types of the arguments alone (``scalar_cache``),
without computing signature keys or sizing the arguments; the bindings
check still runs on every call, so a rebinding between calls is still seen.
Gradients are checked against exact values."""
import math
import sys

import numpy as np
import pytest

import pullback as pb
from pullback import checks
from pullback.callees import derivative_of
from pullback.driver import bindings, jit


def leaf(t, a):
    return math.sin(a * t) + t * a


def walk(a, lo, hi, depth):
    mid = 0.5 * (lo + hi)
    if depth <= 0:
        return leaf(mid, a) * (hi - lo)
    return walk(a, lo, mid, depth - 1) + walk(a, mid, hi, depth - 1)


def total(a):
    return walk(a, 0.0, 1.0, 6)


def _exact(a, depth=6):
    n = 2 ** depth
    mids = [(k + 0.5) / n for k in range(n)]
    value = sum((math.sin(a * t) + t * a) / n for t in mids)
    grad = sum((t * math.cos(a * t) + t) / n for t in mids)
    return value, grad


def _count(monkeypatch, module, attr):
    calls = [0]
    real = getattr(module, attr)

    def counted(*args, **kwargs):
        calls[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(module, attr, counted)
    return calls


def test_scalar_calls_skip_signature_keys_after_the_first(monkeypatch):
    m = sys.modules[__name__]
    vg = pb.value_and_grad(m.total)
    first = vg(0.7)                        # transforms, fills the caches
    keys = _count(monkeypatch, jit, "signature_key")
    sizing = _count(monkeypatch, jit._kernels, "size_class")
    value, grad = vg(0.7)
    # 127 calls of walk and 64 of leaf: none computes a signature key or
    # sizes its arguments (the top-level call, an all-float call, neither)
    assert keys[0] == 0 and sizing[0] == 0
    assert (value, grad) == first
    exact_value, exact_grad = _exact(0.7)
    assert value == pytest.approx(exact_value, rel=1e-13)
    assert grad == pytest.approx(exact_grad, rel=1e-13)
    assert len(derivative_of(m.walk).scalar_cache) == 1
    assert len(derivative_of(m.leaf).scalar_cache) == 1


def test_the_bindings_are_checked_on_every_scalar_call(monkeypatch):
    m = sys.modules[__name__]
    vg = pb.value_and_grad(m.total)
    vg(0.7)
    checked = _count(monkeypatch, bindings.Bindings, "current")
    vg(0.7)
    assert checked[0] == 1 + 127 + 64        # total, every walk, every leaf


def test_a_rebinding_between_scalar_calls_is_seen(monkeypatch):
    m = sys.modules[__name__]
    vg = pb.value_and_grad(m.total)
    vg(0.7)
    monkeypatch.setattr(m, "leaf", lambda t, a: t * a * a)    # walk is transformed again
    value, grad = vg(0.7)
    mids = [(k + 0.5) / 64 for k in range(64)]
    assert value == pytest.approx(sum(t * 0.49 / 64 for t in mids), rel=1e-13)
    assert grad == pytest.approx(sum(2 * t * 0.7 / 64 for t in mids), rel=1e-13)


def test_arrays_and_numpy_scalars_take_the_full_key():
    m = sys.modules[__name__]
    pb.value_and_grad(m.total)(0.7)
    handle = derivative_of(m.walk)
    before = dict(handle.scalar_cache)
    g = pb.grad(m.total)(np.float64(0.7))          # NumPy scalars: the full key
    assert g == pytest.approx(_exact(0.7)[1], rel=1e-13)
    assert handle.scalar_cache == before
    assert any(key[0][0] == (np.generic, "<f8") for key in handle.cache)

    def arr(x):
        return np.sum(scaled_square(x, 0.5))

    def num(a):
        return scaled_square(2.0, a)
    assert np.array_equal(pb.grad(arr)(np.array([0.1, 0.2])), np.array([0.1, 0.2]))
    assert pb.grad(num)(0.5) == 4.0
    keys = derivative_of(scaled_square).scalar_cache
    assert [key[0] for key in keys] == [(float, float)]      # the call with floats only


def scaled_square(t, a):
    return t * t * a


def test_signature_key_is_the_type_for_python_floats_and_ints():
    # the scalar cache relies on it: its key is the full key for such calls
    assert checks.signature_key(1.5) is float and checks.signature_key(3) is int
    assert checks.signature_key(True) is not int
