"""The rule registry: differentiation rules kept apart from the machinery.

A rule is an ordinary Python function that computes the contribution of an
output cotangent ``g`` to the cotangent of each differentiable input::

    @vjp(np.exp, math.exp)
    def exp(g, ans, x):
        return g * ans

Its first two parameters are always ``g`` (the cotangent of the output) and
``ans`` (the output itself); the rest mirror the primitive's own parameters,
with the primitive's names, so that a call's positional and keyword arguments
bind to them.  Parameters without a default are differentiable unless listed
in ``nondiff``; parameters with a default are static (``axis``, ``keepdims``).
With one differentiable parameter the rule returns its contribution, with
several a tuple in parameter order.

The compiler inlines the body of a rule into the generated adjoint (so the
adjoint reads like the math and costs no call per operation), substituting
the call's own names for the parameters; a test calls the same function
directly.  A body is a few assignments and one ``return``.

``broadcasts=True`` marks rules whose contributions have the output's shape
and must be summed back onto each input's shape (``a * b``, ``np.maximum``);
the machinery inserts that unbroadcast only where shapes may differ.

Forward mode reads the ``jvp`` field of a rule (``pullback.forward``).  An
elementwise rule needs none: its contribution ``g * partial`` is also the
tangent's, with the input's tangent in place of ``g``.  Otherwise it is
declared next to the rule, either as a function of the same shape whose
first parameter is the tangent ``t`` of one differentiable input (the
contribution to the output's tangent; summed over the active inputs)::

    @jvp(np.linalg.inv)
    def inv(t, ans, a):
        return -(ans @ t @ ans)

or, for a primitive that is linear, as ``linear(...)``: the tangent is the
primitive applied to the inputs' tangents (``np.sum(x_dot, axis=0)``);
``multilinear(...)`` for one linear in each input apart (``x_dot @ w +
x @ w_dot``).
"""
from __future__ import annotations

import dataclasses
import inspect
from typing import Callable

__all__ = ["Rule", "vjp", "jvp", "linear", "multilinear", "nondifferentiable", "lookup",
           "is_nondifferentiable", "RULES", "NONDIFF", "LINEAR", "MULTILINEAR", "ELEMENTWISE", "elementwise"]


@dataclasses.dataclass(frozen=True)
class Rule:
    """One registered differentiation rule."""

    fn: Callable
    name: str
    diff: tuple          # names of differentiable parameters, in return order
    params: tuple        # every parameter after (g, ans), in order
    broadcasts: bool
    signature: inspect.Signature
    jvp: object = None   # forward rule: a function (t, ans, ...), LINEAR, MULTILINEAR or None

    def bind(self, args, kwargs):
        """Bind a call's arguments to the rule's parameters (after g, ans).

        Returns an ``inspect.BoundArguments`` (defaults not applied) or raises
        ``TypeError`` as Python would for the primitive itself.
        """
        return self._call_signature.bind(*args, **kwargs)

    @property
    def _call_signature(self):
        ps = list(self.signature.parameters.values())[2:]
        return self.signature.replace(parameters=ps)


# Keys are the primitives themselves (np.exp, operator.add, math.sin); array
# methods and attributes are keyed by strings such as "ndarray.sum", "ndarray.T".
RULES: dict = {}
NONDIFF: set = set()


def vjp(*primitives, nondiff=(), broadcasts=False):
    """Register the decorated function as the rule of each primitive."""

    def register(fn):
        sig = inspect.signature(fn)
        names = list(sig.parameters)
        if names[:2] != ["g", "ans"]:
            raise ValueError(f"rule {fn.__name__} must start with (g, ans, ...)")
        params = tuple(names[2:])
        diff = tuple(
            n for n in params
            if sig.parameters[n].default is inspect.Parameter.empty
            and sig.parameters[n].kind in (inspect.Parameter.POSITIONAL_ONLY,
                                           inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                           inspect.Parameter.VAR_POSITIONAL)
            and n not in nondiff)
        rule = Rule(fn, fn.__name__, diff, params, broadcasts, sig)
        for p in primitives:
            RULES[p] = rule
        return fn

    return register


ELEMENTWISE = "elementwise"    # the reverse rule read forwards (g: the input's tangent)
LINEAR = "linear"              # the tangent is the primitive of the tangents
MULTILINEAR = "multilinear"    # ... of one input's tangent at a time, summed


def _set_forward(primitives, value):
    for p in primitives:
        rule = RULES.get(p)
        if rule is None:
            raise ValueError(f"{p!r} has no reverse rule to attach a forward rule to")
        RULES[p] = dataclasses.replace(rule, jvp=value)


def jvp(*primitives):
    """Register the decorated function as the forward rule of each primitive
    (registered with ``vjp`` first): ``(t, ans, <the primitive's parameters>)``
    returning the contribution of the tangent ``t`` of each differentiable
    parameter to the output's tangent (a tuple in parameter order, as ``vjp``)."""

    def register(fn):
        names = list(inspect.signature(fn).parameters)
        if names[:2] != ["t", "ans"]:
            raise ValueError(f"forward rule {fn.__name__} must start with (t, ans, ...)")
        _set_forward(primitives, fn)
        return fn

    return register


def linear(*primitives):
    """Declare primitives linear in their differentiable arguments together:
    the output's tangent is the primitive applied to their tangents."""
    _set_forward(primitives, LINEAR)


def multilinear(*primitives):
    """Declare primitives linear in each differentiable argument apart
    (``matmul``): one term per active argument, its tangent in its place."""
    _set_forward(primitives, MULTILINEAR)


def elementwise(*primitives):
    """Declare rules elementwise where forward mode cannot tell (methods, NumPy
    functions that are not ufuncs): their reverse rule serves forwards."""
    _set_forward(primitives, ELEMENTWISE)


def nondifferentiable(*primitives):
    """Declare primitives whose outputs carry no gradient (shape, argmax...)."""
    for p in primitives:
        NONDIFF.add(p)


def lookup(primitive):
    """The rule registered for ``primitive``, or None."""
    try:
        return RULES.get(primitive)
    except TypeError:  # unhashable callables have no rule
        return None


def is_nondifferentiable(primitive):
    try:
        return primitive in NONDIFF
    except TypeError:
        return False
