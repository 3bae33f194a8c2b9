"""``pb.jacrev`` and ``pb.jacobian`` against ``jax.jacrev`` (float64), and
``pb.check_grads`` (issue 15).

Each function is written once as text and defined twice, with NumPy for
pullback and with ``jax.numpy`` for JAX; one JAX cannot run as written
(indexing writes) gives its JAX twin separately.  Every Jacobian is also
checked against ``pb.jacfwd``, which reaches it by forward mode.
"""
import collections
import math

import numpy as np
import pytest

import pullback as pb
from pullback.testing import function_from_source

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
from jax import tree_util  # noqa: E402

rng = np.random.default_rng(15)


def both(text, jax_text=None):
    f = function_from_source(text)
    ns = {"np": jnp, "math": math}
    exec(jax_text or text, ns)
    name = text.strip().split("def ", 1)[1].split("(", 1)[0].strip()
    return f, ns[name]


def assert_close(a, b, rtol=1e-10):
    la, ta = tree_util.tree_flatten(a)
    lb, tb = tree_util.tree_flatten(b)
    assert ta == tb, (ta, tb)
    for x, y in zip(la, lb):
        assert np.shape(x) == np.shape(y), (np.shape(x), np.shape(y))
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=rtol, atol=1e-12)


Point = collections.namedtuple("Point", "x y")

