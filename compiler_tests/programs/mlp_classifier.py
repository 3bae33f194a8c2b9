"""An MNIST-style classifier (784 -> 100 -> 10, with the input shrunk to 64
pixels): the activation is a default argument, the log-softmax is written
by hand with the max subtracted, and the loss is the mean negative log
likelihood of one-hot labels."""
import numpy as np
import jax.numpy as jnp

SIZES = [64, 100, 10]


def init_random_params(scale, layer_sizes, rng):
    return [(scale * rng.standard_normal((m, n)), scale * rng.standard_normal(n))
            for m, n in zip(layer_sizes[:-1], layer_sizes[1:])]


def logsumexp(x, axis=1):
    m = np.max(x, axis=axis, keepdims=True)
    return m + np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))


def neural_net_predict(params, inputs, activation=np.tanh):
    """Log class probabilities."""
    for W, b in params:
        outputs = np.dot(inputs, W) + b
        inputs = activation(outputs)
    return outputs - logsumexp(outputs)


def nll(params, images, labels_onehot):
    log_probs = neural_net_predict(params, images)
    return -np.sum(log_probs * labels_onehot) / images.shape[0]


def make_inputs(rng):
    params = init_random_params(0.1, SIZES, rng)
    images = rng.uniform(0.0, 1.0, size=(8, SIZES[0]))
    labels = np.eye(SIZES[-1])[rng.integers(0, SIZES[-1], size=8)]
    return params, images, labels


fun = nll
argnums = (0,)


def jax_fun(params, images, labels_onehot):
    inputs = images
    for W, b in params:
        outputs = jnp.dot(inputs, W) + b
        inputs = jnp.tanh(outputs)
    m = jnp.max(outputs, axis=1, keepdims=True)
    log_probs = outputs - (m + jnp.log(jnp.sum(jnp.exp(outputs - m), axis=1, keepdims=True)))
    return -jnp.sum(log_probs * labels_onehot) / images.shape[0]
