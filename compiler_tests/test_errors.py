"""Bad input gets a PullbackError that names the file and line, quotes the
line with a caret, and says what to write instead."""
import math

import numpy as np
import pytest

import pullback as pb

from error_checks import check_error, line_of


def f_try(x):
    try:
        y = np.log(x)
        z = 1.0 / x
    except ValueError:
        z = y
    return z


class _Entered:
    """A context manager whose ``__enter__`` hands back a number."""

    def __init__(self, v):
        self.v = v

    def __enter__(self):
        return self.v * 2.0

    def __exit__(self, *exc):
        return False


def f_with(x):
    with _Entered(x) as scaled:
        y = np.log(x)
    return y * scaled


def apply(fn, v):
    return fn(v)


def f_closure_as_value(x):
    c = x
    def g(v):
        return v * c
    h = keep(g)
    c = x * 2.0
    return np.sum(h(x))


def keep(fn):
    return fn


def f_yield(x):
    y = yield x
    yield y


def f_global(x):
    global COUNTER
    COUNTER = x * 2.0       # (a counter, `COUNTER += 1`, is followed)
    return x


def f_del(x):
    y = x * 2.0
    del y
    return x


def f_class(x):
    class Box:
        pass
    return x


def f_no_rule(x):
    y = np.trim_zeros(x)
    return np.sum(y)


CASES = [
    (f_try, "except ValueError:", pb.UnsupportedSyntaxError,
     ["`except` handler that reads `y`, which the `try` body assigns",
      "assign it before the `try`"]),
    (f_with, "with _Entered(x) as scaled", pb.UnsupportedSyntaxError,
     ["context manager built from `x`", "carries no gradient"]),
    (f_closure_as_value, "return np.sum(h(x))", pb.UnsupportedSyntaxError,
     ["made as a value", "assigned again later (line", "as a default"]),
    (f_yield, "y = yield x", pb.UnsupportedSyntaxError, ["`yield` used as a value"]),
    (f_global, "COUNTER = x * 2.0", pb.UnsupportedSyntaxError, ["global `COUNTER`", "Return"]),
    (f_del, "del y", pb.UnsupportedSyntaxError, ["`del`"]),
    (f_class, "class Box:", pb.UnsupportedSyntaxError, ["class definition", "module level"]),
    (f_no_rule, "np.trim_zeros(x)", pb.NoRuleError, ["np.trim_zeros", "pb.custom_vjp"]),
]


@pytest.mark.parametrize("fn, text, cls, hint", CASES, ids=[c[0].__name__ for c in CASES])
def test_error_names_line_and_fix(fn, text, cls, hint):
    with pytest.raises(cls) as excinfo:
        pb.grad(fn)(np.array([0.5, 1.5, 2.5]))
    check_error(excinfo.value, fn, text, cls, hint)


def test_error_caret_is_under_the_construct():
    with pytest.raises(pb.NoRuleError) as excinfo:
        pb.grad(f_no_rule)(np.ones(3))
    quoted, caret = str(excinfo.value).splitlines()[2:4]
    start = caret.index("^")
    assert quoted[start:start + len("np.trim_zeros(x)")] == "np.trim_zeros(x)"
    assert caret.count("^") == len("np.trim_zeros(x)")


def test_undefined_name():
    def f(x):
        return undefined_function(x)  # noqa: F821
    with pytest.raises(pb.NoRuleError, match="undefined_function"):
        pb.grad(f)(1.0)


def test_no_source_for_builtin():
    with pytest.raises(pb.SourceUnavailableError, match="not a Python function"):
        pb.grad(len)(1.0)


def test_no_source_for_interactive_lambda():
    ns = {}
    exec(compile("f = lambda x: x * 2.0", "<stdin>", "exec"), ns)
    with pytest.raises(pb.SourceUnavailableError) as excinfo:
        pb.grad(ns["f"])(1.0)
    assert "in a file" in str(excinfo.value)


def test_integer_input_is_a_type_error():
    def f(x, n):
        return x * n
    with pytest.raises(TypeError, match="integer") as excinfo:
        pb.grad(f, argnums=1)(2.0, 3)
    assert "3.0" in str(excinfo.value) or "float" in str(excinfo.value)
    with pytest.raises(TypeError, match="int64"):
        pb.grad(f, argnums=1)(2.0, np.arange(3))
    with pytest.raises(TypeError, match="bool"):
        pb.grad(f, argnums=1)(2.0, True)


def test_non_scalar_output_says_how_to_fix():
    with pytest.raises(TypeError, match=r"scalar output.*shape \(3,\).*\.sum\(\).*pb\.vjp"):
        pb.grad(lambda x: x * 2.0)(np.ones(3))


def test_complex_output_says_how_to_fix():
    with pytest.raises(TypeError, match=r"real output.*np\.abs.*pb\.vjp"):
        pb.grad(lambda z: z * z)(1.0 + 2.0j)


def test_bad_argnums():
    f = lambda x, y: x * y  # noqa: E731
    with pytest.raises(TypeError, match="argnums"):
        pb.grad(f, argnums=[0, 1])
    with pytest.raises(ValueError, match="out of range"):
        pb.grad(f, argnums=2)(1.0, 2.0)


def test_runtime_error_in_user_code_points_at_the_user_line():
    def f(x, y):
        z = x @ y
        return np.sum(z)
    with pytest.raises(ValueError) as excinfo:
        pb.grad(f)(np.ones((2, 3)), np.ones((2, 3)))
    tb = "".join(__import__("traceback").format_exception(excinfo.value))
    assert "z = x @ y" in tb                      # the generated line is shown
    assert f"line {line_of(f, 'z = x @ y')}" in tb  # with the user's line number


def f_varied_static(x):
    return math.log(2.0, x)


def f_list_concat(x):
    xs = [x, x]
    ys = xs + [x]
    return np.sum(np.stack(ys))


def test_varied_value_in_a_static_argument_is_refused():
    with pytest.raises(pb.NonDifferentiableError) as excinfo:
        pb.grad(f_varied_static)(3.0)
    check_error(excinfo.value, f_varied_static, "math.log(2.0, x)", pb.NonDifferentiableError,
                ["`base`", "constant"])


def test_list_concatenation_is_differentiated():
    # (issue 13: once refused; test_python_constructs.py covers tuple and list `+`, `*`)
    np.testing.assert_array_equal(pb.grad(f_list_concat)(np.ones(2)), [3.0, 3.0])
