"""Assignment to attributes (issue 13): ``obj.attr = v``, ``obj.attr op= v``
and ``setattr`` inside a differentiated function.

A store that carries no gradient (a counter, a flag, a shape) runs once in
the primal, in Python's order, in reverse and forward mode; a read of the
attribute sees the value Python would see, also in the adjoint.  What stays
refused is in test_bad_input.py."""
import dataclasses
import math

import numpy as np
import pytest

import pullback as pb


class Log:
    def __init__(self):
        self.calls = 0
        self.scale = 2.0
        self.names = ()


LOG = Log()


def counted(x):
    LOG.calls += 1
    return np.sum(np.sin(x) * LOG.scale)


def test_counter_runs_once_per_call_in_every_mode():
    x = np.array([0.3, -1.2, 2.0])
    LOG.calls = 0
    g = pb.grad(counted)(x)
    np.testing.assert_allclose(g, 2.0 * np.cos(x), rtol=1e-15)
    assert LOG.calls == 1                    # the adjoint did not run the store again
    v, g = pb.value_and_grad(counted)(x)
    assert LOG.calls == 2 and v == pytest.approx(2.0 * np.sum(np.sin(x)))
    out, back = pb.vjp(counted, x)
    assert LOG.calls == 3
    back(1.0)
    back(2.0)
    assert LOG.calls == 3                    # nor does the pullback, however often called
    y, t = pb.jvp(counted, (x,), (np.ones(3),))
    assert LOG.calls == 4
    assert t == pytest.approx(2.0 * np.sum(np.cos(x)), rel=1e-15)


def loop_counter(x, n):
    for i in range(n):
        LOG.calls = LOG.calls + 1
        x = x * 1.5
    LOG.names = LOG.names + ("loop",)
    return x


def test_stores_in_a_loop_follow_python_order():
    LOG.calls, LOG.names = 0, ()
    assert pb.grad(loop_counter)(2.0, 3) == pytest.approx(1.5 ** 3, rel=1e-15)
    assert LOG.calls == 3 and LOG.names == ("loop",)


def read_then_overwrite(x):
    LOG.scale = 2.0
    y = np.sin(x * LOG.scale)          # the adjoint needs 2.0, not what follows
    LOG.scale = 5.0
    LOG.scale += 1.0
    return y


def scaled(x):
    return x * LOG.scale


def callee_reads_later_overwritten(x):
    LOG.scale = 3.0
    y = scaled(x)
    LOG.scale = 7.0
    return y * y


def test_the_adjoint_sees_the_value_the_primal_read():
    x = 0.7
    assert pb.grad(read_then_overwrite)(x) == pytest.approx(2.0 * math.cos(2.0 * x),
                                                            rel=1e-15)
    assert LOG.scale == 6.0
    _, t = pb.jvp(read_then_overwrite, (x,), (1.0,))
    assert t == pytest.approx(2.0 * math.cos(2.0 * x), rel=1e-15)
    # a callee's adjoint runs after the caller's later store
    assert pb.grad(callee_reads_later_overwritten)(x) == pytest.approx(2 * 9.0 * x,
                                                                       rel=1e-15)
    assert LOG.scale == 7.0


class Counter:
    def __init__(self, step):
        self.n = 0
        self.step = step

    def bump(self, x):
        self.n += self.step
        return x * 2.0


COUNTER = Counter(1)


def method_with_state(x):
    return COUNTER.bump(x) + COUNTER.bump(x) * COUNTER.n


def object_made_inside(x):
    c = Counter(3)                  # __init__ stores constants on a new object
    y = c.bump(x)
    c.step = 10
    z = c.bump(y)
    return z * c.n                  # c.n == 13


def test_methods_and_objects_made_inside():
    COUNTER.n = 0
    # bump(x) + bump(x) * 2 = 2x + 4x
    assert pb.grad(method_with_state)(1.5) == pytest.approx(6.0, rel=1e-15)
    assert COUNTER.n == 2
    assert pb.jvp(method_with_state, (1.5,), (1.0,))[1] == pytest.approx(2.0 + 2.0 * 4)
    assert COUNTER.n == 4
    assert pb.grad(object_made_inside)(1.5) == pytest.approx(4.0 * 13, rel=1e-15)
    assert pb.jvp(object_made_inside, (1.5,), (1.0,))[1] == pytest.approx(4.0 * 13)


def shape_on_argument(x, info):
    info.n = x.shape[0]             # no gradient: x.shape
    info.seen = True
    setattr(info, "label", "run")
    return np.sum(x ** 2) / info.n


