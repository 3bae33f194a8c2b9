"""Issue 13: NumPy and ``math`` functions real programs call that had no
rule.  Each rule is also in ``test_rules``' table (the randomized dot-product
check against central differences, both modes through ``test_forward``);
here whole functions that call them are checked against ``jax.grad`` and
``jax.jvp`` (float64), and what stays refused is refused with a message
that names the user's own expression.
"""
import numpy as np
import pytest

import pullback as pb
from pullback.testing import function_from_source

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402


def both_modes(text, jax_fn, args, rtol=1e-9, namespace=None):
    """pb.grad and pb.jvp of the NumPy function ``text`` against JAX's at ``args``."""
    f = function_from_source(text, namespace or {})
    jargs = tuple(jnp.asarray(a) for a in args)
    wrt = tuple(range(len(args)))
    before = [np.copy(a) for a in args]
    got = pb.grad(f, argnums=wrt)(*args)
    want = jax.grad(jax_fn, argnums=wrt)(*jargs)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, np.asarray(w), rtol=rtol, atol=1e-12)
    rng = np.random.default_rng(0)
    tangents = tuple(rng.standard_normal(np.shape(a)) for a in args)
    _, dot = pb.jvp(f, tuple(args), tangents)
    _, jdot = jax.jvp(jax_fn, jargs, tuple(jnp.asarray(t) for t in tangents))
    np.testing.assert_allclose(dot, np.asarray(jdot), rtol=rtol, atol=1e-12)
    for b, a in zip(before, args):
        np.testing.assert_array_equal(a, b)


# -- np.diff's prepend= and append= ----------------------------------------------------


def test_diff_append_of_the_differenced_array():
    # tv_denoising's forward differences with a replicated last column
    both_modes('''
def f(u):
    dx = np.diff(u, axis=1, append=u[:, -1:])
    dy = np.diff(u, axis=0, prepend=u[:1, :] * 2.0)
    return np.sum(np.sin(dx) * dy)
''', lambda u: jnp.sum(jnp.sin(jnp.diff(u, axis=1, append=u[:, -1:]))
                       * jnp.diff(u, axis=0, prepend=u[:1, :] * 2.0)),
        (np.random.default_rng(1).standard_normal((4, 5)),))


def test_diff_of_a_constant_with_active_ends():
    both_modes('''
def f(a, b):
    return np.sum(np.diff(np.arange(4.0), n=2, prepend=a, append=b) ** 2)
''', lambda a, b: jnp.sum(jnp.diff(jnp.arange(4.0), n=2, prepend=a, append=b) ** 2),
        (0.7, np.array([1.5, -0.5])))


def test_a_static_argument_is_named_as_the_user_wrote_it():
    # the value is `x[0] * 2` in the message, not the temporary `x_item_2`
    f = function_from_source('''
def f(x):
    return np.sum(np.interp(np.linspace(-1.0, 2.0, 5), np.array([0.0, 1.0]), x,
                            left=x[0] * 2))
''')
    with pytest.raises(pb.NonDifferentiableError) as err:
        pb.grad(f)(np.array([1.0, 2.0]))
    text = str(err.value)
    assert "The `left` argument of np.interp carries no gradient, but `x[0] * 2`" in text
    assert "x_item" not in text and "line 2" in text


# -- np.polynomial's series objects called on an array ------------------------------------


def test_series_objects_called_on_an_array():
    from numpy.polynomial import Chebyshev, HermiteE, Laguerre
    ns = {"HermiteE": HermiteE, "Chebyshev": Chebyshev, "Laguerre": Laguerre}
    both_modes('''
def f(x):
    he = [HermiteE.basis(k)(x) for k in range(4)]
    cheb = Chebyshev([1.0, -2.0, 0.5], domain=[-2.0, 2.0])
    return np.sum(np.stack(he) ** 2) + np.sum(cheb(x) * Laguerre([0.5, 1.0])(x))
''', lambda x: (jnp.sum(jnp.stack([jnp.ones_like(x), x, x ** 2 - 1, x ** 3 - 3 * x]) ** 2)
                + jnp.sum((1.0 - 2.0 * (x / 2) + 0.5 * (2 * (x / 2) ** 2 - 1))
                          * (0.5 + (1.0 - x)))),
        (np.array([-1.5, 0.2, 0.7, 1.9]),), namespace=ns)


def test_a_series_built_from_differentiated_coefficients_is_differentiated():
    # Polynomial(c)(x): the coefficients and x both carry a gradient (frontend.series_calls)
    f = function_from_source('''
def f(c, x):
    return np.sum(np.polynomial.Polynomial(c)(x))
''')
    c, x = np.array([1.0, 2.0, 3.0]), np.array([0.5, 1.5])
    gc, gx = pb.grad(f, argnums=(0, 1))(c, x)
    np.testing.assert_allclose(gc, [2.0, x.sum(), (x ** 2).sum()], rtol=1e-12)
    np.testing.assert_allclose(gx, 2.0 + 6.0 * x, rtol=1e-12)
    _, dot = pb.jvp(f, (c, x), (c, x))
    np.testing.assert_allclose(dot, gc @ c + gx @ x, rtol=1e-12)


