"""``pb.check_grads``: a function's derivatives checked along random
directions, in JAX's manner (``jax.test_util.check_grads``).

- ``"fwd"``: ``jvp(f, x, t)`` against the central difference
  ``(f(x + eps t) - f(x - eps t)) / (2 eps)``;
- ``"rev"``: ``vjp`` against the same difference through the identity
  ``<t, vjp(ct)> == <ct, df(t)>`` (with both modes, also against ``jvp``);
- ``order=2``: the same checks of the derivative functions themselves
  (``(x, t) -> jvp(f, x, t)`` and ``x -> vjp(f, x)(ct)``), as JAX does;
  for ``f`` returning one array or scalar the latter is the gradient of
  ``Re <ct, f(x)>`` (the same function of ``x``, conjugated where complex),
  so derivatives of gradients check it.

Complex values follow JAX's convention (``vjp`` unconjugated): the inner
product is ``Re <a, b>`` and the cotangent side is conjugated on the way in
and out.  The directions come from a generator seeded with 0, so a check
is the same on every run.  ``AssertionError`` names the mode, the order and
the largest error.

>>> import numpy as np
>>> def jvp(f, xs, ts): return f(*xs), 2.0 * ts[0]        # wrong: d(x**2) = 2x dx
>>> try:
...     check_grads(lambda x: x ** 2, (3.0,), 1, ("fwd",), None, None, None, jvp=jvp,
...                 vjp=None)
... except AssertionError as err:
...     print(str(err).splitlines()[0])
check_grads: order 1, mode 'fwd' (JVP): the tangent disagrees with central differences
"""
from __future__ import annotations

import itertools

import numpy as np

from . import runtime

__all__ = ["check_grads"]

_counter = itertools.count()

#: atol and rtol by dtype (the loosest of a check's inputs and outputs wins)
TOLERANCE = {np.dtype(np.float16): 1e-2, np.dtype(np.float32): 2e-3,
             np.dtype(np.float64): 1e-5, np.dtype(np.complex64): 2e-3,
             np.dtype(np.complex128): 1e-5}
#: step of the central differences by dtype
STEP = {np.dtype(np.float16): 1e-2, np.dtype(np.float32): 1e-3,
        np.dtype(np.float64): 1e-5, np.dtype(np.complex64): 1e-3,
        np.dtype(np.complex128): 1e-5}


def check_grads(f, args, order, modes, atol, rtol, eps, *, jvp, vjp, grad=None):
    """See the module docstring (``pb.check_grads``'s arguments, and the
    ``jvp``, ``vjp`` and ``grad`` to check)."""
    if not isinstance(args, (tuple, list)):
        raise TypeError(f"check_grads takes the arguments as a tuple (as JAX): "
                        f"pb.check_grads(f, (x,), order=1), not a {type(args).__name__}.")
    if isinstance(order, bool) or not isinstance(order, int) or order < 1:
        raise ValueError(f"order must be a positive int, got {order!r}.")
    if isinstance(modes, str):
        modes = (modes,)
    modes = tuple(modes)
    if not modes or any(m not in ("fwd", "rev") for m in modes):
        raise ValueError(f"modes must name 'fwd', 'rev' or both, got {modes!r}.")
    _Checker(jvp, vjp, grad, modes, atol, rtol, eps).run(f, tuple(args), order, [])


