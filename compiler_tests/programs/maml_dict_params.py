"""MAML's outer objective, written the way the paper's NumPy ports write it:
parameters in a dict, the inner adaptation step as the dict comprehension
``{k: params[k] - alpha * grads[k] for k in params}``, a few tasks of
sinusoid regression with a tiny feature model, the inner gradient by hand,
and the query loss averaged over tasks; differentiated with respect to the
meta-parameters and the inner learning rate."""
import numpy as np
import jax.numpy as jnp


def features(x):
    return np.stack([np.sin(x), np.cos(x), x, np.ones_like(x)], axis=1)


def predict(params, x):
    return features(x) @ params["w"] * params["scale"]


def loss_and_grads(params, x, y):
    phi = features(x)
    r = phi @ params["w"] * params["scale"] - y
    n = len(y)
    return np.mean(r ** 2), {"w": 2.0 * params["scale"] * phi.T @ r / n,
                             "scale": 2.0 * np.mean(r * (phi @ params["w"]))}


def adapt(params, x, y, alpha, steps=2):
    for _ in range(steps):
        _, grads = loss_and_grads(params, x, y)
        params = {k: params[k] - alpha * grads[k] for k in params}
    return params


def meta_loss(params, alpha, tasks):
    total = 0.0
    for x_support, y_support, x_query, y_query in tasks:
        adapted = adapt(params, x_support, y_support, alpha)
        query_loss, _ = loss_and_grads(adapted, x_query, y_query)
        total = total + query_loss
    return total / len(tasks)


def make_inputs(rng):
    tasks = []
    for _ in range(3):
        amp, phase = rng.uniform(0.5, 2.0), rng.uniform(0, np.pi)
        xs, xq = rng.uniform(-3, 3, 5), rng.uniform(-3, 3, 5)
        tasks.append((xs, amp * np.sin(xs + phase), xq, amp * np.sin(xq + phase)))
    return {"scale": 1.0, "w": 0.3 * rng.standard_normal(4)}, 0.05, tasks


fun = meta_loss
argnums = (0, 1)


def jax_fun(params, alpha, tasks):
    def feats(x):
        return jnp.stack([jnp.sin(x), jnp.cos(x), x, jnp.ones_like(x)], axis=1)
    total = 0.0
    for xs, ys, xq, yq in tasks:
        p = params
        for _ in range(2):
            phi = feats(xs)
            r = phi @ p["w"] * p["scale"] - ys
            g = {"w": 2.0 * p["scale"] * phi.T @ r / len(ys),
                 "scale": 2.0 * jnp.mean(r * (phi @ p["w"]))}
            p = {k: p[k] - alpha * g[k] for k in p}
        total = total + jnp.mean((feats(xq) @ p["w"] * p["scale"] - yq) ** 2)
    return total / len(tasks)
