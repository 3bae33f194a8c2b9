"""A RealNVP-style normalizing flow written as a list of bijector objects: an
abstract ``Bijector`` base class, ``AffineCoupling`` and ``ActNorm``
subclasses (calling ``super().__init__``) with ``forward``/``inverse``
methods returning the log-determinant, and a ``Flow`` container with a
``classmethod`` constructor from a parameter list; the loss is the negative
log-likelihood of data under the flow plus a round-trip penalty."""
import numpy as np
import jax.numpy as jnp


class Bijector:
    def __init__(self, name):
        self.name = name

    def forward(self, x):
        raise NotImplementedError

    def inverse(self, y):
        raise NotImplementedError


class AffineCoupling(Bijector):
    def __init__(self, W, b, flip=False):
        super().__init__("coupling")
        self.W, self.b, self.flip = W, b, flip

    def _split(self, x):
        d = x.shape[1] // 2
        a, b = x[:, :d], x[:, d:]
        return (b, a) if self.flip else (a, b)

    def _join(self, a, b):
        return np.concatenate([b, a] if self.flip else [a, b], axis=1)

    def _scale_shift(self, a):
        h = np.tanh(a @ self.W + self.b)
        k = h.shape[1] // 2
        return h[:, :k], h[:, k:]

    def forward(self, x):
        a, b = self._split(x)
        log_s, t = self._scale_shift(a)
        return self._join(a, b * np.exp(log_s) + t), np.sum(log_s, axis=1)

    def inverse(self, y):
        a, b = self._split(y)
        log_s, t = self._scale_shift(a)
        return self._join(a, (b - t) * np.exp(-log_s)), -np.sum(log_s, axis=1)


class ActNorm(Bijector):
    def __init__(self, log_scale, shift):
        super().__init__("actnorm")
        self.log_scale, self.shift = log_scale, shift

    def forward(self, x):
        return x * np.exp(self.log_scale) + self.shift, np.full(x.shape[0], np.sum(self.log_scale))

    def inverse(self, y):
        return (y - self.shift) * np.exp(-self.log_scale), np.full(y.shape[0], -np.sum(self.log_scale))


class Flow:
    def __init__(self, layers):
        self.layers = list(layers)

    @classmethod
    def from_params(cls, params):
        layers = []
        for i, p in enumerate(params):
            if p[0].ndim == 1:
                layers.append(ActNorm(*p))
            else:
                layers.append(AffineCoupling(p[0], p[1], flip=bool(i % 2)))
        return cls(layers)

    @staticmethod
    def base_log_prob(z):
        return -0.5 * np.sum(z ** 2, axis=1) - 0.5 * z.shape[1] * np.log(2 * np.pi)

    def log_prob(self, x):
        z, total = x, 0.0
        for layer in reversed(self.layers):
            z, log_det = layer.inverse(z)
            total = total + log_det
        return self.base_log_prob(z) + total

    def sample_from(self, z):
        for layer in self.layers:
            z, _ = layer.forward(z)
        return z


def flow_loss(params, x, z):
    flow = Flow.from_params(params)
    nll = -np.mean(flow.log_prob(x))
    roundtrip = np.mean((flow.log_prob(flow.sample_from(z)) - Flow.base_log_prob(z)) ** 2)
    return nll + 0.01 * roundtrip


def make_inputs(rng):
    params = [(0.1 * rng.standard_normal(4), 0.1 * rng.standard_normal(4)),
              (0.5 * rng.standard_normal((2, 4)), 0.1 * rng.standard_normal(4)),
              (0.5 * rng.standard_normal((2, 4)), 0.1 * rng.standard_normal(4))]
    x = rng.standard_normal((7, 4)) * np.array([1.0, 0.5, 2.0, 1.0])
    return params, x, rng.standard_normal((5, 4))


fun = flow_loss
argnums = (0, 1, 2)


def jax_fun(params, x, z):
    def coupling(p, flip, y, inverse):
        a, b = (y[:, 2:], y[:, :2]) if flip else (y[:, :2], y[:, 2:])
        h = jnp.tanh(a @ p[0] + p[1])
        log_s, t = h[:, :2], h[:, 2:]
        b = (b - t) * jnp.exp(-log_s) if inverse else b * jnp.exp(log_s) + t
        out = jnp.concatenate([b, a] if flip else [a, b], axis=1)
        return out, (-1 if inverse else 1) * jnp.sum(log_s, axis=1)

    def actnorm(p, y, inverse):
        if inverse:
            return (y - p[1]) * jnp.exp(-p[0]), jnp.full(y.shape[0], -jnp.sum(p[0]))
        return y * jnp.exp(p[0]) + p[1], jnp.full(y.shape[0], jnp.sum(p[0]))

    def layer(i, y, inverse):
        p = params[i]
        return actnorm(p, y, inverse) if p[0].ndim == 1 else coupling(p, bool(i % 2), y, inverse)

    def base(u):
        return -0.5 * jnp.sum(u ** 2, axis=1) - 0.5 * u.shape[1] * jnp.log(2 * jnp.pi)

    def log_prob(y):
        total = 0.0
        for i in reversed(range(len(params))):
            y, ld = layer(i, y, True)
            total = total + ld
        return base(y) + total
    s = z
    for i in range(len(params)):
        s, _ = layer(i, s, False)
    return -jnp.mean(log_prob(x)) + 0.01 * jnp.mean((log_prob(s) - base(z)) ** 2)
