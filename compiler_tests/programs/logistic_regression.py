"""L2-regularised logistic regression with a Python-float bias, written with
a sigmoid helper for the predictions and a stable log-likelihood."""
import numpy as np
import jax.numpy as jnp


def sigmoid(z):
    return 0.5 * (np.tanh(z / 2.0) + 1.0)


def predict_proba(w, b, X):
    return sigmoid(X @ w + b)


def log_likelihood(w, b, X, y):
    logits = X @ w + b
    return np.sum(y * logits - np.logaddexp(0.0, logits))


def training_loss(w, b, X, y, l2=0.1):
    n = len(y)
    return -log_likelihood(w, b, X, y) / n + 0.5 * l2 * np.dot(w, w)


def make_inputs(rng):
    X = rng.standard_normal((20, 4))
    true_w = np.array([1.0, -2.0, 0.5, 0.0])
    y = (rng.uniform(size=20) < predict_proba(true_w, 0.3, X)).astype(float)
    return rng.standard_normal(4) * 0.1, 0.05, X, y


fun = training_loss
argnums = (0, 1, 2)


def jax_fun(w, b, X, y, l2=0.1):
    logits = X @ w + b
    ll = jnp.sum(y * logits - jnp.logaddexp(0.0, logits))
    return -ll / len(y) + 0.5 * l2 * jnp.dot(w, w)
