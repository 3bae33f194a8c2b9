"""Bad input, all of it: every construct pullback refuses raises its
``PullbackError`` subclass naming the file and line, quoting the line with a
caret and saying what to write instead; misuse of the API raises the
``TypeError`` or ``ValueError`` JAX would, saying how to fix the call; and an
error in the user's own code while it runs points at the user's line.

(``test_errors.py`` holds the first such tests; this file covers the rest.)
"""
import dataclasses
import functools
import math
import traceback

import numpy as np
import pytest

import pullback as pb
from pullback.testing import function_from_source

from error_checks import check_error, line_of


X = np.array([0.5, 1.5, 2.5])


# -- constructs pullback does not differentiate ------------------------------------

async def f_async(x):
    return x


def f_import(x):
    import math as m
    return m.sin(x)


def f_raise(x):
    if x[0] > 10.0:
        raise
    return np.sum(x)


def f_match(x):
    match x.ndim:
        case 1:
            return np.sum(x)
    return 0.0


def f_walrus(x):
    if (total := np.sum(x)) > 0.0:
        return total
    return -total


def f_set(x):
    seen = {1, 2}
    return np.sum(x) * len(seen)


def f_nested_kwonly_default(x):
    def g(*vs, scale=np.sum(x)):
        return vs[0] * scale
    return np.sum(g(x))


def f_decorated_nested(x):
    @functools.lru_cache
    def g(v):
        return v
    return np.sum(x) * g(2.0)


def f_attribute_write(x):
    y = x * 1.0
    y.shape = (3, 1)
    return np.sum(y)


def f_attribute_augassign(x):
    y = x * 1.0
    y.real += 1.0
    return np.sum(y)


class _Holder:
    pass


HOLDER = _Holder()
HOLDER.a = np.ones(3)


def f_attribute_store_differentiated(x):
    HOLDER.val = x * 2.0            # read back below: it would carry no gradient
    return np.sum(HOLDER.val)


def f_setattr_differentiated(x):
    setattr(HOLDER, "val", x)
    return np.sum(x)


def f_attribute_store_module(x):
    math.pullback_test_flag = 1
    return np.sum(x)


def f_attribute_augassign_array(x):
    t = np.sin(x * HOLDER.a)
    HOLDER.a += 1.0                 # changes the array `t` was computed from
    return np.sum(t)


def f_dict_shared_write(x):
    # (a store into a dict held by no other name is followed: test_dict_writes.py)
    d = {}
    held = [d]
    d["a"] = x
    return np.sum(held[0]["a"])


_STORE = {}


def f_gradient_into_a_global_dict(x):
    _STORE["y"] = np.sin(x)
    return np.sum(_STORE["y"])


def f_list_changed_after_a_gradient_read_it(x):
    idx = [0, 1]
    y = x[idx]
    idx.append(2)
    return np.sum(y * y)


def f_item_updated_in_place_after_a_gradient_read_it(x):
    d = {"w": np.ones(3)}
    w = d["w"]
    y = x * w
    d["w"] += 1.0
    return np.sum(y)


def f_sort(x):
    y = x * 1.0
    y.sort()
    return np.sum(y * np.arange(3.0))


def f_fill(x):
    x.fill(0.0)
    return np.sum(x)


def f_out(x):
    y = x
    np.sin(x, out=y)        # (into an array the function made: followed, test_objects_round6)
    return np.sum(y)


def f_copyto(x):
    y = np.zeros(3)
    np.copyto(y, x)
    return np.sum(y)


def f_row_view_after_write(x):
    y = np.outer(x, x)
    row = y[0]
    y[0, 0] = 5.0
    return np.sum(row)


def bump(s):
    s[0] += 1.0


def bump_or_rebind(s, c):
    if c:
        s = s * 2.0
    s[0] += 1.0


def f_view_written_in_a_loop(x):
    # (a view by constant indices is followed now: test_mutation; one whose
    # index is known only when it runs is not)
    y = x * 2.0
    k = len(x) - 2
    v = y[k:]
    for i in range(2):
        v[i] = x[i] * v[i]
    return np.sum(y)


def f_writer_given_an_expression(x):
    y = x * 1.0
    bump(y[1:])
    return np.sum(y)


def f_writer_that_rebinds(x):
    y = x * 1.0
    bump_or_rebind(y, True)
    return np.sum(y)


