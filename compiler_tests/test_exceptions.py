"""``try``/``except``/``else``/``finally`` and ``with`` blocks of any context
manager (issue 13, frontend/exceptions.py).

A handler that lets the function go on, a handler that reads the function's
variables and a ``finally`` clause run the ``try`` body as a function under
``runtime.control.attempt`` and branch on what happened; the tests check
exact gradients on every path (body ran, body returned, exception handled,
exception passed on), that ``finally`` runs on each of them in Python's
order, forward mode against reverse mode, and what stays refused.
"""
import contextlib
import math
import warnings

import numpy as np
import pytest

import pullback as pb

EVENTS = []


def fallback(x):
    try:
        y = 1.0 / x
    except ZeroDivisionError:
        y = 0.0
    return y * x * x


def test_handler_that_goes_on_gives_the_gradient_of_the_path_taken():
    assert pb.grad(fallback)(2.0) == 1.0             # d/dx x = 1 on the body's path
    assert pb.grad(fallback)(0.0) == 0.0             # d/dx 0 * x * x on the handler's
    assert pb.value_and_grad(fallback)(4.0) == (4.0, 1.0)
    assert pb.jvp(fallback, (2.0,), (1.0,)) == (2.0, 1.0)
    assert pb.jvp(fallback, (0.0,), (1.0,)) == (0.0, 0.0)


def everything(x):
    try:
        y = np.log(x)
        if x > 10:
            return y * 3.0
    except ValueError:
        y = x
    else:
        y = y * 2.0
    finally:
        EVENTS.append("finally")
    return y * x


def test_try_except_else_finally_on_every_path():
    EVENTS.clear()
    # body ran, else: 2 log(x) x -> 2 log(x) + 2
    assert pb.grad(everything)(2.0) == 2 * np.log(2.0) + 2.0
    # body returned: 3 log(x) -> 3 / x, finally ran first
    assert pb.grad(everything)(20.0) == 3.0 / 20.0
    assert EVENTS == ["finally", "finally"]
    out, t = pb.jvp(everything, (2.0,), (1.0,))
    assert (out, t) == (2 * np.log(2.0) * 2.0, 2 * np.log(2.0) + 2.0)


def parse_or_square(x, text):
    try:
        k = float(text)
    except ValueError as err:
        EVENTS.append(str(err)[:5])
        return x * x
    return k * x


def early_fallback(x):
    try:
        a = x * 2.0
        b = 1.0 / (x - 1.0)
    except ZeroDivisionError:
        return x * 5.0            # the function stops: `a` and `b` are never read
    return a + b


def test_handler_that_returns_does_not_expose_the_partial_body():
    assert pb.grad(early_fallback)(1.0) == 5.0
    assert pb.grad(early_fallback)(2.0) == 2.0 - 1.0


def test_handler_that_returns_and_reads_the_exception():
    EVENTS.clear()
    assert pb.grad(parse_or_square)(3.0, "2.5") == 2.5
    assert pb.grad(parse_or_square)(3.0, "abc") == 6.0
    assert EVENTS == ["could"]


CALLS = []


def harness(target, x):
    """The shape of the autograd suite's wrapper: a try/finally around a
    try/except whose handlers raise."""
    CALLS.append(1)
    depth = len(CALLS)
    try:
        try:
            out = target(x)
        except (KeyError, IndexError):
            raise
        except Exception as e:
            if depth < 0:                # reads a local: runs inside the function
                raise
            raise RuntimeError("skip: %s" % e)
    finally:
        CALLS.pop()
    return out * 2.0


def raises_value_error(x):
    raise ValueError("no")


def test_finally_runs_when_the_body_raises_and_the_error_goes_on():
    CALLS.clear()
    assert pb.grad(harness, argnums=1)(np.sin, 1.0) == 2 * np.cos(1.0)
    assert CALLS == []
    with pytest.raises(RuntimeError, match="skip: no"):
        pb.grad(harness, argnums=1)(raises_value_error, 1.0)
    assert CALLS == []                 # the finally clause ran on the way out
    with pytest.raises(KeyError):
        pb.grad(harness, argnums=1)(lambda v: {}["k"], 1.0)
    assert CALLS == []


