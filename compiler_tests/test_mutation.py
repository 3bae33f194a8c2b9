"""Mutation with NumPy's semantics (issue 13): writes into arguments, calls
of functions that write into their arguments, writes through aliases and
views, and state in closures.  Gradients are checked against hand-derived
values, against JAX (x64) on a functional rewrite of the same program, and
against central differences; forward mode must agree with reverse mode.

The semantics (README, "Mutation"): a function is differentiated as a
function of the values its arguments have on entry; pullback's transforms
never change the caller's arrays (it works on its own copy), while a plain
call still does; inside the function every write is followed as NumPy
would make it.
"""
import numpy as np
import pytest

import pullback as pb
from pullback.testing import function_from_source

from fd_helpers import central

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy


def forward_agrees(f, *args):
    """pb.jvp along each input direction equals pb.vjp's gradient."""
    grads = pb.grad(f, argnums=tuple(range(len(args))))(*args)
    for i, a in enumerate(args):
        for k in np.ndindex(np.shape(a)):
            tangents = [np.zeros_like(b) for b in args]
            tangents[i][k] = 1.0
            _, d = pb.jvp(f, tuple(np.copy(b) for b in args), tuple(tangents))
            np.testing.assert_allclose(d, grads[i][k], rtol=1e-12, atol=1e-12)


# -- writes into an argument ------------------------------------------------------------

def set_first(x):
    x[0] = x[1] * 2.0
    return np.sum(x ** 2)


def scale_then_shift(x, v):
    x *= 2.0
    x -= 0.5 * v
    return np.sum(x * v)


def test_write_into_an_argument_is_followed_and_the_caller_keeps_its_array():
    x = np.array([1.0, 2.0, 3.0])
    value, g = pb.value_and_grad(set_first)(x)
    # f = (2 x1)^2 + x1^2 + x2^2: the entry value of x0 is overwritten
    np.testing.assert_array_equal(g, [0.0, 10 * 2.0, 2 * 3.0])
    np.testing.assert_array_equal(x, [1.0, 2.0, 3.0])       # pullback works on a copy
    assert value == set_first(x.copy()) == 16.0 + 4.0 + 9.0
    plain = x.copy()
    set_first(plain)                                         # a plain call still writes
    np.testing.assert_array_equal(plain, [4.0, 2.0, 3.0])
    forward_agrees(set_first, x)


def test_in_place_updates_of_arguments():
    x, v = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    gx, gv = pb.grad(scale_then_shift, argnums=(0, 1))(x, v)
    # f = sum((2x - v/2) * v): df/dx = 2v, df/dv = 2x - v
    np.testing.assert_array_equal(gx, 2 * v)
    np.testing.assert_array_equal(gv, 2 * x - v)
    np.testing.assert_array_equal(x, [1.0, 2.0])
    np.testing.assert_array_equal(v, [3.0, 4.0])
    forward_agrees(scale_then_shift, x, v)


def test_add_at_into_an_argument():
    f = function_from_source("""
def f(x):
    np.add.at(x, np.array([0, 0, 2]), x[1])
    return np.sum(x * x)
""")
    x = np.array([1.0, 2.0, 3.0])
    # x0' = x0 + 2 x1, x2' = x2 + x1: f = x0'^2 + x1^2 + x2'^2
    want = [2 * 5.0, 2 * 5.0 * 2 + 2 * 2.0 + 2 * 5.0, 2 * 5.0]
    np.testing.assert_array_equal(pb.grad(f)(x), want)
    np.testing.assert_allclose(pb.grad(f)(x), central(f, x), rtol=1e-8)


def test_jacfwd_of_a_function_that_writes_into_its_argument():
    """jacfwd runs the function once per input element: the caller's array
    must not change between the runs (why pullback works on a copy)."""
    f = function_from_source("""
def f(x):
    x *= 3.0
    return x * x
""")
    x = np.array([1.0, 2.0])
    np.testing.assert_array_equal(pb.jacfwd(f)(x), np.diag(18.0 * x))
    _, back = pb.vjp(f, x)
    np.testing.assert_array_equal(back(np.array([1.0, 0.0]))[0], [18.0, 0.0])
    np.testing.assert_array_equal(x, [1.0, 2.0])


# -- calls of functions that write into their arguments ---------------------------------

def leapfrog_step(q, p, dt):
    """An ODE step updating its state in place (symplectic Euler, H = p^2/2 + q^4/4)."""
    p -= dt * q ** 3
    q += dt * p


def energy_after(q0, p0):
    q = q0 * 1.0
    p = p0 * 1.0
    for _ in range(4):
        leapfrog_step(q, p, 0.1)
    return np.sum(0.5 * p ** 2 + 0.25 * q ** 4)


def energy_after_jax(q, p):
    for _ in range(4):
        p = p - 0.1 * q ** 3
        q = q + 0.1 * p
    return jnp.sum(0.5 * p ** 2 + 0.25 * q ** 4)


def test_ode_solver_updating_its_state_in_place():
    q, p = np.array([0.5, 1.0, -0.3]), np.array([0.2, -0.1, 0.4])
    gq, gp = pb.grad(energy_after, argnums=(0, 1))(q, p)
    jq, jp = jax.grad(energy_after_jax, argnums=(0, 1))(q, p)
    np.testing.assert_allclose(gq, jq, rtol=1e-13)
    np.testing.assert_allclose(gp, jp, rtol=1e-13)
    np.testing.assert_allclose(gq, central(lambda a: energy_after(a, p), q), rtol=1e-7)
    forward_agrees(energy_after, q, p)


def rotate(state, dt):
    state[0] += dt * state[1]
    state[1] -= dt * state[0]


def rotated(s0):
    s = s0.copy()
    for _ in range(3):
        rotate(s, 0.1)
    return s[0] * s[1]