def f_writer_in_a_comprehension(x):
    rows = x * np.ones((2, 3))
    return np.sum([bump(r) for r in rows])


def f_reshape_then_update(x):
    y = x.reshape(3, 1)
    y *= 2.0
    return np.sum(x)


def f_read_before_assignment(x):
    total = total + np.sum(x)  # noqa: F821
    return total


def f_try_partial_write(x):
    y = np.zeros(2)
    try:
        y[0] = np.sum(x)
        z = 1.0 / (x[0] - 0.5)
    except ZeroDivisionError:
        z = 0.0
    return z + y[0]


def f_try_partial_read(x):
    try:
        s = np.sum(x)
        z = 1.0 / (x[0] - 0.5)
    except ZeroDivisionError:
        z = s
    return z


def f_try_return_in_finally(x):
    try:
        y = np.sum(x)
    finally:
        return x[0] * y


class _Scaled:
    def __init__(self, v):
        self.v = v

    def __enter__(self):
        return self.v * 2.0          # a number: it would carry no gradient

    def __exit__(self, *exc):
        return False


def f_with_enter_from_input(x):
    with _Scaled(x) as s:
        y = np.sum(x * s)
    return y


class _Checked:
    def __init__(self, w):
        self.w = w
        self.validate()            # `self` passed on: not a plain store

    def validate(self):
        pass


def f_object_init_calls_a_method(x):
    obj = _Checked(x)
    return np.sum(obj.w)


_OBJECTS = []


class _PassesSelf:
    # (stores in a branch are followed now: test_classes; handing `self` on is not)
    def __init__(self, w, flag):
        if flag:
            self.w = w
        else:
            self.w = -w
        _OBJECTS.append(self)


def f_object_init_passes_self_on(x):
    return np.sum(_PassesSelf(x, True).w)


class _WithProperty:
    def __init__(self, w):
        self.w = w

    @property
    def w(self):
        return self._w

    @w.setter
    def w(self, v):
        self._w = v


def f_object_with_a_property(x):
    return np.sum(_WithProperty(x).w)


def f_reduce_with_keyword(x):
    return functools.reduce(np.add, [x, x], initial=0.0)


