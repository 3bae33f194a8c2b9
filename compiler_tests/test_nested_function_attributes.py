"""A nested function's attributes (``inner.__code__``, ``inner.__name__``) are
Python's: pullback lifts nested functions into functions of their own, whose
code has another name, file and parameters, so ``inner.__code__.co_filename
== __file__`` was False under pullback and ``pb.grad(outer)(3.0)`` gave 1.0
where 12.0 is right (then refused; now the user's code object is read).  An
attribute of one run of the ``def`` (``__defaults__``) stays refused.  Calls
and uses as values are unchanged."""
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


def outer_defaults(x):
    def inner(y, k=2.0):
        return y * k
    return inner(x) if inner.__defaults__ else x


@pytest.mark.parametrize("fn, grad", [(outer_code, 12.0), (outer_name, 6.0)])
def test_nested_function_attribute_is_pythons(fn, grad):
    # (frontend.nested_attributes: the user's code object, name; were refused)
    assert pb.grad(fn)(3.0) == grad
    assert pb.jvp(fn, (3.0,), (1.0,)) == (fn(3.0), grad)


def test_nested_function_attribute_of_one_run_refused():
    fn, text = outer_defaults, "inner.__defaults__"
    for transform in (pb.grad(fn), lambda x: pb.jvp(fn, (x,), (1.0,))):
        with pytest.raises(pb.UnsupportedSyntaxError) as info:
            transform(3.0)
        check_error(info.value, fn, text, pb.UnsupportedSyntaxError,
                    [text, "nested function", "module level"])


def test_nested_function_called_still_differentiated():
    assert pb.grad(outer_plain)(3.0) == 12.0           # d/dx 2 x^2
    assert pb.jvp(outer_plain, (3.0,), (1.0,)) == (18.0, 12.0)