def test_step_called_in_a_loop_writes_into_the_callers_state():
    """Silently wrong before: the call's result was unused, so the adjoint
    skipped it while the primal changed `s`."""
    s0 = np.array([1.0, 2.0])

    def ref(s):
        a, b = s[0], s[1]
        for _ in range(3):
            a = a + 0.1 * b
            b = b - 0.1 * a
        return a * b
    np.testing.assert_allclose(pb.grad(rotated)(s0), jax.grad(ref)(s0), rtol=1e-14)
    np.testing.assert_allclose(pb.grad(rotated)(s0), central(rotated, s0), rtol=1e-8)
    forward_agrees(rotated, s0)


def test_writes_into_the_callers_argument_through_a_call():
    f = function_from_source("""
def f(x):
    rotate(x, 0.5)
    return x[0] * x[1]
""", {"rotate": rotate})
    x = np.array([1.0, 2.0])
    # a = x0 + x1/2, b = x1 - a/2 = 3/4 x1 - x0/2; f = a b
    a, b = 2.0, 1.0
    np.testing.assert_array_equal(pb.grad(f)(x), [b - 0.5 * a, 0.5 * b + 0.75 * a])
    np.testing.assert_array_equal(x, [1.0, 2.0])


def nudge(v, a, dt):
    v -= dt * a


def test_a_number_updated_in_the_callee_stays_the_callers():
    """`v -= ...` on a float rebinds the callee's name only: the caller's
    number is unchanged, as in Python."""
    f = function_from_source("""
def f(x, y):
    v = x
    for i in range(3):
        nudge(v, y * v, 0.1)
    return v * v
""", {"nudge": nudge})
    assert pb.grad(f)(1.5, 2.0) == 3.0
    g = function_from_source("""
def g(x, y):
    v = x * 1.0
    for i in range(3):
        nudge(v, y, 0.1)
    return np.sum(v * v)
""", {"nudge": nudge})
    x, y = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    gx, gy = pb.grad(g, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx, 2 * (x - 0.3 * y), rtol=0, atol=1e-14)
    np.testing.assert_allclose(gy, -0.6 * (x - 0.3 * y), rtol=0, atol=1e-14)


def test_the_same_array_as_two_arguments_of_a_writer_is_refused():
    f = function_from_source("""
def f(x):
    y = x * 1.0
    nudge(y, y, 0.1)
    return np.sum(y)
""", {"nudge": nudge})
    with pytest.raises(pb.UnsupportedSyntaxError, match="`nudge` writes into its argument `v`"):
        pb.grad(f)(np.ones(2))


def test_a_writer_returning_its_argument_is_refused():
    def stepped(s, dt):
        s[0] += dt
        return s
    f = function_from_source("""
def f(x):
    y = x * 1.0
    r = stepped(y, 0.1)
    return np.sum(r)
""", {"stepped": stepped})
    with pytest.raises(pb.UnsupportedSyntaxError, match="shares memory with its argument `s`"):
        pb.grad(f)(np.ones(2))


def test_a_writer_called_through_a_value_is_refused():
    f = function_from_source("""
def f(x):
    y = x * 1.0
    fn = rotate
    fn(y, 0.1)
    return np.sum(y)
""", {"rotate": rotate})
    with pytest.raises(pb.UnsupportedSyntaxError, match="called through a value"):
        pb.grad(f)(np.ones(2))


def test_arguments_sharing_memory_are_refused_when_written():
    f = function_from_source("""
def f(x, y):
    x[0] = 2.0 * y[1]
    return np.sum(x * y)
""")
    a = np.arange(3.0)
    with pytest.raises(pb.UnsupportedSyntaxError, match="share memory"):
        pb.grad(f)(a, a)
    gx, gy = pb.grad(f, argnums=(0, 1))(a, a.copy())
    # x0' = 2 y1: f = 2 y1 y0 + x1 y1 + x2 y2
    np.testing.assert_array_equal(gx, [0.0, 1.0, 2.0])
    np.testing.assert_array_equal(gy, [2 * 1.0, 2 * 0.0 + 1.0, 2.0])


# -- aliases and views ------------------------------------------------------------------

ALIASES = {
    # name: (pullback source, jax rewrite, argument)
    "alias_updated": ("""
def f(x):
    y = x * 1.0
    z = y
    z += 1.0
    return np.sum(y * x)
""", lambda x: jnp.sum((x + 1.0) * x), np.array([1.0, 2.0, 3.0])),
    "slice_view_updated": ("""
def f(x):
    y = x * 1.0
    v = y[1:]
    v *= 2.0
    return np.sum(y * x)
""", lambda x: jnp.sum(x.at[1:].multiply(2.0) * x), np.array([1.0, 2.0, 3.0])),
    "transpose_written": ("""
def f(x):
    y = x * 1.0
    v = y.T
    v[0] = 3.0 * x[1, 1]
    return np.sum(y * x)
""", lambda x: jnp.sum(x.T.at[0].set(3.0 * x[1, 1]).T * x),
        np.array([[1.0, 2.0], [3.0, 4.0]])),
    "view_then_base_written": ("""
def f(x):
    y = x * x
    v = y[1:]
    y[0] = 5.0 * x[1]
    w = v * 2.0
    y[2] = x[0]
    return np.sum(v * x[:2]) + np.sum(w)
""", lambda x: jnp.sum((x * x).at[0].set(5.0 * x[1]).at[2].set(x[0])[1:] * x[:2])
        + jnp.sum(2.0 * (x * x)[1:]), np.array([1.0, 2.0, 3.0])),
    "argument_aliased_and_updated": ("""
def f(x):
    z = x
    z *= 3.0
    return np.sum(z * x)
""", lambda x: jnp.sum(9.0 * x * x), np.array([1.0, 2.0, 3.0])),
    "chain_of_writes": ("""
def f(x):
    y = x * 1.0
    v = y[1:]
    v *= 2.0
    v[0] = v[1] * 3.0
    z = y
    z -= x
    return np.sum(y * v[0]) + np.sum(z)
""", None, np.array([1.0, 2.0, 3.0])),
    "row_of_a_matrix": ("""
def f(x):
    y = x * 1.0
    row = y[0]
    row += y[1]
    return np.sum(y * y)
""", lambda x: jnp.sum(x.at[0].add(x[1]) ** 2), np.array([[1.0, 2.0], [3.0, 4.0]])),
}


