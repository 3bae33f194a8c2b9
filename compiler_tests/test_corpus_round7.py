"""Findings of the seventh corpus round (issue 13): the smallest reproductions
of what the new programs in ``compiler_tests/programs/`` and the probes
written around them found.

Each gradient is checked against exact values (the functions are linear or
quadratic in the value differentiated), so the tests can fail.  Strict xfails
are findings in files this round does not own; each names the owner's file in
its reason and turns into a failure the moment the fix lands: remove the
mark then.
"""
import collections
import dataclasses

import numpy as np
import pytest

import pullback as pb


X = np.array([0.7, -0.4, 1.3, 0.25])


def refused_at(f, line_text, *args):
    """``pb.grad(f)`` raises a PullbackError naming the line holding ``line_text``."""
    import inspect
    with pytest.raises(pb.PullbackError) as info:
        pb.grad(f)(*args)
    lines, start = inspect.getsourcelines(f)
    lineno = start + next(i for i, t in enumerate(lines) if line_text in t)
    assert f"line {lineno}" in str(info.value), str(info.value)
    return str(info.value)


# ------------------------------------------- appends to a list another name holds
# `b = a; b.append(v)` grew the one list both names hold, but the gradient of
# `sum(a)` never reached `v`: a silent zero (in a loop, an all-zero gradient).
# analyses/item_stores.py now refuses the append, naming the other holder.


def append_through_alias(x):
    a = [x[0]]
    b = a
    b.append(x[1] * 5.0)
    return sum(a)


def append_to_alias_in_loop(x):
    acc = []
    view = acc
    for v in x:
        view.append(v * 2.0)
    return sum(acc)


def append_after_packing(x):
    inner = [x[0]]
    outer = [inner, 1.0]
    inner.append(x[1] * 5.0)
    return sum(outer[0])


def append_after_dict_holds_it(x):
    inner = [x[0]]
    d = {"xs": inner}
    inner.append(x[1] * 5.0)
    return sum(d["xs"])


def rows_appended_before_filled(x):
    rows = []
    for i in range(2):
        row = []
        rows.append(row)
        for j in range(2):
            row.append(x[2 * i + j] * (j + 1.0))
    return sum(sum(r) for r in rows)


@pytest.mark.parametrize("f, line", [
    (append_through_alias, "b.append"),
    (append_to_alias_in_loop, "view.append"),
    (append_after_packing, "inner.append"),
    (append_after_dict_holds_it, "inner.append"),
    (rows_appended_before_filled, "row.append"),
])
def test_append_to_a_list_another_name_holds_is_refused(f, line):
    message = refused_at(f, line, X)
    assert "holds the same list" in message


def append_then_alias(x):
    a = [x[0]]
    a.append(x[1] * 5.0)
    b = a
    return sum(b)


def rows_filled_then_appended(x):
    rows = []
    for i in range(2):
        row = []
        for j in range(2):
            row.append(x[2 * i + j] * (j + 1.0))
        rows.append(row)
    return sum(sum(r) for r in rows)


def alias_rebound_before_append(x):
    a = [x[0]]
    b = a
    a = []
    a.append(x[1] * 5.0)
    return sum(a) + 2.0 * sum(b)


def copied_list(x):
    a = [x[0]]
    b = list(a)
    b.append(x[1] * 5.0)
    return sum(a) + 2.0 * sum(b)


@pytest.mark.parametrize("f, expected", [
    (append_then_alias, [1.0, 5.0, 0.0, 0.0]),
    (rows_filled_then_appended, [1.0, 2.0, 1.0, 2.0]),
    (alias_rebound_before_append, [2.0, 5.0, 0.0, 0.0]),
    (copied_list, [3.0, 10.0, 0.0, 0.0]),
])
def test_lists_held_by_one_name_while_they_grow_are_followed(f, expected):
    np.testing.assert_allclose(pb.grad(f)(X), expected, rtol=1e-12)


def _same(lst):
    return lst


def append_through_returned_alias(x):
    a = [x[0]]
    b = _same(a)
    b.append(x[1] * 5.0)
    return sum(a)


def test_append_through_a_list_a_function_returns_is_refused():
    """`b = same(a)` may be `a` itself: was [1, 0, 0, 0] for [1, 5, 0, 0]."""
    assert "the call may hand back" in refused_at(append_through_returned_alias, "b.append", X)


# -------------------------------- generators and map run when they are consumed
# A generator expression (or `map`) reads its free variables when it is
# consumed, not when it is made; pullback runs it where it is written, so a
# variable rebound between the two gives another value and another gradient,
# silently (frontend/desugar.py, unpack's).


def lazy_generator(x):
    s = x[0]
    gen = (s * v for v in x[1:])
    s = x[1] * 3.0
    return sum(gen)


def lazy_map(x):
    k = 1.0
    m = map(lambda v: v * k, x)
    k = 4.0
    return sum(m)


def map_before_a_write(x):
    y = x * 1.0
    m = map(np.sin, y)
    y[0] = 2.0 * x[1]
    return sum(m)


