"""A regression MLP configured the way modern training scripts do it: a
``@dataclass`` config whose list fields use ``field(default_factory=...)``,
a ``@classmethod`` factory building the config from a dict, a
``@staticmethod`` activation lookup, ``zip`` over layer sizes and
``enumerate`` over (W, b) pairs, keyword-only arguments with defaults, and
a default argument that is a function (the loss)."""
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Tuple

import numpy as np
import jax.numpy as jnp


def mse(pred: np.ndarray, target: np.ndarray) -> float:
    return np.mean((pred - target) ** 2)


def huber(pred, target, delta=0.5):
    r = np.abs(pred - target)
    return np.mean(np.where(r < delta, 0.5 * r ** 2, delta * (r - 0.5 * delta)))


@dataclass
class Config:
    hidden: List[int] = field(default_factory=lambda: [5, 4])
    activations: List[str] = field(default_factory=lambda: ["tanh", "softplus"])
    weight_decay: float = 1e-3

    @classmethod
    def from_dict(cls, d: Dict) -> "Config":
        return cls(**{k: v for k, v in d.items() if k in ("hidden", "activations", "weight_decay")})

    @staticmethod
    def activation(name: str) -> Callable:
        return {"tanh": np.tanh, "softplus": lambda z: np.logaddexp(0.0, z),
                "relu": lambda z: np.maximum(z, 0.0)}[name]


def forward(params: List[Tuple[np.ndarray, np.ndarray]], x: np.ndarray, config: Config):
    h = x
    acts = [Config.activation(a) for a in config.activations]
    for i, (W, b) in enumerate(params):
        h = h @ W + b
        if i < len(acts):
            h = acts[i](h)
    return h[:, 0]


def objective(params, x, y, *, config_dict=None, loss_fn=mse):
    config = Config.from_dict(config_dict or {})
    data = loss_fn(forward(params, x, config), y)
    decay = sum(np.sum(W ** 2) for W, _ in params)
    return data + config.weight_decay * decay


def train_loss(params, x, y):
    return objective(params, x, y) + 0.5 * objective(params, x, y, loss_fn=huber,
                                                     config_dict={"weight_decay": 0.0})


def make_inputs(rng):
    sizes = [3] + Config().hidden + [1]
    params = [(rng.standard_normal((m, n)) / np.sqrt(m), 0.1 * rng.standard_normal(n))
              for m, n in zip(sizes[:-1], sizes[1:])]
    x = rng.standard_normal((10, 3))
    return params, x, np.sin(x[:, 0]) + 0.5 * x[:, 1]


fun = train_loss
argnums = (0, 1)


def jax_fun(params, x, y):
    h = x
    for i, (W, b) in enumerate(params):
        h = h @ W + b
        if i == 0:
            h = jnp.tanh(h)
        elif i == 1:
            h = jnp.logaddexp(0.0, h)
    pred = h[:, 0]
    r = jnp.abs(pred - y)
    decay = sum(jnp.sum(W ** 2) for W, _ in params)
    return (jnp.mean((pred - y) ** 2) + 1e-3 * decay
            + 0.5 * jnp.mean(jnp.where(r < 0.5, 0.5 * r ** 2, 0.5 * (r - 0.25))))
