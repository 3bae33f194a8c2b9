"""Tuning a learning rate by differentiating through an unrolled optimiser:
momentum gradient descent that takes the loss's gradient function as an
argument (with extra arguments passed through *args), and a meta-objective
whose loss and gradient functions are default arguments."""
import numpy as np
import jax.numpy as jnp


def quadratic_loss(w, A, b):
    return 0.5 * w @ A @ w - b @ w


def quadratic_grad(w, A, b):
    return A @ w - b


def momentum_descent(grad_fn, w, lr, n_steps, *args, momentum=0.9):
    velocity = np.zeros_like(w)
    for _ in range(n_steps):
        g = grad_fn(w, *args)
        velocity = momentum * velocity - lr * g
        w = w + velocity
    return w


def meta_objective(lr, w0, A, b, loss_fn=quadratic_loss, grad_fn=quadratic_grad):
    w_final = momentum_descent(grad_fn, w0, lr, 8, A, b)
    return loss_fn(w_final, A, b)


def make_inputs(rng):
    M = rng.standard_normal((4, 4))
    A = M @ M.T / 4 + np.eye(4)
    return 0.05, rng.standard_normal(4), A, rng.standard_normal(4)


fun = meta_objective
argnums = (0, 1, 2, 3)


def jax_fun(lr, w0, A, b):
    w, velocity = w0, jnp.zeros_like(w0)
    for _ in range(8):
        velocity = 0.9 * velocity - lr * (A @ w - b)
        w = w + velocity
    return 0.5 * w @ A @ w - b @ w