def chain_of_writes_jax(x):
    y = x.at[1:].multiply(2.0)
    y = y.at[1].set(y[2] * 3.0)
    y = y - x                   # z is y: v[0] (y[1]) shows the subtraction too
    return jnp.sum(y * y[1]) + jnp.sum(y)


@pytest.mark.parametrize("name", list(ALIASES))
def test_writes_through_aliases_and_views(name):
    src, ref, x = ALIASES[name]
    ref = ref or chain_of_writes_jax
    f = function_from_source(src)
    value, g = pb.value_and_grad(f)(x.copy())
    assert value == pytest.approx(float(ref(jnp.asarray(x))), rel=1e-14)
    assert value == pytest.approx(f(x.copy()), rel=1e-14)
    np.testing.assert_allclose(g, jax.grad(ref)(x), rtol=1e-13)
    np.testing.assert_allclose(g, central(lambda a: f(a.copy()), x), rtol=1e-6, atol=1e-7)
    forward_agrees(f, x.copy())


def test_alias_exact_values():
    f = function_from_source(ALIASES["slice_view_updated"][0])
    # y = [x0, 2 x1, 2 x2]: f = x0^2 + 2 x1^2 + 2 x2^2
    np.testing.assert_array_equal(pb.grad(f)(np.array([1.0, 2.0, 3.0])), [2.0, 8.0, 12.0])
    g = function_from_source(ALIASES["alias_updated"][0])
    np.testing.assert_array_equal(pb.grad(g)(np.array([1.0, 2.0, 3.0])), [3.0, 5.0, 7.0])


def test_a_view_handed_to_a_list_is_still_refused():
    f = function_from_source("""
def f(x):
    y = x * 1.0
    v = y[1:]
    keep = [v]
    v *= 2.0
    return np.sum(keep[0])
""")
    with pytest.raises(pb.UnsupportedSyntaxError):
        pb.grad(f)(np.ones(3))


# -- state in closures ------------------------------------------------------------------

def test_array_counter_in_a_closure_mapped_over_an_array():
    f = function_from_source("""
def f(x):
    k = np.zeros(1)
    def g(t):
        k[0] += 1.0
        return t * k[0]
    return np.sum(np.array([g(t) for t in x]))
""")
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(pb.grad(f)(x), [1.0, 2.0, 3.0])   # t * 1, t * 2, t * 3
    forward_agrees(f, x)


def test_float_accumulator_in_a_closure_is_differentiated():
    f = function_from_source("""
def f(x):
    acc = np.zeros(1)
    def add(t):
        acc[0] += t * t
    for t in x:
        add(t)
    return acc[0] * x[0]
""")
    x = np.array([1.0, 2.0, 3.0])
    # f = x0 * sum(t^2)
    np.testing.assert_array_equal(pb.grad(f)(x), [14.0 + 2.0, 4.0, 6.0])
    forward_agrees(f, x)


def test_nonlocal_counter_and_accumulator():
    f = function_from_source("""
def f(x):
    n = 0
    total = 0.0
    def g(t):
        nonlocal n, total
        n += 1
        total += n * t
        return t
    for t in x:
        g(t)
    return total
""")
    np.testing.assert_array_equal(pb.grad(f)(np.array([5.0, 6.0, 7.0])), [1.0, 2.0, 3.0])


def test_a_list_counter_in_a_closure_is_refused_naming_the_captured_variable():
    f = function_from_source("""
def f(x):
    k = [0]
    def g(t):
        k[0] += 1
        return t * k[0]
    return np.sum(np.array([g(t) for t in x]))
""")
    with pytest.raises(pb.UnsupportedSyntaxError) as err:
        pb.grad(f)(np.ones(3))
    msg = str(err.value)
    assert "The nested function `g` writes into `k`, a variable it captures" in msg
    assert "its argument" not in msg
    assert "k = np.zeros(1)" in msg


def test_a_global_counter_is_refused_naming_it():
    f = function_from_source("""
def f(x):
    global COUNT
    COUNT += x          # (a counter, `COUNT += 1`, is followed: test_python_constructs_round7)
    return x * COUNT
""", {"COUNT": 0})
    with pytest.raises(pb.UnsupportedSyntaxError, match="global `COUNT`"):
        pb.grad(f)(1.0)


# -- every way to get a second name for an array: followed exactly or refused ----------

SECOND_NAMES = ["z = np.asarray(y)", "z = np.ravel(y)", "z = y.ravel()", "z = y.reshape(3)",
                "z = np.reshape(y, (3,))", "z = np.squeeze(y)", "z = np.atleast_1d(y)",
                "z = y[...]", "z = y[:]", "z = y[::-1]", "z = np.real(y)", "z = y.flatten()",
                "z = np.array(y, copy=False)", "z = y.astype(float, copy=False)", "z = y.T",
                "z = np.transpose(y)", "z = np.expand_dims(y, 0)", "z = y", "z = y.copy()"]
WRITES = ["z += 1.0", "z[0] = 7.0 * x[1]", "y *= x", "y[1] = 2.0 * x[2]"]


@pytest.mark.parametrize("write", WRITES)
@pytest.mark.parametrize("second", SECOND_NAMES)
def test_a_write_through_any_second_name_is_exact_or_refused(second, write):
    """Silently wrong before for `copy=False` (NumPy hands back `y` itself)."""
    f = function_from_source(f"""
def f(x):
    y = x * 1.0
    {second}
    {write}
    return np.sum(y * x) + np.sum(z * z)
""")
    x = np.array([1.0, 2.0, 3.0])
    try:
        g = pb.grad(f)(x.copy())
    except pb.PullbackError:
        return
    np.testing.assert_allclose(g, central(lambda a: f(a.copy()), x), rtol=1e-6, atol=1e-6)
    forward_agrees(f, x.copy())