UNSUPPORTED = [
    (f_object_init_calls_a_method, "obj = _Checked(x)", pb.NonDifferentiableError,
     ["your class _Checked", "`self` is used otherwise than to store an attribute",
      "`self.attr = value`"]),
    (f_object_init_passes_self_on, "_PassesSelf(x, True)", pb.NonDifferentiableError,
     ["your class _PassesSelf", "`self` is used otherwise", "top level of __init__"]),
    (f_object_with_a_property, "_WithProperty(x)", pb.NonDifferentiableError,
     ["your class _WithProperty", "property"]),
    (f_reduce_with_keyword, "functools.reduce(np.add, [x, x], initial=0.0)",
     pb.UnsupportedSyntaxError, ["functools.reduce", "Write a for loop"]),
    (f_async, "async def f_async", pb.UnsupportedSyntaxError, ["async", "ordinary def"]),
    (f_import, "import math as m", pb.UnsupportedSyntaxError, ["`import`", "module level"]),
    (f_raise, "        raise", pb.UnsupportedSyntaxError, ["bare `raise`", "raise ValueError(...)"]),
    (f_match, "match x.ndim:", pb.UnsupportedSyntaxError, ["`match`", "Rewrite"]),
    (f_walrus, "total := np.sum(x)", pb.UnsupportedSyntaxError, ["`:=`", "Rewrite"]),
    (f_set, "seen = {1, 2}", pb.UnsupportedSyntaxError, ["set", "Rewrite"]),
    (f_nested_kwonly_default, "def g(*vs, scale=np.sum(x)):", pb.UnsupportedSyntaxError,
     ["keyword-only default", "constant default"]),
    (f_decorated_nested, "def g(v):", pb.UnsupportedSyntaxError,
     ["decorated nested function", "module level"]),
    (f_attribute_write, "y.shape = (3, 1)", pb.UnsupportedSyntaxError,
     ["attribute", "plain local name"]),
    (f_attribute_augassign, "y.real += 1.0", pb.UnsupportedSyntaxError,
     ["attribute", "plain local name"]),
    (f_attribute_store_differentiated, "HOLDER.val = x * 2.0", pb.UnsupportedSyntaxError,
     ["store of a differentiated value into the attribute `HOLDER.val`",
      "plain local name", "carry no gradient"]),
    (f_setattr_differentiated, 'setattr(HOLDER, "val", x)', pb.UnsupportedSyntaxError,
     ["store of a differentiated value into the attribute `HOLDER.val`"]),
    (f_attribute_store_module, "math.pullback_test_flag = 1", pb.UnsupportedSyntaxError,
     ["the attribute `math.pullback_test_flag`, an attribute of a module",
      "Pass the value as an argument"]),
    (f_dict_shared_write, 'd["a"] = x', pb.UnsupportedSyntaxError,
     ["an item of the dict `d`", "`d` is put into a container at line", "dict(d)"]),
    (f_gradient_into_a_global_dict, '_STORE["y"] = np.sin(x)', pb.UnsupportedSyntaxError,
     ["differentiated value into `_STORE`", "not the function's own", "in its caller"]),
    (f_list_changed_after_a_gradient_read_it, "idx.append(2)", pb.UnsupportedSyntaxError,
     ["`idx` is changed in place", "line", "its own copy (`list(idx)`"]),
    (f_item_updated_in_place_after_a_gradient_read_it, 'd["w"] += 1.0',
     pb.UnsupportedSyntaxError, ["`d['w'] += ...` on an item that is a NumPy array "
                                 "changes that object in place",
                                 "`d['w'] = d['w'] + v`"]),
    (f_sort, "y.sort()", pb.UnsupportedSyntaxError, ["`.sort()`", "in place", "new value"]),
    (f_fill, "x.fill(0.0)", pb.UnsupportedSyntaxError, ["`.fill()`", "np.full_like"]),
    (f_out, "np.sin(x, out=y)", pb.UnsupportedSyntaxError, ["`out=`", "y = np.sin(...)"]),
    (f_copyto, "np.copyto(y, x)", pb.UnsupportedSyntaxError, ["np.copyto", "in place"]),
    (f_row_view_after_write, "row = y[0]", pb.UnsupportedSyntaxError,
     ["view", "after a write", ".copy()"]),
    # writes pullback cannot place (analyses/aliases.py, frontend/writes.py): a view
    # written inside a loop, a writer given an expression, a writer that also
    # rebinds its parameter, one given a loop's row (a view), a reshape's view updated
    (f_view_written_in_a_loop, "v = y[k:]", pb.UnsupportedSyntaxError,
     ["`v` is a view of another array", "inside a loop", "Write into the array itself"]),
    (f_writer_given_an_expression, "bump(y[1:])", pb.UnsupportedSyntaxError,
     ["`bump` writes into its argument `s`", "not a variable of this function"]),
    (f_writer_that_rebinds, "bump_or_rebind(y, True)", pb.UnsupportedSyntaxError,
     ["writes into its argument `s` and also assigns", "s = s.copy()"]),
    (f_writer_in_a_comprehension, "return np.sum([bump(r) for r in rows])",
     pb.UnsupportedSyntaxError, ["`bump` writes into its argument `s`", "may share",
                                 ".copy()"]),
    (f_reshape_then_update, "y *= 2.0", pb.UnsupportedSyntaxError,
     ["in-place update of an array that other names may share", "y = y * ..."]),
    (f_read_before_assignment, "total = total + np.sum(x)", pb.UnsupportedSyntaxError,
     ["before it is assigned", "Assign `total`"]),
    (f_try_partial_write, "y[0] = np.sum(x)", pb.UnsupportedSyntaxError,
     ["`try` body that changes `y`", "keep the change", "assign it after the `try`"]),
    (f_try_partial_read, "except ZeroDivisionError:", pb.UnsupportedSyntaxError,
     ["handler that reads `s`", "assign it before the `try`"]),
    (f_try_return_in_finally, "return x[0] * y", pb.UnsupportedSyntaxError,
     ["`return` in a `finally` clause", "return after the `try`"]),
    (f_with_enter_from_input, "with _Scaled(x) as s:",
     pb.UnsupportedSyntaxError, ["context manager built from `x`", "carries no gradient"]),
]


@pytest.mark.parametrize("fn, text, cls, hint", UNSUPPORTED,
                         ids=[c[0].__name__ for c in UNSUPPORTED])
def test_unsupported_construct_names_line_and_fix(fn, text, cls, hint):
    x = X.copy()
    with pytest.raises(cls) as excinfo:
        pb.grad(fn)(x)
    check_error(excinfo.value, fn, text, cls, hint)
    np.testing.assert_array_equal(x, X)      # refused before anything ran


