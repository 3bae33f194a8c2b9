"""A nested function's attributes (``inner.__code__``, ``inner.__name__``) are
refused: pullback lifts nested functions into functions of their own, whose
code has another name, file and parameters, so ``inner.__code__.co_filename
== __file__`` was False under pullback and ``pb.grad(outer)(3.0)`` gave 1.0
where 12.0 is right.  Calls and uses as values are unchanged."""
import pytest

import pullback as pb
from error_checks import check_error


def outer_code(x):
    def inner(y):
        return y * 2.0
    if inner.__code__.co_filename == __file__:
        return inner(x) * x
    return x


def outer_name(x):
    def inner(y):
        return y * x
    return inner(x) if inner.__name__ == "inner" else x


def outer_plain(x):
    def inner(y):
        return y * 2.0
    return inner(x) * x


@pytest.mark.parametrize("fn, text", [(outer_code, "inner.__code__"),
                                      (outer_name, "inner.__name__")])
def test_nested_function_attribute_refused(fn, text):
    assert fn(3.0) in (18.0, 9.0)            # what Python computes: outer_code 2x^2, outer_name x^2
    for transform in (pb.grad(fn), lambda x: pb.jvp(fn, (x,), (1.0,))):
        with pytest.raises(pb.UnsupportedSyntaxError) as info:
            transform(3.0)
        check_error(info.value, fn, text, pb.UnsupportedSyntaxError,
                    [text, "nested function", "module level"])


def test_nested_function_called_still_differentiated():
    assert pb.grad(outer_plain)(3.0) == 12.0           # d/dx 2 x^2
    assert pb.jvp(outer_plain, (3.0,), (1.0,)) == (18.0, 12.0)