def test_copy_false_is_not_taken_for_a_copy():
    f = function_from_source("""
def f(x):
    y = x * 1.0
    z = np.array(y, copy=False)
    z += 1.0
    return np.sum(y * x)
""")
    with pytest.raises(pb.UnsupportedSyntaxError, match="in-place update"):
        pb.grad(f)(np.ones(3))


def twice(s, dt):
    rotate(s, dt)
    rotate(dt=2.0 * dt, state=s)


def advance(s, dt):
    s[1] += dt * s[0]
    return s[0] + s[1]


def test_writers_calling_writers_keywords_and_results_in_expressions():
    f = function_from_source("""
def f(x):
    s = x * 1.0
    twice(s, 0.1)
    r = 2.0 * advance(s, 0.5)
    return r * s[1]
""", {"twice": twice, "advance": advance})

    def ref(x):
        a, b = x[0], x[1]
        for dt in (0.1, 0.2):
            a = a + dt * b
            b = b - dt * a
        b = b + 0.5 * a
        return 2.0 * (a + b) * b
    x = np.array([0.7, -1.3])
    np.testing.assert_allclose(pb.grad(f)(x), jax.grad(ref)(x), rtol=1e-14)
    assert pb.value_and_grad(f)(x)[0] == pytest.approx(float(ref(x)), rel=1e-15)
    forward_agrees(f, x)


@pytest.mark.parametrize("body", [
    "b = x * np.ones((2, 2))\n    a = b[0]\n    rotate(a, 0.1)\n    return np.sum(b * b)",
    "b = x * 1.0\n    a = b\n    rotate(a, 0.1)\n    return np.sum(b * b)",
    "b = x * 1.0\n    lst = [b]\n    rotate(b, 0.1)\n    return np.sum(lst[0] * b)",
    "b = x * 1.0\n    v = b[:]\n    rotate(b, 0.1)\n    return np.sum(v * b)",
])
def test_a_writer_given_an_array_another_name_holds_is_refused(body):
    f = function_from_source("def f(x):\n    " + body + "\n", {"rotate": rotate})
    with pytest.raises(pb.UnsupportedSyntaxError, match="`rotate` writes into its argument"):
        pb.grad(f)(np.array([1.0, 2.0]))


def test_recursive_writers_are_found_to_a_fixpoint():
    """`r(a, b)` writes into `a` and calls `r(b, a)`: both are written into;
    a pure recursive function writes into nothing."""
    from pullback.frontend.written import written_params
    r = function_from_source("""
def r(a, b, n):
    a[0] += 1.0
    if n > 0:
        r(b, a, n - 1)
""")
    r.__globals__["r"] = r
    assert written_params(r) == {"a": "item", "b": "item"}
    fact = function_from_source("""
def fact(x, n):
    if n == 0:
        return 1.0
    return x * fact(x, n - 1)
""")
    fact.__globals__["fact"] = fact
    assert written_params(fact) == {}
    f = function_from_source("""
def f(x):
    a = x * 1.0
    b = x * 2.0
    r(a, b, 2)
    return np.sum(a * b)
""", {"r": r})
    x = np.array([1.0, 2.0])
    # a0 += 2, b0 += 1: f = (x0 + 2)(2 x0 + 1) + 2 x1^2
    np.testing.assert_array_equal(pb.grad(f)(x), [2 * (x[0] + 2) + (2 * x[0] + 1), 4 * x[1]])


# -- an in-place update after a user call read the array (issue 13) ----------------------

def doubled(q):
    return 2.0 * q


def force(q, a=1.0):
    return 4.0 * 0.25 * q ** 3 - a * q + 0.1 * (q - q.mean())


def kick_drift(q, p, dt):
    p -= dt * force(q)
    q += dt * p


def test_update_after_a_call_whose_result_is_new():
    """`r = doubled(q); q += r`: doubled returns a new array, so q is no
    one else's when it is updated (was refused as shared)."""
    step = function_from_source("""
def step(q):
    r = doubled(q)
    q += r
""", {"doubled": doubled})
    f = function_from_source("""
def f(x):
    q = x * 1.0
    step(q)
    return np.sum(q * q)
""", {"step": step})
    x = np.array([1.0, 2.0])
    np.testing.assert_array_equal(pb.grad(f)(x), 18.0 * x)      # q = 3x
    np.testing.assert_array_equal(x, [1.0, 2.0])
    forward_agrees(f, x)


def shoot(q0, p0):
    q = q0.copy()
    p = p0.copy()
    for _ in range(5):
        kick_drift(q, p, 0.1)
    return np.sum(q ** 2) + 0.1 * np.sum(p ** 2)


def shoot_jax(q, p):
    for _ in range(5):
        p = p - 0.1 * (q ** 3 - q + 0.1 * (q - q.mean()))
        q = q + 0.1 * p
    return jnp.sum(q ** 2) + 0.1 * jnp.sum(p ** 2)


def test_symplectic_step_reading_q_in_a_call_before_updating_it():
    q, p = np.array([0.5, -1.2, 0.3]), np.array([0.1, 0.4, -0.2])
    gq, gp = pb.grad(shoot, argnums=(0, 1))(q, p)
    jq, jp = jax.grad(shoot_jax, argnums=(0, 1))(q, p)
    np.testing.assert_allclose(gq, jq, rtol=1e-13)
    np.testing.assert_allclose(gp, jp, rtol=1e-13)
    np.testing.assert_allclose(gp, central(lambda b: shoot(q, b), p), rtol=1e-7)
    forward_agrees(shoot, q, p)


LOG = []


def identity(q):
    return q


def head(q):
    return q[1:]


def logged(q):
    LOG.append(q)
    return 2.0 * q


def as_is(q):
    return np.asarray(q)


