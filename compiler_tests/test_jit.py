"""pullback's derivatives under ``jax.jit`` (issue 18): traced JAX arguments run
the same generated source with NumPy bound to ``jax.numpy``
(``backend.namespace``).  Oracle: ``jax.grad``/``jax.vjp``/``jax.jvp`` in
float64 to 1e-12; the untraceable cases raise ``NotTraceableError`` naming the
line, and ``pb.source`` says which is which in its header."""
import collections
import dataclasses
import functools
import math
import re

import numpy as np
import pytest

import pullback as pb

scipy = pytest.importorskip("scipy")
pytest.importorskip("scipy.special")        # (scipy.special.erf below)

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy

TOL = dict(rtol=1e-12, atol=1e-12)
RNG = np.random.default_rng(18)


def mlp(W1, b1, W2, b2, x, y):
    h = np.tanh(x @ W1 + b1)
    out = h @ W2 + b2
    return np.mean((out - y) ** 2)


def mlp_j(W1, b1, W2, b2, x, y):
    h = jnp.tanh(x @ W1 + b1)
    out = h @ W2 + b2
    return jnp.mean((out - y) ** 2)


def chain(x):
    return np.sum(np.sin(x) * np.exp(-x) + x ** 2 / (1.0 + np.cosh(x)))


def chain_j(x):
    return jnp.sum(jnp.sin(x) * jnp.exp(-x) + x ** 2 / (1.0 + jnp.cosh(x)))


def dot_loop(w, x):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + w[i] * x[i]
    return s


def dot_loop_j(w, x):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + w[i] * x[i]
    return s


def shape_branch(x):
    if x.shape[0] > 2:
        return np.sum(x ** 3)
    return np.sum(x)


def value_branch(x):
    if np.sum(x) > 0:
        return np.sum(x ** 3)
    return np.sum(x)


def _mlp_args():
    shapes = [(4, 5), (5,), (5, 3), (3,), (6, 4), (6, 3)]
    return tuple(jnp.asarray(RNG.normal(size=s)) for s in shapes)


def _close(got, want):
    assert isinstance(got, jax.Array)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), **TOL)


def test_mlp_gradient_under_jit_equals_jax_grad():
    args = _mlp_args()
    got = jax.jit(pb.grad(mlp, argnums=(0, 1, 2, 3)))(*args)
    want = jax.grad(mlp_j, argnums=(0, 1, 2, 3))(*args)
    for g, w in zip(got, want):
        _close(g, w)


def test_mlp_value_and_grad_under_jit_every_argument():
    args = _mlp_args()
    value, got = jax.jit(pb.value_and_grad(mlp, argnums=tuple(range(6))))(*args)
    want_value, want = jax.value_and_grad(mlp_j, argnums=tuple(range(6)))(*args)
    _close(value, want_value)
    for g, w in zip(got, want):
        _close(g, w)


def test_elementwise_chain_under_jit():
    x = jnp.asarray(RNG.normal(size=(3, 7)))
    f = jax.jit(pb.grad(chain))
    _close(f(x), jax.grad(chain_j)(x))
    x2 = x * 2.0 + 1.0                  # the compiled function again, other values
    _close(f(x2), jax.grad(chain_j)(x2))


def test_loop_with_indexed_reads_unrolls_under_jit():
    w, x = (jnp.asarray(RNG.normal(size=9)) for _ in range(2))
    got = jax.jit(pb.grad(dot_loop, argnums=(0, 1)))(w, x)
    want = jax.grad(dot_loop_j, argnums=(0, 1))(w, x)
    for g, v in zip(got, want):
        _close(g, v)


def test_branch_on_a_shape_is_traceable():
    x = jnp.asarray(RNG.normal(size=4))
    assert "# jax.jit: traceable" in pb.source(shape_branch, np.ones(4)).splitlines()[1]
    _close(jax.jit(pb.grad(shape_branch))(x), 3 * x ** 2)
    _close(jax.jit(pb.grad(shape_branch))(x[:2]), jnp.ones(2))


def test_branch_on_a_value_is_refused_with_its_line():
    header = pb.source(value_branch, np.ones(4)).splitlines()[1]
    assert header.startswith("# jax.jit: not traceable: a Python `if` on a value computed")
    line = value_branch.__code__.co_firstlineno + 1
    assert f"line {line}: if np.sum(x) > 0:" in header
    with pytest.raises(pb.NotTraceableError, match="Python `if`") as err:
        jax.jit(pb.grad(value_branch))(jnp.ones(4))
    assert err.value.lineno == line and err.value.filename == __file__
    assert "if np.sum(x) > 0:" in str(err.value)
    # outside jax.jit the same function takes JAX arrays as before
    _close(pb.grad(value_branch)(jnp.ones(4)), 3 * jnp.ones(4))


