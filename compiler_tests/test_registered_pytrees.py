"""Registered pytree classes (``pb.register_pytree_node``, JAX's conventions)
and plain objects of the user's classes as differentiated arguments, outputs,
cotangents and tangents (issue 13).  JAX (float64) is the oracle where the
class is registered with both; plain objects are checked against exact
values and central differences."""
import copy
import dataclasses

import numpy as np
import pytest

import pullback as pb

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
from jax import tree_util  # noqa: E402

rng = np.random.default_rng(13)


def assert_tree_close(a, b, rtol=1e-10):
    la, ta = tree_util.tree_flatten(a)
    lb, tb = tree_util.tree_flatten(b)
    assert ta == tb, (ta, tb)
    for x, y in zip(la, lb):
        assert np.shape(x) == np.shape(y)
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=rtol, atol=1e-12)


# -- registered classes, with pullback and with JAX (the oracle) ----------------------

class MLPParams:
    """A list of (W, b) layers and an activation name (aux data)."""

    def __init__(self, layers, activation="tanh"):
        self.layers = layers
        self.activation = activation


def _mlp_flatten(p):
    return p.layers, p.activation


def _mlp_unflatten(activation, layers):
    return MLPParams(list(layers), activation)


pb.register_pytree_node(MLPParams, _mlp_flatten, _mlp_unflatten)
tree_util.register_pytree_node(MLPParams, _mlp_flatten, _mlp_unflatten)


def mlp_loss(params, x, y):
    h = x
    for W, b in params.layers:
        h = np.tanh(h @ W + b)
    return np.mean((h - y) ** 2)


def mlp_loss_jax(params, x, y):
    h = x
    for W, b in params.layers:
        h = jnp.tanh(h @ W + b)
    return jnp.mean((h - y) ** 2)


def make_mlp():
    return MLPParams([(rng.normal(size=(3, 5)), rng.normal(size=5)),
                      (rng.normal(size=(5, 2)), rng.normal(size=2))])


def snapshot(tree):
    return [np.array(v, copy=True) for v in tree_util.tree_leaves(tree)]


def test_registered_mlp_params_gradient_matches_jax():
    params = make_mlp()
    before = snapshot(params)
    x, y = rng.normal(size=(7, 3)), rng.normal(size=(7, 2))
    g = pb.grad(mlp_loss)(params, x, y)
    assert type(g) is MLPParams and g.activation == "tanh"
    assert_tree_close(g, jax.grad(mlp_loss_jax)(params, x, y))
    # the user's object is unchanged and shares no memory with its gradient
    for a, b in zip(before, tree_util.tree_leaves(params)):
        np.testing.assert_array_equal(a, b)
    for ga in tree_util.tree_leaves(g):
        assert not any(np.shares_memory(ga, pa) for pa in tree_util.tree_leaves(params))


def test_registered_value_and_grad_with_aux_and_argnums():
    params = make_mlp()
    x, y = rng.normal(size=(4, 3)), rng.normal(size=(4, 2))

    def loss_aux(p, x, y):
        v = mlp_loss(p, x, y)
        return v, {"loss": v}
    (v, aux), (gp, gx) = pb.value_and_grad(loss_aux, argnums=(0, 1), has_aux=True)(params, x, y)
    jv, (jp, jx) = jax.value_and_grad(mlp_loss_jax, argnums=(0, 1))(params, x, y)
    assert v == pytest.approx(float(jv), rel=1e-12) and aux["loss"] == v
    assert_tree_close(gp, jp)
    np.testing.assert_allclose(gx, jx, rtol=1e-10)


class Scaled:
    """Children ``w`` and ``b``; aux data ``mask`` (a float array that carries
    no gradient, as JAX's aux data) and ``name``."""

    def __init__(self, w, b, mask, name):
        self.w, self.b, self.mask, self.name = w, b, mask, name


def _scaled_flatten(s):
    return (s.w, s.b), (s.mask, s.name)


def _scaled_unflatten(aux, children):
    return Scaled(children[0], children[1], *aux)


pb.register_pytree_node(Scaled, _scaled_flatten, _scaled_unflatten)


def scaled_loss(s, x):
    return np.sum(np.sin(s.w * x) * s.mask) * s.b


def test_registered_class_with_aux_data():
    s = Scaled(np.array([0.5, -1.0, 2.0]), 1.5, np.array([1.0, 0.0, 2.0]), "s")
    x = np.array([0.3, 0.7, -0.2])
    g = pb.grad(scaled_loss)(s, x)
    assert type(g) is Scaled and g.name == "s" and g.mask is s.mask    # aux as given
    np.testing.assert_allclose(g.w, np.cos(s.w * x) * x * s.mask * s.b, rtol=1e-14)
    assert g.b == pytest.approx(np.sum(np.sin(s.w * x) * s.mask), rel=1e-14)
    gx = pb.grad(scaled_loss, argnums=1)(s, x)
    np.testing.assert_allclose(gx, np.cos(s.w * x) * s.w * s.mask * s.b, rtol=1e-14)


