"""The benchmark problems: each as an ordinary NumPy function (what pullback
differentiates; it reads this file's source), a hand-written NumPy gradient,
and the JAX, autograd and PyTorch ports a user of those tools would write.

Every problem's function returns a real scalar.  Each "hand" function returns
``(value, gradients)`` with one gradient per differentiated argument, in the
order of ``argnums``, and keeps the primal's style: a Python loop stays a
Python loop (its hand-written reverse loop is the limit for a loop), an
array program stays an array program.

The ports keep the primal's structure where the peer can express it (the
same Python loops, the same indexing), and say in ``Problem.notes`` where
they had to be rewritten (no peer traces a function written with the
``math`` module).  They are built lazily, so this module imports nothing but
NumPy and ``math``.

``run.py`` is the harness; ``python benchmarks/problems.py`` checks every
hand-written gradient against central differences.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Callable

import numpy as np


# =====================================================================================
# Seed ports
# =====================================================================================

# -- seed 000: sum([x[i]^2 for i in eachindex(x)]) -------------------------------------

def sum_squares_list(x):
    return sum([x[i] ** 2 for i in range(len(x))])


def sum_squares_list_hand(x):
    value = sum([x[i] ** 2 for i in range(len(x))])
    g = np.zeros_like(x)
    for i in range(len(x) - 1, -1, -1):
        g[i] = 2.0 * x[i]
    return value, (g,)


# -- seed 003: sum(x[i]^2 for i in ...), a generator -----------------------------------

def sum_squares_gen(x):
    return sum(x[i] ** 2 for i in range(len(x)))


def sum_squares_gen_hand(x):
    value = sum(x[i] ** 2 for i in range(len(x)))
    g = np.zeros_like(x)
    for i in range(len(x) - 1, -1, -1):
        g[i] = 2.0 * x[i]
    return value, (g,)


# -- seed 000: evalpoly with a loop over the coefficients ------------------------------

def evalpoly(x, p):
    n = len(p)
    ex = p[n - 1]
    for i in range(n - 2, -1, -1):
        ex = x * ex + p[i]
    return ex


def evalpoly_hand(x, p):
    n = len(p)
    ex = p[n - 1]
    saved = []
    for i in range(n - 2, -1, -1):
        saved.append(ex)
        ex = x * ex + p[i]
    # reverse loop: ex_i = x * ex_{i+1} + p[i]
    gp = np.zeros_like(p)
    gx = 0.0
    gex = 1.0
    for i in range(0, n - 1):
        gp[i] = gex
        gx += gex * saved.pop()
        gex = gex * x
    gp[n - 1] = gex
    return ex, (gx, gp)


# -- seed 001: pure broadcasts ---------------------------------------------------------

def sum_abs(x):
    return np.sum(np.abs(x))


def sum_abs_hand(x):
    return np.sum(np.abs(x)), (np.sign(x),)


def sum_cbrt(x):
    return np.sum(np.cbrt(x))


def sum_cbrt_hand(x):
    c = np.cbrt(x)
    return np.sum(c), (1.0 / (3.0 * c * c),)


def sum_tanh(x):
    return np.sum(np.tanh(x))


def sum_tanh_hand(x):
    t = np.tanh(x)
    return np.sum(t), (1.0 - t * t,)


# -- seed 001: a user's scalar function (math module) mapped over an array -------------

def bump(z):
    return math.exp(-z * z) * math.sin(3.0 * z) + z


def sum_map(x):
    return np.sum(np.vectorize(bump)(x))


def sum_map_hand(x):
    e = np.exp(-x * x)
    s = np.sin(3.0 * x)
    return np.sum(e * s + x), (e * (3.0 * np.cos(3.0 * x) - 2.0 * x * s) + 1.0,)


# -- seed 001: a broadcast closure capturing a differentiated value --------------------

def closure(x, y):
    g = lambda z: z ** 2 + y[0]      # noqa: E731
    return np.sum(g(x))


def closure_hand(x, y):
    gy = np.zeros_like(y)
    gy[0] = x.size
    return np.sum(x * x + y[0]), (2.0 * x, gy)


# -- seed 003: a loop over the columns of a 100 x 1000 matrix --------------------------

def column_loop(X):
    total = 0.0
    for j in range(X.shape[1]):
        c = X[:, j]
        total = total + np.sum(np.sin(c) * c)
    return total


def column_loop_hand(X):
    total = 0.0
    for j in range(X.shape[1]):
        c = X[:, j]
        total = total + np.sum(np.sin(c) * c)
    g = np.zeros_like(X)
    for j in range(X.shape[1] - 1, -1, -1):
        c = X[:, j]
        g[:, j] += np.cos(c) * c + np.sin(c)
    return total, (g,)


# -- seed 000: an elementwise chain on a 50 x 50 x 50 x 50 array -----------------------

def net(x):
    y = np.tanh(x)
    y = 2.0 * y + 1.0
    y = np.sin(y) * x
    return np.sum(y ** 2)


def net_hand(x):
    t = np.tanh(x)
    a = 2.0 * t + 1.0
    s = np.sin(a)
    y = s * x
    value = np.sum(y * y)
    gy = 2.0 * y
    del y
    gx = gy * s
    gy *= x
    gy *= np.cos(a)
    del a, s
    t *= t
    np.subtract(1.0, t, out=t)
    gy *= t
    gy *= 2.0
    gx += gy
    return value, (gx,)


# =====================================================================================
# Real programs
# =====================================================================================

# -- a two-layer perceptron: softmax cross-entropy on a 512 x 784 batch ----------------

def mlp(w1, b1, w2, b2, x, y):
    h = np.tanh(x @ w1 + b1)
    z = h @ w2 + b2
    m = np.max(z, axis=1, keepdims=True)
    e = np.exp(z - m)
    logp = z - m - np.log(np.sum(e, axis=1, keepdims=True))
    return -np.mean(np.sum(logp * y, axis=1))


def mlp_hand(w1, b1, w2, b2, x, y):
    h = np.tanh(x @ w1 + b1)
    z = h @ w2 + b2
    z -= np.max(z, axis=1, keepdims=True)
    e = np.exp(z)
    s = np.sum(e, axis=1, keepdims=True)
    logp = z - np.log(s)
    n = x.shape[0]
    value = -np.sum(logp * y) / n
    gz = (e / s * np.sum(y, axis=1, keepdims=True) - y) / n
    gw2 = h.T @ gz
    gb2 = np.sum(gz, axis=0)
    gh = gz @ w2.T
    gh *= 1.0 - h * h
    gw1 = x.T @ gh
    gb1 = np.sum(gh, axis=0)
    return value, (gw1, gb1, gw2, gb2)


# -- explicit time stepping: a Fermi-Pasta-Ulam chain, 1,000 symplectic Euler steps ----

DT = 0.05
ALPHA = 0.25


def fpu_chain(x0, k, steps):
    """Masses on a line joined by nonlinear springs of stiffness ``k`` (one
    per spring, ends fixed), ``steps`` symplectic Euler steps; the loss is
    the final displacement energy."""
    x = x0
    v = np.zeros_like(x0)
    wall = np.zeros(1)
    for t in range(steps):
        xp = np.concatenate((wall, x, wall))
        d = xp[1:] - xp[:-1]
        tension = k * (d + ALPHA * d * d)
        v = v + DT * (tension[1:] - tension[:-1])
        x = x + DT * v
    return np.sum(x * x)


def fpu_chain_hand(x0, k, steps):
    n = x0.shape[0]
    x = x0
    v = np.zeros_like(x0)
    wall = np.zeros(1)
    ds = []
    for t in range(steps):
        xp = np.concatenate((wall, x, wall))
        d = xp[1:] - xp[:-1]
        ds.append(d)
        tension = k * (d + ALPHA * d * d)
        v = v + DT * (tension[1:] - tension[:-1])
        x = x + DT * v
    value = np.sum(x * x)
    gx = 2.0 * x
    gv = np.zeros(n)
    gk = np.zeros_like(k)
    for t in range(steps - 1, -1, -1):
        d = ds.pop()
        gv += DT * gx                        # x = x + DT * v
        gtension = np.zeros(n + 1)           # v = v + DT * (tension[1:] - tension[:-1])
        gtension[1:] += DT * gv
        gtension[:-1] -= DT * gv
        gk += gtension * (d + ALPHA * d * d)
        gd = gtension * k * (1.0 + 2.0 * ALPHA * d)
        gx = gx + gd[:-1] - gd[1:]           # d = xp[1:] - xp[:-1], xp = [0, x, 0]
    return value, (gx, gk)


# -- a recursive, branching scalar function: adaptive Simpson quadrature ---------------

def integrand(t, a):
    return math.exp(-a * t * t) * math.cos(a * t) + t * a


def adapt(a, lo, hi, flo, fmid, fhi, whole, tol, depth):
    mid = 0.5 * (lo + hi)
    flm = integrand(0.5 * (lo + mid), a)
    frm = integrand(0.5 * (mid + hi), a)
    left = (mid - lo) / 6.0 * (flo + 4.0 * flm + fmid)
    right = (hi - mid) / 6.0 * (fmid + 4.0 * frm + fhi)
    err = left + right - whole
    if depth <= 0 or abs(err) <= 15.0 * tol:
        return left + right + err / 15.0
    return (adapt(a, lo, mid, flo, flm, fmid, left, 0.5 * tol, depth - 1)
            + adapt(a, mid, hi, fmid, frm, fhi, right, 0.5 * tol, depth - 1))


def quadrature(a, tol):
    """The integral of ``integrand(t, a)`` over [0, 4], adaptively to ``tol``."""
    lo, hi = 0.0, 4.0
    flo = integrand(lo, a)
    fmid = integrand(0.5 * (lo + hi), a)
    fhi = integrand(hi, a)
    whole = (hi - lo) / 6.0 * (flo + 4.0 * fmid + fhi)
    return adapt(a, lo, hi, flo, fmid, fhi, whole, tol, 40)


def _integrand_da(t, a):
    e = math.exp(-a * t * t)
    return e * (-t * t * math.cos(a * t) - t * math.sin(a * t)) + t


def _adapt_hand(a, lo, hi, flo, fmid, fhi, whole, tol, depth, dflo, dfmid, dfhi, dwhole):
    """``adapt`` with its derivative in ``a`` carried alongside (forward mode
    is the natural hand-written gradient of a one-input recursion)."""
    mid = 0.5 * (lo + hi)
    tl, tr = 0.5 * (lo + mid), 0.5 * (mid + hi)
    flm, dflm = integrand(tl, a), _integrand_da(tl, a)
    frm, dfrm = integrand(tr, a), _integrand_da(tr, a)
    left = (mid - lo) / 6.0 * (flo + 4.0 * flm + fmid)
    dleft = (mid - lo) / 6.0 * (dflo + 4.0 * dflm + dfmid)
    right = (hi - mid) / 6.0 * (fmid + 4.0 * frm + fhi)
    dright = (hi - mid) / 6.0 * (dfmid + 4.0 * dfrm + dfhi)
    err = left + right - whole
    if depth <= 0 or abs(err) <= 15.0 * tol:
        return (left + right + err / 15.0,
                dleft + dright + (dleft + dright - dwhole) / 15.0)
    v1, d1 = _adapt_hand(a, lo, mid, flo, flm, fmid, left, 0.5 * tol, depth - 1,
                         dflo, dflm, dfmid, dleft)
    v2, d2 = _adapt_hand(a, mid, hi, fmid, frm, fhi, right, 0.5 * tol, depth - 1,
                         dfmid, dfrm, dfhi, dright)
    return v1 + v2, d1 + d2


def quadrature_hand(a, tol):
    lo, hi = 0.0, 4.0
    ts = (lo, 0.5 * (lo + hi), hi)
    f = [integrand(t, a) for t in ts]
    df = [_integrand_da(t, a) for t in ts]
    whole = (hi - lo) / 6.0 * (f[0] + 4.0 * f[1] + f[2])
    dwhole = (hi - lo) / 6.0 * (df[0] + 4.0 * df[1] + df[2])
    value, d = _adapt_hand(a, lo, hi, f[0], f[1], f[2], whole, tol, 40,
                           df[0], df[1], df[2], dwhole)
    return value, (d,)


# =====================================================================================
# Ports to the peers.  Each builder returns the port of the problem's function;
# the harness wraps it in the peer's value_and_grad.
# =====================================================================================

def _jax_ports():
    import jax
    import jax.numpy as jnp

    def bump_j(z):
        return jnp.exp(-z * z) * jnp.sin(3.0 * z) + z

    def integrand_j(t, a):
        return jnp.exp(-a * t * t) * jnp.cos(a * t) + t * a

    def adapt_j(a, lo, hi, flo, fmid, fhi, whole, tol, depth):
        mid = 0.5 * (lo + hi)
        flm = integrand_j(0.5 * (lo + mid), a)
        frm = integrand_j(0.5 * (mid + hi), a)
        left = (mid - lo) / 6.0 * (flo + 4.0 * flm + fmid)
        right = (hi - mid) / 6.0 * (fmid + 4.0 * frm + fhi)
        err = left + right - whole
        if depth <= 0 or abs(err) <= 15.0 * tol:
            return left + right + err / 15.0
        return (adapt_j(a, lo, mid, flo, flm, fmid, left, 0.5 * tol, depth - 1)
                + adapt_j(a, mid, hi, fmid, frm, fhi, right, 0.5 * tol, depth - 1))

    def quadrature_j(a, tol):
        lo, hi = 0.0, 4.0
        flo, fmid, fhi = integrand_j(lo, a), integrand_j(0.5 * (lo + hi), a), integrand_j(hi, a)
        whole = (hi - lo) / 6.0 * (flo + 4.0 * fmid + fhi)
        return adapt_j(a, lo, hi, flo, fmid, fhi, whole, tol, 40)

    def evalpoly_j(x, p):
        n = len(p)
        ex = p[n - 1]
        for i in range(n - 2, -1, -1):
            ex = x * ex + p[i]
        return ex

    def column_loop_j(X):
        total = 0.0
        for j in range(X.shape[1]):
            c = X[:, j]
            total = total + jnp.sum(jnp.sin(c) * c)
        return total

    def net_j(x):
        y = jnp.tanh(x)
        y = 2.0 * y + 1.0
        y = jnp.sin(y) * x
        return jnp.sum(y ** 2)

    def mlp_j(w1, b1, w2, b2, x, y):
        h = jnp.tanh(x @ w1 + b1)
        z = h @ w2 + b2
        m = jnp.max(z, axis=1, keepdims=True)
        e = jnp.exp(z - m)
        logp = z - m - jnp.log(jnp.sum(e, axis=1, keepdims=True))
        return -jnp.mean(jnp.sum(logp * y, axis=1))

    def fpu_chain_j(x0, k, steps):
        x = x0
        v = jnp.zeros_like(x0)
        wall = jnp.zeros(1)
        for t in range(steps):
            xp = jnp.concatenate((wall, x, wall))
            d = xp[1:] - xp[:-1]
            tension = k * (d + ALPHA * d * d)
            v = v + DT * (tension[1:] - tension[:-1])
            x = x + DT * v
        return jnp.sum(x * x)

    return {
        "sum_squares_list": lambda x: sum([x[i] ** 2 for i in range(len(x))]),
        "sum_squares_gen": lambda x: sum(x[i] ** 2 for i in range(len(x))),
        "evalpoly": evalpoly_j,
        "sum_abs": lambda x: jnp.sum(jnp.abs(x)),
        "sum_cbrt": lambda x: jnp.sum(jnp.cbrt(x)),
        "sum_tanh": lambda x: jnp.sum(jnp.tanh(x)),
        "sum_map": lambda x: jnp.sum(jax.vmap(bump_j)(x)),
        "closure": lambda x, y: jnp.sum((lambda z: z ** 2 + y[0])(x)),
        "column_loop": column_loop_j,
        "net": net_j,
        "mlp": mlp_j,
        "fpu_chain": fpu_chain_j,
        "quadrature": quadrature_j,
    }


def _autograd_ports():
    import autograd.numpy as anp

    def bump_vec(z):
        return anp.exp(-z * z) * anp.sin(3.0 * z) + z

    def integrand_a(t, a):
        return anp.exp(-a * t * t) * anp.cos(a * t) + t * a

    def adapt_a(a, lo, hi, flo, fmid, fhi, whole, tol, depth):
        mid = 0.5 * (lo + hi)
        flm = integrand_a(0.5 * (lo + mid), a)
        frm = integrand_a(0.5 * (mid + hi), a)
        left = (mid - lo) / 6.0 * (flo + 4.0 * flm + fmid)
        right = (hi - mid) / 6.0 * (fmid + 4.0 * frm + fhi)
        err = left + right - whole
        if depth <= 0 or abs(err) <= 15.0 * tol:
            return left + right + err / 15.0
        return (adapt_a(a, lo, mid, flo, flm, fmid, left, 0.5 * tol, depth - 1)
                + adapt_a(a, mid, hi, fmid, frm, fhi, right, 0.5 * tol, depth - 1))

    def quadrature_a(a, tol):
        lo, hi = 0.0, 4.0
        flo, fmid, fhi = integrand_a(lo, a), integrand_a(0.5 * (lo + hi), a), integrand_a(hi, a)
        whole = (hi - lo) / 6.0 * (flo + 4.0 * fmid + fhi)
        return adapt_a(a, lo, hi, flo, fmid, fhi, whole, tol, 40)

    def column_loop_a(X):
        total = 0.0
        for j in range(X.shape[1]):
            c = X[:, j]
            total = total + anp.sum(anp.sin(c) * c)
        return total

    def net_a(x):
        y = anp.tanh(x)
        y = 2.0 * y + 1.0
        y = anp.sin(y) * x
        return anp.sum(y ** 2)

    def mlp_a(w1, b1, w2, b2, x, y):
        h = anp.tanh(anp.dot(x, w1) + b1)
        z = anp.dot(h, w2) + b2
        m = anp.max(z, axis=1, keepdims=True)
        e = anp.exp(z - m)
        logp = z - m - anp.log(anp.sum(e, axis=1, keepdims=True))
        return -anp.mean(anp.sum(logp * y, axis=1))

    def fpu_chain_a(x0, k, steps):
        x = x0
        v = anp.zeros_like(x0)
        wall = anp.zeros(1)
        for t in range(steps):
            xp = anp.concatenate((wall, x, wall))
            d = xp[1:] - xp[:-1]
            tension = k * (d + ALPHA * d * d)
            v = v + DT * (tension[1:] - tension[:-1])
            x = x + DT * v
        return anp.sum(x * x)

    return {
        "sum_squares_list": sum_squares_list,
        "sum_squares_gen": sum_squares_gen,
        "evalpoly": evalpoly,
        "sum_abs": lambda x: anp.sum(anp.abs(x)),
        "sum_cbrt": lambda x: anp.sum(anp.cbrt(x)),
        "sum_tanh": lambda x: anp.sum(anp.tanh(x)),
        "sum_map": lambda x: anp.sum(bump_vec(x)),
        "closure": lambda x, y: anp.sum((lambda z: z ** 2 + y[0])(x)),
        "column_loop": column_loop_a,
        "net": net_a,
        "mlp": mlp_a,
        "fpu_chain": fpu_chain_a,
        "quadrature": quadrature_a,
    }


def _torch_ports():
    import torch

    def bump_t(z):
        return torch.exp(-z * z) * torch.sin(3.0 * z) + z

    def integrand_t(t, a):
        return torch.exp(-a * t * t) * torch.cos(a * t) + t * a

    def adapt_t(a, lo, hi, flo, fmid, fhi, whole, tol, depth):
        mid = 0.5 * (lo + hi)
        flm = integrand_t(0.5 * (lo + mid), a)
        frm = integrand_t(0.5 * (mid + hi), a)
        left = (mid - lo) / 6.0 * (flo + 4.0 * flm + fmid)
        right = (hi - mid) / 6.0 * (fmid + 4.0 * frm + fhi)
        err = left + right - whole
        if depth <= 0 or abs(err) <= 15.0 * tol:
            return left + right + err / 15.0
        return (adapt_t(a, lo, mid, flo, flm, fmid, left, 0.5 * tol, depth - 1)
                + adapt_t(a, mid, hi, fmid, frm, fhi, right, 0.5 * tol, depth - 1))

    def quadrature_t(a, tol):
        lo, hi = 0.0, 4.0
        flo, fmid, fhi = integrand_t(lo, a), integrand_t(0.5 * (lo + hi), a), integrand_t(hi, a)
        whole = (hi - lo) / 6.0 * (flo + 4.0 * fmid + fhi)
        return adapt_t(a, lo, hi, flo, fmid, fhi, whole, tol, 40)

    def evalpoly_t(x, p):
        n = len(p)
        ex = p[n - 1]
        for i in range(n - 2, -1, -1):
            ex = x * ex + p[i]
        return ex

    def column_loop_t(X):
        total = 0.0
        for j in range(X.shape[1]):
            c = X[:, j]
            total = total + torch.sum(torch.sin(c) * c)
        return total

    def net_t(x):
        y = torch.tanh(x)
        y = 2.0 * y + 1.0
        y = torch.sin(y) * x
        return torch.sum(y ** 2)

    def mlp_t(w1, b1, w2, b2, x, y):
        h = torch.tanh(x @ w1 + b1)
        z = h @ w2 + b2
        m = torch.amax(z, dim=1, keepdim=True)
        e = torch.exp(z - m)
        logp = z - m - torch.log(torch.sum(e, dim=1, keepdim=True))
        return -torch.mean(torch.sum(logp * y, dim=1))

    def fpu_chain_t(x0, k, steps):
        x = x0
        v = torch.zeros_like(x0)
        wall = torch.zeros(1, dtype=x0.dtype)
        for t in range(steps):
            xp = torch.cat((wall, x, wall))
            d = xp[1:] - xp[:-1]
            tension = k * (d + ALPHA * d * d)
            v = v + DT * (tension[1:] - tension[:-1])
            x = x + DT * v
        return torch.sum(x * x)

    return {
        "sum_squares_list": lambda x: sum([x[i] ** 2 for i in range(len(x))]),
        "sum_squares_gen": lambda x: sum(x[i] ** 2 for i in range(len(x))),
        "evalpoly": evalpoly_t,
        "sum_abs": lambda x: torch.sum(torch.abs(x)),
        "sum_cbrt": lambda x: torch.sum(torch.sign(x) * torch.abs(x) ** (1.0 / 3.0)),
        "sum_tanh": lambda x: torch.sum(torch.tanh(x)),
        "sum_map": lambda x: torch.sum(torch.vmap(bump_t)(x)),
        "closure": lambda x, y: torch.sum((lambda z: z ** 2 + y[0])(x)),
        "column_loop": column_loop_t,
        "net": net_t,
        "mlp": mlp_t,
        "fpu_chain": fpu_chain_t,
        "quadrature": quadrature_t,
    }


PORTS = {"jax": _jax_ports, "autograd": _autograd_ports, "torch": _torch_ports}


# =====================================================================================
# The table of problems
# =====================================================================================

def _signed(rng, n):
    """Values away from 0 (abs and cbrt have a kink or a pole there)."""
    return rng.uniform(0.1, 2.0, size=n) * rng.choice([-1.0, 1.0], size=n)


def _inputs(name, n, rng):
    if name in ("sum_squares_list", "sum_squares_gen"):
        return (rng.uniform(-1.0, 1.0, n),)
    if name == "evalpoly":
        # x near 1: the adjoint carries x**i, and for x < 0.93 that underflows to
        # the smallest subnormal within 10,000 steps and stays there, where every
        # multiply costs ~100 cycles (hand-written and generated loops alike)
        return (float(rng.uniform(0.999, 0.9999)), rng.normal(size=n))
    if name in ("sum_abs", "sum_cbrt", "sum_tanh", "sum_map"):
        return (_signed(rng, n),)
    if name == "closure":
        return (_signed(rng, n), np.array([4.0, 5.0]))
    if name == "column_loop":
        return (rng.normal(size=(100, n)),)
    if name == "net":
        return (rng.uniform(-1.0, 1.0, size=(n, n, n, n)),)
    if name == "mlp":
        batch, hidden = n, 256
        x = rng.normal(size=(batch, 784))
        y = np.eye(10)[rng.integers(0, 10, batch)]
        return (rng.normal(size=(784, hidden)) / 28.0, np.zeros(hidden),
                rng.normal(size=(hidden, 10)) / 16.0, np.zeros(10), x, y)
    if name == "fpu_chain":         # n: time steps, on a chain of 64 masses
        return (rng.normal(scale=0.1, size=64), rng.uniform(0.5, 1.5, size=65), n)
    if name == "quadrature":        # n: the tolerance is 10**-n
        return (3.0, 10.0 ** -n)
    raise KeyError(name)


@dataclasses.dataclass
class Problem:
    name: str                 # key into this module and PORTS
    label: str                # what the table says
    argnums: tuple            # differentiated arguments
    sizes: tuple              # (size, size label) for the full run
    quick: tuple              # ... for the quick run
    kind: str                 # "seed" or "program"
    notes: dict = dataclasses.field(default_factory=dict)   # system -> footnote

    @property
    def fn(self) -> Callable:
        return globals()[self.name]

    @property
    def hand(self) -> Callable:
        return globals()[self.name + "_hand"]

    def inputs(self, n):
        return _inputs(self.name, n, np.random.default_rng(0))


_MATH = ("rewritten with the peer's own functions: no peer traces a function written "
         "with the math module")
_UNROLL = {"jax_jit": "the Python loop is unrolled when traced, so compile time grows with "
                      "the trip count; lax.fori_loop or lax.scan would avoid that, as a rewrite"}

PROBLEMS = [
    Problem("sum_squares_list", "sum([x[i]**2 for i in range(len(x))])", (0,),
            ((1_000, "n=1,000"), (10_000, "n=10,000")), ((50, "n=50"),), "seed",
            notes=_UNROLL),
    Problem("evalpoly", "evalpoly(x, p), loop over p", (0, 1),
            ((1_000, "n=1,000"), (10_000, "n=10,000")), ((50, "n=50"),), "seed",
            notes=_UNROLL),
    Problem("sum_abs", "sum(abs(x))", (0,),
            ((10_000, "n=10,000"), (1_000_000, "n=1,000,000")), ((10_000, "n=10,000"),), "seed"),
    Problem("sum_cbrt", "sum(cbrt(x))", (0,),
            ((10_000, "n=10,000"), (1_000_000, "n=1,000,000")), ((10_000, "n=10,000"),), "seed",
            notes={"torch": "torch has no cbrt: sign(x) * abs(x)**(1/3)"}),
    Problem("sum_tanh", "sum(tanh(x))", (0,),
            ((10_000, "n=10,000"), (1_000_000, "n=1,000,000")), ((10_000, "n=10,000"),), "seed"),
    Problem("sum_map", "sum(np.vectorize(bump)(x)), bump in math", (0,),
            ((10_000, "n=10,000"),), ((10_000, "n=10,000"),), "seed",
            notes={"jax": "bump " + _MATH + "; mapped with jax.vmap",
                   "jax_jit": "bump " + _MATH + "; mapped with jax.vmap",
                   "autograd": "bump " + _MATH + "; applied to the whole array "
                               "(autograd has no vectorize or vmap)",
                   "torch": "bump " + _MATH + "; mapped with torch.vmap",
                   "hand": "vectorized by hand"}),
    Problem("closure", "sum((z -> z**2 + y[0])(x)), grad x and y", (0, 1),
            ((10_000, "n=10,000"),), ((10_000, "n=10,000"),), "seed"),
    Problem("column_loop", "loop over the columns X[:, j]", (0,),
            ((1_000, "100x1000"),), ((50, "100x50"),), "seed", notes=_UNROLL),
    Problem("sum_squares_gen", "sum(x[i]**2 for i in range(len(x)))", (0,),
            ((1_000, "n=1,000"), (10_000, "n=10,000")), ((50, "n=50"),), "seed",
            notes=_UNROLL),
    Problem("net", "elementwise chain, sum((sin(2tanh(x)+1)*x)**2)", (0,),
            ((50, "50x50x50x50"),), ((20, "20x20x20x20"),), "seed"),
    Problem("mlp", "two-layer MLP, softmax cross-entropy", (0, 1, 2, 3),
            ((512, "512x784 batch, 256 hidden"),), ((128, "128x784 batch, 256 hidden"),),
            "program"),
    Problem("fpu_chain", "FPU spring chain, 64 masses, grad x0 and k", (0, 1),
            ((10, "10 steps"), (100, "100 steps"), (1_000, "1,000 steps")),
            ((10, "10 steps"),), "program", notes=_UNROLL),
    Problem("quadrature", "recursive adaptive Simpson, d/da", (0,),
            ((10, "tol 1e-10"),), ((5, "tol 1e-5"),), "program",
            notes={"jax": "integrand " + _MATH,
                   "autograd": "integrand " + _MATH,
                   "torch": "integrand " + _MATH,
                   "hand": "forward mode carried through the recursion by hand"}),
]

BY_NAME = {p.name: p for p in PROBLEMS}


# =====================================================================================
# Checking the hand-written gradients
# =====================================================================================

def check_hand(problem, n, eps=1e-6):
    """Central differences of the primal along a random direction against the
    hand-written gradient.  Returns the relative error."""
    args = list(problem.inputs(n))
    value, grads = problem.hand(*args)
    ref = problem.fn(*args)
    if not np.isclose(value, ref, rtol=1e-9, atol=1e-9):
        return float("inf")
    rng = np.random.default_rng(1)
    dirs = [rng.normal(size=np.shape(args[i])) for i in problem.argnums]
    exact = sum(float(np.sum(np.asarray(g) * d)) for g, d in zip(grads, dirs))

    def moved(s):
        a = list(args)
        for i, d in zip(problem.argnums, dirs):
            a[i] = (a[i] + s * d) if isinstance(a[i], np.ndarray) else float(a[i] + s * d)
        return problem.fn(*a)

    numeric = (moved(eps) - moved(-eps)) / (2 * eps)
    return abs(numeric - exact) / max(1.0, abs(exact))


if __name__ == "__main__":
    for p in PROBLEMS:
        n = p.quick[0][0]
        err = check_hand(p, n)
        print(f"{p.name:18s} {p.quick[0][1]:28s} relative error {err:.2e}"
              f"{'' if err < 1e-5 else '   <-- WRONG'}")