def test_generic_source_states_traceability_too():
    assert pb.source(chain).splitlines()[1].startswith("# jax.jit: traceable")
    assert pb.source(value_branch).splitlines()[1].startswith("# jax.jit: not traceable")


def test_vjp_and_jvp_under_jit():
    x = jnp.asarray(RNG.normal(size=5))
    ct = jnp.asarray(RNG.normal(size=5))

    def f(x):
        return np.sin(x) * x

    got = jax.jit(lambda x, ct: pb.vjp(f, x)[1](ct))(x, ct)
    want = jax.vjp(lambda x: jnp.sin(x) * x, x)[1](ct)
    assert len(got) == 1
    _close(got[0], want[0])
    out, tangent = jax.jit(lambda x, t: pb.jvp(chain, (x,), (t,)))(x, ct)
    want_out, want_tangent = jax.jvp(chain_j, (x,), (ct,))
    _close(out, want_out)
    _close(tangent, want_tangent)
    args = _mlp_args()
    dirs = tuple(jnp.asarray(RNG.normal(size=a.shape)) for a in args)
    out, tangent = jax.jit(lambda *a: pb.jvp(mlp, a[:6], a[6:]))(*args, *dirs)
    want_out, want_tangent = jax.jvp(mlp_j, args, dirs)
    _close(out, want_out)
    _close(tangent, want_tangent)


IDX = np.array([0, 0, 2, 4, 2])


def gather_repeats(x):
    return np.sum(x[IDX] ** 2)


def test_repeated_indices_accumulate_functionally():
    x = jnp.asarray(RNG.normal(size=6))
    got = jax.jit(pb.grad(gather_repeats))(x)
    _close(got, jax.grad(lambda x: jnp.sum(x[IDX] ** 2))(x))


def scalar_math(a, b):
    return math.sin(a) * math.exp(b) + math.log(a * a + 1.0, 2.0)


def test_math_functions_on_traced_scalars():
    got = jax.jit(pb.grad(scalar_math, argnums=(0, 1)))(1.3, 0.4)
    want = jax.grad(lambda a, b: jnp.sin(a) * jnp.exp(b) + jnp.log(a * a + 1.0) / jnp.log(2.0),
                    argnums=(0, 1))(1.3, 0.4)
    for g, w in zip(got, want):
        np.testing.assert_allclose(float(g), float(w), **TOL)


def square(x):
    return x * x


def calls_a_user_function(x):
    return np.sum(square(x) * np.sin(square(x[1:])[0]))


def branches(x):
    if x[0] > 0:
        return x * 2.0
    return x


def calls_a_branching_function(x):
    return np.sum(branches(x))


def test_user_callees_run_their_own_namespace_build():
    x = jnp.asarray(RNG.normal(size=4))
    header = pb.source(calls_a_user_function, np.ones(4)).splitlines()[1]
    assert "traceable" in header and "square" in header
    want = jax.grad(lambda x: jnp.sum(x * x * jnp.sin(x[1] ** 2)))(x)
    _close(jax.jit(pb.grad(calls_a_user_function))(x), want)
    with pytest.raises(pb.NotTraceableError, match="branches's derivative") as err:
        jax.jit(pb.grad(calls_a_branching_function))(x)
    assert "if x[0] > 0:" in str(err.value)


def writes_into_an_array(x):
    y = np.zeros(3)
    y[0] = x[0]
    return np.sum(y * x)


def while_on_a_value(x):
    s = 0.0
    while s < 10.0:
        s = s + np.sum(x * x)
    return s


@pytest.mark.parametrize("fn, what", [
    (writes_into_an_array, "write into an array"),
    (while_on_a_value, "Python `while`"),
])      # (np.linalg.lstsq traces now: test_lazy_backends.py)
def test_untraceable_functions_get_a_pullback_error_not_a_tracer_error(fn, what):
    assert what in pb.source(fn, np.ones(3)).splitlines()[1]
    with pytest.raises(pb.NotTraceableError, match=what):
        jax.jit(pb.grad(fn))(jnp.ones(3))