def test_attribute_stores_refused():
    # into a differentiated structure: its reads would ignore the store
    import dataclasses

    @dataclasses.dataclass
    class P:
        w: np.ndarray
        b: float

    def f(p, x):
        p.b = 3.0
        return np.sum(x * p.w) + p.b

    p = P(np.ones(3), 1.0)
    with pytest.raises(pb.UnsupportedSyntaxError) as excinfo:
        pb.grad(f)(p, X)
    check_error(excinfo.value, f, "p.b = 3.0", pb.UnsupportedSyntaxError,
                ["store into the attribute `p.b`", "`p` holds differentiated values",
                 "plain local name"])
    assert p.b == 1.0
    # the same refusal in forward mode
    with pytest.raises(pb.UnsupportedSyntaxError):
        pb.jvp(f_attribute_store_differentiated, (X,), (X,))
    assert not hasattr(HOLDER, "val")
    # `obj.a += v` on an array held by an object: refused when it runs, before the change
    with pytest.raises(pb.UnsupportedSyntaxError) as excinfo:
        pb.grad(f_attribute_augassign_array)(X)
    assert "`a += ...` on an attribute that holds a mutable `ndarray`" in str(excinfo.value)
    assert "obj.a = obj.a + ..." in str(excinfo.value)
    np.testing.assert_array_equal(HOLDER.a, np.ones(3))
    # into a dataclass that is not differentiated here: a caller may be
    # differentiating with respect to it, so refused when it runs

    def g(p, x):
        p.b = 0.0
        return np.sum(x * p.w)

    with pytest.raises(pb.UnsupportedSyntaxError) as excinfo:
        pb.grad(g, argnums=1)(p, X)
    assert "store into the attribute `b` of a dataclass (`P`)" in str(excinfo.value)
    assert "dataclasses.replace(obj, b=...)" in str(excinfo.value)
    assert p.b == 1.0


# -- a callee that stores into an attribute of an argument holding differentiated
# values (a call whose result carries no gradient runs as plain Python, where
# the store went unseen: grad gave b's gradient 3.0 where 0.0 is right)

@dataclasses.dataclass
class _WB:
    w: float
    b: float

    def reset(self):
        self.b = 0.0

    def restart(self):
        self.reset()


def _zero_b(p):
    p.b = 0.0


def _zero_b_setattr(p):
    q = p                           # through a local alias
    setattr(q, "b", 0.0)


def _zero_b_nested(p):
    _zero_b(p)


def f_callee_stores(x, p):
    _zero_b(p)
    return x * p.b + p.w


def f_callee_setattr(x, p):
    _zero_b_setattr(p)
    return x * p.b + p.w


def f_callee_nested(x, p):
    _zero_b_nested(p)
    return x * p.b + p.w


def f_callee_built_inside(x, w):
    p = _WB(w, x)                   # holds differentiated values, made here
    _zero_b(p)
    return x * p.b + p.w


def f_method_stores(x, p):
    p.reset()
    return x * p.b + p.w


def f_method_stores_nested(x, p):
    r = p.restart()
    return x * p.b + p.w + 0.0 * (r is None)


@pytest.mark.parametrize("fn,text,words", [
    (f_callee_stores, "_zero_b(p)", ["call of `_zero_b`", "attribute `b`",
                                     "its parameter `p`", "the argument `p`"]),
    (f_callee_setattr, "_zero_b_setattr(p)", ["call of `_zero_b_setattr`", "attribute `b`",
                                              "its parameter `p`"]),
    (f_callee_nested, "_zero_b_nested(p)", ["call of `_zero_b_nested`", "attribute `b`",
                                            "(in `_zero_b`, which it calls)"]),
])
def test_callee_storing_into_a_differentiated_argument_is_refused(fn, text, words):
    hint = ["dataclasses.replace(p, b=...)"]
    for run in (lambda p: pb.grad(fn, argnums=(0, 1))(3.0, p),
                lambda p: pb.value_and_grad(fn, argnums=1)(3.0, p),
                lambda p: pb.jvp(fn, (3.0, p), (1.0, _WB(1.0, 1.0)))):
        p = _WB(2.0, 5.0)
        with pytest.raises(pb.UnsupportedSyntaxError) as excinfo:
            run(p)
        check_error(excinfo.value, fn, text, pb.UnsupportedSyntaxError, words + hint)
        assert str(excinfo.value).count("^") == len(text)      # the caret under the call
        assert p == _WB(2.0, 5.0)                   # refused before anything ran
    # not differentiated with respect to `p`: refused when it runs, as a store
    # into a dataclass inside the function is (runtime.core), before the call
    p = _WB(2.0, 5.0)
    with pytest.raises(pb.UnsupportedSyntaxError) as excinfo:
        pb.grad(fn)(3.0, p)
    check_error(excinfo.value, fn, text, pb.UnsupportedSyntaxError,
                words[:2] + ["here a dataclass (`_WB`)"] + hint)
    assert p == _WB(2.0, 5.0)