class Info:
    pass


def test_non_differentiated_argument_and_setattr():
    info = Info()
    x = np.array([1.0, 2.0, 4.0])
    g = pb.grad(shape_on_argument)(x, info)
    np.testing.assert_allclose(g, 2 * x / 3, rtol=1e-15)
    assert (info.n, info.seen, info.label) == (3, True, "run")


def array_attribute_rebound(x):
    t = np.sin(x * LOG.weights)
    LOG.weights = LOG.weights + 1.0        # a new array: `t` was computed from the old one
    return np.sum(t * LOG.weights)


def test_array_attribute_replaced_not_changed():
    LOG.weights = np.array([1.0, 2.0])
    w0 = LOG.weights
    x = np.array([0.3, 0.4])
    g = pb.grad(array_attribute_rebound)(x)
    np.testing.assert_allclose(g, np.cos(x * w0) * w0 * (w0 + 1.0), rtol=1e-15)
    np.testing.assert_array_equal(w0, [1.0, 2.0])        # the old array is unchanged
    np.testing.assert_array_equal(LOG.weights, [2.0, 3.0])


def test_generated_source_shows_the_stores():
    src = pb.source(counted)
    assert "update_attribute(LOG, 'calls'" in src
    assert "LOG.calls += 1" in src               # the line comment


class Ops:
    pass


OPS = Ops()
OPS.act = np.sin


def rebinds_its_callee(x):
    OPS.act = np.cos                # the call below runs np.cos, as in Python
    return OPS.act(x)


def test_a_callee_stored_by_the_function_is_the_one_called():
    try:
        assert pb.grad(rebinds_its_callee)(0.5) == pytest.approx(-math.sin(0.5), rel=1e-15)
        OPS.act = np.sin
        assert pb.jvp(rebinds_its_callee, (0.5,), (1.0,))[1] == pytest.approx(-math.sin(0.5))
    finally:
        OPS.act = np.sin


# -- calls of functions that store attributes: refused only where the object
# holds differentiated values (test_bad_input.py); these keep working

def _count(log, n):
    log.calls += n                  # into an argument holding no differentiated value


def _fresh(x):
    c = Counter(2)                  # into an object the callee makes
    c.step = 5
    return c.bump(x) * c.n


def calls_that_store(x, log):
    _count(log, 1)
    y = _fresh(x)
    _count(log, 2)
    return np.sum(y * x)


def test_callees_storing_into_objects_without_gradients():
    log = Log()
    x = np.array([0.5, -1.0])
    g = pb.grad(calls_that_store)(x, log)
    np.testing.assert_allclose(g, 20.0 * x, rtol=1e-15)      # y = 10 x, sum(10 x * x)
    assert log.calls == 3
    _, t = pb.jvp(calls_that_store, (x, log), (np.ones(2), None))   # None: held constant
    assert t == pytest.approx(np.sum(20.0 * x), rel=1e-15)
    assert log.calls == 6


@dataclasses.dataclass
class WB:
    w: float
    b: float

    def total(self):
        return self.w + self.b

    def check(self):
        if self.w < 0:
            raise ValueError("negative w")


def _scaled_total(p, x):
    return p.total() * x            # a method that stores nothing, differentiated


def reads_through_a_method(x, p):
    return _scaled_total(p, x) + p.b


def test_a_callee_calling_a_method_that_stores_nothing():
    p = WB(2.0, 5.0)
    gx, gp = pb.grad(reads_through_a_method, argnums=(0, 1))(3.0, p)
    # (w + b) x + b: d/dx = w + b, d/dw = x, d/db = x + 1
    assert (gx, gp) == (7.0, WB(3.0, 4.0))
    assert p == WB(2.0, 5.0)
    _, t = pb.jvp(reads_through_a_method, (3.0, p), (1.0, WB(1.0, 1.0)))
    assert t == 7.0 + 3.0 * 2.0 + 1.0


def checks_then_reads(x, p):
    p.check()                       # a method of a differentiated dataclass storing nothing
    return x * p.b + p.w


def test_a_method_statement_that_stores_nothing():
    p = WB(2.0, 5.0)
    assert pb.grad(checks_then_reads, argnums=(0, 1))(3.0, p) == (5.0, WB(1.0, 3.0))
    assert pb.jvp(checks_then_reads, (3.0, p), (1.0, WB(1.0, 1.0)))[1] == 5.0 + 3.0 + 1.0
    assert p == WB(2.0, 5.0)