def test_float32_gradients_keep_their_dtype():
    x = jnp.asarray(RNG.normal(size=4), dtype=jnp.float32)
    got = jax.jit(pb.grad(lambda x: np.sum(np.tanh(x) * x)))(x)
    assert got.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(got), np.asarray(
        jax.grad(lambda x: jnp.sum(jnp.tanh(x) * x))(x)), rtol=1e-6)


def test_numpy_arguments_never_reach_the_namespace_build(monkeypatch):
    from pullback.backend import namespace

    def refuse(*a, **k):
        raise AssertionError("the NumPy path went through the namespace build")
    for name in ("value_and_grad", "vjp", "jvp", "build"):
        monkeypatch.setattr(namespace, name, refuse)
    x = RNG.normal(size=5)
    g = pb.grad(chain)(x)
    assert type(g) is np.ndarray
    np.testing.assert_allclose(g, np.asarray(jax.grad(chain_j)(jnp.asarray(x))), **TOL)
    pb.vjp(chain, x)[1](1.0)
    pb.jvp(chain, (x,), (x,))
    # concrete JAX arrays keep their boundary path too
    assert isinstance(pb.grad(chain)(jnp.asarray(x)), jax.Array)


def test_the_callers_arrays_are_not_written():
    x = RNG.normal(size=5)
    keep = x.copy()
    jax.jit(pb.grad(dot_loop, argnums=(0, 1)))(x, x)      # NumPy arrays become constants
    np.testing.assert_array_equal(x, keep)


def with_aux(x):
    return np.sum(x ** 2), x * 2.0


def test_has_aux_under_jit():
    x = jnp.asarray(RNG.normal(size=4))
    g, aux = jax.jit(pb.grad(with_aux, has_aux=True))(x)
    _close(g, 2 * x)
    _close(aux, 2 * x)
    (value, aux), g = jax.jit(pb.value_and_grad(with_aux, has_aux=True))(x)
    _close(value, jnp.sum(x ** 2))


def params_in_a_dict(p, x):
    return np.sum(np.tanh(p["w"] * x) + p["b"] ** 2)


# -- containers of traced arrays (dict, list, tuple, namedtuple, dataclass, pytree) --------

def _same_tree(got, want):
    """``got`` has ``want``'s structure (types included) and JAX-array leaves
    equal to ``want``'s to 1e-12."""
    got_leaves, got_def = jax.tree_util.tree_flatten(got)
    want_leaves, want_def = jax.tree_util.tree_flatten(want)
    assert got_def == want_def
    for g, w in zip(got_leaves, want_leaves):
        _close(g, w)


def mlp_dict(params, x, y):
    h = np.tanh(x @ params["W1"] + params["b1"])
    out = h @ params["W2"] + params["b2"]
    return np.mean((out - y) ** 2)


def mlp_dict_j(params, x, y):
    h = jnp.tanh(x @ params["W1"] + params["b1"])
    out = h @ params["W2"] + params["b2"]
    return jnp.mean((out - y) ** 2)


def mlp_layers(layers, x, y):
    h = x
    for W, b in layers:
        h = np.tanh(h @ W + b)
    return np.mean((h - y) ** 2)


def mlp_layers_j(layers, x, y):
    h = x
    for W, b in layers:
        h = jnp.tanh(h @ W + b)
    return jnp.mean((h - y) ** 2)


def _dict_params():
    shapes = {"W1": (4, 5), "b1": (5,), "W2": (5, 3), "b2": (3,)}
    return {k: jnp.asarray(RNG.normal(size=s)) for k, s in shapes.items()}


def _batch(rows=6, width=3):
    return jnp.asarray(RNG.normal(size=(rows, 4))), jnp.asarray(RNG.normal(size=(rows, width)))


def test_mlp_with_a_dict_of_parameters_under_jit():
    params, (x, y) = _dict_params(), _batch()
    got = jax.jit(pb.grad(mlp_dict))(params, x, y)
    assert type(got) is dict and sorted(got) == sorted(params)      # (jax.jit sorts keys)
    _same_tree(got, jax.grad(mlp_dict_j)(params, x, y))
    value, (gp, gx) = jax.jit(pb.value_and_grad(mlp_dict, argnums=(0, 1)))(params, x, y)
    want_value, (wp, wx) = jax.value_and_grad(mlp_dict_j, argnums=(0, 1))(params, x, y)
    _close(value, want_value)
    _same_tree(gp, wp)
    _close(gx, wx)


