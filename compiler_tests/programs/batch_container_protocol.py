"""Data handling through Python's container protocol, as training loops do
with a hand-written ``Dataset``: ``__len__`` and ``__getitem__`` (an int
index or a slice, returning ``(x, y)``), a ``Loader`` whose ``__iter__`` is
a generator yielding mini-batches of the dataset, and a ``Params`` object
exposing weights by ``__getitem__`` on names. The loss averages a logistic
loss over the loader's batches; differentiated with respect to the weights
and the bias."""
import numpy as np
import jax.numpy as jnp


class Dataset:
    def __init__(self, X, y):
        self.X = X
        self.y = y

    def __len__(self):
        return len(self.y)

    def __getitem__(self, idx):
        return self.X[idx], self.y[idx]


class Loader:
    def __init__(self, dataset, batch_size):
        self.dataset = dataset
        self.batch_size = batch_size

    def __len__(self):
        return (len(self.dataset) + self.batch_size - 1) // self.batch_size

    def __iter__(self):
        for start in range(0, len(self.dataset), self.batch_size):
            yield self.dataset[start:start + self.batch_size]


class Params:
    def __init__(self, w, b):
        self._store = {"w": w, "b": b}

    def __getitem__(self, name):
        return self._store[name]


def batch_loss(params, xb, yb):
    z = xb @ params["w"] + params["b"]
    return np.mean(np.logaddexp(0.0, z) - yb * z)


def epoch_loss(w, b, X, y):
    params = Params(w, b)
    loader = Loader(Dataset(X, y), batch_size=4)
    total = 0.0
    for xb, yb in loader:
        total = total + batch_loss(params, xb, yb)
    return total / len(loader) + 1e-2 * np.sum(params["w"] ** 2)


def make_inputs(rng):
    X = rng.standard_normal((11, 3))
    y = (rng.uniform(size=11) < 0.5).astype(float)
    return rng.standard_normal(3), 0.2, X, y


fun = epoch_loss
argnums = (0, 1)


def jax_fun(w, b, X, y):
    total, n = 0.0, 0
    for start in range(0, len(y), 4):
        z = X[start:start + 4] @ w + b
        total = total + jnp.mean(jnp.logaddexp(0.0, z) - y[start:start + 4] * z)
        n += 1
    return total / n + 1e-2 * jnp.sum(w ** 2)