# -- math.lgamma, np.insert, np.nanmedian, np.unwrap, np.i0, np.linalg.cond -------------


def test_math_lgamma_and_gamma_in_a_scalar_loop():
    import math
    from jax.scipy.special import gamma, gammaln
    f = function_from_source('''
def f(a):
    total = 0.0
    for k in range(3):
        total = total + math.lgamma(a + k) - 0.1 * math.gamma(a - k - 0.5)
    return total
''', {"math": math})

    def jf(a):
        return sum(gammaln(a + k) - 0.1 * gamma(a - k - 0.5) for k in range(3))

    for a in (0.8, 2.7, 7.3):      # (a - k - 0.5 < 0 for some k: gamma's sign flips)
        want = float(jax.grad(jf)(a))
        assert abs(pb.grad(f)(a) - want) <= 1e-10 * max(1.0, abs(want))
        assert abs(pb.jvp(f, (a,), (1.0,))[1] - want) <= 1e-10 * max(1.0, abs(want))


def test_insert_values_computed_from_the_input():
    both_modes('''
def f(x, v):
    y = np.insert(x, [1, 3], v * x[:, :2], axis=1)
    return np.sum(np.sin(y) * np.arange(y.size).reshape(y.shape))
''', lambda x, v: jnp.sum(jnp.sin(jnp.insert(x, jnp.array([1, 3]), v * x[:, :2], axis=1))
                          * jnp.arange(3 * 6).reshape(3, 6)),
        (np.random.default_rng(2).standard_normal((3, 4)), np.array([[0.7, -1.2]])))


def test_nanmedian_skips_nan():
    x = np.array([[3.0, np.nan, 1.0, 2.0], [np.nan, np.nan, np.nan, np.nan],
                  [4.0, 0.5, np.nan, 2.5]])
    f = function_from_source('''
def f(x):
    return np.nansum(np.nanmedian(x, axis=1) * np.array([1.0, 2.0, 3.0]))
''')
    with np.errstate(invalid="ignore"), pytest.warns(RuntimeWarning):
        g = pb.grad(f)(x)
    # row 0: the median 2 is x[0, 3]; row 1 all NaN: nothing; row 2: x[2, 3] = 2.5
    np.testing.assert_array_equal(g, [[0, 0, 0, 1.0], [0, 0, 0, 0], [0, 0, 0, 3.0]])
    xs = np.array([[3.0, np.nan, 1.0, 2.0, 7.0], [4.0, 0.5, np.nan, 2.5, 2.0]])
    both_modes('''
def f(x):
    return np.sum(np.nanmedian(x, axis=1) ** 2) + np.nanpercentile(x, 30.0)
''', lambda x: jnp.sum(jnp.nanmedian(x, axis=1) ** 2) + jnp.nanpercentile(x, 30.0), (xs,))


def test_unwrap_i0_and_cond_against_jax():
    rng = np.random.default_rng(3)
    phase = np.cumsum(rng.uniform(0.5, 2.5, 8))
    both_modes('''
def f(p):
    return np.sum(np.cos(np.unwrap(np.mod(p, 2 * np.pi))) * np.arange(8.0) + np.unwrap(p) ** 2)
''', lambda p: jnp.sum(jnp.cos(jnp.unwrap(jnp.mod(p, 2 * jnp.pi))) * jnp.arange(8.0)
                       + jnp.unwrap(p) ** 2), (phase,))
    both_modes('''
def f(x):
    return np.sum(np.i0(x) * x)
''', lambda x: jnp.sum(jnp.i0(x) * x), (np.array([-3.0, -0.2, 0.0, 1.1, 12.0]),), rtol=1e-12)
    a = rng.standard_normal((3, 4, 4))
    for p in ("None", "-2", "'fro'", "1", "np.inf"):
        both_modes(f'''
def f(a):
    return np.sum(np.linalg.cond(a, {p}) ** 2)
''', lambda a, p=eval(p): jnp.sum(jnp.linalg.cond(a, p) ** 2), (a,), rtol=1e-8)


# -- np.piecewise and np.apply_along_axis: user functions differentiated per piece ------


