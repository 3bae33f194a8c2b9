"""Calls that read the function's variables without being given them
(``eval``, ``exec``, ``locals()``, ``vars()``) are refused naming the line:
``np.sum(eval("np.sin(x)"))`` had a zero gradient, silently, in both modes
(the call took no differentiated argument, so it ran as a constant)."""
import numpy as np
import pytest

import pullback as pb
from pullback.testing import function_from_source

X = np.array([0.3, -1.2, 0.8])


@pytest.mark.parametrize("body", [
    "return np.sum(eval('np.sin(x)'))",
    "exec('y = np.sin(x)')\n    return np.sum(x)",
    "d = locals()\n    return np.sum(d['x'] ** 2)",
    "return np.sum(vars()['x'] ** 2)",
])
def test_reads_of_the_functions_variables_by_name_are_refused(body):
    f = function_from_source("def f(x):\n    " + body + "\n")
    for run in (lambda: pb.grad(f)(X), lambda: pb.jvp(f, (X,), (np.ones(3),))):
        with pytest.raises(pb.PullbackError, match=r"reads the function's variables by name"):
            run()


def test_vars_of_an_object_is_not_refused():
    f = function_from_source('''
def f(x):
    return np.sum(x * len(vars(Box)))
''', {"Box": type("Box", (), {})})
    np.testing.assert_allclose(pb.grad(f)(X), np.full(3, float(len(vars(type("B", (), {}))))))