@pytest.mark.parametrize("kind", [list, tuple])
def test_a_list_or_tuple_of_layers_under_jit(kind):
    layers = kind((jnp.asarray(RNG.normal(size=(4, 4))), jnp.asarray(RNG.normal(size=4)))
                  for _ in range(3))
    x, y = _batch(width=4)
    got = jax.jit(pb.grad(mlp_layers))(layers, x, y)
    assert type(got) is kind and all(type(g) is tuple for g in got)
    _same_tree(got, jax.grad(mlp_layers_j)(layers, x, y))


Affine = collections.namedtuple("Affine", "w b")


@dataclasses.dataclass
class Dense:
    w: object
    b: object


jax.tree_util.register_dataclass(Dense, data_fields=["w", "b"], meta_fields=[])


@jax.tree_util.register_pytree_node_class
class Linear:
    def __init__(self, w, b, name="l"):
        self.w, self.b, self.name = w, b, name

    def tree_flatten(self):
        return (self.w, self.b), self.name

    @classmethod
    def tree_unflatten(cls, name, children):
        return cls(*children, name)


def layer_loss(layer, x):
    return np.sum(np.tanh(x @ layer.w + layer.b) ** 2)


def layer_loss_j(layer, x):
    return jnp.sum(jnp.tanh(x @ layer.w + layer.b) ** 2)


@pytest.mark.parametrize("cls", [Affine, Dense, Linear])
def test_namedtuple_dataclass_and_registered_pytree_under_jit(cls):
    layer = cls(jnp.asarray(RNG.normal(size=(4, 3))), jnp.asarray(RNG.normal(size=3)))
    x = _batch()[0]
    got, gx = jax.jit(pb.grad(layer_loss, argnums=(0, 1)))(layer, x)
    want, wx = jax.grad(layer_loss_j, argnums=(0, 1))(layer, x)
    assert type(got) is cls
    _same_tree(got, want)        # (a traced child handed back as its own gradient fails here)
    _close(gx, wx)
    if cls is Linear:
        assert got.name == "l"


def test_vjp_and_has_aux_with_a_dict_under_jit():
    params, (x, y) = _dict_params(), _batch()
    ct = jnp.asarray(1.5)
    got = jax.jit(lambda p, x, y: pb.vjp(mlp_dict, p, x, y)[1](ct))(params, x, y)
    want = jax.vjp(mlp_dict_j, params, x, y)[1](ct)
    assert len(got) == 3
    for g, w in zip(got, want):
        _same_tree(g, w)

    def with_aux(p, x):
        return np.sum(p["W1"] ** 2) * np.sum(x), {"n": np.sum(x)}
    g, aux = jax.jit(pb.grad(with_aux, has_aux=True))(params, x)
    _same_tree(g, jax.grad(lambda p, x: jnp.sum(p["W1"] ** 2) * jnp.sum(x))(params, x))
    _close(aux["n"], jnp.sum(x))


def example_loss(params, x):
    h = np.tanh(x @ params["W1"] + params["b1"])
    return np.sum(h @ params["W2"] + params["b2"])


def example_loss_j(params, x):
    h = jnp.tanh(x @ params["W1"] + params["b1"])
    return jnp.sum(h @ params["W2"] + params["b2"])


def test_per_example_gradients_by_vmap_over_a_dict_of_parameters():
    params, (x, _) = _dict_params(), _batch()
    want = jax.vmap(jax.grad(example_loss_j), in_axes=(None, 0))(params, x)
    _same_tree(jax.vmap(pb.grad(example_loss), in_axes=(None, 0))(params, x), want)
    _same_tree(jax.jit(jax.vmap(pb.grad(example_loss), in_axes=(None, 0)))(params, x), want)


def test_a_dict_with_a_number_and_nested_lists_under_jit():
    def f(p, x):
        return np.sum(np.tanh(p["w"] * x) + p["b"] ** 2) * p["layers"][1][0]

    def fj(p, x):
        return jnp.sum(jnp.tanh(p["w"] * x) + p["b"] ** 2) * p["layers"][1][0]
    x = jnp.asarray(RNG.normal(size=3))
    p = {"w": jnp.asarray(RNG.normal(size=3)), "b": 0.5,
         "layers": [jnp.asarray(RNG.normal(size=2)), [1.5, jnp.asarray(RNG.normal(size=2))]]}
    got = jax.jit(pb.grad(f))(p, x)
    _same_tree(got, jax.grad(fj)(p, x))