def test_callee_storing_into_an_object_made_from_differentiated_values():
    with pytest.raises(pb.UnsupportedSyntaxError) as excinfo:
        pb.grad(f_callee_built_inside, argnums=(0, 1))(3.0, 2.0)
    check_error(excinfo.value, f_callee_built_inside, "_zero_b(p)", pb.UnsupportedSyntaxError,
                ["call of `_zero_b`", "attribute `b`", "the argument `p`"])
    with pytest.raises(pb.UnsupportedSyntaxError):
        pb.jvp(f_callee_built_inside, (3.0, 2.0), (1.0, 1.0))


@pytest.mark.parametrize("fn,text,method,via", [
    (f_method_stores, "p.reset()", "`_WB.reset`", ""),
    (f_method_stores_nested, "r = p.restart()", "`_WB.restart`", "(in `reset`, which it calls)"),
])
def test_method_storing_into_a_dataclass_is_refused_when_it_runs(fn, text, method, via):
    for argnums in ((0, 1), 0):
        p = _WB(2.0, 5.0)
        with pytest.raises(pb.UnsupportedSyntaxError) as excinfo:
            pb.grad(fn, argnums=argnums)(3.0, p)
        check_error(excinfo.value, fn, text, pb.UnsupportedSyntaxError,
                    [f"call of {method}", "attribute `b` of `self`", via,
                     "dataclasses.replace(self, b=...)"])
        assert p == _WB(2.0, 5.0)                   # refused before the call
    p = _WB(2.0, 5.0)
    with pytest.raises(pb.UnsupportedSyntaxError) as excinfo:
        pb.jvp(fn, (3.0, p), (1.0, _WB(1.0, 1.0)))
    assert f"call of {method}" in str(excinfo.value)
    assert p == _WB(2.0, 5.0)


def _reset_it(q):
    q.reset()


def f_callee_calls_a_storing_method(x, p):
    _reset_it(p)
    return x * p.b + p.w


def test_callee_calling_a_method_on_a_differentiated_argument_is_refused():
    # run as plain Python (its result carries no gradient), `_reset_it`'s
    # `q.reset()` is not seen into: refused, whatever the method does
    for run in (lambda p: pb.grad(f_callee_calls_a_storing_method, argnums=(0, 1))(3.0, p),
                lambda p: pb.jvp(f_callee_calls_a_storing_method, (3.0, p),
                                 (1.0, _WB(1.0, 1.0)))):
        p = _WB(2.0, 5.0)
        with pytest.raises(pb.UnsupportedSyntaxError) as excinfo:
            run(p)
        check_error(excinfo.value, f_callee_calls_a_storing_method, "_reset_it(p)",
                    pb.UnsupportedSyntaxError,
                    ["call of `_reset_it`", "`q.reset()`", "the argument `p`"])
        assert p == _WB(2.0, 5.0)


def f_store_through_a_value(x, p):
    fn = _zero_b
    fn(p)
    return x * p.b + p.w


def f_store_through_a_partial(x, p):
    fn = functools.partial(_zero_b_nested)
    r = fn(p=p)
    return x * p.b + p.w + 0.0 * (r is None)


@pytest.mark.parametrize("fn,text,words", [
    (f_store_through_a_value, "fn(p)", ["call of `_zero_b`", "attribute `b` of `p`"]),
    (f_store_through_a_partial, "r = fn(p=p)", ["call of `_zero_b_nested`",
                                                "(in `_zero_b`, which it calls)"]),
])
def test_store_through_a_function_value_is_refused_when_it_runs(fn, text, words):
    for argnums in ((0, 1), 0):
        p = _WB(2.0, 5.0)
        with pytest.raises(pb.UnsupportedSyntaxError) as excinfo:
            pb.grad(fn, argnums=argnums)(3.0, p)
        check_error(excinfo.value, fn, text, pb.UnsupportedSyntaxError,
                    words + ["here a dataclass (`_WB`)"])
        assert p == _WB(2.0, 5.0)