def guarded_sum(xs):
    t = 0.0
    for x in xs:
        try:
            t = t + 1.0 / x
        except ZeroDivisionError:
            t = t + 0.0
    return t


def test_try_in_a_loop_and_against_finite_differences():
    assert pb.grad(guarded_sum)([1.0, 0.0, 2.0]) == [-1.0, 0.0, -0.25]
    xs = np.array([0.5, -1.5, 3.0])
    got = pb.grad(guarded_sum)(xs)
    np.testing.assert_allclose(got, -1.0 / xs ** 2, rtol=1e-15)


def logged_sqrt(x):
    try:
        y = math.sqrt(x)
    except Exception as e:
        EVENTS.append(str(e) + str(x))      # reads `x`: runs inside the function
        raise
    return y


def test_handler_that_reads_locals_and_raises():
    assert pb.grad(logged_sqrt)(4.0) == 0.25
    EVENTS.clear()
    with pytest.raises(ValueError, match="math domain error"):
        pb.grad(logged_sqrt)(-1.0)
    assert EVENTS == ["math domain error-1.0"]


def finally_returns_from_body(x):
    try:
        return np.sin(x) * 2.0
    finally:
        EVENTS.append("cleanup")


def test_return_inside_try_with_finally():
    EVENTS.clear()
    assert pb.grad(finally_returns_from_body)(0.5) == 2 * np.cos(0.5)
    assert EVENTS == ["cleanup"]


def first_positive(xs):
    t = 0.0
    for x in xs:
        try:
            if x < 0:
                continue
            t = t + x * x
            if t > 1.0:
                break
        finally:
            EVENTS.append(t > 0.2)
    return t


def test_break_and_continue_out_of_a_try_body_and_finally_sees_the_body():
    EVENTS.clear()
    # -1 skipped, then 0.5 (t = 0.25), then 2.0 (t = 4.25 > 1: break); 3.0 never read
    assert pb.grad(first_positive)([-1.0, 0.5, 2.0, 3.0]) == [0.0, 1.0, 4.0, 0.0]
    # finally ran on each path, after the body: t = 0.0, 0.25, 4.25
    assert EVENTS == [False, True, True]
    assert pb.jvp(first_positive, ([-1.0, 0.5, 2.0, 3.0],), ([1.0, 1.0, 1.0, 1.0],))[1] == 5.0


def test_source_shows_the_body_as_a_function():
    text = pb.source(fallback, 2.0)
    assert "attempt" in text and "try_body" in text


def test_jax_agrees_on_a_fallback():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    def safe(x):
        try:
            if x[0] < 0:
                raise ValueError
            y = np.sum(np.sqrt(x) * x)
        except ValueError:
            y = np.sum(x ** 2)
        return y
    for x in (np.array([1.0, 2.0, 3.0]), np.array([-1.0, 2.0, 3.0])):
        ref = jax.grad(lambda v: jnp.sum(jnp.sqrt(v) * v) if x[0] >= 0 else jnp.sum(v ** 2))(x)
        np.testing.assert_allclose(pb.grad(safe)(x), ref, rtol=1e-14)


def no_rule_inside(x):
    return np.nextafter(x, 2.0) * x        # (no rule: np.nextafter)


def catches_everything(x):
    try:
        y = no_rule_inside(x)
    except Exception:
        y = x * 0.0
    return y


def test_a_refusal_inside_the_body_is_never_taken_for_the_users_exception():
    assert catches_everything(1.5) == np.nextafter(1.5, 2.0) * 1.5    # plain Python: the body
    with pytest.raises(pb.NoRuleError, match="np.nextafter"):
        pb.grad(catches_everything)(1.5)


