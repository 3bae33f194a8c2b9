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
in ``nondiff``; parameters with a default are static (``axis``, ``keepdims``)
unless listed in ``optional`` (``np.diff``'s ``prepend``: differentiable when given).
With one differentiable parameter the rule returns its contribution, with
several a tuple in parameter order.

The compiler inlines the body of a rule into the generated adjoint (so the
adjoint reads like the math and costs no call per operation), substituting
the call's own names for the parameters; a test calls the same function
directly.  A body is a few assignments and one ``return``.

``discrete=("b",)`` marks static parameters that take only discrete values
(an index, a key): a value derived from the inputs there is piecewise
constant, so its derivative is zero where it has one, and the machinery
does not refuse it as a lost gradient (as it does for ``axis`` or
``math.log``'s ``base``).

``broadcasts=True`` marks rules whose contributions have the output's shape
and must be summed back onto each input's shape (``a * b``, ``np.maximum``);
the machinery inserts that unbroadcast only where shapes may differ.

What the registry holds for a primitive, and what a test can check of it:

>>> import numpy as np
>>> rule = lookup(np.mean)
>>> rule.name, rule.diff, rule.params, rule.broadcasts
('mean', ('a',), ('a', 'axis', 'dtype', 'keepdims'), False)
>>> rule.fn(np.float64(1.0), np.float64(2.0), np.array([1.0, 3.0]))   # g, ans, a
array([0.5, 0.5])
>>> lookup(np.where).diff, is_nondifferentiable(np.shape)
(('x', 'y'), True)

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

What the analyses know of a function besides its rule is declared beside the
registration with ``facts(...)`` (the analyses hold no table of NumPy names)::

    @vjp(np.tanh)
    def tanh(g, ans, x): ...
    facts(np.tanh, kernel=True)            # a fused kernel may hold it: jnp.tanh
    facts(np.absolute, holomorphic=False)  # forward tangents refuse complex values
    facts(math.sin, math_twin=np.sin)      # math.sin of an array element is np.sin
    facts(np.reshape, view=True, shape="reshape")

A function without facts has the documented default (see ``facts``): not fused,
holomorphic, no ``math`` twin, its result neither known fresh nor a view.
Adding a function is one registration with its facts and one test case.
"""
from __future__ import annotations

import dataclasses
import inspect

import numpy as np
from typing import Callable

__all__ = ["Rule", "vjp", "jvp", "linear", "multilinear", "elementwise", "nondifferentiable",
           "lookup", "is_nondifferentiable", "RULES", "NONDIFF", "LINEAR", "MULTILINEAR",
           "ELEMENTWISE_JVP", "register_lazily", "load_lazy", "Elementwise",
           "declare_elementwise", "declared_elementwise", "ELEMENTWISE"]


@dataclasses.dataclass(frozen=True)
class Rule:
    """One registered differentiation rule."""

    fn: Callable
    name: str
    diff: tuple[str, ...]      # names of differentiable parameters, in return order
    params: tuple[str, ...]    # every parameter after (g, ans), in order
    broadcasts: bool
    signature: inspect.Signature
    discrete: tuple[str, ...] = ()  # static parameters whose values are discrete (indices, keys)
    jvp: object = None   # forward rule: a function (t, ans, ...), LINEAR, MULTILINEAR,
    #                      ELEMENTWISE_JVP or None

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


def vjp(*primitives, nondiff=(), broadcasts=False, discrete=(), optional=()):
    """Register the decorated function as the rule of each primitive.

    ``optional`` names parameters with a default that are differentiable
    when a call passes them (``np.diff``'s ``prepend`` and ``append``)."""

    def register(fn):
        sig = inspect.signature(fn)
        names = list(sig.parameters)
        if names[:2] != ["g", "ans"]:
            raise ValueError(f"rule {fn.__name__} must start with (g, ans, ...)")
        params = tuple(names[2:])
        diff = tuple(
            n for n in params
            if n in optional or sig.parameters[n].default is inspect.Parameter.empty
            and sig.parameters[n].kind in (inspect.Parameter.POSITIONAL_ONLY,
                                           inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                           inspect.Parameter.VAR_POSITIONAL)
            and n not in nondiff)
        rule = Rule(fn, fn.__name__, diff, params, broadcasts, sig, tuple(discrete))
        for p in primitives:
            RULES[p] = rule
        return fn

    return register


# (not ``ELEMENTWISE`` below, the ufuncs from other packages fused kernels may hold)
ELEMENTWISE_JVP = "elementwise"  # the reverse rule read forwards (g: the input's tangent)
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
    _set_forward(primitives, ELEMENTWISE_JVP)


def nondifferentiable(*primitives):
    """Declare primitives whose outputs carry no gradient (shape, argmax...)."""
    for p in primitives:
        NONDIFF.add(p)


@dataclasses.dataclass(frozen=True)
class Elementwise:
    """How fused kernels spell a ufunc outside NumPy (``scipy.special.gammaln``):
    ``numpy`` is its dotted name for the NumPy path, ``jax`` the function JAX
    computes the same with; ``holomorphic`` whether a complex region may fuse it."""

    numpy: str
    jax: str
    holomorphic: bool = False


# ufuncs from other packages that fused kernels may hold: a ufunc with a rule
# declared here is elementwise (``analyses.purity``) and rendered by these names
ELEMENTWISE: dict = {}


def declare_elementwise(ufunc, numpy, jax, holomorphic=False):
    """Declare ``ufunc`` (with a rule, one output) pure and elementwise, spelled
    ``numpy`` and ``jax`` in fused kernels' NumPy and JAX code."""
    ELEMENTWISE[ufunc] = Elementwise(numpy, jax, holomorphic)


def declared_elementwise(prim):
    """The ``Elementwise`` declared for ``prim``, or None."""
    try:
        return ELEMENTWISE.get(prim)
    except TypeError:
        return None


# -- a function's facts, declared beside its rule ---------------------------------
#
# The analyses read these (never a table of NumPy names of their own):
#   KERNEL    NumPy ufunc names a fused kernel may hold (elementwise; jax.numpy
#             has a function of the same name), or a primitive -> its kernel name
#   NOT_HOLOMORPHIC  elementwise primitives whose derivative is not complex-linear
#   MATH_TWIN a ``math``/builtin function -> the NumPy ufunc computing it on arrays
#   FRESH     results that are a new array, never aliasing an argument (mutation)
#   OWNED     results the adjoint may own and write in place (reverse.adjoints)
#   VIEWS     results that may be a view of the first argument (mutation)
#   REDUCTIONS   a scalar when ``axis`` is None (analyses.kinds)
#   REAL_OUTPUT  real-valued functions of possibly complex values (analyses.kinds)
#   COMPLEX_OUTPUT  functions whose values may be complex for real arguments (np.fft.fft:
#             True, always; np.linalg.eig: None, depending on the values) (analyses.kinds)
#   SAME_KIND / FLAT / RESHAPES  the result keeps the argument's shape and dtype /
#             has one axis / has the axes of the ``shape`` written (analyses.kinds)
#   NEW_ARRAYS   ``np.zeros(shape)`` and ``np.zeros_like(a)`` and friends (analyses.kinds)
#   WRITES_INTO  functions that write into an argument: refused (analyses.ops)
# A primitive not declared has the documented default: not elementwise,
# holomorphic, no ``math`` twin, in none of the tables.
KERNEL_UFUNCS: set = set()
KERNEL_NAMES: dict = {}
NOT_HOLOMORPHIC: set = set()
MATH_TWIN: dict = {}
FRESH: set = set()
OWNED: set = set()
VIEWS: set = set()
REDUCTIONS: set = set()
REAL_OUTPUT: set = set()
COMPLEX_OUTPUT: dict = {}
SAME_KIND: set = set()
FLAT: set = set()
RESHAPES: set = set()
NEW_ARRAYS: set = set()
WRITES_INTO: set = set()
_SHAPES = {"same": SAME_KIND, "flat": FLAT, "reshape": RESHAPES, "new": NEW_ARRAYS}
_DECLARED: set = set()


def facts(*primitives, kernel=None, holomorphic=None, math_twin=None, fresh=None,
          owned=None, view=None, reduction=None, real_output=None, shape=None,
          writes_into=None, complex_output=None):
    """Declare the facts of ``primitives`` (functions, or ``"ndarray.name"``
    for methods and attributes) beside their registration.

    ``kernel``: True for a ufunc a fused kernel may hold under its own name,
    or the name (``"where"``); ``holomorphic=False``: its derivative is not
    complex-linear; ``math_twin``: the NumPy ufunc computing this ``math``
    function on arrays; ``fresh``: its result is a new array; ``owned``: the
    adjoint may write into its result; ``view``: its result may be a view;
    ``reduction``: a scalar when ``axis`` is None; ``real_output``: real for
    complex arguments; ``complex_output``: complex for real arguments, True
    (always) or ``"maybe"`` (depending on the values: ``np.linalg.eig``);
    ``shape``: ``"same"``, ``"flat"``, ``"reshape"`` or ``"new"`` (see the
    tables above); ``writes_into``: writes into an argument."""
    if shape is not None and shape not in _SHAPES:
        raise ValueError(f"facts: shape={shape!r}, expected one of {sorted(_SHAPES)}")
    for prim in primitives:
        _DECLARED.add(prim)
        if kernel is True:
            KERNEL_UFUNCS.add(prim.__name__)
        elif kernel:
            KERNEL_NAMES[prim] = kernel
        if holomorphic is False:
            NOT_HOLOMORPHIC.add(prim)
        if math_twin is not None:
            MATH_TWIN[prim] = math_twin
        if shape is not None:
            _SHAPES[shape].add(prim)
        if complex_output is not None:
            COMPLEX_OUTPUT[prim] = True if complex_output is True else None
        for flag, table in ((fresh, FRESH), (owned, OWNED), (view, VIEWS),
                            (reduction, REDUCTIONS), (real_output, REAL_OUTPUT),
                            (writes_into, WRITES_INTO)):
            if flag:
                table.add(prim)


def has_facts(primitive):
    """Whether ``primitive``'s facts were declared with ``facts(...)``."""
    try:
        return primitive in _DECLARED or primitive in ELEMENTWISE
    except TypeError:
        return False


def kernel_name(prim):
    """The name a fused kernel calls ``prim`` by (``np.``/``jnp.`` prefixed)."""
    if isinstance(prim, np.ufunc):
        return prim.__name__
    return KERNEL_NAMES[prim]


# optional packages (SciPy) whose rules are registered the first time a lookup
# misses while the package is imported: `import pullback` does not pay for them
_LAZY: dict = {}


def register_lazily(package, load):
    """Call ``load()`` (which registers rules) once, the first time a lookup
    misses while ``package`` is imported."""
    _LAZY[package] = load


def load_lazy():
    """Register the rules of every lazily registered package now imported."""
    import sys
    loaded = False
    for package in [p for p in _LAZY if p in sys.modules]:
        load = _LAZY.pop(package, None)       # once, even with threads racing here
        if load is not None:
            load()
            loaded = True
    return loaded


def lookup(primitive):
    """The rule registered for ``primitive``, or None."""
    try:
        rule = RULES.get(primitive)
    except TypeError:  # unhashable callables have no rule
        return None
    if rule is None and _LAZY and load_lazy():
        rule = RULES.get(primitive)
    return rule


def is_nondifferentiable(primitive):
    try:
        if primitive in NONDIFF:
            return True
    except TypeError:
        return False
    return bool(_LAZY) and load_lazy() and primitive in NONDIFF