@pb.register_pytree_node_class
class Dense:
    def __init__(self, W, b):
        self.W = W
        self.b = b

    def __call__(self, x):
        return np.tanh(x @ self.W + self.b)

    def tree_flatten(self):
        return (self.W, self.b), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


class Model:
    def __init__(self, encoder, decoder, scale):
        self.encoder = encoder
        self.decoder = decoder
        self.scale = scale


pb.register_pytree_node(Model, lambda m: ((m.encoder, m.decoder), m.scale),
                        lambda scale, ch: Model(ch[0], ch[1], scale))
tree_util.register_pytree_node(Dense, lambda d: d.tree_flatten(), Dense.tree_unflatten)
tree_util.register_pytree_node(Model, lambda m: ((m.encoder, m.decoder), m.scale),
                               lambda scale, ch: Model(ch[0], ch[1], scale))


def model_loss(m, batch):
    h = m.decoder(m.encoder(batch["x"]))
    return np.sum((h - batch["y"]) ** 2) * m.scale


def model_loss_jax(m, batch):
    h = jnp.tanh(jnp.tanh(batch["x"] @ m.encoder.W + m.encoder.b) @ m.decoder.W + m.decoder.b)
    return jnp.sum((h - batch["y"]) ** 2) * m.scale


def make_model():
    return Model(Dense(rng.normal(size=(3, 4)), rng.normal(size=4)),
                 Dense(rng.normal(size=(4, 2)), rng.normal(size=2)), 0.5)


def test_nested_registered_classes_inside_structures():
    m = make_model()
    batch = {"x": rng.normal(size=(5, 3)), "y": rng.normal(size=(5, 2))}
    g = pb.grad(model_loss)(m, batch)
    assert type(g) is Model and type(g.encoder) is Dense and g.scale == 0.5
    assert_tree_close(g, jax.grad(model_loss_jax)(m, batch))
    # inside a tuple and a dict: the gradient keeps the structure around the objects
    (gt,) = pb.grad(lambda t, b: model_loss(t[0]["m"], b), argnums=(0,))((({"m": m}),), batch)
    assert isinstance(gt, tuple) and type(gt[0]["m"]) is Model
    assert_tree_close(gt[0]["m"], g)


def test_registered_dataclass_meta_fields():
    @dataclasses.dataclass
    class Cell:
        w: np.ndarray
        steps: int
        rate: float

    pb.register_dataclass(Cell, data_fields=["w"], meta_fields=["steps", "rate"])

    def run(c, x):
        for _ in range(c.steps):
            x = np.sin(c.w * x) * c.rate
        return np.sum(x)
    c = Cell(np.array([0.4, 1.1]), 3, 0.9)
    x = np.array([0.2, -0.5])
    g = pb.grad(run)(c, x)
    assert type(g) is Cell and g.steps == 3 and g.rate == 0.9   # meta fields as given
    eps, fd = 1e-6, []
    for k in range(2):
        d = np.zeros(2)
        d[k] = eps
        fd.append((run(Cell(c.w + d, 3, 0.9), x) - run(Cell(c.w - d, 3, 0.9), x)) / (2 * eps))
    np.testing.assert_allclose(g.w, fd, rtol=1e-7)


def test_vjp_of_registered_output_and_jvp_tangents():
    m = make_model()
    x = rng.normal(size=(2, 3))

    def rescale(m, s):
        return Model(Dense(m.encoder.W * s, m.encoder.b), Dense(m.decoder.W, m.decoder.b * s),
                     m.scale)

    def rescale_jax(m, s):
        return Model(Dense(m.encoder.W * s, m.encoder.b), Dense(m.decoder.W, m.decoder.b * s),
                     m.scale)
    out, back = pb.vjp(rescale, m, 2.0)
    assert type(out) is Model
    ct = make_model()
    gm, gs = back(ct)
    _, jback = jax.vjp(rescale_jax, m, 2.0)
    jm, js = jback(ct)
    assert_tree_close(gm, jm)
    assert gs == pytest.approx(float(js), rel=1e-12)
    # jvp: tangents are objects of the class, and so is the output's tangent
    t = make_model()
    o, od = pb.jvp(rescale, (m, 2.0), (t, 0.5))
    jo, jod = jax.jvp(rescale_jax, (m, 2.0), (t, 0.5))
    assert type(od) is Model
    assert_tree_close(o, jo)
    assert_tree_close(od, jod)
    y, yd = pb.jvp(model_loss, (m, {"x": x, "y": np.zeros((2, 2))}),
                   (t, {"x": np.zeros_like(x), "y": np.zeros((2, 2))}))
    jy, jyd = jax.jvp(model_loss_jax, (m, {"x": x, "y": np.zeros((2, 2))}),
                      (t, {"x": np.zeros_like(x), "y": np.zeros((2, 2))}))
    assert yd == pytest.approx(float(jyd), rel=1e-10)