def via_doubled(q):
    t = doubled(q)
    return t - q


@pytest.mark.parametrize("callee", [identity, head, logged, as_is])
def test_update_after_a_call_that_may_keep_its_argument_is_refused_naming_it(callee):
    f = function_from_source(f"""
def f(x):
    q = x * 1.0
    r = {callee.__name__}(q)
    q += 1.0
    return np.sum(r * q)
""", {callee.__name__: callee})
    with pytest.raises(pb.PullbackError,
                       match=f"the call `r = {callee.__name__}\\(q\\)` \\(line 3\\) may keep"):
        pb.grad(f)(np.array([1.0, 2.0]))


def test_keeps_nothing_is_exact_on_small_callees():
    from pullback.analyses.updates import keeps_nothing
    assert keeps_nothing(doubled) and keeps_nothing(force) and keeps_nothing(via_doubled)
    assert not any(keeps_nothing(g) for g in (identity, head, logged, as_is, kick_drift))


# -- a method that writes into its arguments (issue 13) ---------------------------------

class Integrator:
    def __init__(self, dt):
        self.dt = dt

    def step(self, q, p):
        p -= self.dt * q
        q += self.dt * p


SOLVER = Integrator(0.1)


class Holder:
    def __init__(self):
        self.solver = Integrator(0.1)


HOLDER = Holder()


def oscillate_jax(q, p):
    for _ in range(3):
        p = p - 0.1 * q
        q = q + 0.1 * p
    return jnp.sum(q * q) + jnp.sum(p)


@pytest.mark.parametrize("call", [
    "Integrator(0.1).step(q, p)",
    "solver.step(q, p)",
    "SOLVER.step(q, p)",
    "Integrator.step(SOLVER, q, p)",
    "r = Integrator(0.1).step(q, p)",
])
def test_a_method_writing_into_its_arguments_is_followed_like_a_direct_call(call):
    f = function_from_source(f"""
def f(q0, p0):
    q = q0.copy()
    p = p0.copy()
    solver = Integrator(0.1)
    for _ in range(3):
        {call}
    return np.sum(q * q) + np.sum(p)
""", {"Integrator": Integrator, "SOLVER": SOLVER})
    q, p = np.array([1.0, 2.0]), np.array([0.5, 0.3])
    gq, gp = pb.grad(f, argnums=(0, 1))(q, p)
    jq, jp = jax.grad(oscillate_jax, argnums=(0, 1))(q, p)
    np.testing.assert_allclose(gq, jq, rtol=1e-14)
    np.testing.assert_allclose(gp, jp, rtol=1e-14)
    np.testing.assert_array_equal(q, [1.0, 2.0])
    forward_agrees(f, q, p)


def test_one_step_of_a_method_exact():
    f = function_from_source("""
def f(q0, p0):
    q = q0.copy()
    p = p0.copy()
    Integrator(0.1).step(q, p)
    return np.sum(q * q) + np.sum(p)
""", {"Integrator": Integrator})
    # q1 = 0.99 q + 0.1 p, p1 = p - 0.1 q
    q, p = np.array([1.0, 2.0]), np.array([0.5, 0.3])
    q1 = 0.99 * q + 0.1 * p
    gq, gp = pb.grad(f, argnums=(0, 1))(q, p)
    np.testing.assert_allclose(gq, 2 * q1 * 0.99 - 0.1, rtol=1e-15)
    np.testing.assert_allclose(gp, 2 * q1 * 0.1 + 1.0, rtol=1e-15)


@pytest.mark.parametrize("call, match", [
    ("HOLDER.solver.step(q, p)", "called as a method of an object"),
    ("s.step(q, p)", "called as a method of an object"),
    ("make().step(q, p)", "called as a method of an object"),
])
def test_a_writing_method_of_an_object_not_known_at_transform_is_refused(call, match):
    f = function_from_source(f"""
def f(q0, p0, s):
    q = q0.copy()
    p = p0.copy()
    {call}
    return np.sum(q * q) + np.sum(p)
""", {"HOLDER": HOLDER, "make": lambda: SOLVER})
    with pytest.raises(pb.UnsupportedSyntaxError, match=match):
        pb.grad(f, argnums=(0, 1))(np.ones(2), np.ones(2), SOLVER)


def test_a_method_shadowed_on_the_instance_is_refused_when_it_runs():
    f = function_from_source("""
def f(q0, p0):
    q = q0.copy()
    p = p0.copy()
    it = Integrator(0.1)
    it.step = fake
    it.step(q, p)
    return np.sum(q * q) + np.sum(p)
""", {"Integrator": Integrator, "fake": lambda a, b: None})
    with pytest.raises(pb.UnsupportedSyntaxError, match="not the method `Integrator.step`"):
        pb.grad(f, argnums=(0, 1))(np.ones(2), np.ones(2))


# -- updates of elements (issue 13) -----------------------------------------------------

@pytest.mark.parametrize("op", ["*=", "/=", "**="])
def test_an_element_update_other_than_add_is_followed(op):
    """`q[0] *= p[2]` is `q[0] = q[0] * p[2]` (NumPy reads the element,
    applies the operator, stores it back); was refused."""
    f = function_from_source(f"""
def f(q0, p0):
    q = q0.copy()
    q[0] {op} p0[2]
    q[1:] {op} p0[:2]
    for i in range(2):
        q[i] {op} 1.5
    return np.sum(q ** 2)
""")
    py = {"*=": "*", "/=": "/", "**=": "**"}[op]

    def ref(q, p):
        q = q.at[0].set(eval(f"q[0] {py} p[2]"))
        q = q.at[1:].set(eval(f"q[1:] {py} p[:2]"))
        for i in range(2):
            q = q.at[i].set(eval(f"q[i] {py} 1.5"))
        return jnp.sum(q ** 2)
    q, p = np.array([1.0, 2.0, 3.0]), np.array([0.5, 0.3, 2.0])
    gq, gp = pb.grad(f, argnums=(0, 1))(q, p)
    jq, jp = jax.grad(ref, argnums=(0, 1))(q, p)
    np.testing.assert_allclose(gq, jq, rtol=1e-14)
    np.testing.assert_allclose(gp, jp, rtol=1e-14)
    assert pb.value_and_grad(f)(q, p)[0] == pytest.approx(float(ref(jnp.asarray(q), jnp.asarray(p))), rel=1e-15)
    forward_agrees(f, q, p)