def _stash(log, v):
    y = v * 2.0
    log.last = y                    # a differentiated value into an attribute


def _stash_shape(log, v):
    log.n = v.shape[0]              # no gradient: fine


def f_callee_stashes_a_gradient(x):
    _stash(HOLDER, x)
    return np.sum(HOLDER.last * x)


def f_callee_stashes_a_shape(x):
    _stash_shape(HOLDER, x)
    return np.sum(x * x) / HOLDER.n


def test_callee_storing_a_differentiated_value_into_an_attribute_is_refused():
    # before: the gradient was 2x where 4x is right (HOLDER.last read as a constant)
    for run in (lambda: pb.grad(f_callee_stashes_a_gradient)(X),
                lambda: pb.jvp(f_callee_stashes_a_gradient, (X,), (X,))):
        with pytest.raises(pb.UnsupportedSyntaxError) as excinfo:
            run()
        check_error(excinfo.value, f_callee_stashes_a_gradient, "_stash(HOLDER, x)",
                    pb.UnsupportedSyntaxError,
                    ["call of `_stash`", "value of its parameter `v`",
                     "attribute `log.last`", "plain local name"])
    assert not hasattr(HOLDER, "last")
    x = X.copy()
    np.testing.assert_allclose(pb.grad(f_callee_stashes_a_shape)(x), 2 * x / len(x),
                               rtol=1e-15)


def test_refused_under_vjp_and_jvp_too():
    with pytest.raises(pb.UnsupportedSyntaxError) as excinfo:
        pb.vjp(f_sort, X)
    check_error(excinfo.value, f_sort, "y.sort()", pb.UnsupportedSyntaxError, ["`.sort()`"])
    with pytest.raises(pb.UnsupportedSyntaxError):
        pb.jvp(f_sort, (X,), (X,))


# -- functions with no rule, values that carry no gradient -------------------------

def f_no_rule_linalg(x):
    return np.sum(np.trim_zeros(x))


def f_no_rule_method(x):
    return np.sum(x.compress([True, False, True]))


def f_varied_static_axis(x):
    k = x[0]
    return np.sum(np.sum(np.outer(x, x), axis=k))


NO_RULE = [
    (f_no_rule_linalg, "np.trim_zeros(x)", pb.NoRuleError,
     ["np.trim_zeros", "pb.custom_vjp"]),
    (f_no_rule_method, "x.compress([True, False, True])", pb.NoRuleError,
     ["compress", "pb.custom_vjp"]),
    (f_varied_static_axis, "axis=k", pb.NonDifferentiableError, ["`axis`", "constant"]),
]


@pytest.mark.parametrize("fn, text, cls, hint", NO_RULE, ids=[c[0].__name__ for c in NO_RULE])
def test_no_rule_names_line_and_fix(fn, text, cls, hint):
    with pytest.raises(cls) as excinfo:
        pb.grad(fn)(X)
    check_error(excinfo.value, fn, text, cls, hint)


# -- functions pullback cannot read ----------------------------------------------------

def test_numpy_function_without_a_rule_says_so():
    # (one with a rule is differentiated by it: test_rules_as_functions)
    with pytest.raises(pb.SourceUnavailableError) as excinfo:
        pb.grad(np.argmax)(np.ones(2))
    assert "not a Python function" in str(excinfo.value)


def test_callables_without_source():
    # a partial is unwrapped: the function underneath is differentiated (and refused here)
    with pytest.raises(pb.UnsupportedSyntaxError, match="changes `x` in place"):
        pb.grad(functools.partial(f_fill))(X)
    with pytest.raises(pb.SourceUnavailableError, match="(?s)not a Python function.*custom_vjp"):
        pb.grad(sorted)(X)
    with pytest.raises(pb.SourceUnavailableError, match="not a Python function"):
        pb.grad(print)(1.0)
    with pytest.raises(pb.SourceUnavailableError, match="not a Python function"):
        pb.vjp(len, X)