def test_jacobians_of_registered_inputs_follow_jax():
    m = make_model()
    x = rng.normal(size=(2, 3))

    def f(m, x):
        return m.decoder(m.encoder(x)).ravel()

    def f_jax(m, x):
        return model_forward_jax(m, x).ravel()
    assert_tree_close(pb.jacrev(f)(m, x), jax.jacrev(f_jax)(m, x))
    assert_tree_close(pb.jacfwd(f)(m, x), jax.jacfwd(f_jax)(m, x))


def model_forward_jax(m, x):
    return jnp.tanh(jnp.tanh(x @ m.encoder.W + m.encoder.b) @ m.decoder.W + m.decoder.b)


class OnlyJax:
    def __init__(self, a, b):
        self.a, self.b = a, b


tree_util.register_pytree_node(OnlyJax, lambda o: ((o.a, o.b), None),
                               lambda _, ch: OnlyJax(*ch))


def test_classes_registered_with_jax_are_honoured():
    o = OnlyJax(np.array([1.0, 2.0]), 3.0)

    def f(o):
        return np.sum(o.a ** 2) * o.b
    g = pb.grad(f)(o)
    assert type(g) is OnlyJax
    np.testing.assert_allclose(g.a, 2 * o.a * o.b)
    assert g.b == 5.0


# -- plain objects ------------------------------------------------------------------

class Layer:
    def __init__(self, w, b, name="layer", units=3, act=np.tanh):
        self.w = w
        self.b = b
        self.name = name
        self.units = units
        self.act = act
        self.index = np.arange(units)

    def forward(self, x):
        return self.act(x @ self.w + self.b)


def layer_loss(layer, x):
    return np.sum(layer.forward(x) ** 2) * layer.units


def test_plain_object_gradient_is_an_object_of_its_class():
    layer = Layer(rng.normal(size=(2, 3)), rng.normal(size=3))
    x = rng.normal(size=(4, 2))
    before = copy.deepcopy(vars(layer))
    g = pb.grad(layer_loss)(layer, x)
    assert type(g) is Layer
    h = np.tanh(x @ layer.w + layer.b)
    d = 2 * h * (1 - h ** 2) * 3
    np.testing.assert_allclose(g.w, x.T @ d, rtol=1e-12)
    np.testing.assert_allclose(g.b, d.sum(0), rtol=1e-12)
    # what holds no float is left as it is: ints, strings, functions (arrays copied)
    assert g.units == 3 and g.name == "layer" and g.act is np.tanh
    np.testing.assert_array_equal(g.index, layer.index)
    assert not np.shares_memory(g.index, layer.index)
    for k, v in before.items():
        np.testing.assert_array_equal(getattr(layer, k), v) if isinstance(v, np.ndarray) \
            else None
    assert not np.shares_memory(g.w, layer.w) and not np.shares_memory(g.b, layer.b)


def test_plain_object_in_value_and_grad_vjp_and_jvp():
    layer = Layer(rng.normal(size=(2, 3)), 0.25)
    x = rng.normal(size=(4, 2))
    (v, aux), g = pb.value_and_grad(lambda lay, x: (layer_loss(lay, x), lay.name), has_aux=True)(
        layer, x)
    assert aux == "layer" and v == pytest.approx(layer_loss(layer, x), rel=1e-14)
    out, back = pb.vjp(layer_loss, layer, x)
    gl, gx = back(1.0)
    np.testing.assert_allclose(gl.w, g.w, rtol=1e-14)
    assert type(gl.b) is float and gl.b == pytest.approx(g.b, rel=1e-14)
    # jvp along a tangent object: central differences along the same direction
    t = copy.copy(layer)
    t.w, t.b = rng.normal(size=(2, 3)), 0.5
    y, yd = pb.jvp(layer_loss, (layer, x), (t, np.zeros_like(x)))
    eps = 1e-6

    def moved(s):
        p = copy.copy(layer)
        p.w, p.b = layer.w + s * t.w, layer.b + s * t.b
        return layer_loss(p, x)
    assert yd == pytest.approx((moved(eps) - moved(-eps)) / (2 * eps), rel=1e-7)
    assert yd == pytest.approx(np.sum(g.w * t.w) + g.b * t.b, rel=1e-12)


class Net:
    def __init__(self, layers, config):
        self.layers = layers          # a list of Layer objects
        self.config = config          # a dict mixing floats and ints


def net_loss(net, x):
    for layer in net.layers:
        x = layer.forward(x)
    return np.sum(x) * net.config["scale"] + net.config["steps"]