def generator_function_reading_a_rebound_name(x):
    k = 1.0

    def gen():
        for v in x:
            yield v * k
    g = gen()
    k = 3.0
    return sum(g)


def generators_made_in_a_comprehension(x):
    gens = [(v * i for v in x) for i in range(1, 3)]     # both see i == 2 when consumed
    return sum(sum(g) for g in gens)


def zip_generator_reading_a_rebound_name(x):
    s = 1.0
    g = (a * b * s for a, b in zip(x, x[::-1]))
    s = 5.0
    return sum(g)


LAZY = [
    (lazy_generator, [0.0, 3.0 * np.sum(X[1:]) + 3.0 * X[1], 3.0 * X[1], 3.0 * X[1]]),
    (lazy_map, [4.0] * 4),
    (map_before_a_write, [0.0, np.cos(X[1]) + 2.0 * np.cos(2.0 * X[1]), np.cos(X[2]),
                          np.cos(X[3])]),
    (generator_function_reading_a_rebound_name, [3.0] * 4),
    (generators_made_in_a_comprehension, [4.0] * 4),
    (zip_generator_reading_a_rebound_name, 10.0 * X[::-1]),
]


@pytest.mark.parametrize("f, expected", LAZY, ids=[f.__name__ for f, _ in LAZY])
def test_lazy_iterators_read_what_they_see_when_consumed(f, expected):
    try:
        value, g = pb.value_and_grad(f)(X)
    except pb.PullbackError:
        return
    assert value == f(X)
    np.testing.assert_allclose(g, expected, rtol=1e-12, atol=1e-15)


# ------------------------------------------------------------- crashes, refusals


class Slotted:
    __slots__ = ("w",)

    def __init__(self, w):
        self.w = w

    def scaled(self, s):
        return Slotted(self.w * s)


def slotted_objects(x):
    return np.sum(Slotted(x).scaled(2.0).w ** 2)


def test_slotted_class():
    np.testing.assert_allclose(pb.grad(slotted_objects)(X), 8.0 * X)


@dataclasses.dataclass
class Layer:
    W: np.ndarray

    def __call__(self, x):
        return np.tanh(x @ self.W)


class PlainLayer:
    def __init__(self, W):
        self.W = W

    def __call__(self, x):
        return np.tanh(x @ self.W)


def call_dataclass_layer(W, x):
    return np.sum(Layer(W)(x))


def call_plain_layer(W, x):
    return np.sum(PlainLayer(W)(x))


@pytest.mark.xfail(strict=True, reason="issue 13: calling an instance of a dataclass with "
                   "__call__ built from the values differentiated is refused as 'a function "
                   "value' while the same plain class is followed (frontend/instances.py)")
def test_callable_dataclass_built_inside():
    W, x = 0.3 * np.ones((2, 2)), np.arange(2.0)
    np.testing.assert_allclose(pb.grad(call_dataclass_layer)(W, x),
                               pb.grad(call_plain_layer)(W, x))


def reduction_into_a_zero_d_out(x):
    out = np.zeros(())
    np.sum(x ** 2, out=out)
    return float(out)


@pytest.mark.xfail(strict=True, reason="issue 13: `np.sum(v, out=out)` into a 0-d array read "
                   "back by float(out) crashes in the adjoint (TypeError: 'float' object does "
                   "not support item assignment, at `out_bar[...] = 0`; "
                   "frontend/out_arguments.py)")
def test_reduction_into_a_zero_d_out_array():
    np.testing.assert_allclose(pb.grad(reduction_into_a_zero_d_out)(X), 2.0 * X)


def polynomial_features(x):
    return sum((k + 1.0) * np.sum(x ** k) for k in range(4))


# (NaN where x < 0 until pow's forward rule guarded the exponent's term, round 7)
def test_hessian_of_a_power_with_an_int_variable_exponent():
    expected = np.diag(sum((k + 1.0) * k * (k - 1) * X ** max(k - 2, 0) for k in range(2, 4)))
    np.testing.assert_allclose(pb.hessian(polynomial_features)(X), expected, rtol=1e-12)


def complex_from_real_slices(x):
    z = x[:2] + 1j * x[2:]
    return np.sum(np.abs(z) ** 2)


# (a crash in the in-place adjoint until ReverseContext.nothing_complex, round 7)
def test_complex_built_from_real_slices():
    np.testing.assert_allclose(pb.grad(complex_from_real_slices)(X), 2.0 * X)



# ------------------------------------------- pb.checkpoint of a function drawing numbers
# The adjoint runs a checkpointed function again: dropout in it drew another
# mask there, and the gradient was the other mask's (value 10, gradient 0 at
# entries the value kept), silently.  checkpointing.py now rewinds the
# generators it may draw from for the second run (and puts them back), and
# refuses a second run that computes something else.

W4 = np.array([1.0, 2.0, 3.0, 4.0])


def dropout_step(x):
    return x * (np.random.rand(4) > 0.5)