def test_function_whose_source_is_gone():
    ns = {}
    exec(compile("def f(x):\n    return x * 2.0\n", "<no such file>", "exec"), ns)
    with pytest.raises(pb.SourceUnavailableError) as excinfo:
        pb.grad(ns["f"])(1.0)
    assert "not available" in str(excinfo.value) and "in a file" in str(excinfo.value)


# -- misuse of the API -----------------------------------------------------------------

def two(x, y):
    return np.sum(x * y)


@pytest.mark.parametrize("argnums", [[0, 1], True, 1.0, (), (0, "y")])
def test_argnums_of_the_wrong_type(argnums):
    with pytest.raises(TypeError, match="argnums must be an int or a non-empty tuple of ints"):
        pb.grad(two, argnums=argnums)


@pytest.mark.parametrize("argnums", [2, -3, (0, 5)])
def test_argnums_out_of_range(argnums):
    with pytest.raises(ValueError, match=r"argnums=-?\d is out of range: two was called with "
                                         r"2 positional arguments"):
        pb.grad(two, argnums=argnums)(X, X)


@pytest.mark.parametrize("value, words", [
    (np.arange(3.0), [r"shape \(3,\)"]),
    ([1.0, 2.0], ["list"]),
    ((1.0,), ["tuple"]),
])
def test_non_scalar_output(value, words):
    def f(x):
        return value
    with pytest.raises(TypeError) as excinfo:
        pb.grad(f)(1.0)
    msg = str(excinfo.value)
    assert "requires a scalar output" in msg and ".sum()" in msg and "pb.vjp" in msg
    assert all(__import__("re").search(w, msg) for w in words), msg


@pytest.mark.parametrize("value, words", [
    (3, ["int 3", "float", "return 0.0, not 0"]),
    (np.int64(2), ["int64", "float"]),
    (True, ["bool", "float"]),
])
def test_integer_output(value, words):
    """As JAX: an integer output has no gradient to give; zeros would hide a bug."""
    def f(x):
        return value
    with pytest.raises(TypeError, match="pb.grad requires a float output") as excinfo:
        pb.grad(f)(1.0)
    assert all(w in str(excinfo.value) for w in words), str(excinfo.value)


def test_no_return():
    def f(x):
        y = x * 2.0  # noqa: F841
    with pytest.raises(TypeError, match=r"returned None: add a `return`"):
        pb.grad(f)(1.0)


def test_custom_vjp_cotangent_of_the_wrong_shape():
    @pb.custom_vjp
    def f(x):
        return x * 2.0
    f.defvjp(lambda x: (x * 2.0, None), lambda res, g: (np.ones(5),))

    def uses(x):
        return np.sum(f(x))
    with pytest.raises(ValueError, match=r"bwd rule of f returned a cotangent of shape \(5,\) "
                                         r"for argument 0, which has shape \(3,\)"):
        pb.grad(uses)(X)
    # one that broadcasts from the argument's shape is summed back onto it
    f.defvjp(lambda x: (x * 2.0, None), lambda res, g: (np.broadcast_to(2.0 * g, (2, 3)),))
    np.testing.assert_array_equal(pb.grad(uses)(X), [4.0, 4.0, 4.0])


def test_complex_output():
    with pytest.raises(TypeError, match=r"real output.*np\.real\(y\).*np\.abs.*pb\.vjp"):
        pb.grad(lambda z: z * z)(1.0 + 2.0j)


@pytest.mark.parametrize("value, words", [
    (3, ["(y)", "int", "integer", "3.0", "argnums"]),
    (np.arange(3), ["int64", "x.astype(float)"]),
    (np.int32(2), ["int32"]),
    (True, ["bool"]),
    ("a", ["str", "NumPy array of floats"]),
    (None, ["NoneType"]),
    ((1.0, 2), ["tuple"]),
])
def test_inputs_without_a_gradient(value, words):
    with pytest.raises(TypeError) as excinfo:
        pb.grad(two, argnums=1)(X, value)
    msg = str(excinfo.value)
    assert "pb.grad cannot differentiate two with respect to argument 1" in msg
    for w in words:
        assert w in msg, (w, msg)


def test_cotangent_that_does_not_match_the_output():
    _, back = pb.vjp(lambda x: x * 2.0, X)
    with pytest.raises(ValueError, match=r"has shape \(2,\), but its output has shape \(3,\)"):
        back(np.ones(2))
    _, back = pb.vjp(lambda x: (x, np.sum(x)), X)
    with pytest.raises(ValueError, match="returned a tuple of 2.*same structure"):
        back(np.ones(3))