def test_objects_holding_objects_lists_and_dicts():
    net = Net([Layer(rng.normal(size=(2, 3)), rng.normal(size=3)),
               Layer(rng.normal(size=(3, 3)), rng.normal(size=3), name="out")],
              {"scale": 2.0, "steps": 4})
    x = rng.normal(size=(5, 2))
    g = pb.grad(net_loss)(net, x)
    assert type(g) is Net and all(type(gl) is Layer for gl in g.layers)
    assert g.layers[1].name == "out" and g.config["steps"] == 4     # left as it was
    assert g.config["scale"] == pytest.approx(net_loss(net, x) / 2.0 - 2.0, rel=1e-12)
    eps = 1e-6
    for i, attr in ((0, "w"), (1, "b")):
        d = np.zeros_like(getattr(net.layers[i], attr))
        d.flat[1] = eps
        up, down = copy.deepcopy(net), copy.deepcopy(net)
        setattr(up.layers[i], attr, getattr(up.layers[i], attr) + d)
        setattr(down.layers[i], attr, getattr(down.layers[i], attr) - d)
        fd = (net_loss(up, x) - net_loss(down, x)) / (2 * eps)
        assert getattr(g.layers[i], attr).flat[1] == pytest.approx(fd, rel=1e-6)


def test_vjp_and_jvp_of_a_function_returning_a_plain_object():
    layer = Layer(np.array([[1.0, 2.0, 3.0]]), np.array([0.5, 0.0, -0.5]))

    def double(lay):
        return Layer(lay.w * 2.0, lay.b ** 2, lay.name, lay.units, lay.act)
    out, back = pb.vjp(double, layer)
    ct = Layer(np.ones((1, 3)), np.array([1.0, 2.0, 3.0]))
    (g,) = back(ct)
    np.testing.assert_array_equal(g.w, 2 * np.ones((1, 3)))
    np.testing.assert_array_equal(g.b, 2 * layer.b * ct.b)
    t = Layer(np.ones((1, 3)), np.ones(3))
    o, od = pb.jvp(double, (layer,), (t,))
    assert type(od) is Layer and od.name == "layer" and od.units == 3
    np.testing.assert_array_equal(od.w, 2 * np.ones((1, 3)))
    np.testing.assert_array_equal(od.b, 2 * layer.b)
    with pytest.raises(TypeError, match="object of its class `Layer`"):
        back({"w": np.ones((1, 3)), "b": np.ones(3)})


def test_jacobians_of_plain_objects():
    layer = Layer(np.array([[1.0, 2.0, 3.0]]), np.array([0.5, 0.0, -0.5]))
    x = np.array([[0.3]])

    def f(lay, x):
        return lay.forward(x).ravel()
    for jac in (pb.jacrev, pb.jacfwd):
        j = jac(f)(layer, x)
        assert type(j) is Layer and j.name == "layer"
        h = np.tanh(x @ layer.w + layer.b).ravel()
        np.testing.assert_allclose(j.b, np.diag(1 - h ** 2), rtol=1e-12)
        np.testing.assert_allclose(j.w, (np.diag(1 - h ** 2) * 0.3)[:, None, :], rtol=1e-12)


# -- what is refused ------------------------------------------------------------------

class WithProperty:
    def __init__(self, w):
        self.w = w

    @property
    def doubled(self):
        return self.w * 2.0


class Slotted:
    __slots__ = ("w",)

    def __init__(self, w):
        self.w = w


class SlottedRegistered:
    __slots__ = ("w",)

    def __init__(self, w):
        self.w = w


pb.register_pytree_node(SlottedRegistered, lambda s: ((s.w,), None),
                        lambda _, ch: SlottedRegistered(*ch))


class Copied:
    def __init__(self, w):
        self.w = w


pb.register_pytree_node(Copied, lambda c: ((c.w.copy(),), None), lambda _, ch: Copied(*ch))


class Twice:
    def __init__(self, w):
        self.a = w
        self.b = w


pb.register_pytree_node(Twice, lambda t: ((t.a, t.b), None), lambda _, ch: Twice(ch[0]))


