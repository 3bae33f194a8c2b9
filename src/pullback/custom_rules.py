"""``pb.custom_vjp``: a function with the user's own reverse rule.

``CustomVJP`` speaks the callee protocol of ``callees`` (``call_primal``,
``call_adjoint``, ``for_callers``): its primal runs the user's ``fwd``, its
adjoint the user's ``bwd``, whose cotangents are checked (one per argument,
of a shape that sums onto the argument's) and projected onto the arguments.
"""
from __future__ import annotations

import functools
import inspect

import numpy as np

from . import runtime
from .checks import sums_onto


class CustomVJP:
    """A function with a user-given rule, in JAX's shape::

        @pb.custom_vjp
        def f(x):
            return np.sin(x)

        def f_fwd(x):
            return np.sin(x), np.cos(x)        # output, residuals

        def f_bwd(cos_x, g):
            return (g * cos_x,)                 # one cotangent per argument

        f.defvjp(f_fwd, f_bwd)
    """

    def __init__(self, fun):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.fwd = None
        self.bwd = None
        self.params = list(inspect.signature(fun, follow_wrapped=False).parameters)

    def defvjp(self, fwd, bwd):
        self.fwd, self.bwd = fwd, bwd
        return self

    def __call__(self, *args, **kwargs):
        return self.fun(*args, **kwargs)

    def bind(self, args, kwargs):
        b = inspect.signature(self.fun, follow_wrapped=False).bind(*args, **kwargs)
        b.apply_defaults()
        return tuple(b.arguments.values())

    def _check(self):
        if self.fwd is None:
            raise TypeError(f"custom_vjp function {self.__name__} has no rule yet: call "
                            f"{self.__name__}.defvjp(fwd, bwd) before differentiating it.")

    def call_primal(self, args, wrt, has_aux=False, inplace=None):
        self._check()
        out, res = self.fwd(*args)
        return out, (res, args)

    def call_adjoint(self, res, ct):
        r, args = res
        grads = self.bwd(r, ct)
        if not isinstance(grads, tuple) or len(grads) != len(args):
            raise TypeError(
                f"The bwd rule of {self.__name__} must return a tuple with one cotangent "
                f"per argument ({len(args)}), but returned {type(grads).__name__}"
                + (f" of length {len(grads)}" if isinstance(grads, tuple) else "") + ".")
        for i, (g, a) in enumerate(zip(grads, args)):
            if g is not None and not sums_onto(np.shape(g), np.shape(a)):
                raise ValueError(
                    f"The bwd rule of {self.__name__} returned a cotangent of shape "
                    f"{np.shape(g)} for argument {i}, which has shape {np.shape(a)}. "
                    f"Return one of the argument's shape (or one that broadcasts from it).")
        return tuple(None if g is None else runtime.project(g, a)
                     for g, a in zip(grads, args))

    def for_callers(self, mask, inplace=True):
        return _callers_pair(self, mask, inplace)


#: ``pb.vjp``, which ``api`` installs when it is imported (it imports this
#: module; importing it here would close a ring)
_api_vjp = [None]


class TransposedJVP:
    """Reverse mode of a ``pb.custom_jvp`` function (as JAX's): its rule's
    tangent map ``t -> rule(primals, t)[1]`` is linear, and the cotangents of
    the arguments are its transpose applied to the output's cotangent, which
    ``pb.vjp`` of the rule with respect to the tangents computes exactly (the
    rule is the user's own Python, transformed like any function)::

        @pb.custom_jvp                              pb.grad(lambda x: np.sum(softplus(x)))
        def softplus(x): ...                        ->  vjp of t -> t / (1 + exp(-x)) at x
        @softplus.defjvp
        def _(primals, tangents): ...

    The primal runs the function itself; ``call_adjoint`` runs the rule's
    reverse transform once per call (cached per rule, as any function)."""

    def __init__(self, custom):
        self.custom = custom
        self.fun = custom.fun
        self.__name__ = getattr(custom, "__name__", "custom_jvp")
        self.params = custom.params

    def bind(self, args, kwargs):
        return self.custom.bind(args, kwargs)

    def call_primal(self, args, wrt, has_aux=False, inplace=None):
        if self.custom.rule is None:
            raise TypeError(f"custom_jvp function {self.__name__} has no rule yet: decorate "
                            f"its rule with @{self.__name__}.defjvp before differentiating.")
        return self.fun(*args), (tuple(args), tuple(wrt))

    def call_adjoint(self, res, ct):
        from .runtime import forward_support as support
        vjp = _api_vjp[0]
        args, wrt = res
        wrt = [i for i in wrt if isinstance(i, int) and 0 <= i < len(args)
               and np.issubdtype(np.result_type(args[i]), np.inexact)]
        tangents = tuple(support.zeros_tangent(a) for a in args)
        # (the user's rule itself, its primals bound: pullback's own code is never
        # transformed)
        (out, _), back = vjp(functools.partial(self.custom.rule, tuple(args)), tangents)
        (grads,) = back((support.zeros_tangent(out), ct))
        cotangents = [None] * len(args)
        for i in wrt:
            cotangents[i] = runtime.project(grads[i], args[i])
        return tuple(cotangents)

    def for_callers(self, mask, inplace=True):
        return _callers_pair(self, mask, inplace)


def transposed(custom):
    """The reverse handle of the ``pb.custom_jvp`` function ``custom`` (one per function)."""
    handle = getattr(custom, "_pullback_transposed", None)
    if handle is None:
        handle = TransposedJVP(custom)
        custom._pullback_transposed = handle
    return handle


def _callers_pair(handle, mask, inplace):
    """The (primal, adjoint) pair a call site of ``handle`` (a ``CustomVJP`` or
    a ``TransposedJVP``) runs: the primal binds the call's arguments."""
    def primal(*args, **kwargs):
        return handle.call_primal(handle.bind(args, kwargs), mask)
    primal.__pullback_callee__ = (handle, mask, inplace)   # describable (cache.describe)
    return primal, handle.call_adjoint
