"""A model fitted the way ``scipy.optimize.minimize`` wants it: every
parameter packed in one flat vector, unpacked by a ``@classmethod``
``from_vector`` that walks a list of shapes with a running offset, and
activations as ``@staticmethod`` helpers called through ``self`` and through
the class; the loss is a cross-entropy plus an L2 penalty over the layers."""
import numpy as np
import jax.numpy as jnp

SHAPES = [(3, 5), (5,), (5, 2), (2,)]


class TwoLayerNet:
    def __init__(self, W1, b1, W2, b2):
        self.W1, self.b1, self.W2, self.b2 = W1, b1, W2, b2

    @classmethod
    def from_vector(cls, theta, shapes=SHAPES):
        arrays = []
        offset = 0
        for shape in shapes:
            size = int(np.prod(shape))
            arrays.append(theta[offset:offset + size].reshape(shape))
            offset += size
        return cls(*arrays)

    @staticmethod
    def softplus(z):
        return np.log1p(np.exp(-np.abs(z))) + np.maximum(z, 0.0)

    @staticmethod
    def log_softmax(z):
        z = z - np.max(z, axis=1, keepdims=True)
        return z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))

    def logits(self, X):
        h = self.softplus(X @ self.W1 + self.b1)
        return h @ self.W2 + self.b2

    def penalty(self):
        return sum(np.sum(W ** 2) for W in (self.W1, self.W2))


def objective(theta, X, labels, l2=1e-2):
    net = TwoLayerNet.from_vector(theta)
    logp = TwoLayerNet.log_softmax(net.logits(X))
    nll = -np.mean(logp[np.arange(len(labels)), labels])
    return nll + l2 * net.penalty()


def make_inputs(rng):
    n = sum(int(np.prod(s)) for s in SHAPES)
    return 0.5 * rng.standard_normal(n), rng.standard_normal((7, 3)), rng.integers(0, 2, 7)


fun = objective
argnums = (0, 1)


def jax_fun(theta, X, labels):
    parts, offset = [], 0
    for shape in SHAPES:
        size = int(np.prod(shape))
        parts.append(theta[offset:offset + size].reshape(shape))
        offset += size
    W1, b1, W2, b2 = parts
    z = X @ W1 + b1
    h = jnp.log1p(jnp.exp(-jnp.abs(z))) + jnp.maximum(z, 0.0)
    lo = h @ W2 + b2
    lo = lo - jnp.max(lo, axis=1, keepdims=True)
    logp = lo - jnp.log(jnp.sum(jnp.exp(lo), axis=1, keepdims=True))
    return -jnp.mean(logp[jnp.arange(len(labels)), labels]) + 1e-2 * (jnp.sum(W1 ** 2) + jnp.sum(W2 ** 2))