def test_vmap_of_a_gradient():
    xs = jnp.asarray(RNG.normal(size=(3, 4)))
    got = jax.vmap(pb.grad(chain))(xs)
    _close(got, jax.vmap(jax.grad(chain_j))(xs))


def _closure_over_numpy():
    xp, sin = np, np.sin

    def f(x):
        return xp.sum(sin(x) * xp.cos(x))
    return f


def test_numpy_reached_through_a_closure_is_bound_to_jax_numpy():
    x = jnp.asarray(RNG.normal(size=5))
    got = jax.jit(pb.grad(_closure_over_numpy()))(x)
    _close(got, jax.grad(lambda x: jnp.sum(jnp.sin(x) * jnp.cos(x)))(x))


# -- helpers without a jax.numpy form: a namespace-generic one, or refused at their line --

def _sort(x):
    return np.sum(np.sort(x) * np.arange(5.0))


def _solve(x):
    return np.sum(np.linalg.solve(np.eye(5) * 3.0 + x[:, None] * x[None, :], x))


def _slogdet(x):
    return np.linalg.slogdet(np.eye(5) + x[:, None] * x[None, :])[1]


def _inv(x):
    return np.sum(np.linalg.inv(np.eye(5) * 3.0 + np.outer(x, x)))


def _norm(x):
    return np.linalg.norm(x) + np.linalg.norm(np.outer(x, x))


def _gammaln(x):
    return np.sum(scipy.special.gammaln(x + 3.0) * scipy.special.expit(x))


def _erf_digamma(x):
    return np.sum(scipy.special.erf(x) + scipy.special.digamma(x + 4.0))


def _logsumexp(x):
    return scipy.special.logsumexp(x) + np.sum(scipy.special.xlogy(x + 2.0, x + 3.0))


def _clip_abs_prod(x):
    return np.sum(np.clip(x, -0.5, 0.5) ** 2) + np.sum(np.abs(x)) + np.prod(x)


def _prod_with_a_zero(x):
    return np.prod(x * np.array([1.0, 0.0, 1.0, 1.0, 1.0]))


def _layout(x):
    parts = np.concatenate([x, x ** 2])
    s = np.stack([x, 2.0 * x])
    return np.sum(parts ** 2) + np.einsum("ij,ij->", s, s) + np.sum(np.take(x, np.array([0, 0, 3])))


def _variance(x):
    return np.var(x) + np.std(x)


def _shapes(x):
    return (np.sum(np.tile(x, 2) ** 2 * np.arange(10.0)) + np.sum(np.diff(x) ** 2)
            + np.sum(np.kron(x, x) * np.arange(25.0)) + np.sum(np.cross(x[:3], x[2:]) ** 2)
            + np.sum(np.linspace(x[0], x[1], 4) ** 2) + np.sum(np.atleast_2d(x) ** 2)
            + np.sum(np.ravel(np.outer(x, x)) * np.arange(25.0))
            + np.sum(np.array([x[0], x[1] * 2.0, x[2]]) ** 2))


def _products(x):
    m = np.outer(x, x * np.arange(5.0))
    return np.sum(m.T @ x) + np.dot(m, x)[1] + np.dot(x, x) + np.inner(x, x * 2.0) \
        + np.sum(np.linalg.pinv(np.diag(np.arange(1.0, 6.0)) + np.outer(x, x)))


def _more_special(x):
    return np.sum(scipy.special.polygamma(1, x + 3.0)) + scipy.special.multigammaln(x[0] + 4.0, 3)


GENERIC_HELPERS = [_sort, _solve, _slogdet, _inv, _norm, _gammaln, _erf_digamma, _logsumexp,
                   _clip_abs_prod, _prod_with_a_zero, _layout, _variance, _shapes, _products,
                   _more_special]


@pytest.mark.parametrize("fn", GENERIC_HELPERS, ids=lambda f: f.__name__)
def test_helpers_with_a_generic_form(fn):
    """Under jax.jit these run the helpers' namespace-generic forms (the
    same NumPy code with ``np`` rebound, or a few lines of their own); the
    oracle is pullback's NumPy gradient (checked against jax and central
    differences in the rules' tests), to 1e-12."""
    x = RNG.normal(size=5) * 0.5
    assert pb.source(fn, x).splitlines()[1].startswith("# jax.jit: traceable")
    want = pb.grad(fn)(x)
    got = jax.jit(pb.grad(fn))(jnp.asarray(x))
    _close(got, jnp.asarray(want))