# name: (source, JAX twin or None, arguments, argnums, has_aux)
CASES = {
    "elementwise": ("""
def f(x):
    return np.sin(x) * x + np.tanh(2.0 * x)
""", None, lambda: (rng.normal(size=4),), 0, False),
    "matrix_argnums_tuple": ("""
def f(w, x, b):
    return np.tanh(w @ x + b)
""", None, lambda: (rng.normal(size=(3, 4)), rng.normal(size=4), rng.normal(size=3)),
        (0, 1, 2), False),
    "for_loop": ("""
def f(x, p):
    acc = p[0] * x
    for i in range(1, len(p)):
        acc = np.sin(acc) * x + p[i]
    return acc
""", None, lambda: (rng.normal(size=3), rng.normal(size=4)), (0, 1), False),
    "while_loop": ("""
def f(x):
    y = x
    k = 0
    while k < 5:
        y = y * np.cos(y) + 0.1 * x
        k = k + 1
    return y
""", """
def f(x):
    y = x
    for k in range(5):
        y = y * np.cos(y) + 0.1 * x
    return y
""", lambda: (rng.normal(size=3),), 0, False),
    "branches": ("""
def f(x, s):
    if s > 0:
        y = np.exp(x) * s
    else:
        y = x ** 3
    if np.sum(x) > 100.0:
        y = -y
    return y
""", """
def f(x, s):
    y = np.where(s > 0, np.exp(x) * s, x ** 3)
    return y
""", lambda: (rng.normal(size=3), 1.5), (0, 1), False),
    "closure": ("""
def f(x, a):
    def g(v):
        return np.sin(a * v) + a * v * v
    return g(x) + g(2.0 * x)
""", None, lambda: (rng.normal(size=3), 0.7), (0, 1), False),
    "indexing_writes": ("""
def f(x):
    y = np.zeros(len(x))
    for i in range(len(x)):
        y[i] = x[i] * x[(i + 1) % len(x)]
    y[0] += np.sum(x)
    return y
""", """
def f(x):
    n = len(x)
    y = np.zeros(n)
    for i in range(n):
        y = y.at[i].set(x[i] * x[(i + 1) % n])
    y = y.at[0].add(np.sum(x))
    return y
""", lambda: (rng.normal(size=4),), 0, False),
    "indexing_reads": ("""
def f(m):
    return m[1:, ::2] * m[0, 0] + m[:, 1].sum()
""", None, lambda: (rng.normal(size=(3, 4)),), 0, False),
    "dict_output": ("""
def f(x, y):
    return {"sum": np.sum(x[:2] * y), "prod": x * y[0], "y": y ** 2}
""", None, lambda: (rng.normal(size=3), rng.normal(size=2)), (0, 1), False),
    "tuple_output": ("""
def f(x):
    return np.cumsum(x), np.prod(x), (x[0] * x[1], x[::-1])
""", None, lambda: (rng.normal(size=3),), 0, False),
    "dict_input": ("""
def f(p, x):
    return p["w"] @ x + p["b"] * np.sum(x)
""", None, lambda: ({"w": rng.normal(size=(2, 3)), "b": 0.5}, rng.normal(size=3)),
        (0, 1), False),
    "has_aux": ("""
def f(x):
    y = np.exp(x) / np.sum(np.exp(x))
    return y, {"max": np.max(y)}
""", None, lambda: (rng.normal(size=4),), 0, True),
    "scalar_output": ("""
def f(x, y):
    return np.sum(np.log1p(x ** 2)) * y
""", None, lambda: (rng.normal(size=(2, 2)), 1.3), (0, 1), False),
    "matrix_output_and_input": ("""
def f(a):
    return a @ a.T + np.linalg.inv(a + 4.0 * np.eye(len(a)))
""", None, lambda: (rng.normal(size=(3, 3)),), 0, False),
    "negative_argnums": ("""
def f(x, y):
    return x * np.sin(y)
""", None, lambda: (rng.normal(size=2), rng.normal(size=2)), -1, False),
    "list_comprehension": ("""
def f(x):
    return np.array([x[i] * x[j] for i in range(len(x)) for j in range(i + 1)])
""", """
def f(x):
    return np.stack([x[i] * x[j] for i in range(len(x)) for j in range(i + 1)])
""", lambda: (rng.normal(size=3),), 0, False),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_jacrev_against_jax(name):
    text, jax_text, make, argnums, has_aux = CASES[name]
    f, fj = both(text, jax_text)
    args = make()
    ours = pb.jacrev(f, argnums=argnums, has_aux=has_aux)(*args)
    theirs = jax.jacrev(fj, argnums=argnums, has_aux=has_aux)(*args)
    if has_aux:
        (ours, aux), (theirs, aux_j) = ours, theirs
        assert_close(aux, aux_j)
    assert_close(ours, theirs)
    # the same Jacobian by forward mode, and through the alias
    assert_close(pb.jacobian(f, argnums=argnums, has_aux=has_aux)(*args),
                 pb.jacfwd(f, argnums=argnums, has_aux=has_aux)(*args))


def test_jacrev_namedtuple_input_and_keyword_call():
    f = function_from_source("""
def f(p, scale=2.0):
    return np.stack([p.x * p.y, p.x + scale * p.y])
""")
    p = Point(1.5, np.array(0.5))
    jac = pb.jacrev(f)(p, scale=3.0)
    assert isinstance(jac, Point)
    np.testing.assert_allclose(jac.x, [0.5, 1.0])
    np.testing.assert_allclose(jac.y, [1.5, 3.0])


def test_jacrev_complex_input_real_output_as_jax():
    f, fj = both("""
def f(z):
    return np.abs(z) ** 2 + np.real(z * z)
""")
    z = rng.normal(size=3) + 1j * rng.normal(size=3)
    assert_close(pb.jacrev(f)(z), jax.jacrev(fj)(z))


def test_jacrev_float32_stays_float32():
    f = function_from_source("""
def f(x):
    return np.sin(x) * 2.0
""")
    x = np.array([0.1, 0.2], dtype=np.float32)
    jac = pb.jacrev(f)(x)
    assert jac.dtype == np.float32
    np.testing.assert_allclose(jac, np.diag(2 * np.cos(x)), rtol=1e-6)


def test_jacrev_one_primal_run():
    calls = []

    def note(x):            # (called for its effect: transformed too, so a def)
        calls.append(1)
    f = function_from_source("""
def f(x):
    note(x)
    return np.outer(x, x)
""", {"note": note})
    jac = pb.jacrev(f)(np.arange(1.0, 4.0))
    assert len(calls) == 1                      # one primal run for 9 sweeps
    assert jac.shape == (3, 3, 3)
    assert jac[1, 2, 2] == 2.0 and jac[1, 2, 1] == 3.0


def test_jacrev_does_not_write_into_inputs():
    f = function_from_source("""
def f(x, y):
    return x * y + x[::-1]
""")
    x, y = rng.normal(size=3), rng.normal(size=3)
    x0, y0 = x.copy(), y.copy()
    jx, jy = pb.jacrev(f, argnums=(0, 1))(x, y)
    assert np.array_equal(x, x0) and np.array_equal(y, y0)
    np.testing.assert_allclose(jx, np.diag(y) + np.eye(3)[::-1])
    np.testing.assert_allclose(jy, np.diag(x))
    assert not np.shares_memory(jx, jy)


# -- bad input ------------------------------------------------------------------------------

def g2(x, y):
    return x * y


def test_jacrev_refuses_a_non_callable():
    with pytest.raises(TypeError, match=r"pb\.jacrev expects a function.*got 3"):
        pb.jacrev(3)
    with pytest.raises(TypeError, match=r"pb\.jacobian expects a function"):
        pb.jacobian("f")
    with pytest.raises(TypeError, match="pb.check_grads expects a function"):
        pb.check_grads(None, (1.0,), order=1)


def test_jacrev_argnums_checked():
    with pytest.raises(ValueError, match=r"argnums=2 is out of range: g2 was called with 2"):
        pb.jacrev(g2, argnums=2)(1.0, 2.0)
    with pytest.raises(ValueError, match="argnums=-3 is out of range"):
        pb.jacrev(g2, argnums=(0, -3))(1.0, 2.0)
    with pytest.raises(TypeError, match="argnums must be an int or a non-empty tuple"):
        pb.jacrev(g2, argnums=[0])
    with pytest.raises(TypeError, match="argnums must be"):
        pb.jacobian(g2, argnums=())


def test_jacrev_refuses_integer_inputs_and_outputs():
    with pytest.raises(TypeError, match=r"pb\.jacrev cannot differentiate g2 with respect to "
                                        r"argument 0 \(x\).*integer"):
        pb.jacrev(g2)(np.array([1, 2]), 2.0)
    h = function_from_source("""
def h(x):
    return len(x)
""")
    with pytest.raises(TypeError, match="pb.jacrev needs real float outputs.*returned int"):
        pb.jacrev(h)(np.ones(2))
    c = function_from_source("""
def c(x):
    return {"z": x * 1j}
""")
    with pytest.raises(TypeError, match=r"complex128 at \['z'\].*pb\.vjp"):
        pb.jacrev(c)(np.ones(2))


def test_jacrev_has_aux_needs_a_pair():
    with pytest.raises(pb.PullbackError, match="must return a pair"):
        pb.jacrev(g2, has_aux=True)(np.ones(2), 1.0)


# -- check_grads ------------------------------------------------------------------------------

def test_check_grads_passes_on_correct_derivatives():
    f = function_from_source("""
def f(x, p, n):
    y = x
    for i in range(n):
        y = np.sin(y) * p["a"] + p["b"] @ y
    return {"y": y, "s": np.sum(y ** 2)}
""")
    x = rng.normal(size=3)
    p = {"a": 0.7, "b": rng.normal(size=(3, 3)) / 3}
    pb.check_grads(f, (x, p, 3), order=1)
    pb.check_grads(f, (x, p, 3), order=1, modes=["rev"])
    pb.check_grads(f, (x, p, 3), order=1, modes="fwd")


def test_check_grads_complex_function():
    f = function_from_source("""
def f(z, w):
    return np.sum(np.real(z * w * np.conj(z)) + np.imag(z) ** 2), z * z * w
""")
    z = rng.normal(size=2) + 1j * rng.normal(size=2)
    pb.check_grads(f, (z, 0.5 - 2j), order=1)
    g = function_from_source("""
def g(z, w):
    return np.sum(np.abs(z * w + np.conj(z)) ** 2)
""")
    pb.check_grads(g, (z, 0.5 - 2j), order=1, modes=("rev",))


def test_check_grads_float32_uses_looser_tolerances():
    f = function_from_source("""
def f(x):
    return np.tanh(x) * x
""")
    pb.check_grads(f, (np.linspace(-1, 1, 5).astype(np.float32),), order=1)


def _wrong_vjp_function():
    @pb.custom_vjp
    def soft(x):
        return np.log1p(np.exp(x))

    def soft_fwd(x):
        return soft(x), x

    def soft_bwd(x, g):
        return (g * np.exp(x) / (1.0 + np.exp(x)) * 1.01,)     # 1% off
    soft.defvjp(soft_fwd, soft_bwd)
    return soft


def test_check_grads_catches_a_wrong_custom_vjp():
    soft = _wrong_vjp_function()
    x = np.array([0.3, -1.2, 2.0])
    with pytest.raises(AssertionError, match=r"order 1, mode 'rev' \(VJP\).*central "
                                             r"difference[\s\S]*max error [0-9.e-]+"):
        pb.check_grads(soft, (x,), order=1, modes=("rev",))
    # the right rule passes
    soft.defvjp(lambda x: (soft(x), x), lambda x, g: (g * np.exp(x) / (1.0 + np.exp(x)),))
    pb.check_grads(soft, (x,), order=1, modes=("rev",))


def test_check_grads_catches_a_wrong_custom_jvp():
    @pb.custom_jvp
    def cube(x):
        return x ** 3

    @cube.defjvp
    def cube_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return cube(x), 3.0 * x * t              # should be 3 x**2 t
    with pytest.raises(AssertionError, match=r"order 1, mode 'fwd' \(JVP\): the tangent "
                                             r"disagrees[\s\S]*max error"):
        pb.check_grads(cube, (np.array([0.5, 2.0]),), order=1, modes=("fwd",))

    @pb.custom_jvp
    def cube2(x):
        return x ** 3

    @cube2.defjvp
    def cube2_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return cube2(x), 3.0 * x ** 2 * t
    pb.check_grads(cube2, (np.array([0.5, 2.0]),), order=1, modes=("fwd",))


def test_check_grads_catches_a_wrong_rule_between_modes():
    # a function whose custom_vjp is right in reverse mode but whose plain jvp
    # would differ cannot exist; the dot-product identity with jvp is exercised
    # on a correct function, and tolerances can be set
    f = function_from_source("""
def f(x):
    return np.exp(np.sin(x)) * x
""")
    pb.check_grads(f, (rng.normal(size=4),), order=1, atol=1e-6, rtol=1e-6, eps=1e-6)
    with pytest.raises(AssertionError, match="max error"):
        pb.check_grads(f, (rng.normal(size=4),), order=1, modes=("fwd",), eps=0.5)


def test_check_grads_bad_arguments():
    f = function_from_source("""
def f(x):
    return x * 2.0
""")
    with pytest.raises(TypeError, match="as a tuple"):
        pb.check_grads(f, 1.0, order=1)
    with pytest.raises(ValueError, match="order must be a positive int"):
        pb.check_grads(f, (1.0,), order=0)
    with pytest.raises(ValueError, match="modes must name"):
        pb.check_grads(f, (1.0,), order=1, modes=("forward",))


def test_check_grads_order_2():
    f = function_from_source("""
def f(x, y):
    return np.sum(np.sin(x) * y ** 2)
""")
    pb.check_grads(f, (rng.normal(size=3), 0.8), order=2)


def test_check_grads_order_2_reverse_scalar_function():
    f = function_from_source("""
def f(x, y):
    return np.sum(np.sin(x) * y ** 2) + np.prod(x)
""")
    pb.check_grads(f, (rng.normal(size=3), 0.8), order=2, modes=("rev",))


def test_check_grads_order_2_reverse_only():
    f = function_from_source("""
def f(x):
    return np.exp(x) * x
""")
    pb.check_grads(f, (rng.normal(size=3),), order=2, modes=("rev",))


def test_check_grads_order_2_catches_a_wrong_second_derivative():
    # right to first order (rounding moves x by 1e-9), flat to second
    @pb.custom_jvp
    def sq(x):
        return x * x

    @sq.defjvp
    def sq_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return sq(x), 2.0 * (np.round(x * 1e9) / 1e9) * t
    x = np.array([0.3, 1.0])
    pb.check_grads(sq, (x,), order=1, modes=("fwd",))
    with pytest.raises(AssertionError, match=r"order 2, mode 'fwd' \(JVP of JVP\)"):
        pb.check_grads(sq, (x,), order=2, modes=("fwd",))
