"""A PyTorch-like module system in NumPy, as people write it to learn how
frameworks work: a ``Module`` base class whose ``__call__`` dispatches to an
overridden ``forward``, subclasses calling ``super().__init__()``, a
``TanhLinear(Linear)`` whose ``forward`` calls ``super().forward(x)``, a
``Residual`` wrapper holding another module, a ``Sequential`` taking
``*layers``, and a ``parameters()`` generator that the weight decay walks.
The regression loss is differentiated with respect to the nested list of
layer parameters."""
import numpy as np
import jax.numpy as jnp


class Module:
    def __init__(self):
        self.training = False

    def __call__(self, x):
        return self.forward(x)

    def forward(self, x):
        raise NotImplementedError

    def parameters(self):
        return iter(())


class Linear(Module):
    def __init__(self, W, b):
        super().__init__()
        self.W = W
        self.b = b

    def forward(self, x):
        return x @ self.W + self.b

    def parameters(self):
        yield self.W
        yield self.b


class TanhLinear(Linear):
    def forward(self, x):
        return np.tanh(super().forward(x))


class Residual(Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return x + self.inner(x)

    def parameters(self):
        return self.inner.parameters()


class Sequential(Module):
    def __init__(self, *layers):
        super().__init__()
        self.layers = layers

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

    def parameters(self):
        for layer in self.layers:
            yield from layer.parameters()


def build(params):
    (W1, b1), (W2, b2), (W3, b3) = params
    return Sequential(TanhLinear(W1, b1), Residual(TanhLinear(W2, b2)), Linear(W3, b3))


def loss(params, x, y, weight_decay=1e-2):
    net = build(params)
    pred = net(x)
    decay = sum(np.sum(p ** 2) for p in net.parameters())
    return np.mean((pred - y) ** 2) + weight_decay * decay


def make_inputs(rng):
    params = [(0.5 * rng.standard_normal((3, 5)), 0.1 * rng.standard_normal(5)),
              (0.5 * rng.standard_normal((5, 5)), 0.1 * rng.standard_normal(5)),
              (0.5 * rng.standard_normal((5, 2)), np.zeros(2))]
    return params, rng.standard_normal((7, 3)), rng.standard_normal((7, 2))


fun = loss
argnums = (0, 1)


def jax_fun(params, x, y):
    (W1, b1), (W2, b2), (W3, b3) = params
    h = jnp.tanh(x @ W1 + b1)
    h = h + jnp.tanh(h @ W2 + b2)
    pred = h @ W3 + b3
    decay = sum(jnp.sum(p ** 2) for layer in params for p in layer)
    return jnp.mean((pred - y) ** 2) + 1e-2 * decay