def test_bad_inputs_are_refused_with_the_reason():
    w = np.array([1.0, 2.0])
    # a property of an argument: its getter, picked when the read runs, is differentiated
    # (frontend.properties; it was refused, and a zero gradient before that)
    np.testing.assert_array_equal(pb.grad(lambda p: np.sum(p.doubled))(WithProperty(w)).w,
                                  [2.0, 2.0])
    np.testing.assert_array_equal(
        pb.grad(lambda p: np.sum(p.w) + 0.0 * np.sum(p.doubled))(WithProperty(w)).w, [1.0, 1.0])
    cyc = Copied(w)
    cyc.me = cyc
    pb_plain = Layer(w, 1.0)
    pb_plain.parent = pb_plain
    with pytest.raises(pb.NonDifferentiableError, match="holds itself"):
        pb.grad(lambda lay: np.sum(lay.w))(pb_plain)
    with pytest.raises(pb.NonDifferentiableError, match="not one of the object's attributes"):
        pb.grad(lambda c: np.sum(c.w))(Copied(w))
    with pytest.raises(pb.NonDifferentiableError, match="at two places"):
        pb.grad(lambda t: np.sum(t.a))(Twice(w))

    class Config:
        def __init__(self):
            self.n = 3
            self.name = "c"
    with pytest.raises(TypeError, match="holds no float attribute"):
        pb.grad(lambda c, x: x * c.n)(Config(), 2.0)
    with pytest.raises(TypeError, match="children that are not floats"):
        pb.grad(lambda s: s.b)(Scaled(np.array([1, 2]), 1.0, None, "s"))
    with pytest.raises(TypeError, match="built-in"):
        pb.register_pytree_node(dict, lambda d: (list(d.values()), list(d)), None)
    out, back = pb.vjp(lambda s: s, Scaled(w, 1.0, w, "s"))
    with pytest.raises(TypeError, match="cotangent of the output must be an object"):
        back((w, 1.0))
    # a config object that holds no float stays a constant in vjp and jvp
    cfg = Config()
    _, back = pb.vjp(lambda c, x: x * c.n, cfg, 2.0)
    assert back(1.0) == (None, 3.0)


class Pair:
    def __init__(self, a, b):
        self.a = a
        self.b = b


# flattened in the other order than stored, to catch a swapped gradient
pb.register_pytree_node(Pair, lambda p: ((p.b, p.a), None), lambda _, ch: Pair(ch[1], ch[0]))


def test_children_that_are_one_shared_constant():
    p = Pair(0.0, 0.0)              # one float object: Python shares the constant
    assert p.a is p.b
    g = pb.grad(lambda p: p.a * 2.0 + p.b * 3.0 + p.a * p.b)(p)
    assert (g.a, g.b) == (2.0, 3.0)


def test_jvp_holds_a_plain_object_constant_with_a_none_tangent():
    layer = Layer(np.array([[1.0, 2.0]]).T, 0.5)
    x = np.array([[0.3, -0.2]])
    y, yd = pb.jvp(layer_loss, (layer, x), (None, np.ones_like(x)))
    assert yd == pytest.approx(np.sum(pb.grad(layer_loss, argnums=1)(layer, x)), rel=1e-12)
    with pytest.raises(TypeError, match="pass None to hold the object constant"):
        pb.jvp(layer_loss, (layer, x), (layer, np.ones_like(x)))


def test_second_derivatives_hold_a_config_object_constant():
    class Scale:
        def __init__(self):
            self.s = 2.0
            self.k = 3

    def cubic(x, c):
        return np.sum(x ** 3) * c.s
    xv = np.array([1.0, 2.0])
    np.testing.assert_array_equal(pb.hessian(cubic)(xv, Scale()), np.diag(12.0 * xv))


# -- second derivatives with respect to objects (were refused) ------------------------------

class Cell:
    """Registered with both pullback and JAX."""

    def __init__(self, w, b):
        self.w = w
        self.b = b


pb.register_pytree_node(Cell, lambda c: ((c.w, c.b), None), lambda _, ch: Cell(*ch))
tree_util.register_pytree_node(Cell, lambda c: ((c.w, c.b), None), lambda _, ch: Cell(*ch))


@dataclasses.dataclass
class CellDC:
    w: np.ndarray
    b: float


tree_util.register_dataclass(CellDC, ["w", "b"], [])


class PlainCell:
    def __init__(self, w, b):
        self.w = w
        self.b = b


pb.register_pytree_node  # (PlainCell: a plain object, not registered with pullback)
tree_util.register_pytree_node(PlainCell, lambda c: ((c.w, c.b), None),
                               lambda _, ch: PlainCell(*ch))


def cell_loss(c, x):
    return np.sum(np.tanh(c.w * x) ** 2) * c.b + c.b ** 3 + np.sum(c.w ** 2 * x)


def cell_loss_jax(c, x):
    return jnp.sum(jnp.tanh(c.w * x) ** 2) * c.b + c.b ** 3 + jnp.sum(c.w ** 2 * x)


CELL_W, CELL_X = np.array([0.3, -0.7, 1.1]), np.array([1.5, 2.0, -0.4])


def _as_jax(c):
    return type(c)(jnp.asarray(c.w), c.b)


