"""User objects (issue 13): properties read on objects whose class is known
only when the function runs (a classmethod factory's result, an argument),
dispatched then to the getter's derivative, in both modes; gradients checked
against exact values."""
import dataclasses

import numpy as np
import pytest

import pullback as pb


class Shape:
    def __init__(self, w):
        self.w = w

    @property
    def squared(self):
        return self.w ** 2

    @classmethod
    def make(cls, w):
        return cls(2.0 * w)


class Bigger(Shape):
    @property
    def squared(self):                 # overrides the base's property
        return self.w ** 3


class Stored:
    """No property: `squared` is a stored attribute (read as a field)."""

    def __init__(self, w):
        self.squared = 5.0 * w


def build(kind, x):
    return kind.make(x)


@dataclasses.dataclass
class Rect:
    w: np.ndarray
    h: float

    @property
    def area(self):
        return self.w * self.h


def from_factory(x):
    s = Shape.make(x)
    return np.sum(s.squared)


def from_any_class(x, kind):
    s = build(kind, x)
    return np.sum(s.squared)


def of_stored(x):
    s = Stored(x)
    t = s
    return np.sum(t.squared)


def of_argument(r):
    return np.sum(r.area)


def of_plain_argument(s):
    return np.sum(s.squared)


X = np.array([1.0, -2.0, 0.5])


def test_factory_property_reverse_and_forward():
    # sum((2x)^2): d/dx = 8x
    np.testing.assert_allclose(pb.grad(from_factory)(X), 8.0 * X, rtol=1e-14)
    t = np.array([1.0, 0.0, 2.0])
    value, tangent = pb.jvp(from_factory, (X,), (t,))
    assert value == pytest.approx(np.sum(4.0 * X ** 2))
    assert tangent == pytest.approx(np.sum(8.0 * X * t))
    np.testing.assert_allclose(pb.hessian(from_factory)(X), 8.0 * np.eye(3))


def test_subclass_property_picked_when_it_runs():
    # Bigger.squared: sum((2x)^3), d/dx = 24 x^2; the base's: 8x
    np.testing.assert_allclose(pb.grad(from_any_class)(X, Bigger), 24.0 * X ** 2, rtol=1e-14)
    np.testing.assert_allclose(pb.grad(from_any_class)(X, Shape), 8.0 * X, rtol=1e-14)
    _, tangent = pb.jvp(lambda x: from_any_class(x, Bigger), (X,), (np.ones(3),))
    assert tangent == pytest.approx(np.sum(24.0 * X ** 2))


def test_stored_attribute_named_like_a_property_is_a_field():
    assert "getter" in pb.source(of_stored)         # dispatched: `squared` is Shape's property
    np.testing.assert_allclose(pb.grad(of_stored)(X), np.full(3, 5.0))
    assert pb.jvp(of_stored, (X,), (np.ones(3),))[1] == pytest.approx(15.0)


def test_dataclass_argument_property():
    r = Rect(np.array([1.0, 2.0]), 3.0)
    g = pb.grad(of_argument)(r)
    assert type(g) is Rect
    np.testing.assert_allclose(g.w, [3.0, 3.0])
    assert g.h == pytest.approx(3.0)            # d/dh sum(w * h) = sum(w)
    value, tangent = pb.jvp(of_argument, (r,), (Rect(np.array([1.0, 0.0]), 2.0),))
    assert value == pytest.approx(9.0)
    assert tangent == pytest.approx(3.0 * 1.0 + 2.0 * 3.0)


def test_plain_argument_property():
    s = Shape(np.array([1.0, 3.0]))
    g = pb.grad(of_plain_argument)(s)
    np.testing.assert_allclose(g.w, [2.0, 6.0])
    t = Shape(np.array([1.0, 1.0]))
    assert pb.jvp(of_plain_argument, (s,), (t,))[1] == pytest.approx(8.0)
    assert s.w.tolist() == [1.0, 3.0]


def test_reduction_of_a_comprehension():
    # the list's cotangent from np.sum / np.mean was an array the adjoint popped from
    def f(r):
        return np.mean([np.sum(r_k * r) for r_k in r])     # (sum r)^2 / n

    np.testing.assert_allclose(pb.grad(f)(X), np.full(3, 2.0 * np.sum(X) / 3))


# -- a write made through a recursive call's argument (frontend/held_writes.py) ---------

class Holder:
    def __init__(self, w):
        self.w = w