def test_generic_helpers_equal_jax_grad():
    x = jnp.asarray(RNG.normal(size=5) * 0.5)
    want = jax.grad(lambda x: jnp.sum(jnp.sort(x) * jnp.arange(5.0))
                    + jax.scipy.special.logsumexp(x) + jnp.prod(x))(x)
    got = jax.jit(pb.grad(lambda x: _sort(x) + scipy.special.logsumexp(x) + np.prod(x)))(x)
    _close(got, want)


def _view_write(x):
    y = x.copy()
    v = y[1:]
    v[0] = 0.0
    return np.sum(y * x)


def _partial(x):
    g = functools.partial(np.multiply, x)
    return np.sum(g(x))


def _checkpointed(x):
    h = pb.checkpoint(lambda y: np.sin(y) * y)
    return np.sum(h(x))


def _bessel(x):
    return np.sum(scipy.special.j1(x + 2.0))


REFUSED_AT_TRANSFORM = [
    (_view_write, "held_array_write"), (_partial, "functools.partial"),
    (_checkpointed, "pb.checkpoint"), (_bessel, "j1"),
]       # (np.trace traces now: test_lazy_backends.py)


@pytest.mark.parametrize("fn, what", REFUSED_AT_TRANSFORM, ids=lambda v: getattr(v, "__name__", v))
def test_helpers_without_a_generic_form_are_refused_at_their_line(fn, what):
    x = RNG.normal(size=5) * 0.5
    header = pb.source(fn, x).splitlines()[1]
    assert header.startswith("# jax.jit: not traceable") and what in header
    with pytest.raises(pb.NotTraceableError, match=re.escape(what)) as err:
        jax.jit(pb.grad(fn))(jnp.asarray(x))
    assert err.value.filename == __file__
    first = fn.__code__.co_firstlineno
    assert first < err.value.lineno <= first + 4
    np.testing.assert_allclose(pb.grad(fn)(jnp.asarray(x)), pb.grad(fn)(x), **TOL)   # outside jit


def _take_a_list(x):
    return np.sum(np.take(x, [0, 0, 2]))


def test_what_jax_numpy_refuses_at_trace_time_is_a_pullback_error_at_its_line():
    with pytest.raises(pb.NotTraceableError, match="refused by jax.numpy") as err:
        jax.jit(pb.grad(_take_a_list))(jnp.ones(5))
    assert err.value.filename == __file__
    assert err.value.lineno == _take_a_list.__code__.co_firstlineno + 1


def test_a_variadic_jvp_is_refused_before_tracing():
    def f(*xs):
        return np.sum(xs[0] * xs[1])
    with pytest.raises(pb.NotTraceableError, match="named parameters"):
        jax.jit(lambda a, b: pb.jvp(f, (a, b), (a, b)))(jnp.ones(2), jnp.ones(2))
    got = jax.jit(pb.grad(f, argnums=(0, 1)))(jnp.ones(2), 2.0 * jnp.ones(2))    # grad: taken
    _close(got[0], 2.0 * jnp.ones(2))


def test_the_header_says_how_user_callees_are_decided():
    header = pb.source(calls_a_user_function, np.ones(4)).splitlines()[1]
    assert "not decided here for the calls of square" in header
    assert "checked when jax.jit traces them" in header


class Plain:
    def __init__(self, w, b, tag):
        self.w, self.b, self.tag = w, b, tag


def plain_loss(p, x):
    return np.sum(np.tanh(x * p.w) + p.b ** 2)


def test_a_plain_object_built_under_jit_and_one_that_holds_itself():
    x, w = (jnp.asarray(RNG.normal(size=3)) for _ in range(2))
    got = jax.jit(lambda w, x: pb.grad(plain_loss)(Plain(w, 0.5 * w, "t"), x).w)(w, x)
    _close(got, jax.grad(lambda w: jnp.sum(jnp.tanh(x * w)))(w))     # (b held apart)
    gb = jax.jit(lambda w, x: pb.grad(plain_loss)(Plain(w, 0.5 * w, "t"), x).b)(w, x)
    _close(gb, w)             # d/db sum(b ** 2) = 2 b = w

    def loops(w, x):
        p = Plain(w, w, "t")
        p.me = p
        return pb.grad(plain_loss)(p, x)
    with pytest.raises(pb.NotTraceableError, match="holds itself"):
        jax.jit(loops)(w, x)
