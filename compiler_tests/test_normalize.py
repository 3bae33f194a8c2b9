"""The normal form: its grammar holds, SSA renaming, names, provenance."""
import textwrap

import gast
import numpy as np
import pytest

from pullback.frontend import parse as frontend
from pullback.normalize import normalize
from pullback.backend.codegen import unparse


def normal_of(fn):
    n = normalize.normalize(frontend.parse(fn))
    normalize.check(n)
    return n


def body(fn):
    return [unparse(s) for s in normal_of(fn).tree.body]


def f_nested(x, w, b):
    h = np.tanh(x @ w + b)
    h = h * h - 1.0
    return np.sum(h ** 2, axis=0).mean()


def f_unpack(x, y):
    a, b = y, x
    a, b = b, a
    (c, (d, e)) = (a, (b, a))
    return a * c - d / e


def f_tuple_value(x):
    t = (x, x * 2.0)
    p, q = t
    return p + q


def f_augmented(x):
    y = x * 2.0
    y += x
    y *= 3.0
    return y


def f_compare(x):
    ok = 0.0 < x < 1.0
    return np.where(ok, x, -x)


@pytest.mark.parametrize("fn", [f_nested, f_unpack, f_tuple_value, f_augmented, f_compare])
def test_grammar_holds_and_values_are_kept(fn):
    n = normal_of(fn)
    # running the normal form gives the original's value
    src = unparse(n.tree)
    ns = {"np": np}
    exec(src, ns)
    args = [np.array([0.3, 0.6]), np.array([0.7, 0.2])][: len(n.params)]
    if fn is f_nested:
        args = [np.ones((2, 3)) * 0.1, np.ones((3, 2)) * 0.2, np.ones(2) * 0.3]
    if fn is f_compare:
        args = [0.25]
    np.testing.assert_allclose(ns[fn.__name__](*args), fn(*args))


def test_reassignment_gets_new_versions():
    lines = body(f_augmented)
    assert lines == ["y = x * 2.0", "y_1 = y + x", "y_2 = y_1 * 3.0", "return y_2"]


def test_swap_reads_before_binding():
    lines = body(f_unpack)
    assert lines[:4] == ["a = y", "b = x", "a_1 = b", "b_1 = a"]


def test_temporaries_are_named_after_what_they_hold():
    lines = body(f_nested)
    assert lines[0] == "xw = x @ w"
    assert "h = np.tanh(xw_plus_b)" in lines
    assert lines[-2].startswith("out = ") and lines[-1] == "return out"


def test_statements_keep_their_source_line():
    n = normal_of(f_nested)
    first = f_nested.__code__.co_firstlineno
    assert [s.lineno - first for s in n.tree.body] == [1, 1, 1, 2, 2, 3, 3, 3, 3]


def test_check_rejects_nested_expressions():
    tree = gast.parse("def f(x):\n    y = np.sin(x * 2)\n    return y\n").body[0]
    n = normalize.Normal(tree, ["x"], tree.body[-1].value, [], None)
    with pytest.raises(AssertionError):
        normalize.check(n)


def test_lambda_is_a_function():
    f = lambda x, y: x * y + 1.0  # noqa: E731
    assert body(f) == ["x_y = x * y", "out = x_y + 1.0", "return out"]


def test_show_matches_docstring():
    out = normalize.show(textwrap.dedent("""
        def f(x):
            y = x * 2.0
            y = y * y
            return y
    """))
    assert out.splitlines()[1:] == ["    y = x * 2.0", "    y_1 = y * y", "    return y_1"]