def test_a_slice_update_exact():
    f = function_from_source("""
def f(x, p):
    m = x * 1.0
    m[1:] *= p
    return np.sum(m * m)
""")
    x, p = np.array([1.0, 2.0, 3.0]), np.array([2.0, 3.0])
    # m = [1, 4, 9]
    gx, gp = pb.grad(f, argnums=(0, 1))(x, p)
    np.testing.assert_array_equal(gx, [2.0, 16.0, 54.0])
    np.testing.assert_array_equal(gp, [16.0, 54.0])
    np.testing.assert_array_equal(x, [1.0, 2.0, 3.0])


# -- lists of arrays written into by item (frontend/list_items.py) -----------------------

def grad_V(q):
    return q ** 3


def leapfrog_list(q, p):
    state = [q * 1.0, p * 1.0]
    for _ in range(3):
        state[1] -= 0.1 * grad_V(state[0])
        state[0] += 0.1 * state[1]
    return np.sum(state[0] ** 2) + np.sum(state[1] ** 2)


def leapfrog_jax(q, p):
    for _ in range(3):
        p = p - 0.1 * q ** 3
        q = q + 0.1 * p
    return jnp.sum(q ** 2) + jnp.sum(p ** 2)


def test_a_list_of_arrays_updated_by_item_as_a_solver_keeps_its_state():
    q, p = np.array([0.5, 1.0, -0.3]), np.array([0.2, -0.1, 0.4])
    gq, gp = pb.grad(leapfrog_list, argnums=(0, 1))(q, p)
    jq, jp = jax.grad(leapfrog_jax, argnums=(0, 1))(q, p)
    np.testing.assert_allclose(gq, jq, rtol=1e-13)
    np.testing.assert_allclose(gp, jp, rtol=1e-13)
    np.testing.assert_allclose(gq, central(lambda a: leapfrog_list(a, p), q), rtol=1e-7)
    forward_agrees(leapfrog_list, q, p)


def item_update_reaches_the_argument(q, p):
    # Python: the list holds p itself, so `state[1] -= ...` changes p in place
    state = [q, p]
    state[1] -= 0.1 * grad_V(state[0])
    return np.sum(p * q)


def test_an_item_update_changes_the_array_the_list_holds():
    q, p = np.array([1.0, 2.0]), np.array([0.5, -1.0])
    q0, p0 = q.copy(), p.copy()
    gq, gp = pb.grad(item_update_reaches_the_argument, argnums=(0, 1))(q, p)
    # value: sum((p - 0.1 q^3) q) = sum(p q - 0.1 q^4)
    np.testing.assert_allclose(gq, p0 - 0.4 * q0 ** 3, rtol=1e-15)
    np.testing.assert_array_equal(gp, q0)
    np.testing.assert_array_equal(q, q0)        # pb.grad works on its own copy
    np.testing.assert_array_equal(p, p0)
    item_update_reaches_the_argument(q, p)     # a plain call does change p, as NumPy does
    np.testing.assert_allclose(p, p0 - 0.1 * q0 ** 3)
    with pytest.raises(pb.UnsupportedSyntaxError, match="share memory"):
        pb.grad(item_update_reaches_the_argument, argnums=(0, 1))(q, q)


def item_update_of_a_number(a, x):
    # a float item is rebound, not changed: `a` keeps its value
    state = [a, x * 1.0]
    state[0] -= 0.5 * a
    return state[0] * a + np.sum(state[1])


def test_an_item_update_of_a_number_rebinds_the_item():
    ga, gx = pb.grad(item_update_of_a_number, argnums=(0, 1))(3.0, np.array([1.0, 2.0]))
    assert ga == 3.0          # 0.5 a * a
    np.testing.assert_array_equal(gx, [1.0, 1.0])


def sgd_over_layers(a, b, x):
    params = [a * 1.0, b * 1.0]
    g = [2.0 * a, 3.0 * b]
    for i in range(len(params)):
        params[i] -= 0.1 * g[i]
    for w in params:
        x = np.tanh(x * w)
    return np.sum(x)


def test_params_updated_in_a_loop_over_the_layers():
    def ref(a, b, x):
        for w in (a - 0.2 * a, b - 0.3 * b):
            x = jnp.tanh(x * w)
        return jnp.sum(x)
    a, b, x = np.array([0.5, -1.0]), np.array([1.5, 0.3]), np.array([0.7, 0.2])
    got = pb.grad(sgd_over_layers, argnums=(0, 1, 2))(a, b, x)
    want = jax.grad(ref, argnums=(0, 1, 2))(a, b, x)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-13)
    forward_agrees(sgd_over_layers, a, b, x)


def item_of_item(q, p):
    state = [q, p * 1.0]
    state[1][0] = 3.0 * state[0][0]
    state[-1][1] *= q[1]
    return np.sum(state[1] ** 2)


def test_a_write_into_an_element_of_a_list_item():
    q, p = np.array([0.5, 2.0]), np.array([1.0, -1.0])
    gq, gp = pb.grad(item_of_item, argnums=(0, 1))(q, p)
    # state[1] = [3 q0, p1 q1] = [1.5, -2]: value 9 q0^2 + p1^2 q1^2
    np.testing.assert_array_equal(gq, [9.0, 4.0])
    np.testing.assert_array_equal(gp, [0.0, -8.0])


def returns_the_list(q, p):
    state = [q * 1.0, p * 1.0]
    state[1] += state[0]
    return state


