"""Lazy iterators kept in a name (``frontend/lazy_iterators.py``): read twice,
read in a loop they were not made in, or reading a name changed before they
are read, they are refused naming the line; pullback runs them as lists where
they are made, which gave other values and gradients than Python's,
silently (``a = sum(g); b = sum(g)``: Python's b is 0; value 4.84 for 2.42)."""
import numpy as np
import pytest

import pullback as pb
from pullback.testing import function_from_source

X = np.array([0.3, -1.2, 0.8, 0.5])


@pytest.mark.parametrize("body, why", [
    ("g = (v * v for v in x)\n    a = sum(g)\n    b = sum(g)\n    return a + b", "read twice"),
    ("g = (v * 2 for v in x)\n    t = 0.0\n    for i in range(3):\n        t = t + sum(g)\n"
     "    return t", "read in a loop it was not made in"),
    ("m = map(np.sin, x)\n    return sum(m) + sum(m)", "read twice"),
    ("s = x[0]\n    g = (s * v for v in x)\n    s = x[1]\n    return sum(g)",
     r"reads `s`, which line \d+ changes"),
    ("y = x * 1.0\n    m = map(np.sin, y)\n    y[0] = 2.0\n    return sum(m)",
     r"reads `y`, which line \d+ changes"),
    ("gens = [(v * i for v in x) for i in range(2)]\n    return sum(sum(g) for g in gens)",
     "kept in a container"),
], ids=["read_twice", "read_in_a_loop", "map_read_twice", "name_rebound", "array_written",
        "generators_in_a_list"])
def test_refused_where_python_would_give_another_value(body, why):
    f = function_from_source("def f(x):\n    " + body + "\n")
    for run in (lambda: pb.grad(f)(X), lambda: pb.jvp(f, (X,), (np.ones(4),))):
        with pytest.raises(pb.UnsupportedSyntaxError, match=why):
            run()


def test_read_once_after_nothing_it_reads_changed_is_followed():
    f = function_from_source('''
def f(x):
    s = x[0]
    g = (s * v for v in x[1:])
    t = np.sum(x)
    m = map(np.sin, x)
    return sum(g) * t + sum(m)
''')
    s, t = X[0], np.sum(X)
    want = np.cos(X) + t * np.concatenate([[np.sum(X[1:])], np.full(3, s)]) \
        + s * np.sum(X[1:]) * np.ones(4)
    np.testing.assert_allclose(pb.grad(f)(X), want, rtol=1e-13)
    _, dot = pb.jvp(f, (X,), (np.ones(4),))
    assert dot == pytest.approx(np.sum(want), rel=1e-13)
