"""Layers configured by an ``enum.Enum`` of activations whose members carry
a method (``Activation.GELU.apply(x)``, dispatching with ``match self``),
dataclass layers whose ``__post_init__`` derives the effective weight
(weight normalisation: ``W = V * g / ||V||``, a ``field(init=False)``) from
the fields and whose ``__call__`` applies them, built inside the loss from
the weights being differentiated (the Equinox / Flax style of modules).
Differentiated with respect to the raw weights, the gains and the inputs."""
import enum
from dataclasses import dataclass, field

import numpy as np

from .enum_layer_config import jax_fun, make_inputs  # noqa: F401  (the same model)


class Activation(enum.Enum):
    TANH = "tanh"
    GELU = "gelu"
    SOFTPLUS = "softplus"
    LINEAR = "linear"

    def apply(self, x):
        match self:
            case Activation.TANH:
                return np.tanh(x)
            case Activation.GELU:
                return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))
            case Activation.SOFTPLUS:
                return np.logaddexp(0.0, x)
            case _:
                return x


@dataclass
class WeightNormLayer:
    V: np.ndarray
    g: np.ndarray
    act: Activation = Activation.LINEAR
    W: np.ndarray = field(init=False)

    def __post_init__(self):
        self.W = self.V * (self.g / np.sqrt(np.sum(self.V ** 2, axis=0)))

    def __call__(self, x):
        return self.act.apply(x @ self.W)


SPEC = [Activation.GELU, Activation.TANH, Activation.SOFTPLUS]


def loss(Vs, gs, x, y):
    h = x
    for V, g, act in zip(Vs, gs, SPEC):
        h = WeightNormLayer(V, g, act)(h)
    return np.mean((h - y) ** 2)


fun = loss
argnums = (0, 1, 2)
