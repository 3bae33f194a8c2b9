"""Meta-learning through an unrolled Adam optimiser: an ``Adam`` class keeps
its first and second moments in dicts keyed like the parameters and its
``step()`` walks the parameter dict; the inner loss's gradient is written by
hand (linear regression), and the outer loss is the validation error after a
few steps, differentiated with respect to the initial parameters and the
training data."""
import numpy as np
import jax.numpy as jnp


class Adam:
    def __init__(self, lr=1e-2, b1=0.9, b2=0.999, eps=1e-8):
        self.lr, self.b1, self.b2, self.eps = lr, b1, b2, eps
        self.m = None
        self.v = None
        self.t = 0

    def init(self, params):
        self.m = {k: np.zeros_like(p) for k, p in params.items()}
        self.v = {k: np.zeros_like(p) for k, p in params.items()}
        self.t = 0

    def step(self, params, grads):
        self.t += 1
        new_params = {}
        for k in params:
            self.m[k] = self.b1 * self.m[k] + (1 - self.b1) * grads[k]
            self.v[k] = self.b2 * self.v[k] + (1 - self.b2) * grads[k] ** 2
            m_hat = self.m[k] / (1 - self.b1 ** self.t)
            v_hat = self.v[k] / (1 - self.b2 ** self.t)
            new_params[k] = params[k] - self.lr * m_hat / (np.sqrt(v_hat) + self.eps)
        return new_params


def predict(params, X):
    return X @ params["w"] + params["b"]


def mse_and_grad(params, X, y):
    r = predict(params, X) - y
    n = len(y)
    return np.mean(r ** 2), {"w": 2.0 * X.T @ r / n, "b": 2.0 * np.mean(r)}


def validation_after_training(params, X, y, X_val, y_val, n_steps=6):
    opt = Adam(lr=0.05)
    opt.init(params)
    for _ in range(n_steps):
        _, grads = mse_and_grad(params, X, y)
        params = opt.step(params, grads)
    loss, _ = mse_and_grad(params, X_val, y_val)
    return loss


def make_inputs(rng):
    w_true = np.array([1.0, -2.0, 0.5])
    X = rng.standard_normal((10, 3))
    X_val = rng.standard_normal((6, 3))
    params = {"w": rng.standard_normal(3), "b": 0.2}
    return params, X, X @ w_true + 0.1, X_val, X_val @ w_true + 0.1


fun = validation_after_training
argnums = (0, 1, 2)


def jax_fun(params, X, y, X_val, y_val):
    m = {k: jnp.zeros_like(p) for k, p in params.items()}
    v = {k: jnp.zeros_like(p) for k, p in params.items()}
    for t in range(1, 7):
        r = X @ params["w"] + params["b"] - y
        grads = {"w": 2.0 * X.T @ r / len(y), "b": 2.0 * jnp.mean(r)}
        new = {}
        for k in params:
            m[k] = 0.9 * m[k] + 0.1 * grads[k]
            v[k] = 0.999 * v[k] + (1 - 0.999) * grads[k] ** 2
            m_hat = m[k] / (1 - 0.9 ** t)
            v_hat = v[k] / (1 - 0.999 ** t)
            new[k] = params[k] - 0.05 * m_hat / (jnp.sqrt(v_hat) + 1e-8)
        params = new
    return jnp.mean((X_val @ params["w"] + params["b"] - y_val) ** 2)