def test_piecewise_differentiates_the_chosen_pieces():
    # NumPy calls each function on x[cond] (its mean is over the piece); jnp.piecewise
    # calls it on all of x, so the oracle spells the piece's mean out
    def jax_fn(x):
        m = jnp.sum(jnp.where(x < 0, x, 0.0)) / jnp.sum(x < 0)
        y = jnp.piecewise(x, [x < 0, x > 1], [lambda t: t ** 3 - m, 0.5, jnp.sin])
        z = jnp.piecewise(x, [x < 1, x > 0], [jnp.exp, lambda t: t * t])
        return jnp.sum(y * jnp.arange(6.0)) + jnp.sum(z ** 2)

    both_modes('''
def f(x):
    y = np.piecewise(x, [x < 0, x > 1], [lambda t: t ** 3 - np.mean(t), 0.5, np.sin])
    z = np.piecewise(x, [x < 1, x > 0], [np.exp, lambda t: t * t])   # overlap: the last wins
    return np.sum(y * np.arange(6.0)) + np.sum(z ** 2)
''', jax_fn, (np.array([-1.5, -0.3, 0.2, 0.7, 1.9, 2.4]),))


def test_apply_along_axis_differentiates_each_slice():
    def softmax(r):
        e = np.exp(r - np.max(r))
        return e / np.sum(e)

    x = np.random.default_rng(4).standard_normal((3, 4))
    both_modes('''
def f(x):
    p = np.apply_along_axis(softmax, 1, x)
    q = np.apply_along_axis(lambda c: np.outer(c, c), 0, x)
    return np.sum(p * np.arange(12.0).reshape(3, 4)) + np.sum(np.sin(q))
''', lambda x: (jnp.sum(jax.nn.softmax(x, axis=1) * jnp.arange(12.0).reshape(3, 4))
                + jnp.sum(jnp.sin(jnp.apply_along_axis(lambda c: jnp.outer(c, c), 0, x)))),
        (x,), namespace={"softmax": softmax})


@pytest.mark.parametrize("text,shown", [
    ("np.piecewise(x, [x < 0], [lambda t: a * t, np.sin])", "[lambda t: a * t, np.sin]"),
    ("np.apply_along_axis(lambda r: r * a, 0, x)", "lambda r: r * a"),
])
def test_a_function_holding_a_differentiated_value_is_refused(text, shown):
    # `a` would lose its gradient through the function: refused, quoting the user's text
    f = function_from_source(f"def f(x, a):\n    return np.sum({text})\n")
    x = np.array([-1.0, 0.5, 2.0])
    for run in (lambda: pb.grad(f, argnums=(0, 1))(x, 2.0),
                lambda: pb.jvp(f, (x, 2.0), (x, 1.0))):
        with pytest.raises(pb.NonDifferentiableError) as err:
            run()
        assert f"carries no gradient, but `{shown}` depends on the inputs" in str(err.value)


# -- the array API's names, and integer results ------------------------------------------


def test_array_api_names_against_jax():
    a = np.random.default_rng(5).standard_normal((2, 3, 3))
    both_modes('''
def f(a):
    b = np.linalg.matmul(a, np.linalg.matrix_transpose(a))
    v = np.linalg.vector_norm(a, axis=(0, 2)) + np.linalg.vecdot(a[0], a[1])
    m = np.linalg.matrix_norm(b, ord="nuc") + np.linalg.trace(b, offset=1)
    s = np.linalg.svdvals(a)[:, 0] + np.linalg.diagonal(a).sum(axis=-1)
    return np.sum(v ** 2) + np.sum(m) + np.sum(np.cumulative_sum(s, include_initial=True))
''', lambda a: (jnp.sum((jnp.linalg.vector_norm(a, axis=(0, 2)) + jnp.linalg.vecdot(a[0], a[1]))
                        ** 2)
                + jnp.sum(jnp.linalg.matrix_norm(a @ jnp.swapaxes(a, -1, -2), ord="nuc")
                          + jnp.trace(a @ jnp.swapaxes(a, -1, -2), offset=1, axis1=-2, axis2=-1))
                + jnp.sum(jnp.cumsum(jnp.concatenate([
                    jnp.zeros(1), jnp.linalg.svd(a, compute_uv=False)[:, 0]
                    + jnp.diagonal(a, axis1=-2, axis2=-1).sum(axis=-1)])))),
        (a,), rtol=1e-8)


def test_integer_results_carry_no_gradient():
    # the bin of each sample is piecewise constant: the gradient is the weights'
    f = function_from_source('''
def f(x):
    bins = np.digitize(x, np.array([-1.0, 0.0, 1.0]))
    return np.sum(np.array([1.0, 2.0, 3.0, 4.0])[bins] * x)
''')
    x = np.array([-1.5, -0.5, 0.5, 1.5, 0.2])
    np.testing.assert_array_equal(pb.grad(f)(x), [1.0, 2.0, 3.0, 4.0, 3.0])
    np.testing.assert_array_equal(pb.jvp(f, (x,), (np.ones(5),))[1], 13.0)
