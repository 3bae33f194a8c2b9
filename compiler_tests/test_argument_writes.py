"""Writes reaching the caller's objects (issue 13): a write into an array that
an argument holds inside an object or a container (``p.w[0] = 5.0``,
``d["w"][0] = v``, ``l[0][0] = v``, a callee ``hh(p)`` doing it, a method it
calls, a function value) is refused before it runs, naming the line: a
transform never changes the caller's arrays (README "Mutation"), and such a
write is not followed by the gradient.  The same write into an array the
function made, held by an object it built, runs as Python runs it, with exact
gradients.  Before, each refused case here ran as plain Python: the caller's
array changed, and where the object carried a gradient the result was wrong
with no error (``[6, 4]`` where ``[5, 4]`` is right; ``[1, 2]`` where
``[0, 2]`` is right)."""
import numpy as np
import pytest

import pullback as pb
from error_checks import check_error


class P:
    def __init__(self, w):
        self.w = w
        self.n = 0

    def poke(self):
        self.w[0] = 5.0

    def count(self):
        self.n += 1


def hh(p):
    p.w[0] = 5.0


def through(p):
    hh(p)


def by_alias(p):
    w = p.w
    w[1] += 1.0


def pokes(p):
    p.poke()


def counts(p):
    p.count()


def x0():
    return np.array([1.0, 2.0])


TRANSFORMS = {
    "grad": lambda f, *a: pb.grad(f)(*a),
    "jvp": lambda f, *a: pb.jvp(f, a, (np.ones(2),) + (None,) * (len(a) - 1)),
    "jacfwd": lambda f, *a: pb.jacfwd(f)(*a),
    "jacrev": lambda f, *a: pb.jacrev(f)(*a),
}


# -- refused before they run; the caller's array unchanged ------------------------------

def body_write(x, p):
    p.w[0] = 5.0
    return np.sum(x * p.w)


def callee_write(x, p):
    hh(p)
    return np.sum(x * p.w)


def nested_callee_write(x, p):
    through(p)
    return np.sum(x * p.w)


def alias_callee_write(x, p):
    by_alias(p)
    return np.sum(x * p.w)


def method_in_callee(x, p):
    pokes(p)
    return np.sum(x * p.w)


def function_value_write(x, p):
    g = hh
    g(p)
    return np.sum(x * p.w)


def alias_write(x, p):
    w = p.w
    w[0] = 5.0
    return np.sum(x * p.w)


def add_at_write(x, p):
    np.add.at(p.w, [0, 0], 1.0)
    return np.sum(x * p.w)


def held_by_local_object(x, y):
    p = P(y)
    hh(p)
    return np.sum(x * y)


CASES = [
    (body_write, body_write, "p.w[0] = 5.0", "p.w"),
    (callee_write, callee_write, "hh(p)", "p.w"),
    (nested_callee_write, nested_callee_write, "through(p)", "p.w"),
    (alias_callee_write, alias_callee_write, "by_alias(p)", "p.w"),
    (method_in_callee, method_in_callee, "pokes(p)", "p.w"),
    (function_value_write, function_value_write, "g(p)", "p.w"),
    (alias_write, alias_write, "w[0] = 5.0", "p.w"),
]


@pytest.mark.parametrize("transform", sorted(TRANSFORMS))
@pytest.mark.parametrize("fn,where,text,shown", CASES, ids=[c[0].__name__ for c in CASES])
def test_writes_into_an_argument_objects_array_are_refused(fn, where, text, shown, transform):
    p = P(x0())
    with pytest.raises(pb.UnsupportedSyntaxError) as info:
        TRANSFORMS[transform](fn, x0(), p)
    check_error(info.value, where, text, pb.UnsupportedSyntaxError,
                [f"`{shown}`", "the caller's", "copy"])
    np.testing.assert_array_equal(p.w, [1.0, 2.0])      # never changed


def test_add_at_into_an_argument_objects_array_is_refused():
    p = P(x0())
    with pytest.raises(pb.UnsupportedSyntaxError) as info:
        pb.grad(add_at_write)(x0(), p)
    check_error(info.value, add_at_write, "np.add.at(p.w", pb.UnsupportedSyntaxError,
                ["copy"])
    np.testing.assert_array_equal(p.w, [1.0, 2.0])


