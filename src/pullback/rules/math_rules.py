"""Rules for the ``math`` module and for builtins (``abs``, ``pow``, ``max``...).

``math`` functions take and return Python floats, so their rules are written
with ``math`` functions and plain arithmetic: a scalar loop's adjoint stays
plain Python, with no NumPy call per operation.  Like the primal, these
formulas raise where Python float arithmetic raises: the derivative of
``math.sqrt`` at 0 divides by zero.

Static parameters (``math.log``'s ``base``, ``sum``'s ``start``) receive no
gradient; a call that passes a differentiated value there must be refused by
the machinery.

Before, calls of ``math`` functions; after, their rules inlined in the adjoint:

>>> import numpy as np, pullback as pb, math
>>> from pullback.testing import adjoint_source, function_from_source
>>> f = function_from_source('''
... def f(x):
...     return math.exp(x) * math.log(x)
... ''')
>>> print(adjoint_source(f, 2.0))
def f_adjoint(residuals, out_bar):
    log_x, exp_x, x = residuals
    exp_x_bar = out_bar * log_x
    log_x_bar = out_bar * exp_x
    x_bar = log_x_bar / (x * math.log(2.718281828459045))
    x_bar = x_bar + exp_x_bar * exp_x
    return (x_bar if type(x_bar) is float else project(x_bar, x),)
>>> x = 2.0
>>> math.isclose(pb.grad(f)(x), math.exp(x) * (math.log(x) + 1 / x))
True
"""
import copy
import math
import operator

import numpy as np

from pullback.rules.registry import facts, jvp, linear, nondifferentiable, vjp
from pullback.runtime.reduction_forward import builtin_max_jvp
from pullback.runtime import abs_grad, indexable, mapping_keys, select_grad, unsum
from pullback.runtime.gradient_stops import stop_gradient
from pullback.runtime.opaque_routes import items_cotangent

# --- exponentials, logarithms, powers ---


@vjp(math.exp)
def exp(g, ans, x):
    return g * ans


@vjp(math.exp2)
def exp2(g, ans, x):
    return g * ans * math.log(2.0)


@vjp(math.expm1)
def expm1(g, ans, x):
    return g * (ans + 1.0)


@vjp(math.log)
def log(g, ans, x, base=math.e):
    return g / (x * math.log(base))


@vjp(math.log1p)
def log1p(g, ans, x):
    return g / (1.0 + x)


@vjp(math.log2)
def log2(g, ans, x):
    return g / (x * math.log(2.0))


@vjp(math.log10)
def log10(g, ans, x):
    return g / (x * math.log(10.0))


@vjp(math.sqrt)
def sqrt(g, ans, x):
    return g / (2.0 * ans)


@vjp(math.cbrt)
def cbrt(g, ans, x):
    return g / (3.0 * ans * ans)


@vjp(math.pow)
def pow_(g, ans, x, y):
    # y == 0 gives 0 even at x == 0; d/dy at x == 0 is 0 (as JAX), NaN below
    return (g * y * math.pow(x, y - 1.0 + (y == 0)),
            g * ans * math.log(x) if x > 0 else g * (0.0 if x == 0 else math.nan))


@vjp(pow, broadcasts=True)
def builtin_pow(g, ans, base, exp, mod=None):
    # the same formulas as operator.pow, so arrays work too
    return (g * exp * base ** (exp - 1 + (exp == 0)),
            g * ans * np.log(base + (base == 0)))


# --- trigonometric and hyperbolic ---


@vjp(math.sin)
def sin(g, ans, x):
    return g * math.cos(x)


@vjp(math.cos)
def cos(g, ans, x):
    return -g * math.sin(x)


@vjp(math.tan)
def tan(g, ans, x):
    return g * (1.0 + ans * ans)


@vjp(math.asin)
def asin(g, ans, x):
    return g / math.sqrt(1.0 - x * x)


@vjp(math.acos)
def acos(g, ans, x):
    return -g / math.sqrt(1.0 - x * x)


@vjp(math.atan)
def atan(g, ans, x):
    return g / (1.0 + x * x)


@vjp(math.atan2)
def atan2(g, ans, y, x):
    return g * x / (x * x + y * y), -g * y / (x * x + y * y)


@vjp(math.sinh)
def sinh(g, ans, x):
    return g * math.cosh(x)


@vjp(math.cosh)
def cosh(g, ans, x):
    return g * math.sinh(x)


@vjp(math.tanh)
def tanh(g, ans, x):
    return g * (1.0 - ans * ans)


@vjp(math.asinh)
def asinh(g, ans, x):
    return g / math.sqrt(x * x + 1.0)


@vjp(math.acosh)
def acosh(g, ans, x):
    return g / math.sqrt(x * x - 1.0)


@vjp(math.atanh)
def atanh(g, ans, x):
    return g / (1.0 - x * x)


@vjp(math.degrees)
def degrees(g, ans, x):
    return g * (180.0 / math.pi)


@vjp(math.radians)
def radians(g, ans, x):
    return g * (math.pi / 180.0)


# --- special functions ---


@vjp(math.erf)
def erf(g, ans, x):
    return g * (2.0 / math.sqrt(math.pi)) * math.exp(-x * x)