def test_a_list_written_by_item_and_returned():
    q, p = np.array([0.5, 2.0]), np.array([1.0, -1.0])
    out, back = pb.vjp(returns_the_list, q, p)
    np.testing.assert_array_equal(out[1], q + p)
    gq, gp = back([np.ones(2), 2.0 * np.ones(2)])
    np.testing.assert_array_equal(gq, [3.0, 3.0])
    np.testing.assert_array_equal(gp, [2.0, 2.0])


KEPT = []


def keep(s):
    KEPT.append(s)


@pytest.mark.parametrize("body,why", [
    ("state[k] -= 0.1 * state[0]", "item of the list `state`"),     # index known when it runs
    ("keep(state)\n    state[1] -= 0.1 * state[0]", "`state`"),      # handed to a function
])
def test_a_list_pullback_cannot_split_stays_refused(body, why):
    f = function_from_source(f"""
def f(q0, p0, k):
    state = [q0 * 1.0, p0 * 1.0]
    {body}
    return np.sum(state[0] ** 2) + np.sum(state[1])
""", {"keep": keep})
    with pytest.raises(pb.UnsupportedSyntaxError, match=why):
        pb.grad(f, argnums=(0, 1))(np.ones(2), np.ones(2), 1)


# -- writes through views and aliases inside loops and branches (frontend/view_writes.py)

def view_scaled_in_a_loop(x):
    y = x * 1.0
    v = y[1:]
    for i in range(2):
        v *= 2.0
    return np.sum(y ** 2)


def view_written_in_a_branch(x, c):
    y = x * 1.0
    v = y[1:]
    if c > 0:
        v[0] = 3.0 * x[0]
    return np.sum(y ** 2) + np.sum(v)


def column_view_and_base_in_a_loop(x, n):
    y = x * 1.0
    v = y[:, 1]
    for i in range(n):
        y *= 1.5
        v += y[:, 0]
    return np.sum(y * v[0])


def column_view_jax(x, n):
    y = x
    for i in range(n):
        y = y * 1.5
        y = y.at[:, 1].add(y[:, 0])
    return jnp.sum(y * y[0, 1])


def alias_on_one_path(x, c):
    y = x * 1.0
    if c > 0:
        z = y
    else:
        z = y * 1.0
    z += 1.0
    return np.sum(y ** 2) + np.sum(z)


def alias_in_a_loop(x):
    y = x * 1.0
    z = y
    for i in range(3):
        z *= 1.5
        y[0] += 1.0
    return np.sum(y ** 2) + np.sum(z * x)


def alias_in_a_loop_jax(x):
    y = x
    for i in range(3):
        y = y * 1.5
        y = y.at[0].add(1.0)
    return jnp.sum(y ** 2) + jnp.sum(y * x)


def test_a_view_written_in_a_loop_changes_its_base():
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(pb.grad(view_scaled_in_a_loop)(x), [2.0, 64.0, 96.0])
    assert view_scaled_in_a_loop(x.copy()) == 1.0 + 64.0 + 144.0
    forward_agrees(view_scaled_in_a_loop, x)


def test_a_view_written_in_a_branch_on_either_path():
    x = np.array([1.0, 2.0, 3.0])
    # taken: y = [1, 3, 3], v = [3, 3]: 1 + 9 x0^2 + 9 + 3 x0 + x2
    np.testing.assert_array_equal(pb.grad(view_written_in_a_branch)(x, 1.0), [23.0, 0.0, 7.0])
    np.testing.assert_array_equal(pb.grad(view_written_in_a_branch)(x, -1.0), [2.0, 5.0, 7.0])
    np.testing.assert_allclose(pb.grad(view_written_in_a_branch)(x, 1.0),
                               central(lambda a: view_written_in_a_branch(a, 1.0), x),
                               rtol=1e-7)


def test_a_column_view_and_its_base_written_in_a_loop():
    x = np.arange(6.0).reshape(3, 2) + 1.0
    got = pb.grad(column_view_and_base_in_a_loop)(x, 2)
    np.testing.assert_allclose(got, jax.grad(column_view_jax)(x, 2), rtol=1e-13)


def test_an_alias_made_on_one_path_then_updated():
    x = np.array([1.0, 2.0, 3.0])
    # aliased: y = x + 1 too: sum((x+1)^2) + sum(x+1); copied: y = x
    np.testing.assert_array_equal(pb.grad(alias_on_one_path)(x, 1.0), 2.0 * (x + 1.0) + 1.0)
    np.testing.assert_array_equal(pb.grad(alias_on_one_path)(x, -1.0), 2.0 * x + 1.0)
    forward_agrees(lambda a: alias_on_one_path(a, 1.0), x)


def test_an_alias_and_its_base_written_in_a_loop():
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(pb.grad(alias_in_a_loop)(x), jax.grad(alias_in_a_loop_jax)(x),
                               rtol=1e-13)


def test_a_number_alias_updated_in_a_branch_is_rebound():
    def f(a, c):
        y = a * 1.0
        z = y
        if c > 0:
            z += 2.0
        return y * z
    assert pb.grad(f)(1.5, 1.0) == 5.0          # y stays a: a (a + 2)


def test_writes_through_a_list_alias_or_a_list_slice_are_refused():
    def f(x, c):
        y = [x[0], x[1]]
        z = y
        if c > 0:
            z[0] = 3.0 * x[1]
        return np.sum(x) * c
    with pytest.raises(pb.UnsupportedSyntaxError, match="two names of one list"):
        pb.grad(f)(np.array([1.0, 2.0]), 1.0)

    def g(x, c):
        y = [x[0], x[1], x[2]]
        v = y[1:]
        if c > 0:
            v[0] = 3.0 * x[1]
        return np.sum(y) * c
    with pytest.raises(pb.UnsupportedSyntaxError, match="`v` is written into later"):
        pb.grad(g)(np.array([1.0, 2.0, 3.0]), 1.0)