def test_an_array_argument_held_by_a_local_object_is_the_callers():
    y = x0()
    with pytest.raises(pb.UnsupportedSyntaxError) as info:
        pb.grad(held_by_local_object)(x0(), y)
    check_error(info.value, held_by_local_object, "hh(p)", pb.UnsupportedSyntaxError,
                ["`p.w`", "the caller's", "return the new array"])
    np.testing.assert_array_equal(y, [1.0, 2.0])


def dict_item_write(x, d):
    d["w"][0] = 5.0
    return np.sum(x * d["w"])


def list_item_write(x, ws):
    ws[0][0] = 5.0
    return np.sum(x * ws[0])


def test_arrays_held_by_dict_and_list_arguments():
    d = {"w": x0()}
    with pytest.raises(pb.UnsupportedSyntaxError) as info:
        pb.grad(dict_item_write)(x0(), d)
    check_error(info.value, dict_item_write, 'd["w"][0] = 5.0', pb.UnsupportedSyntaxError,
                ["`d['w']`", "the caller's", "copy"])
    np.testing.assert_array_equal(d["w"], [1.0, 2.0])
    # differentiated with respect to the list: was [1, 2] where [0, 2] is right
    for argnums in (0, (0, 1)):
        ws = [x0()]
        with pytest.raises(pb.UnsupportedSyntaxError) as info:
            pb.grad(list_item_write, argnums=argnums)(x0(), ws)
        check_error(info.value, list_item_write, "ws[0][0] = 5.0", pb.UnsupportedSyntaxError,
                    ["`ws[0]`", "the caller's"])
        np.testing.assert_array_equal(ws[0], [1.0, 2.0])


def differentiated_object_through_callee(x):
    p = P(x * 1.0)
    hh(p)
    return np.sum(x * p.w)


def differentiated_argument_through_callee(x, p):
    hh(p)
    return np.sum(x * p.w)


def test_a_callee_writing_into_an_object_that_carries_a_gradient():
    # was [6, 4] with no error (the write ran unseen); [5, 4] is right
    with pytest.raises(pb.UnsupportedSyntaxError) as info:
        pb.grad(differentiated_object_through_callee)(x0())
    check_error(info.value, differentiated_object_through_callee, "hh(p)",
                pb.UnsupportedSyntaxError, ["`p.w`", "`p.w[0] = 5.0`", "differentiated values",
                                            "return the new value"])
    p = P(x0())
    with pytest.raises(pb.UnsupportedSyntaxError) as info:
        pb.grad(differentiated_argument_through_callee, argnums=(0, 1))(x0(), p)
    check_error(info.value, differentiated_argument_through_callee, "hh(p)",
                pb.UnsupportedSyntaxError, ["`p.w`"])
    np.testing.assert_array_equal(p.w, [1.0, 2.0])


# -- what still runs, exactly -----------------------------------------------------------

def local_object_callee(x):
    p = P(np.array([1.0, 2.0]))
    hh(p)
    by_alias(p)
    return np.sum(x * p.w) + np.sum(p.w)


def local_object_body(x):
    p = P(np.zeros(2))
    p.w[0] = 5.0
    w = p.w
    w[1] = 3.0
    return np.sum(x * x * p.w)


def counter_on_argument(x, p):
    counts(p)
    return np.sum(x * p.w)


@pytest.mark.parametrize("transform", ["grad", "jacfwd", "jacrev"])
def test_writes_into_an_object_the_function_builds_run_as_python(transform):
    # p.w becomes [5, 3]: d/dx sum(x * [5, 3]) = [5, 3]; d/dx sum(x**2 * [5, 3]) = [10, 12]
    np.testing.assert_array_equal(TRANSFORMS[transform](local_object_callee, x0()), [5.0, 3.0])
    np.testing.assert_array_equal(TRANSFORMS[transform](local_object_body, x0()),
                                  [10.0, 12.0])


def test_a_counter_stored_by_a_callee_still_runs_once():
    p = P(x0())
    np.testing.assert_array_equal(pb.grad(counter_on_argument)(np.array([3.0, 4.0]), p),
                                  [1.0, 2.0])
    assert p.n == 1
    np.testing.assert_array_equal(p.w, [1.0, 2.0])


