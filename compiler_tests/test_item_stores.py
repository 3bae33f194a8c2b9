"""Item stores that carry no gradient (issue 13): ``d[k] = v``, ``d[k] op= v``,
``lst[i] = v`` and ``xs.append(v)`` into a container holding no
differentiated value, of a value carrying no gradient, inside a
differentiated function (analyses/item_stores.py).

They run once in the primal, in Python's order, in reverse and forward mode
(never again in the adjoint), even when the container is an argument not
differentiated, a global, a captured value or a dict already handed
elsewhere.  What stays refused is in test_bad_input.py."""
import numpy as np
import pytest

import pullback as pb

X = np.array([0.3, -1.2, 2.0])


def logged(x, calls):
    # the autograd harness's pattern (shared/tools/autograd_suite.py, `direct`)
    call = {"kind": "grad", "n": x.shape[0]}
    calls.append(call)
    try:
        y = np.sum(np.sin(x) * x)
    except BaseException as e:
        call["raised"] = str(e)
        raise
    call["returned"] = True
    return y


def test_a_dict_appended_elsewhere_then_stored_into_runs_once_per_call():
    calls = []
    g = pb.grad(logged)(X, calls)
    np.testing.assert_allclose(g, np.cos(X) * X + np.sin(X), rtol=1e-15)
    assert calls == [{"kind": "grad", "n": 3, "returned": True}]
    v, g = pb.value_and_grad(logged)(X, calls)
    assert v == pytest.approx(np.sum(np.sin(X) * X), rel=1e-15) and len(calls) == 2
    out, back = pb.vjp(logged, X, calls)
    back(1.0)
    back(2.0)
    assert len(calls) == 3                 # the pullback never runs the stores again
    def with_log(x):
        return logged(x, calls)
    y, t = pb.jvp(with_log, (X,), (np.ones(3),))
    assert t == pytest.approx(np.sum(np.cos(X) * X + np.sin(X)), rel=1e-15)
    assert calls == [{"kind": "grad", "n": 3, "returned": True}] * 4


COUNTS = {"n": 0, "last": None}


def counted(x):
    COUNTS["n"] += 1
    COUNTS["last"] = x.shape
    return np.sum(x * x)


def test_a_global_dict_counter():
    COUNTS.update(n=0, last=None)
    np.testing.assert_array_equal(pb.grad(counted)(X), 2 * X)
    assert COUNTS == {"n": 1, "last": (3,)}
    out, back = pb.vjp(counted, X)
    np.testing.assert_array_equal(back(1.0)[0], 2 * X)
    back(1.0)
    assert COUNTS["n"] == 2
    pb.jvp(counted, (X,), (np.ones(3),))
    assert COUNTS["n"] == 3


def test_a_dict_argument_not_differentiated_is_the_callers_own():
    def f(x, log):
        log["calls"] = log.get("calls", 0) + 1
        log["scale"] = 3.0
        return np.sum(x) * log["scale"]
    log = {}
    np.testing.assert_array_equal(pb.grad(f)(X, log), np.full(3, 3.0))
    assert log == {"calls": 1, "scale": 3.0}
    np.testing.assert_array_equal(pb.grad(f)(X, log), np.full(3, 3.0))
    assert log["calls"] == 2


def test_a_read_after_the_store_sees_the_new_value_also_in_the_adjoint():
    def f(x):
        d = {"s": 2.0}
        a = x * d["s"]            # the adjoint multiplies by 2, the value read here
        d["s"] = 5.0
        d["s"] = d["s"] + 1.0
        b = x * d["s"]            # and by 6 here
        return np.sum(a + b)
    np.testing.assert_array_equal(pb.grad(f)(X), np.full(3, 8.0))


def test_list_items_and_appends_in_a_loop():
    seen = []

    def f(x, n):
        flags = [0, 0, 0]
        for i in range(n):
            flags[i] = i + 1
            seen.append(i)
            x = x * 1.5
        return np.sum(x) * flags[n - 1]
    g = pb.grad(f)(X, 3)
    np.testing.assert_allclose(g, np.full(3, 1.5 ** 3 * 3), rtol=1e-15)
    assert seen == [0, 1, 2]


def test_a_captured_dict():
    cache = {}

    def f(x):
        cache["calls"] = cache.get("calls", 0) + 1
        cache["shape"] = x.shape
        return np.sum(x * x) * cache["shape"][0]
    np.testing.assert_array_equal(pb.grad(f)(X), 6 * X)
    assert cache == {"calls": 1, "shape": (3,)}


def test_second_derivative_through_a_logging_function():
    calls = []

    def inner(x):
        call = {"kind": "inner"}
        calls.append(call)
        y = np.sin(x) * x
        call["returned"] = True
        return y

    def outer(x):
        return pb.grad(inner)(x)
    # d/dx (cos x * x + sin x) = 2 cos x - x sin x
    x = 0.7
    assert pb.grad(outer)(x) == pytest.approx(2 * np.cos(x) - x * np.sin(x), rel=1e-14)
    assert calls and all(c == {"kind": "inner", "returned": True} for c in calls)


def _text(e, n):
    return str(e)[:n]


def test_an_error_caught_in_a_handler_carries_no_gradient():
    # the harness's `call['raised'] = _exc_text(e, 200)`: the text of a caught
    # error stored into the log (was: "a differentiated value through an item")
    calls = []

    def f(x, k):
        call = {"k": k}
        calls.append(call)
        try:
            y = np.sum(x * x) * (1 / k)
        except ZeroDivisionError as e:
            call["raised"] = _text(e, 20)
            y = np.sum(x)
        call["returned"] = True
        return y
    np.testing.assert_array_equal(pb.grad(f)(X, 2), 2 * X * 0.5)
    np.testing.assert_array_equal(pb.grad(f)(X, 0), np.ones(3))
    assert calls == [{"k": 2, "returned": True},
                     {"k": 0, "raised": "division by zero", "returned": True}]


def test_an_error_holding_numbers_is_refused_in_its_handler():
    def f(x):
        try:
            raise ValueError(float(x))
        except ValueError as e:
            return e.args[0] * 2.0
    with pytest.raises(pb.UnsupportedSyntaxError, match="holds numbers"):
        pb.grad(f)(1.5)


def test_a_log_holding_differentiated_values_takes_a_flag():
    # `call` holds x (varied), but nothing read from it reaches the output
    calls = []

    def f(x):
        call = {"x": x, "n": 0}
        calls.append(call)
        y = np.sum(np.sin(x))
        call["returned"] = True
        call["n"] += 1
        return y
    np.testing.assert_array_equal(pb.grad(f)(X), np.cos(X))
    assert calls[0]["returned"] is True and calls[0]["n"] == 1
    np.testing.assert_array_equal(calls[0]["x"], X)


def test_a_flag_into_a_dict_whose_items_reach_the_output():
    # the function's own dict, held by no other name: followed as a new dict
    # per store (frontend/dict_stores.py; refused before)
    def f(x):
        d = {"w": x}
        d["flag"] = 1.0
        return np.sum(d["w"] * d["flag"])
    np.testing.assert_array_equal(pb.grad(f)(X), np.ones(3))


def test_a_flag_into_a_shared_dict_whose_items_reach_the_output_is_refused():
    def f(x):
        d = {"w": x}
        held = [d]
        d["flag"] = 1.0
        return np.sum(held[0]["w"])
    with pytest.raises(pb.UnsupportedSyntaxError, match="a store into the dict `d`, which "
                       "holds differentiated values"):
        pb.grad(f)(X)