def test_aliased_arguments_written_through_a_local_alias_are_refused():
    def f(q, p):                 # (was a silent wrong gradient for f(x, x))
        s = p
        s -= 0.1 * q
        return np.sum(s * q)
    x = np.array([1.0, 2.0, 3.0])
    with pytest.raises(pb.UnsupportedSyntaxError, match="share memory"):
        pb.grad(f, argnums=(0, 1))(x, x)
    gq, gp = pb.grad(f, argnums=(0, 1))(x, x.copy())
    np.testing.assert_allclose(gq, x - 0.2 * x)
    np.testing.assert_array_equal(gp, x)


def test_writes_through_a_local_name_of_an_argument_count_as_its_own():
    from pullback.frontend.written import written_params
    through = function_from_source('''
def through(s):
    t = s
    t[0] = 1.0
''')
    rebound = function_from_source('''
def rebound(s):
    t = s
    t = t * 2.0
    t[0] = 1.0
    return t
''')
    listed = function_from_source('''
def listed(q, p):
    state = [q, p]
    state[1] -= q
''')
    assert written_params(through) == {"s": "item"}
    assert written_params(rebound) == {}          # t is a new array when written
    assert written_params(listed) == {"p": "update"}


# -- a method of an argument writing into an array the object holds ---------------------

class _Plain:
    def __init__(self, w):
        self.w = w
        self.calls = 0

    def poke(self):
        self.w[0] = 5.0

    def bump(self):
        self.w += 1.0

    def count(self):
        self.calls += 1

    def indirect(self):
        self.poke()

    def through_alias(self):
        w = self.w
        np.add.at(w, [1], 2.0)


def _argument_pokes(x, p):
    p.poke()
    return np.sum(p.w * x)


def _argument_bumps(x, p):
    p.bump()
    return np.sum(p.w * x)


def _argument_pokes_indirectly(x, p):
    p.indirect()
    return np.sum(p.w * x)


def _argument_writes_through_alias(x, p):
    p.through_alias()
    return np.sum(p.w * x)


def _argument_counts(x, p):
    p.count()
    return np.sum(p.w * x)


_WRITERS = [(_argument_pokes, "self.w[0] = 5.0"), (_argument_bumps, "self.w += 1.0"),
            (_argument_pokes_indirectly, "self.w[0] = 5.0"),
            (_argument_writes_through_alias, "np.add.at(w, [1], 2.0)")]


@pytest.mark.parametrize("fn, line", _WRITERS)
@pytest.mark.parametrize("transform", ["grad", "grad_both", "jvp", "vjp"])
def test_argument_method_writing_into_its_array_is_refused_before_it_runs(fn, line, transform):
    """A method of an argument (a plain object here; a dataclass in
    test_regressions) writing into an array it holds runs as plain Python: the
    write would reach the caller's array and go unseen by the derivative.  It
    is refused before it runs, whether or not the object is differentiated,
    naming the method, the write and the call's line; the caller's array is
    unchanged (README "Mutation": an argument's method writing into it is
    refused)."""
    x, p = np.array([1.0, 2.0]), _Plain(np.array([3.0, 4.0]))
    run = {"grad": lambda: pb.grad(fn)(x, p),
           "grad_both": lambda: pb.grad(fn, argnums=(0, 1))(x, p),
           "jvp": lambda: pb.jvp(fn, (x, p), (np.ones(2), _Plain(np.ones(2)))),
           "vjp": lambda: pb.vjp(fn, x, p)[1](1.0)}[transform]
    with pytest.raises(pb.UnsupportedSyntaxError) as info:
        run()
    message = str(info.value)
    assert "writes into the array `self.w`" in message and f"`{line}`" in message
    call = {_argument_pokes: "p.poke()", _argument_bumps: "p.bump()",
            _argument_pokes_indirectly: "p.indirect()",
            _argument_writes_through_alias: "p.through_alias()"}[fn]
    assert call in message
    np.testing.assert_array_equal(p.w, [3.0, 4.0])
    np.testing.assert_array_equal(x, [1.0, 2.0])


def test_argument_method_updating_a_number_attribute_still_runs():
    """`self.calls += 1` rebinds a number: a counter, not a write into an
    array; it runs once, as Python runs it, and the gradient is exact."""
    x, p = np.array([1.0, 2.0]), _Plain(np.array([3.0, 4.0]))
    np.testing.assert_array_equal(pb.grad(_argument_counts)(x, p), [3.0, 4.0])
    assert p.calls == 1
    np.testing.assert_array_equal(p.w, [3.0, 4.0])


def _clamped_steps(b, steps):
    x = np.zeros(3)
    for lr in steps:
        x_new = x - lr * (x - b)
        x_new[x_new < 0] = 0.0
        x = x_new
    return np.sum(x * x)


def _written_after_the_alias(b, steps):
    x = np.zeros(3)
    for lr in steps:
        x_new = x - lr * (x - b)
        x = x_new
        x_new[0] = 0.0
    return np.sum(x * x)


def test_alias_of_an_array_rebound_before_each_write_is_followed():
    # `x = x_new` after the writes: the next iteration binds x_new to a new
    # array before writing, so the writes never reach x (was refused)
    b, steps = np.array([1.0, -2.0, 3.0]), np.array([0.3, 0.5])
    np.testing.assert_allclose(pb.grad(_clamped_steps)(b, steps),
                               [2 * 0.65 * 0.65, 0.0, 2 * 0.65 * 0.65 * 3.0], rtol=1e-14)
    assert pb.jvp(_clamped_steps, (b, steps), (np.ones(3), np.zeros(2)))[1] == \
        pytest.approx(2 * 0.65 * 0.65 * 4.0, rel=1e-14)


def test_a_write_after_the_alias_stays_refused():
    with pytest.raises(pb.UnsupportedSyntaxError, match="x_new"):
        pb.grad(_written_after_the_alias)(np.array([1.0, -2.0, 3.0]), np.array([0.3, 0.5]))
