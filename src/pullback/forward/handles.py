"""The handles of forward mode: what gives one function's tangent.

A ``ForwardDerivative`` transforms a user function once per abstract
signature and set of parameters with tangents (through the forward driver,
``driver.forward_jit``) and runs the tangent function; a ``CustomJVP``
(``pb.custom_jvp``) runs the user's own rule.  Both speak one protocol:
``bind(args, kwargs)``, ``call(args, wrt, tangents) -> (out, out_dot)`` and
``for_callers(mask)``, the function a call site runs.  ``forward.calls``
picks the handle of a callee (``forward_of``) and calls it.
"""
from __future__ import annotations

import functools
import inspect
import threading

import numpy as np

from ..call_layouts import Flat, flatten_call, is_variadic_signature
from ..own_code import refuse_own
from ..runtime import control, forward_support as support


class ForwardDerivative:
    """Tangent functions of one user function, one per abstract signature
    and set of parameters with tangents, cached."""

    #: The just-in-time driver of forward mode (``driver.forward_jit``), which
    #: sets itself here when it is imported (``import pullback`` imports it):
    #: a handle transforms itself through it, and this module imports no pass.
    driver = None

    def __init__(self, fun):
        refuse_own(fun, "forward")     # pullback's machinery is never transformed (own_code)
        self.fun = fun
        self.signature = inspect.signature(fun, follow_wrapped=False)
        self.params = list(self.signature.parameters)
        self.cache = {}
        self._callers = {}
        self._lock = threading.RLock()
        # *args, **kwargs or keyword-only parameters: each call is flattened to one
        # positional argument per value (``call_layouts.Layout``), as in reverse mode
        self.variadic = is_variadic_signature(self.signature)

    def bind(self, args, kwargs):
        if self.variadic:
            if isinstance(args, Flat) and not kwargs:
                return args
            return flatten_call(self.fun, self.signature, args, kwargs)
        if not kwargs and len(args) == len(self.params):
            return tuple(args)
        b = self.signature.bind(*args, **kwargs)
        b.apply_defaults()
        return tuple(b.arguments.values())

    def layout_of(self, args):
        """The layout of flattened ``args`` (None for a function whose
        parameters are all positional)."""
        return getattr(args, "layout", None) if self.variadic else None

    def specialize(self, args, wrt, has_aux=False):
        """The ``LoadedForward`` for ``args`` (``driver.forward_jit.specialize``)."""
        return self.driver.specialize(self, args, wrt, has_aux)

    def transform(self, args, wrt, has_aux=False):
        """A new tangent function for ``args`` (``driver.forward_jit.transform``)."""
        return self.driver.transform(self, args, wrt, has_aux)

    def call(self, args, wrt, tangents, has_aux=False):
        if any(_integral(args[i]) for i in wrt):
            # an integer carries no tangent (a residual's zero, under forward over reverse:
            # a helper's `axis`): its parameter is then not varied
            keep = [(i, t) for i, t in zip(wrt, tangents) if not _integral(args[i])]
            wrt, tangents = tuple(i for i, _ in keep), tuple(t for _, t in keep)
        loaded = self.specialize(args, wrt, has_aux)
        # the `with` blocks a `return` or an exception leaves are closed here, as
        # reverse mode's call_primal does (runtime.control)
        tracked = control.blocks_used
        depth, mark = (control.open_contexts(), control.entered_count()) if tracked \
            else (0, 0)
        try:
            out = loaded.jvp(*args, *tangents)
        except Exception as err:
            if tracked or control.blocks_used:
                if control.open_contexts() > depth:
                    control.close_contexts(depth, err)
                if control.entered_count() > mark:
                    control.take_entered(mark)
            loaded.annotate(err)
            raise
        if tracked or control.blocks_used:
            if control.open_contexts() > depth:
                control.close_contexts(depth)
            if control.entered_count() > mark:
                control.take_entered(mark)
        return out

    def for_callers(self, mask):
        """``fwd(tangents, *args, **kwargs) -> (out, out_dot)`` for call sites
        whose parameters ``mask`` (indices) carry the ``tangents``."""
        fwd = self._callers.get(mask)
        if fwd is None:
            def fwd(tangents, *args, **kwargs):
                return self.call(self.bind(args, kwargs), mask, tangents)
            fwd.__name__ = f"{getattr(self.fun, '__name__', 'callee')}_jvp"
            fwd.__pullback_forward__ = (self, mask)
            self._callers[mask] = fwd
        return fwd


def _integral(x):
    """``x`` is an integer, a boolean or None, or an array of integers or booleans."""
    if isinstance(x, np.ndarray):
        return x.dtype.kind in "biu"
    return x is None or isinstance(x, (int, np.integer, np.bool_))


class CustomJVP:
    """A function with a user-given forward rule, in JAX's shape::

        @pb.custom_jvp
        def f(x):
            return np.log1p(np.exp(x))

        @f.defjvp
        def f_jvp(primals, tangents):
            (x,), (t,) = primals, tangents
            y = f(x)
            return y, t / (1.0 + np.exp(-x))

    ``pb.jvp`` and forward mode use the rule; reverse mode (``pb.grad``,
    ``pb.vjp``) refuses the function, since it has no reverse rule.
    """

    __pullback_forward_only__ = True

    def __init__(self, fun):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.rule = None
        self.signature = inspect.signature(fun, follow_wrapped=False)
        self.params = list(self.signature.parameters)

    def defjvp(self, rule):
        self.rule = rule
        return rule

    def __call__(self, *args, **kwargs):
        return self.fun(*args, **kwargs)

    __call__.__pullback_forward_only__ = True   # (what reverse mode's dispatcher unwraps to)

    def bind(self, args, kwargs):
        b = self.signature.bind(*args, **kwargs)
        b.apply_defaults()
        return tuple(b.arguments.values())

    def call(self, args, wrt, tangents, has_aux=False):
        if self.rule is None:
            raise TypeError(f"custom_jvp function {self.__name__} has no rule yet: decorate "
                            f"its rule with @{self.__name__}.defjvp before differentiating.")
        given = dict(zip(wrt, tangents))
        full = tuple(given[i] if i in given else support.zeros_tangent(a)
                     for i, a in enumerate(args))
        got = self.rule(tuple(args), full)
        if not isinstance(got, tuple) or len(got) != 2:
            raise TypeError(f"The jvp rule of {self.__name__} must return a pair "
                            f"(primal_out, tangent_out), but returned {type(got).__name__}.")
        out, tangent = got
        if not has_aux and np.shape(tangent) != np.shape(out) \
                and not isinstance(out, (tuple, list, dict)):
            raise ValueError(f"The jvp rule of {self.__name__} returned a tangent of shape "
                             f"{np.shape(tangent)} for an output of shape {np.shape(out)}.")
        if has_aux:
            return out, support.output_tangent(tangent, out[0])
        return out, support.output_tangent(tangent, out)

    def for_callers(self, mask):
        def fwd(tangents, *args, **kwargs):
            return self.call(self.bind(args, kwargs), mask, tangents)
        return fwd
