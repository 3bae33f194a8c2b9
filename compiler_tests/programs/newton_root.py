"""Newton's method whose derivative comes from pb.grad, and a loss on the
root as a function of the equation's parameter. Differentiating it is a
derivative of a derivative (once refused, issue 12 item 4; differentiated
since issue 15's higher order: forward over reverse inside)."""
import numpy as np
import jax
import pullback as pb


def cubic(x, a):
    return x ** 3 + a * x - 2.0


def newton(func, x0, a, n_steps=8):
    dfdx = pb.grad(func)
    x = x0
    for _ in range(n_steps):
        x = x - func(x, a) / dfdx(x, a)
    return x


def root_loss(a):
    root = newton(cubic, 1.0, a)
    return (root - 0.5) ** 2


def make_inputs(rng):
    return (1.0 + 0.5 * rng.uniform(),)


fun = root_loss
argnums = (0,)


def jax_fun(a):
    dfdx = jax.grad(cubic)
    x = 1.0
    for _ in range(8):
        x = x - cubic(x, a) / dfdx(x, a)
    return (x - 0.5) ** 2