class _Checker:
    def __init__(self, jvp, vjp, grad, modes, atol, rtol, eps):
        self.jvp, self.vjp, self.grad, self.modes = jvp, vjp, grad, modes
        self.atol, self.rtol, self.eps = atol, rtol, eps
        self.rng = np.random.default_rng(0)

    def run(self, f, args, order, of):
        if "fwd" in self.modes:
            self.check_jvp(f, args, ["JVP"] + of)
            if order > 1:
                t = self.direction(args)
                jvp = self.jvp

                def f_jvp(primals, tangents):
                    return jvp(f, primals, tangents)
                f_jvp.__pullback_user_code__ = True     # differentiated again (own_code)
                self.run(f_jvp, (args, t), order - 1, ["JVP"] + of)
        if "rev" in self.modes:
            self.check_vjp(f, args, ["VJP"] + of)
            if order > 1 and any(_has_inexact(a) for a in args):
                self.run(self.pulled(f, args), args, order - 1, ["VJP"] + of)

    def pulled(self, f, args):
        """``x -> vjp(f, x)(ct)`` for a random ``ct`` (the arguments with
        floats only).  For a real scalar ``f``, ``grad(f)`` (that up to the
        factor ``ct``); for an array, ``grad`` of ``Re <ct, f(x)>`` (the
        same, conjugated where complex): a gradient, which pullback can
        differentiate again."""
        vjp = self.vjp
        out = f(*args)
        keep = tuple(i for i, a in enumerate(args) if _has_inexact(a))
        if self.grad is not None and not np.ndim(out) \
                and isinstance(out, (float, np.floating)):
            return self.grad(f, argnums=keep)
        ct = self.direction(out)
        if self.grad is not None and _inexact(out):
            return self.grad(_scalarized(f, ct, len(args)), argnums=keep)

        def f_vjp(*xs):
            _, back = vjp(f, *xs)
            grads = back(ct)
            return tuple(grads[i] for i in keep)
        f_vjp.__pullback_user_code__ = True     # differentiated again (own_code)
        return f_vjp

    # -- the two checks ---------------------------------------------------------------

    def check_jvp(self, f, args, label):
        t = self.direction(args)
        atol, rtol, eps = self.tolerances(args, f(*args))
        out, out_dot = self.jvp(f, args, t)
        self.close(out, f(*args), atol, rtol, label, "fwd",
                   "the value jvp returns differs from the function's")
        self.close(out_dot, self.difference(f, args, t, eps), atol, rtol, label, "fwd",
                   "the tangent disagrees with central differences")

    def check_vjp(self, f, args, label):
        out, back = self.vjp(f, *args)
        t = self.direction(args)
        ct = self.direction(out)
        atol, rtol, eps = self.tolerances(args, out)
        pulled = back(_conj(ct))
        lhs = _inner(t, _conj(tuple(pulled)))
        rhs = _inner(self.difference(f, args, t, eps), ct)
        scale = _scale(t) * _scale(ct)
        self.close(lhs, rhs, atol * scale, rtol, label, "rev",
                   "<t, vjp(ct)> disagrees with <ct, central difference along t>")
        if "fwd" in self.modes:
            _, out_dot = self.jvp(f, args, t)
            self.close(lhs, _inner(out_dot, ct), atol * scale, rtol, label, "rev",
                       "<t, vjp(ct)> disagrees with <ct, jvp(t)>")

    # -- pieces -----------------------------------------------------------------------

    def direction(self, tree):
        """A random tree like ``tree``: normal entries where it holds floats
        (complex ones where complex), zeros (or None) elsewhere."""
        def leaf(x):
            if not _inexact(x):
                return runtime.zeros_like(x) if isinstance(x, (int, np.ndarray, np.generic)) \
                    and not isinstance(x, (bool, np.bool_)) else None
            shape, dtype = np.shape(x), np.result_type(x)
            d = self.rng.standard_normal(shape)
            if dtype.kind == "c":
                d = d + 1j * self.rng.standard_normal(shape)
            d = np.asarray(d, dtype=dtype)
            if isinstance(x, np.ndarray):
                return d
            if isinstance(x, np.generic):
                return d[()]
            return complex(d) if isinstance(x, complex) else float(d)
        return _map(leaf, tree)

    def difference(self, f, args, t, eps):
        plus = f(*_map2(lambda x, d: x if d is None or not _inexact(x) else x + eps * d,
                        args, t))
        minus = f(*_map2(lambda x, d: x if d is None or not _inexact(x) else x - eps * d,
                         args, t))
        return _map2(lambda a, b: (np.asarray(a) - np.asarray(b)) / (2 * eps)
                     if _inexact(a) else None, plus, minus)

    def tolerances(self, args, out):
        dtypes = [np.result_type(x) for x in _leaves((args, out)) if _inexact(x)]
        loose = max((TOLERANCE.get(d, 1e-5) for d in dtypes), default=1e-5)
        step = max((STEP.get(d, 1e-5) for d in dtypes), default=1e-5)
        return (loose if self.atol is None else self.atol,
                loose if self.rtol is None else self.rtol,
                step if self.eps is None else self.eps)

    def close(self, actual, expected, atol, rtol, label, mode, what):
        worst, allowed, where = 0.0, 0.0, None
        a_leaves, e_leaves = list(_leaves(actual)), list(_leaves(expected))
        if len(a_leaves) != len(e_leaves):
            self.fail(label, mode, f"{what}: {len(a_leaves)} values against "
                      f"{len(e_leaves)} expected")
        for k, (a, e) in enumerate(zip(a_leaves, e_leaves)):
            if e is None or a is None:
                continue
            a, e = np.asarray(a), np.asarray(e)
            if a.shape != e.shape:
                self.fail(label, mode, f"{what}: shape {a.shape} against {e.shape}")
            if not a.size:
                continue
            with np.errstate(invalid="ignore"):
                err = np.abs(a - e)
                bound = atol + rtol * np.abs(e)
            bad = ~(err <= bound)
            if bad.any():
                j = np.flatnonzero(bad.reshape(-1))[np.argmax(
                    (err - bound).reshape(-1)[bad.reshape(-1)])]
                e_j, b_j = float(err.reshape(-1)[j]), float(bound.reshape(-1)[j])
                if where is None or e_j > worst:
                    worst, allowed, where = e_j, b_j, (k, j, a.reshape(-1)[j],
                                                       e.reshape(-1)[j])
        if where is not None:
            k, j, got, expected_j = where
            self.fail(label, mode, f"{what}: max error {worst:.3g} where {allowed:.3g} is "
                      f"allowed (atol {atol:.3g}, rtol {rtol:.3g}); output leaf {k}, "
                      f"element {j}: {got!r} against {expected_j!r}")

    def fail(self, label, mode, message):
        order = len(label)
        kind = " of ".join(label)
        head, _, rest = message.partition(": ")
        raise AssertionError(f"check_grads: order {order}, mode '{mode}' ({kind}): {head}\n"
                             f"{rest}" if rest else
                             f"check_grads: order {order}, mode '{mode}' ({kind}): {head}")