def test_has_aux_without_a_pair():
    def f(x):
        return np.sum(x)
    with pytest.raises(pb.PullbackError) as excinfo:
        pb.grad(f, has_aux=True)(X)
    check_error(excinfo.value, f, "return np.sum(x)", pb.PullbackError, ["return value, aux"])


def test_custom_vjp_misuse():
    @pb.custom_vjp
    def f(x):
        return x * 2.0
    with pytest.raises(TypeError, match=r"has no rule yet: call f\.defvjp\(fwd, bwd\)"):
        pb.grad(f)(1.0)
    f.defvjp(lambda x: (x * 2.0, None), lambda res, g: g * 2.0)
    with pytest.raises(TypeError, match="must return a tuple with one cotangent per argument"):
        pb.grad(f)(1.0)


def test_jvp_with_mismatched_tangents():
    with pytest.raises(ValueError, match="one tangent per primal"):
        pb.jvp(np.sum, (X,), (X, X))
    with pytest.raises(ValueError, match=r"tangent of shape \(2,\).*primal of shape \(3,\)"):
        pb.jvp(lambda x: np.sum(x), (X,), (np.ones(2),))


# -- errors in the user's own code, raised while the primal runs -----------------------

def points_at(err, fn, text, filename=__file__):
    """The traceback of ``err`` names the user's file and the line of ``fn``
    holding ``text``, and quotes it."""
    shown = "".join(traceback.format_exception(err))
    assert f'File "{filename}", line {line_of(fn, text)}' in shown, shown
    assert text in shown


def shapes_mismatch(x, y):
    z = x + y
    return np.sum(z)


def out_of_range_in_loop(x):
    s = 0.0
    for i in range(5):
        s = s + x[i] * 2.0
    return s


def in_a_branch(x, s):
    if s > 0.0:
        t = x @ np.ones(4)
    else:
        t = np.sum(x)
    return t


def missing_key(params):
    return params["w"] * params["bias"]


def user_assert(x):
    assert np.all(x > 1.0), "every x must exceed 1"
    return np.sum(x)


def helper_that_fails(v):
    return v @ np.ones(5)


def calls_helper(x):
    return np.sum(helper_that_fails(x) * 2.0)


def divides(x, s):
    scale = 1.0 / s
    return np.sum(x) * scale


RUNTIME = [
    (shapes_mismatch, (X, np.ones(2)), ValueError, "z = x + y"),
    (out_of_range_in_loop, (X,), IndexError, "s = s + x[i] * 2.0"),
    (in_a_branch, (X, 1.0), ValueError, "t = x @ np.ones(4)"),
    (missing_key, ({"w": 2.0},), KeyError, 'params["w"] * params["bias"]'),
    (user_assert, (X,), AssertionError, "assert np.all(x > 1.0)"),
    (calls_helper, (X,), ValueError, "return np.sum(helper_that_fails(x) * 2.0)"),
    (divides, (X, 0.0), ZeroDivisionError, "scale = 1.0 / s"),
]


@pytest.mark.parametrize("fn, args, exc, text", RUNTIME, ids=[c[0].__name__ for c in RUNTIME])
def test_error_in_user_code_points_at_the_user_line(fn, args, exc, text):
    with pytest.raises(Exception) as plain:      # what plain Python raises
        fn(*args)
    with pytest.raises(exc) as excinfo:
        pb.grad(fn)(*args)
    assert type(excinfo.value) is type(plain.value)
    # the user's own error, unchanged (pytest adds its own detail to an assert here)
    assert str(plain.value).startswith(str(excinfo.value))
    points_at(excinfo.value, fn, text)


def test_error_in_a_helper_points_at_both_lines():
    with pytest.raises(ValueError) as excinfo:
        pb.grad(calls_helper)(X)
    points_at(excinfo.value, helper_that_fails, "return v @ np.ones(5)")
    points_at(excinfo.value, calls_helper, "helper_that_fails(x)")


def test_error_in_generated_source_of_a_string():
    f = function_from_source("""
    def f(x):
        y = x[::2]
        return np.sum(y * x)
    """)
    with pytest.raises(ValueError) as excinfo:
        pb.grad(f)(X)
    shown = "".join(traceback.format_exception(excinfo.value))
    assert f'File "{f.__code__.co_filename}", line 3' in shown
    assert "return np.sum(y * x)" in shown