def swap_double(a, b, k):
    """Doubles `b.w[0]`, then `a.w[0]` through the recursive call (arguments swapped)."""
    if k < 0:
        return 0.0
    b.w[0] = b.w[0] * 2.0
    swap_double(b, a, k - 1)
    return 0.0


def test_write_through_a_recursive_calls_argument_is_refused():
    # was a silently wrong gradient: [4, 4, 6] where d/dx sum(w^2) is [8, 4, 6]
    def f(x):
        p = Holder(x)
        swap_double(p, Holder(np.zeros(1)), 1)
        return np.sum(p.w ** 2)
    with pytest.raises(pb.PullbackError, match=r"`swap_double`.*`a\.w` \(`swap_double\(b, a, k - 1\)`\)"):
        pb.grad(f)(np.array([1.0, 2.0, 3.0]))


def test_write_through_a_recursive_call_into_an_arguments_array_is_refused():
    def f(x, p):
        swap_double(p, Holder(np.ones(1)), 1)
        return np.sum(x * p.w[0])
    p = Holder(np.array([3.0]))
    with pytest.raises(pb.PullbackError, match="the caller's"):
        pb.grad(f)(np.array([1.0, 2.0]), p)
    assert p.w.tolist() == [3.0]


# -- the message of a write into an argument's attribute names the user's expression ------

def test_add_at_into_an_arguments_attribute_names_the_expression():
    def f(x, p):
        np.add.at(p.w, np.array([0, 0]), x)
        return np.sum(p.w * x)
    p = Holder(np.zeros(2))
    with pytest.raises(pb.PullbackError) as info:
        pb.grad(f)(np.array([1.0, 2.0]), p)
    message = str(info.value)
    assert "`p.w` may share memory" in message and "w_1" not in message
    assert "np.add.at(p.w, np.array([0, 0]), x)" in message        # the line, quoted
    assert "`w = p.w.copy()`" in message
    assert p.w.tolist() == [0.0, 0.0]


# -- a method given a differentiated value, changing an object that holds none ---------

class Buf:
    def __init__(self, n):
        self.data = np.zeros(n)
        self.calls = 0
        self.total = 0.0

    @classmethod
    def make(cls, n):
        return cls(n)

    def add(self, i, x):
        self.data[i] += x

    def accumulate(self, x):
        self.total = self.total + x

    def count(self, x):
        self.calls += 1


def built_here(x):
    o = Buf(3)
    o.add(0, x[0])
    return np.sum(o.data ** 2)


def from_a_factory(x):
    o = Buf.make(3)
    o.add(0, x[0])
    return np.sum(o.data ** 2)


def stored_by_a_factorys_object(x):
    o = Buf.make(3)
    o.accumulate(x[0])
    return o.total * 3.0


def counted(x):
    o = Buf.make(3)
    o.count(x)
    return np.sum(x ** 2) + o.calls


@pytest.mark.parametrize("fn, line, change", [
    (built_here, "o.add(0, x[0])", "self.data[i] += x"),
    (from_a_factory, "o.add(0, x[0])", "self.data[i] += x"),
    (stored_by_a_factorys_object, "o.accumulate(x[0])", "total")])
def test_method_writing_a_value_into_its_object_is_refused(fn, line, change):
    # each was a silent zero gradient (the value went into the object as plain Python)
    x = np.array([1.0, 2.0])
    for run in (lambda: pb.grad(fn)(x), lambda: pb.jvp(fn, (x,), (np.ones(2),))):
        with pytest.raises(pb.PullbackError) as info:
            run()
        message = str(info.value)
        assert "Buf." in message and line in message and change in message
        assert "test_user_objects.py" in message


def test_method_counting_calls_runs():
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(pb.grad(counted)(x), 2.0 * x)
    assert pb.jvp(counted, (x,), (np.ones(2),))[1] == pytest.approx(6.0)


# -- which reads are dispatched when they run --------------------------------------------

class Grid:
    def __init__(self, v):
        self.v = v

    @property
    def shape(self):            # named like an array's attribute
        return self.v.shape


def array_fields(x):
    return np.sum(x) * x.shape[0]


def test_array_attribute_names_stay_field_reads():
    assert Grid(X).shape == (3,)
    assert "getter" not in pb.source(array_fields)
    np.testing.assert_allclose(pb.grad(array_fields)(X), np.full(3, 3.0))