def array_argument_written(x, y):
    y[0] = 5.0
    z = y.reshape(2, 1)
    return np.sum(x * z[:, 0])


def rows_of_an_array_argument(x, m):
    m[0][1] = 7.0
    return np.sum(x * m[0])


def test_array_arguments_are_still_copied_on_entry():
    y = x0()
    np.testing.assert_array_equal(pb.grad(array_argument_written)(x0(), y), [5.0, 2.0])
    np.testing.assert_array_equal(y, [1.0, 2.0])
    m = np.ones((2, 2))
    np.testing.assert_array_equal(pb.grad(rows_of_an_array_argument)(x0(), m), [1.0, 7.0])
    np.testing.assert_array_equal(m, np.ones((2, 2)))


# -- lists written by item: refused with the reason and the working form ------------------

def upd(ps, g):
    ps[0] = ps[0] - g


def upd_new(ps, g):
    return [ps[0] - g] + ps[1:]


def list_argument_to_writer(x, ps):
    upd(ps, x)
    return np.sum(ps[0] * x)


def local_list_to_writer(x):
    ps = [x * 2.0, x]
    upd(ps, x)
    return np.sum(ps[0] * x)


def list_argument_written(x, ps):
    ps[0] = ps[0] - x
    return np.sum(ps[0] * x)


def list_rebuilt(x, ps):
    ps = upd_new(ps, x)
    return np.sum(ps[0] * x)


def test_lists_written_by_item_in_a_callee():
    ps = [np.array([3.0, 4.0])]
    with pytest.raises(pb.UnsupportedSyntaxError) as info:
        pb.grad(list_argument_to_writer)(x0(), ps)
    check_error(info.value, list_argument_to_writer, "upd(ps, x)", pb.UnsupportedSyntaxError,
                ["by item", "the caller's list", "ps = upd(ps, ...)"])
    with pytest.raises(pb.UnsupportedSyntaxError) as info:
        pb.grad(local_list_to_writer)(x0())
    check_error(info.value, upd, "ps[0] = ps[0] - g", pb.UnsupportedSyntaxError,
                ["by item", "`ps = upd(ps, ...)`"])
    with pytest.raises(pb.UnsupportedSyntaxError) as info:
        pb.grad(list_argument_written)(x0(), ps)
    check_error(info.value, list_argument_written, "ps[0] = ps[0] - x",
                pb.UnsupportedSyntaxError, ["by item", "[ps[0] - g] + ps[1:]"])
    np.testing.assert_array_equal(ps[0], [3.0, 4.0])
    # the form the hint gives: sum((ps0 - x) * x), gradient ps0 - 2x
    np.testing.assert_array_equal(pb.grad(list_rebuilt)(x0(), ps), [1.0, 0.0])
    np.testing.assert_array_equal(ps[0], [3.0, 4.0])


def fill_on_argument(x, q):
    q.fill(0.5)
    return np.sum(x * q.w)


def test_a_method_named_fill_on_an_argument_names_both_readings():
    with pytest.raises(pb.UnsupportedSyntaxError) as info:
        pb.grad(fill_on_argument)(x0(), P(x0()))
    check_error(info.value, fill_on_argument, "q.fill(0.5)", pb.UnsupportedSyntaxError,
                ["method `fill` of your own class", "np.full_like", "return a new object"])


# ---------------------------------------------------------------- a method storing into an argument

class _Scaled:
    def __init__(self, x):
        self.x = x

    def step(self, k):
        self.x = self.x * k


def _stepped_argument(c, k):
    c.step(k)
    return np.sum(c.x)


@pytest.mark.parametrize("argnums", [0, 1])
def test_method_storing_into_a_plain_object_argument_is_refused_before_it_runs(argnums):
    # was a silent wrong gradient: d/dk gave 0.0 where 2.0 is right, d/dc [1, 1] where [2, 2]
    # is right, and the caller's `c.x` was doubled by every transform
    c = _Scaled(np.array([1.0, 1.0]))
    with pytest.raises(pb.PullbackError, match=r"stores into the attribute `x` of `self`"):
        pb.grad(_stepped_argument, argnums=argnums)(c, 2.0)
    np.testing.assert_array_equal(c.x, [1.0, 1.0])