@vjp(math.erfc)
def erfc(g, ans, x):
    return -g * (2.0 / math.sqrt(math.pi)) * math.exp(-x * x)


# --- sign, magnitude, remainders ---


@vjp(math.fabs)
def fabs(g, ans, x):
    # zero at x == 0 (the one-sided slopes split equally)
    return g * math.copysign(1.0, x) if x else 0.0 * g


@vjp(abs, operator.abs)
def abs_(g, ans, x):
    # g * sign(x); for complex x, g * conj(x) / |x|: grad |z|**2 = 2 conj(z)
    return abs_grad(g, x)


@vjp(math.copysign, nondiff=("y",))
def copysign(g, ans, x, y):
    return g * math.copysign(1.0, x) * math.copysign(1.0, y)


@vjp(math.hypot)
def hypot(g, ans, x, y):
    # at the origin 0 (np.hypot's, np.linalg.norm's)
    safe = ans or 1.0
    return g * x / safe, g * y / safe


@vjp(math.fmod, math.remainder)
def fmod(g, ans, x, y):
    # x - n*y with n = (x - ans) / y constant between jumps
    return g, g * (ans - x) / y


@vjp(math.ldexp, nondiff=("i",))
def ldexp(g, ans, x, i):
    return g * math.ldexp(1.0, i)


# --- conversions and builtins over sequences ---


@vjp(float)
def float_(g, ans, x):
    return g


@vjp(complex)
def complex_(g, ans, real, imag):
    # complex(x) with one argument does not bind: write x + 0j
    return g, 1j * g


@vjp(sum, math.fsum)
def sum_(g, ans, iterable, start=0):
    return unsum(g, iterable)


@vjp(tuple, list)
def sequence(g, ans, iterable):
    # tuple(x), list(x): one element per element of x (a tuple, list or array);
    # an iterator, consumed by now, by the identity of what it gave (runtime.opaque)
    return items_cotangent(iterable, ans, g)


@vjp(copy.copy, copy.deepcopy, nondiff=("memo",))
def copied(g, ans, x, memo=None):
    # a copy of a structure (dicts, lists, objects, arrays) is the same values:
    # the cotangent of each leaf goes to the leaf it was copied from
    return g


linear(copy.copy, copy.deepcopy)


@vjp(max, min)
def max_(g, ans, *args):
    # max(a, b, ...) or max(iterable): the winners share g equally
    return select_grad(g, ans, args)


@jvp(max, min)
def max_jvp(t, ans, *args):
    # one contribution per argument (t: that argument's tangent), winners sharing
    return builtin_max_jvp(t, ans, args)


# pow: the exponent's term is exactly 0 where its tangent is, as operators.pow_jvp's
@jvp(math.pow)
def math_pow_jvp(t, ans, x, y):
    return (t * y * math.pow(x, y - 1.0 + (y == 0)),
            t * ans * math.log(x) if x > 0 else (0.0 if x == 0 or t == 0 else math.nan))


@jvp(pow)
def builtin_pow_jvp(t, ans, base, exp, mod=None):
    safe = np.where(t == 0, 1.0, base + (base == 0))
    return (t * exp * base ** (exp - 1 + (exp == 0)),
            np.where(t == 0, 0.0, t * ans * np.log(safe)))


nondifferentiable(
    indexable, mapping_keys,
    math.floor, math.ceil, math.trunc, math.isnan, math.isinf, math.isfinite,
    math.isclose, math.factorial, math.gcd, math.lcm, math.comb, math.perm,
    math.isqrt,
    len, int, bool, round, range, isinstance, type, id, hash, str, repr, ord,
    chr,
    stop_gradient,          # pb.stop_gradient: a value with no gradient, by definition
)

# --- forward rules: math's functions are elementwise (their rules serve as they
# are); conversions and sums are linear ---

linear(float, complex, tuple, list)


@jvp(sum, math.fsum)
def sum_jvp(t, ans, iterable, start=0):
    # start is a constant: its tangent is zero
    return sum(t)


# -- facts (rules/registry.py: facts): the NumPy ufunc computing each on arrays ------
for _fn, _ufunc in (
        (math.sin, np.sin), (math.cos, np.cos), (math.tan, np.tan), (math.asin, np.arcsin),
        (math.acos, np.arccos), (math.atan, np.arctan), (math.atan2, np.arctan2),
        (math.sinh, np.sinh), (math.cosh, np.cosh), (math.tanh, np.tanh),
        (math.asinh, np.arcsinh), (math.acosh, np.arccosh), (math.atanh, np.arctanh),
        (math.exp, np.exp), (math.expm1, np.expm1), (math.log2, np.log2),
        (math.log10, np.log10), (math.log1p, np.log1p), (math.sqrt, np.sqrt),
        (math.fabs, np.fabs), (math.hypot, np.hypot), (math.degrees, np.degrees),
        (math.radians, np.radians), (math.pow, np.power), (abs, np.absolute),
        (operator.abs, np.absolute), (pow, np.power)):
    facts(_fn, math_twin=_ufunc)
for _name, _ufunc in (("exp2", np.exp2), ("cbrt", np.cbrt)):   # Python 3.11+
    if hasattr(math, _name):
        facts(getattr(math, _name), math_twin=_ufunc)
facts(abs, real_output=True)
facts(complex, complex_output=True)