# -- with blocks of any context manager ------------------------------------------------------

class Timer:
    def __enter__(self):
        EVENTS.append("enter")
        return 7.0

    def __exit__(self, kind, value, tb):
        EVENTS.append(("exit", kind))
        return False


def timed(x):
    with Timer() as t:
        y = np.sin(x) * t
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        z = y * 2.0
    return z


def timed_return(x):
    with Timer():
        if x > 0:
            return x * 3.0
        raise KeyError("negative")


def test_user_context_managers_are_entered_and_left_on_every_path():
    EVENTS.clear()
    assert pb.grad(timed)(1.0) == 14.0 * np.cos(1.0)
    assert EVENTS == ["enter", ("exit", None)]
    assert pb.jvp(timed, (1.0,), (1.0,))[1] == 14.0 * np.cos(1.0)
    EVENTS.clear()
    assert pb.grad(timed_return)(1.0) == 3.0
    assert EVENTS == ["enter", ("exit", None)]
    with pytest.raises(KeyError):
        pb.grad(timed_return)(-1.0)
    assert EVENTS[-1] == ("exit", KeyError)


def silenced_log(x):
    with np.errstate(all="ignore"):
        return np.log(x)


def test_forward_mode_leaves_the_blocks_a_return_or_an_exception_skips():
    before = np.geterr()
    EVENTS.clear()
    assert pb.jvp(timed_return, (1.0,), (1.0,)) == (3.0, 3.0)
    assert EVENTS == ["enter", ("exit", None)]
    with pytest.raises(KeyError):
        pb.jvp(timed_return, (-1.0,), (1.0,))
    assert EVENTS[-1] == ("exit", KeyError)
    out, t = pb.jvp(silenced_log, (np.array([-1.0, 2.0]),), (np.array([1.0, 1.0]),))
    np.testing.assert_array_equal(t, [-1.0, 0.5])
    assert np.geterr() == before          # the errstate block was left


def suppressed(x):
    with contextlib.suppress(ValueError):
        y = x * 2.0
        if x > 1:
            raise ValueError
    return y


def test_context_manager_that_swallows_an_exception_is_refused_when_it_does():
    assert pb.grad(suppressed)(0.5) == 2.0
    with pytest.raises(pb.UnsupportedSyntaxError, match="suppress swallowed a ValueError"):
        pb.grad(suppressed)(2.0)


# -- what stays refused ---------------------------------------------------------------------

def partial_work(x, out):
    try:
        out[0] = x
        y = 1.0 / (x - 1.0)
    except ZeroDivisionError:
        y = 0.0
    return y


def reads_partial(x):
    try:
        a = x * 2.0
        b = 1.0 / (x - 1.0)
    except ZeroDivisionError:
        b = a
    return b


def maybe_partial(x):
    try:
        a = x * 2.0
        b = 1.0 / (x - 1.0)
    except ZeroDivisionError:
        b = 0.0
    return a + b


def returns_in_finally(x):
    try:
        y = x * 2.0
    finally:
        return x * y


def enter_value_from_input(x):
    with Scale(x) as s:
        return s * x


class Scale:
    def __init__(self, s):
        self.s = s

    def __enter__(self):
        return self.s

    def __exit__(self, *exc):
        return False


@pytest.mark.parametrize("f,args,words", [
    (partial_work, (2.0, [0.0]), "a `try` body that changes `out`"),
    (reads_partial, (2.0,), "an `except` handler that reads `a`"),
    (maybe_partial, (2.0,), "`a` may hold what the `try` body had reached"),
    (returns_in_finally, (1.0,), "`return` in a `finally` clause"),
    (enter_value_from_input, (1.0,), "context manager built from `x`"),
])
def test_what_stays_refused_says_why(f, args, words):
    with pytest.raises(pb.UnsupportedSyntaxError, match=words) as info:
        pb.grad(f)(*args)
    assert "test_exceptions.py" in str(info.value)