@pytest.mark.parametrize("cls", [Cell, CellDC, PlainCell])
def test_hessian_and_grad_of_grad_with_respect_to_objects_match_jax(cls):
    c = cls(CELL_W.copy(), 0.8)
    want = jax.hessian(cell_loss_jax)(_as_jax(c), jnp.asarray(CELL_X))
    got = pb.hessian(cell_loss)(c, CELL_X)
    assert type(got) is cls and type(got.w) is cls and type(got.b) is cls
    assert_tree_close(got, want)
    assert_tree_close(pb.jacfwd(pb.grad(cell_loss))(c, CELL_X), want)
    # both arguments: H[i][j]
    both = pb.hessian(cell_loss, argnums=(0, 1))(c, CELL_X)
    want_both = jax.hessian(cell_loss_jax, argnums=(0, 1))(_as_jax(c), jnp.asarray(CELL_X))
    assert_tree_close(both, want_both)

    def inner(c, x):
        g = pb.grad(cell_loss)(c, x)
        return np.sum(g.w * x) + g.b ** 2

    def inner_jax(c, x):
        g = jax.grad(cell_loss_jax)(c, x)
        return jnp.sum(g.w * x) + g.b ** 2
    gg = pb.grad(inner)(c, CELL_X)
    assert type(gg) is cls
    assert_tree_close(gg, jax.grad(inner_jax)(_as_jax(c), jnp.asarray(CELL_X)))
    t = cls(np.array([1.0, -2.0, 0.5]), 0.3)
    hv = pb.hvp(cell_loss, (c, CELL_X), (t, np.zeros(3)))
    _, want_hv = jax.jvp(jax.grad(cell_loss_jax, argnums=(0, 1)), (_as_jax(c), jnp.asarray(CELL_X)),
                         (_as_jax(t), jnp.zeros(3)))
    assert_tree_close(hv, want_hv)
    np.testing.assert_array_equal(c.w, CELL_W)          # the user's object untouched


def plain_layer_loss(layer, x):
    return np.sum(np.tanh(x @ layer.w + layer.b) ** 2) * layer.units


def test_hessian_of_a_plain_layer_matches_central_differences():
    layer = Layer(np.array([[1.0, 2.0]]).T, 0.5)
    x = np.array([[0.3, -0.2]])
    layer_loss = plain_layer_loss
    H = pb.hessian(layer_loss)(layer, x)
    assert isinstance(H, Layer) and isinstance(H.w, Layer)
    eps = 1e-5
    for k, v in (("w", layer.w), ("b", layer.b)):
        up, down = copy.copy(layer), copy.copy(layer)
        if k == "w":
            step = np.zeros_like(v)
            step[1, 0] = eps
            up.w, down.w = v + step, v - step
        else:
            up.b, down.b = v + eps, v - eps
        col = (pb.grad(layer_loss)(up, x).w - pb.grad(layer_loss)(down, x).w) / (2 * eps)
        got = getattr(H.w, k)[..., 1, 0] if k == "w" else getattr(H.w, k)
        np.testing.assert_allclose(got, col, rtol=1e-6, atol=1e-8)
    assert H.name == "layer" and H.units == 3       # what holds no float is left as it is


class Settings:
    def __init__(self):
        self.n = 2
        self.name = "settings"


class Holder:
    def __init__(self, w):
        self.w = w
        self.settings = Settings()      # an object holding no float
        self.opts = {"k": 3}
        self.act = np.tanh
        self.shape = (2,)


def holder_loss(h, x):
    return np.sum(h.act(h.w * x)) * h.settings.n * h.opts["k"] + h.shape[0]


def test_objects_holding_no_float_inside_a_differentiated_object():
    h = Holder(np.array([1.0, 2.0]))
    x = np.array([0.5, 0.1])
    g = pb.grad(holder_loss)(h, x)
    expected = 6.0 * x * (1 - np.tanh(h.w * x) ** 2)
    np.testing.assert_allclose(g.w, expected, rtol=1e-14)
    assert g.settings is h.settings and g.opts == {"k": 3} and g.shape == (2,)
    t = copy.copy(h)
    t.w = np.array([1.0, -1.0])
    _, yd = pb.jvp(holder_loss, (h, x), (t, np.zeros(2)))
    assert yd == pytest.approx(np.sum(expected * t.w), rel=1e-14)
    for jac in (pb.jacrev, pb.jacfwd):
        np.testing.assert_allclose(jac(holder_loss)(h, x).w, expected, rtol=1e-14)


class CopiesToItself:
    def __init__(self, w):
        self.w = w

    def __copy__(self):
        return self


def test_a_class_whose_copy_returns_itself_is_never_written_into():
    w = np.array([1.0, 2.0])
    obj = CopiesToItself(w)
    g = pb.grad(lambda o: np.sum(o.w ** 2))(obj)
    assert type(g) is CopiesToItself and g is not obj and obj.w is w
    np.testing.assert_array_equal(w, [1.0, 2.0])
    np.testing.assert_array_equal(g.w, 2 * w)


@dataclasses.dataclass
class Bundle:
    model: Model
    layer: Layer
    bias: float


def bundle_loss(bn, x):
    return model_loss(bn.model, {"x": x, "y": np.zeros((x.shape[0], 2))}) \
        + layer_loss(bn.layer, x[:, :2]) * bn.bias


