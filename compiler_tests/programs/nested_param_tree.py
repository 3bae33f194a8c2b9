"""A parameter tree of nested dicts and lists (the shape a config-driven
model gets), walked by hand-written recursive helpers: ``tree_sq_norm``
dispatches on ``isinstance`` over dicts, lists, tuples and arrays, and
``apply`` recurses through an architecture tree of strings zipped with the
parameter tree (``"seq"`` lists, ``"residual"`` blocks, ``"dense"`` leaves):
a dict holding a string is not a differentiable argument (in JAX either), so
the block kinds travel apart from the numbers."""
import numpy as np
import jax.numpy as jnp


def tree_sq_norm(tree):
    if isinstance(tree, dict):
        return sum(tree_sq_norm(v) for k, v in tree.items() if k != "scale")
    if isinstance(tree, (list, tuple)):
        total = 0.0
        for child in tree:
            total = total + tree_sq_norm(child)
        return total
    if isinstance(tree, np.ndarray):
        return np.sum(tree ** 2)
    return 0.0


def apply(arch, node, x):
    kind = arch if isinstance(arch, str) else arch[0]
    if kind == "dense":
        return np.tanh(x @ node["W"] + node["b"])
    if kind == "seq":
        for sub_arch, child in zip(arch[1], node):
            x = apply(sub_arch, child, x)
        return x
    if kind == "residual":
        return x + node["scale"] * apply(arch[1], node["body"], x)
    raise ValueError(kind)


def regularised_loss(tree, x, y, arch, lam=1e-3):
    out = apply(arch, tree, x)
    return np.mean((out - y) ** 2) + lam * tree_sq_norm(tree)


def dense(rng, n_in, n_out):
    return {"W": 0.5 * rng.standard_normal((n_in, n_out)), "b": 0.1 * rng.standard_normal(n_out)}


def make_inputs(rng):
    arch = ("seq", ["dense", ("residual", ("seq", ["dense", "dense"])), "dense"])
    tree = [dense(rng, 3, 4),
            {"scale": 0.5, "body": [dense(rng, 4, 4), dense(rng, 4, 4)]},
            dense(rng, 4, 2)]
    return tree, rng.standard_normal((5, 3)), rng.standard_normal((5, 2)), arch


fun = regularised_loss
argnums = (0, 1)


def jax_fun(tree, x, y, arch):
    def run(a, node, h):
        kind = a if isinstance(a, str) else a[0]
        if kind == "dense":
            return jnp.tanh(h @ node["W"] + node["b"])
        if kind == "seq":
            for sa, c in zip(a[1], node):
                h = run(sa, c, h)
            return h
        return h + node["scale"] * run(a[1], node["body"], h)

    def norm(t):
        if isinstance(t, dict):
            return sum(norm(v) for k, v in t.items() if k != "scale")
        if isinstance(t, list):
            return sum(norm(c) for c in t)
        return jnp.sum(t ** 2)
    return jnp.mean((run(arch, tree, x) - y) ** 2) + 1e-3 * norm(tree)


jax_jit = False             # the architecture tree of strings is not an array
