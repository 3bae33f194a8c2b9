"""Meta-learning the learning rate of a hand-written Nesterov-momentum
optimiser whose velocities live in a dict attribute read with
``self.velocity.get(name, 0.0)`` (the first step has none yet), stepping a
dict of parameters by name; the model is a small logistic regression whose
gradient is written by hand, and the outer loss is the validation
cross-entropy after a few steps."""
import numpy as np
import jax.numpy as jnp


class Nesterov:
    def __init__(self, lr, momentum=0.9):
        self.lr = lr
        self.momentum = momentum
        self.velocity = {}

    def apply_update(self, name, param, grad):
        v_prev = self.velocity.get(name, 0.0)
        v = self.momentum * v_prev - self.lr * grad
        self.velocity[name] = v
        return param + self.momentum * v - self.lr * grad

    def step(self, params, grads):
        new_params = {}
        for name in params:
            new_params[name] = self.apply_update(name, params[name], grads[name])
        return new_params


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def logistic_grads(params, X, y):
    p = sigmoid(X @ params["w"] + params["b"])
    r = (p - y) / len(y)
    return {"w": X.T @ r, "b": np.sum(r)}


def cross_entropy(params, X, y):
    z = X @ params["w"] + params["b"]
    return np.mean(np.logaddexp(0.0, z) - y * z)


def validation_loss(lr, params, X, y, X_val, y_val, n_steps=4):
    opt = Nesterov(lr)
    for _ in range(n_steps):
        params = opt.step(params, logistic_grads(params, X, y))
    return cross_entropy(params, X_val, y_val)


def make_inputs(rng):
    X, X_val = rng.standard_normal((12, 3)), rng.standard_normal((6, 3))
    w_true = np.array([1.0, -1.0, 0.5])
    y = (X @ w_true > 0).astype(float)
    y_val = (X_val @ w_true > 0).astype(float)
    return 0.5, {"b": 0.0, "w": 0.1 * rng.standard_normal(3)}, X, y, X_val, y_val


fun = validation_loss
argnums = (0, 1, 2)


def jax_fun(lr, params, X, y, X_val, y_val):
    vel = {"w": 0.0, "b": 0.0}
    for _ in range(4):
        z = X @ params["w"] + params["b"]
        r = (1.0 / (1.0 + jnp.exp(-z)) - y) / len(y)
        grads = {"w": X.T @ r, "b": jnp.sum(r)}
        new = {}
        for k in params:
            v = 0.9 * vel[k] - lr * grads[k]
            vel[k] = v
            new[k] = params[k] + 0.9 * v - lr * grads[k]
        params = new
    z = X_val @ params["w"] + params["b"]
    return jnp.mean(jnp.logaddexp(0.0, z) - y_val * z)