def _scalarized(f, ct, n):
    """``Re <ct, f(x0, ..., x{n-1})>`` as a function with its source (so that
    pullback differentiates it, and its gradient again)."""
    from .backend import codegen
    params = ", ".join(f"x{i}" for i in range(n))
    text = (f"def scalarized({params}):\n"
            f"    return np.sum(np.real(np.conj(ct) * f({params})))\n")
    filename = f"<pullback check_grads {next(_counter)}>"
    codegen.register_source(filename, text)
    ns = {"np": np, "f": f, "ct": ct, "__name__": "pullback_check_grads"}
    exec(compile(text, filename, "exec"), ns)
    return ns["scalarized"]


# -- trees ------------------------------------------------------------------------------

def _inexact(x):
    if isinstance(x, (bool, np.bool_)):
        return False
    if isinstance(x, (float, complex)):
        return True
    return isinstance(x, (np.ndarray, np.generic)) and x.dtype.kind in "fc"


def _has_inexact(x):
    return any(_inexact(v) for v in _leaves(x))


def _leaves(tree):
    if runtime.is_structure(tree):
        for _, v in runtime.fields_of(tree):
            yield from _leaves(v)
    else:
        yield tree


def _map(fn, tree):
    if runtime.is_structure(tree):
        return runtime.rebuild_like(tree, {k: _map(fn, v) for k, v in runtime.fields_of(tree)})
    return fn(tree)


def _map2(fn, a, b):
    if runtime.is_structure(a):
        bs = dict(runtime.fields_of(b)) if runtime.is_structure(b) else {}
        return runtime.rebuild_like(a, {k: _map2(fn, v, bs.get(k))
                                        for k, v in runtime.fields_of(a)})
    return fn(a, b)


def _conj(tree):
    return _map(lambda x: None if x is None else np.conj(x) if _inexact(x) else x, tree)


def _inner(a, b):
    """``Re <a, b>`` summed over the leaves both trees hold."""
    total = 0.0
    for x, y in zip(_leaves(a), _leaves(b)):
        if x is None or y is None or not (_inexact(x) or _inexact(y)):
            continue
        total += float(np.real(np.vdot(np.asarray(x).reshape(-1), np.asarray(y).reshape(-1))))
    return total


def _scale(tree):
    """The size of a random direction (so atol scales with the inner product)."""
    return max(1.0, float(np.sqrt(sum(np.sum(np.abs(np.asarray(x)) ** 2)
                                      for x in _leaves(tree) if x is not None
                                      and _inexact(x)))))
