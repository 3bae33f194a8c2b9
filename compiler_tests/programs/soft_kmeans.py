"""Soft k-means: responsibilities from a softmax over negative squared
distances with a temperature, a few EM-like centroid updates in a loop, and
the final weighted distortion, differentiated with respect to the initial
centroids, the data and the temperature."""
import numpy as np
import jax.numpy as jnp


def squared_distances(X, centroids):
    return np.sum((X[:, None, :] - centroids[None, :, :]) ** 2, axis=-1)


def responsibilities(X, centroids, temperature):
    logits = -squared_distances(X, centroids) / temperature
    logits = logits - np.max(logits, axis=1, keepdims=True)
    w = np.exp(logits)
    return w / np.sum(w, axis=1, keepdims=True)


def soft_kmeans(X, centroids, temperature=1.0, n_iters=3):
    for _ in range(n_iters):
        R = responsibilities(X, centroids, temperature)
        centroids = (R.T @ X) / np.sum(R, axis=0)[:, None]
    return centroids


def distortion(centroids, X, temperature):
    centroids = soft_kmeans(X, centroids, temperature)
    R = responsibilities(X, centroids, temperature)
    return np.sum(R * squared_distances(X, centroids)) / len(X)


def make_inputs(rng):
    X = np.concatenate([rng.standard_normal((6, 2)) + 2.0, rng.standard_normal((6, 2)) - 2.0])
    return rng.standard_normal((3, 2)), X, 1.5


fun = distortion
argnums = (0, 1, 2)


def jax_fun(centroids, X, temperature):
    def resp(c):
        d2 = jnp.sum((X[:, None, :] - c[None, :, :]) ** 2, axis=-1)
        logits = -d2 / temperature
        w = jnp.exp(logits - jnp.max(logits, axis=1, keepdims=True))
        return w / jnp.sum(w, axis=1, keepdims=True), d2
    for _ in range(3):
        R, _ = resp(centroids)
        centroids = (R.T @ X) / jnp.sum(R, axis=0)[:, None]
    R, d2 = resp(centroids)
    return jnp.sum(R * d2) / len(X)
