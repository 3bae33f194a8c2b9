"""A 'valid' 2-D convolution written with explicit loops into a preallocated
output, a ReLU, and average pooling; the kernel and bias are learned."""
import numpy as np
import jax.numpy as jnp


def conv2d(image, kernel):
    kh, kw = kernel.shape
    H, W = image.shape
    out = np.zeros((H - kh + 1, W - kw + 1))
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[i, j] = np.sum(image[i:i + kh, j:j + kw] * kernel)
    return out


def relu(x):
    return np.maximum(x, 0.0)


def conv_loss(kernel, bias, image, target):
    features = relu(conv2d(image, kernel) + bias)
    pooled = np.mean(features)
    return (pooled - target) ** 2 + 0.5 * np.mean(features ** 2)


def make_inputs(rng):
    image = rng.standard_normal((7, 6))
    kernel = rng.standard_normal((3, 3)) * 0.5
    return kernel, 0.1, image, 0.4


fun = conv_loss
argnums = (0, 1, 2)


def jax_fun(kernel, bias, image, target):
    kh, kw = kernel.shape
    rows = [[jnp.sum(image[i:i + kh, j:j + kw] * kernel) for j in range(image.shape[1] - kw + 1)]
            for i in range(image.shape[0] - kh + 1)]
    features = jnp.maximum(jnp.array(rows) + bias, 0.0)
    return (jnp.mean(features) - target) ** 2 + 0.5 * jnp.mean(features ** 2)