def test_registered_and_plain_objects_inside_a_dataclass():
    bn = Bundle(make_model(), Layer(rng.normal(size=(2, 3)), rng.normal(size=3)), 0.75)
    x = rng.normal(size=(3, 3))
    g = pb.grad(bundle_loss)(bn, x)
    assert type(g) is Bundle and type(g.model) is Model and type(g.layer) is Layer
    assert_tree_close(g.model, jax.grad(model_loss_jax)(bn.model, {"x": x, "y": np.zeros((3, 2))}))
    gl = pb.grad(layer_loss)(bn.layer, x[:, :2])
    np.testing.assert_allclose(g.layer.w, gl.w * 0.75, rtol=1e-12)
    assert g.bias == pytest.approx(layer_loss(bn.layer, x[:, :2]), rel=1e-12)


class Counted:
    def __init__(self, w, steps, repeats):
        self.w = w
        self.steps = steps
        self.repeats = repeats


pb.register_pytree_node(Counted, lambda c: ((c.w, c.steps, c.repeats), None),
                        lambda _, ch: Counted(*ch))


def test_a_registered_object_with_integer_children_inside_a_plain_object():
    holder = Holder(np.array([0.5, 1.5]))
    holder.counted = Counted(np.array([2.0, 3.0]), 3, 3)     # one int object, twice

    def f(h):
        return np.sum(h.counted.w ** 2) * h.counted.steps + np.sum(h.w)
    g = pb.grad(f)(holder)
    assert type(g.counted) is Counted and (g.counted.steps, g.counted.repeats) == (3, 3)
    np.testing.assert_array_equal(g.counted.w, 6.0 * holder.counted.w)
    np.testing.assert_array_equal(g.w, np.ones(2))
    with pytest.raises(TypeError, match="children that are not floats"):
        pb.grad(lambda c: np.sum(c.w))(holder.counted)


# -- reads by a constant name: getattr(obj, "w"), vars(obj)["w"], obj.__dict__["w"] --------

class Weights:
    def __init__(self, w, b):
        self.w = w
        self.b = b


def by_getattr(p):
    return np.sum(getattr(p, "w") ** 2) * getattr(p, "b")


def by_vars(p):
    return np.sum(vars(p)["w"] ** 2) * p.__dict__["b"]


def built_then_getattr(x):
    p = Weights(x * 2.0, 3.0)
    return np.sum(getattr(p, "w") ** 2) + vars(p)["b"] * np.sum(x)


@pytest.mark.parametrize("fn", [by_getattr, by_vars])
def test_attributes_read_by_a_constant_name(fn):
    # sum(w**2) * b: the gradient is 2 w b for w, sum(w**2) for b (was "no rule for getattr")
    w = np.array([3.0, 4.0])
    g = pb.grad(fn)(Weights(w, 2.0))
    assert isinstance(g, Weights)
    np.testing.assert_array_equal(g.w, [12.0, 16.0])
    assert g.b == 25.0
    y, yd = pb.jvp(fn, (Weights(w, 2.0),), (Weights(np.array([1.0, 0.0]), 1.0),))
    assert y == 50.0 and yd == 12.0 + 25.0
    # sum((2x)**2) + 3 sum(x): 8x + 3
    np.testing.assert_array_equal(pb.grad(built_then_getattr)(np.array([1.0, 2.0])),
                                  [11.0, 19.0])


class ComputedW:
    def __init__(self, w):
        self.__dict__["w"] = w * 0.0      # shadowed by the property below
        self._w = w

    @property
    def w(self):
        return self._w


def test_vars_item_that_differs_from_the_attribute_is_refused():
    with pytest.raises(pb.UnsupportedSyntaxError, match="not one here") as err:
        pb.grad(lambda p: np.sum(vars(p)["w"]))(ComputedW(np.array([1.0, 2.0])))
    assert "obj.w" in str(err.value)
    with pytest.raises(KeyError):               # as Python: no such key
        pb.grad(lambda p: np.sum(vars(p)["v"]))(Weights(np.array([1.0]), 1.0))


def all_attributes(p):
    t = 0.0
    for v in vars(p).values():
        t = t + np.sum(v ** 2)
    return t


def test_the_dictionary_of_all_attributes_routes_by_identity():
    # `vars(p).values()` is library code that only moves the object's values: checked when it
    # runs (runtime.opaque), each value's cotangent goes back to the attribute it is
    g = pb.grad(all_attributes)(Weights(np.array([1.0, 2.0]), 1.5))
    np.testing.assert_array_equal(g.w, [2.0, 4.0])
    assert g.b == 3.0


# -- __slots__ classes (were refused) --------------------------------------------------------

class SlotBase:
    __slots__ = ("w", "b")

    def __init__(self, w, b):
        self.w = w
        self.b = b


