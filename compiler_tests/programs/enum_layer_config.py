"""Layers configured by an ``enum.Enum`` of activations whose members carry
a method (``Activation.GELU.apply(x)``, dispatching on ``self is
Activation.TANH`` and ``self == Activation.SOFTPLUS``), a callable layer
class with the member as a default argument, computing its effective weight
(weight normalisation: ``V * g / ||V||``) when called, and a model built
from a module-level list of members. Differentiated with respect to the raw
weights, the gains and the inputs. (``dataclass_weightnorm`` is the same
model written with a dataclass, ``__post_init__`` and ``match``.)"""
import enum
import numpy as np
import jax.numpy as jnp


class Activation(enum.Enum):
    TANH = "tanh"
    GELU = "gelu"
    SOFTPLUS = "softplus"
    LINEAR = "linear"

    def apply(self, x):
        if self is Activation.TANH:
            return np.tanh(x)
        if self is Activation.GELU:
            return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))
        if self == Activation.SOFTPLUS:
            return np.logaddexp(0.0, x)
        return x


class WeightNormLayer:
    def __init__(self, V, g, act=Activation.LINEAR):
        self.V, self.g, self.act = V, g, act

    def __call__(self, x):
        W = self.V * (self.g / np.sqrt(np.sum(self.V ** 2, axis=0)))
        return self.act.apply(x @ W)


SPEC = [Activation.GELU, Activation.TANH, Activation.SOFTPLUS]


def loss(Vs, gs, x, y):
    h = x
    for V, g, act in zip(Vs, gs, SPEC):
        h = WeightNormLayer(V, g, act)(h)
    return np.mean((h - y) ** 2)


def make_inputs(rng):
    sizes = [4, 6, 5, 2]
    Vs = [rng.standard_normal((m, n)) for m, n in zip(sizes[:-1], sizes[1:])]
    gs = [rng.uniform(0.5, 1.5, size=n) for n in sizes[1:]]
    return Vs, gs, rng.standard_normal((7, 4)), rng.uniform(size=(7, 2))


fun = loss
argnums = (0, 1, 2)


def jax_fun(Vs, gs, x, y):
    acts = [lambda v: 0.5 * v * (1.0 + jnp.tanh(0.7978845608 * (v + 0.044715 * v ** 3))),
            jnp.tanh, lambda v: jnp.logaddexp(0.0, v)]
    h = x
    for V, g, act in zip(Vs, gs, acts):
        h = act(h @ (V * (g / jnp.sqrt(jnp.sum(V ** 2, axis=0)))))
    return jnp.mean((h - y) ** 2)
