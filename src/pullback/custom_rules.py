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
        def primal(*args, **kwargs):
            return self.call_primal(self.bind(args, kwargs), mask)
        primal.__pullback_callee__ = (self, mask, inplace)   # describable (cache.describe)
        return primal, self.call_adjoint