class SlotChild(SlotBase):
    __slots__ = ("c", "__weakref__")

    def __init__(self, w, b, c):
        super().__init__(w, b)
        self.c = c


class SlotWithDict(SlotBase):          # no __slots__ of its own: a __dict__ as well
    def __init__(self, w, b, d, name):
        super().__init__(w, b)
        self.d = d
        self.name = name


for _cls, _names in ((SlotBase, ("w", "b")), (SlotChild, ("w", "b", "c"))):
    tree_util.register_pytree_node(
        _cls, lambda o, _n=_names: (tuple(getattr(o, k) for k in _n), None),
        lambda _, ch, _c=_cls: _c(*ch))


def slot_loss(s, x):
    return np.sum(np.sin(s.w * x)) * s.b


def slot_loss_jax(s, x):
    return jnp.sum(jnp.sin(s.w * x)) * s.b


def slot_loss_c(s, x):
    return slot_loss(s, x) + s.c ** 2 * np.sum(s.w)


def slot_loss_c_jax(s, x):
    return slot_loss_jax(s, x) + s.c ** 2 * jnp.sum(s.w)


SLOT_W, SLOT_X = np.array([0.4, -1.2]), np.array([1.5, 0.5])


def _slotted(cls):
    return cls(SLOT_W.copy(), 0.7) if cls is SlotBase else cls(SLOT_W.copy(), 0.7, 1.3)


@pytest.mark.parametrize("cls", [SlotBase, SlotChild])
def test_slots_objects_as_differentiated_inputs_match_jax(cls):
    s = _slotted(cls)
    loss, loss_jax = (slot_loss, slot_loss_jax) if cls is SlotBase else \
        (slot_loss_c, slot_loss_c_jax)
    js = cls(*(jnp.asarray(getattr(s, k)) for k in slot_names(cls)))
    g = pb.grad(loss)(s, SLOT_X)
    assert type(g) is cls and not hasattr(g, "__dict__")
    assert_tree_close(g, jax.grad(loss_jax)(js, jnp.asarray(SLOT_X)))
    t = cls(*([np.ones(2)] + [0.5] * (len(slot_names(cls)) - 1)))
    y, yd = pb.jvp(loss, (s, SLOT_X), (t, np.zeros(2)))
    jy, jyd = jax.jvp(loss_jax, (js, jnp.asarray(SLOT_X)),
                      (cls(*(jnp.asarray(getattr(t, k)) for k in slot_names(cls))),
                       jnp.zeros(2)))
    np.testing.assert_allclose([y, yd], [jy, jyd], rtol=1e-12)
    assert_tree_close(pb.jacrev(loss)(s, SLOT_X), jax.jacrev(loss_jax)(js, SLOT_X))
    assert_tree_close(pb.hessian(loss)(s, SLOT_X), jax.hessian(loss_jax)(js, SLOT_X))
    np.testing.assert_array_equal(s.w, SLOT_W)            # the user's object untouched


def slot_names(cls):
    return ("w", "b") if cls is SlotBase else ("w", "b", "c")


def test_slots_and_dict_together_and_objects_built_in_the_function():
    s = SlotWithDict(SLOT_W.copy(), 0.7, 2.0, "s")
    g = pb.grad(lambda s, x: slot_loss(s, x) * s.d)(s, SLOT_X)
    assert type(g) is SlotWithDict and g.name == "s"
    # d/dw: cos(w x) x b d; d/db: sum(sin(w x)) d; d/dd: sum(sin(w x)) b
    np.testing.assert_allclose(g.w, np.cos(SLOT_W * SLOT_X) * SLOT_X * 0.7 * 2.0, rtol=1e-13)
    np.testing.assert_allclose(g.b, np.sum(np.sin(SLOT_W * SLOT_X)) * 2.0, rtol=1e-13)
    np.testing.assert_allclose(g.d, np.sum(np.sin(SLOT_W * SLOT_X)) * 0.7, rtol=1e-13)

    def built(x):
        s = SlotChild(x * 2.0, 3.0, x[0])
        return slot_loss_c(s, x)

    def built_jax(x):
        s = SlotChild(x * 2.0, 3.0, x[0])
        return slot_loss_c_jax(s, x)
    np.testing.assert_allclose(pb.grad(built)(SLOT_X), jax.grad(built_jax)(jnp.asarray(SLOT_X)),
                               rtol=1e-12)
    out, back = pb.vjp(lambda x: SlotBase(x * 2.0, np.sum(x)), SLOT_X)
    assert type(out) is SlotBase
    np.testing.assert_array_equal(back(SlotBase(np.ones(2), 1.0))[0], [3.0, 3.0])


def test_registered_slots_class():
    g = pb.grad(lambda s: np.sum(s.w ** 2))(SlottedRegistered(np.array([1.0, 2.0])))
    assert type(g) is SlottedRegistered
    np.testing.assert_array_equal(g.w, [2.0, 4.0])