def dropout_step_with(x, rng):
    return x * (rng.random(4) > 0.5)


def checkpointed_dropout(x):
    return np.sum(pb.checkpoint(dropout_step)(x) * W4)


def checkpointed_dropout_with(x, rng):
    return np.sum(pb.checkpoint(dropout_step_with)(x, rng) * W4)


def dropout_layer(h, w):
    return np.tanh(h @ w) * (np.random.rand(*h.shape) > 0.3) / 0.7


def dropout_network(x, w, checkpointed):
    for _ in range(3):
        x = pb.checkpoint(dropout_layer)(x, w) if checkpointed else dropout_layer(x, w)
    return np.sum(x ** 2)


@pytest.mark.parametrize("seed", range(4))
def test_checkpointed_dropout_gradient_is_the_masks(seed):
    ones = np.ones(4)
    np.random.seed(seed)
    value, g = pb.value_and_grad(checkpointed_dropout)(ones)
    after = np.random.rand()
    np.random.seed(seed)
    mask = np.random.rand(4) > 0.5
    assert value == np.sum(W4 * mask) and after == np.random.rand()
    np.testing.assert_array_equal(g, W4 * mask)
    rng = np.random.default_rng(seed)
    value, g = pb.value_and_grad(checkpointed_dropout_with)(ones, rng)
    mask = np.random.default_rng(seed).random(4) > 0.5
    np.testing.assert_array_equal(g, W4 * mask)
    assert rng.random() == np.random.default_rng(seed).random(5)[-1]   # drawn once, as Python


def test_checkpointed_dropout_in_a_loop_matches_the_plain_network():
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((2, 4)), 0.5 * rng.standard_normal((4, 4))
    results = []
    for checkpointed in (True, False):
        np.random.seed(3)
        results.append(pb.value_and_grad(dropout_network, argnums=(0, 1))(x, w, checkpointed))
    (v1, g1), (v2, g2) = results
    assert v1 == v2
    for a, b in zip(g1, g2):
        np.testing.assert_allclose(a, b, rtol=1e-12)


CALLS = [0]


def counting_step(x):
    CALLS[0] += 1
    return x * CALLS[0]


def checkpointed_counter(x):
    return np.sum(pb.checkpoint(counting_step)(x))


def test_checkpointed_function_computing_another_result_again_is_refused():
    with pytest.raises(pb.NonDifferentiableError, match="gave another result"):
        pb.grad(checkpointed_counter)(X)


def forward_dropout(x):
    return np.sum(x * (np.random.rand(4) > 0.5) * W4)


def forward_partials_of_dropout(x, store):
    return pb.forward(forward_dropout, store=store)(x) * 2.0


@pytest.mark.parametrize("store", [True, False])
def test_forward_partials_of_a_function_drawing_numbers_see_one_draw(store):
    """pb.forward runs the tangent function once per input: each run drew
    another mask (store=False: the adjoint's runs too), and the partials
    were the other masks'."""
    for seed in range(3):
        np.random.seed(seed)
        value, g = pb.value_and_grad(forward_partials_of_dropout)(np.ones(4), store)
        after = np.random.rand()
        np.random.seed(seed)
        mask = np.random.rand(4) > 0.5
        assert value == 2.0 * np.sum(W4 * mask) and after == np.random.rand()
        np.testing.assert_array_equal(g, 2.0 * W4 * mask)



# --------------------------------------------------------------- refusal messages


def defaultdict_losses(x):
    losses = collections.defaultdict(float)
    for i in range(4):
        losses[i % 2] += x[i] * x[i]
    return sum(losses.values())


def setdefault_groups(x):
    groups = {}
    for i in range(4):
        groups.setdefault(i % 2, []).append(x[i])
    return sum(sum(g) for g in groups.values())


def test_defaultdict_refusal_names_it_and_the_plain_dict_spelling():
    """It said 'writes only into arrays ... may share memory with another
    array; make a new array (np.zeros(n), ...)'."""
    with pytest.raises(pb.PullbackError) as info:
        pb.grad(defaultdict_losses)(X)
    message = str(info.value)
    assert "a defaultdict (`losses`)" in message and "losses.get(k, 0.0) + v" in message
    assert "array" not in message


def test_setdefault_refusal_says_what_to_write_for_it():
    """It offered an array's `.fill(v)` for a dict's `.setdefault()`."""
    with pytest.raises(pb.PullbackError) as info:
        pb.grad(setdefault_groups)(X)
    assert "groups.get(k, []) + [v]" in str(info.value)
    assert "full_like" not in str(info.value)



def tuple_grown_through_a_second_name(x):
    a = (x[0],)
    b = a
    b += (x[1],)                  # a new tuple for b; a is unchanged
    return sum(a) * 2.0 + sum(b)


def test_tuple_grown_by_plus_equals_through_a_second_name():
    """Refused as 'an in-place update of a list that other names may share'."""
    np.testing.assert_array_equal(pb.grad(tuple_grown_through_a_second_name)(X),
                                  [3.0, 1.0, 0.0, 0.0])
