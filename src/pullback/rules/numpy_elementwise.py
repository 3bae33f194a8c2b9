"""Rules for NumPy's elementwise functions (ufuncs and friends).

Each rule reads like the derivative: ``exp``: ``g * ans``.  Holomorphic
functions use the real formula on complex input too (JAX's convention, no
conjugation); the branch of each formula matches NumPy's principal branch.
Constants are Python floats (``math.log(2.0)``, not ``np.log(2.0)``) so that
float32 stays float32 under NumPy's promotion rules.

``np.add``, ``np.multiply``, ``np.power`` and the other arithmetic ufuncs share
the rules of the Python operators in ``operators``.  ``np.modf``'s integral
part and ``np.frexp``'s exponent are piecewise constant; ``np.ldexp``'s
exponent is an integer.

Before, an elementwise function; after, its rule inlined in the adjoint:

>>> import numpy as np, pullback as pb
>>> from pullback.testing import adjoint_source, function_from_source
>>> f = function_from_source('''
... def f(x):
...     return np.sum(np.tanh(x))
... ''')
>>> print(adjoint_source(f, np.array([0.0, 1.0])))
def f_adjoint(residuals, out_bar):
    tanh_x, x = residuals
    tanh_x_bar = unreduce(out_bar, tanh_x)
    x_bar = tanh_x_bar * (1.0 - tanh_x * tanh_x)
    return (project(x_bar, x),)
>>> x = np.array([0.0, 1.0])
>>> np.allclose(pb.grad(f)(x), 1 - np.tanh(x) ** 2)
True
"""
import math

import numpy as np

from pullback.rules.registry import elementwise, facts, jvp, linear, nondifferentiable, vjp
from pullback.runtime.reduction_forward import angle_jvp as angle_jvp_helper
from pullback.runtime import abs_grad, clip_grad, result_part, tie_share

# --- exponentials and logarithms ---


@vjp(np.exp)
def exp(g, ans, x):
    return g * ans


@vjp(np.exp2)
def exp2(g, ans, x):
    return g * ans * math.log(2.0)


@vjp(np.expm1)
def expm1(g, ans, x):
    return g * (ans + 1.0)


@vjp(np.log)
def log(g, ans, x):
    return g / x


@vjp(np.log2)
def log2(g, ans, x):
    return g / (x * math.log(2.0))


@vjp(np.log10)
def log10(g, ans, x):
    return g / (x * math.log(10.0))


@vjp(np.log1p)
def log1p(g, ans, x):
    return g / (1.0 + x)


@vjp(np.logaddexp, broadcasts=True)
def logaddexp(g, ans, x1, x2):
    return g * np.exp(x1 - ans), g * np.exp(x2 - ans)


@vjp(np.logaddexp2, broadcasts=True)
def logaddexp2(g, ans, x1, x2):
    return g * np.exp2(x1 - ans), g * np.exp2(x2 - ans)


# --- powers and roots ---


@vjp(np.sqrt)
def sqrt(g, ans, x):
    return g / (2.0 * ans)


@vjp(np.cbrt)
def cbrt(g, ans, x):
    return g / (3.0 * ans * ans)


@vjp(np.square)
def square(g, ans, x):
    return 2.0 * g * x


@vjp(np.reciprocal)
def reciprocal(g, ans, x):
    return -g * ans * ans


@vjp(np.hypot, broadcasts=True)
def hypot(g, ans, x1, x2):
    # at the origin 0, as np.linalg.norm's (a subgradient, not 0/0)
    safe = np.where(ans == 0, 1, ans)
    return g * x1 / safe, g * x2 / safe


# --- trigonometric and hyperbolic ---


@vjp(np.sin)
def sin(g, ans, x):
    return g * np.cos(x)


@vjp(np.cos)
def cos(g, ans, x):
    return -g * np.sin(x)


@vjp(np.tan)
def tan(g, ans, x):
    return g * (1.0 + ans * ans)


@vjp(np.arcsin)
def arcsin(g, ans, x):
    return g / np.sqrt(1.0 - x * x)


@vjp(np.arccos)
def arccos(g, ans, x):
    return -g / np.sqrt(1.0 - x * x)


@vjp(np.arctan)
def arctan(g, ans, x):
    return g / (1.0 + x * x)


@vjp(np.arctan2, broadcasts=True)
def arctan2(g, ans, x1, x2):
    # ans = angle of the point (x2, x1)
    return g * x2 / (x1 * x1 + x2 * x2), -g * x1 / (x1 * x1 + x2 * x2)


@vjp(np.sinh)
def sinh(g, ans, x):
    return g * np.cosh(x)


@vjp(np.cosh)
def cosh(g, ans, x):
    return g * np.sinh(x)


@vjp(np.tanh)
def tanh(g, ans, x):
    return g * (1.0 - ans * ans)


@vjp(np.arcsinh)
def arcsinh(g, ans, x):
    return g / np.sqrt(x * x + 1.0)


@vjp(np.arccosh)
def arccosh(g, ans, x):
    # sqrt(x - 1) * sqrt(x + 1), not sqrt(x*x - 1): the same for real x > 1,
    # and the right branch for complex x in the left half plane
    return g / (np.sqrt(x - 1.0) * np.sqrt(x + 1.0))


@vjp(np.arctanh)
def arctanh(g, ans, x):
    return g / (1.0 - x * x)


@vjp(np.deg2rad, np.radians)
def deg2rad(g, ans, x):
    return g * (math.pi / 180.0)


@vjp(np.rad2deg, np.degrees)
def rad2deg(g, ans, x):
    return g * (180.0 / math.pi)


# --- absolute value, complex parts ---


@vjp(np.abs)
def absolute(g, ans, x):
    # g * sign(x); for complex x, g * conj(x) / |x|: grad |z|**2 = 2 conj(z)
    return abs_grad(g, x)


@vjp(np.fabs)
def fabs(g, ans, x):
    return g * np.sign(x)


@vjp(np.real, "ndarray.real")
def real(g, ans, val):
    # Re dz pairs with a real r as Re(r dz)
    return np.real(g)


@vjp(np.imag, "ndarray.imag")
def imag(g, ans, val):
    # Im dz = Re(-1j dz)
    return -1j * np.real(g)


@vjp(np.conjugate, "ndarray.conj", "ndarray.conjugate")
def conjugate(g, ans, x):
    return np.conj(g)


@vjp(np.angle)
def angle(g, ans, z, deg=False):
    # d angle(z) = Im(dz / z) = Re(-1j dz / z)
    return -1j * np.real(g) / z * (180.0 / math.pi if deg else 1.0)


@jvp(np.angle)
def angle_jvp(t, ans, z, deg=False):
    # Im(dz / z): not complex-linear, so not the reverse rule read forwards
    return angle_jvp_helper(t, ans, z, deg)


# --- selection: ties split equally (JAX's policy) ---


@vjp(np.maximum, np.minimum, np.fmax, np.fmin, broadcasts=True)
def maximum(g, ans, x1, x2):
    # the argument equal to ans wins; on a tie each gets half (fmax/fmin
    # return the non-NaN argument, which is then the one equal to ans)
    return tie_share(g, ans, x1, x2), tie_share(g, ans, x2, x1)


@vjp(np.clip, broadcasts=True)
def clip(g, ans, a, a_min, a_max):
    # clip = minimum(maximum(a, a_min), a_max); a None bound gets None
    return (clip_grad(g, ans, a, a_min, a_max, "a"),
            clip_grad(g, ans, a, a_min, a_max, "a_min"),
            clip_grad(g, ans, a, a_min, a_max, "a_max"))


@vjp(np.where, nondiff=("condition",), broadcasts=True, discrete=("condition",))
def where(g, ans, condition, x, y):
    # the untaken branch gets an exact zero; if its own derivative is
    # infinite there (np.where(x > 0, np.log(x), 0) at x == 0), the chain
    # rule still gives 0 / 0 = NaN, as in JAX
    return np.where(condition, g, 0), np.where(condition, 0, g)


# --- a number's parts: x = frac + int (modf), x = mantissa * 2**exponent (frexp) ---


@vjp(np.modf)
def modf(g, ans, x):
    # the integral part is piecewise constant
    return result_part(g, ans, 0)


@vjp(np.frexp)
def frexp(g, ans, x):
    # the exponent is an integer, piecewise constant: mantissa = x * 2**-exponent
    return np.ldexp(result_part(g, ans, 0), -ans[1])


@vjp(np.ldexp, nondiff=("x2",), broadcasts=True, discrete=("x2",))
def ldexp(g, ans, x1, x2):
    return np.ldexp(g, x2)


# --- constant fills: the fill value gets the sum of g ---


@vjp(np.full_like, nondiff=("a",), broadcasts=True)
def full_like(g, ans, a, fill_value, dtype=None, order="K", subok=True, shape=None):
    return g


@vjp(np.full, nondiff=("shape",), broadcasts=True)
def full(g, ans, shape, fill_value, dtype=None, order="C"):
    return g


nondifferentiable(
    # rounding, sign, predicates: piecewise constant or boolean
    np.floor, np.ceil, np.round, np.around, np.rint, np.trunc, np.fix,
    np.sign, np.signbit, np.heaviside, np.isnan, np.isinf, np.isfinite,
    np.isneginf, np.isposinf, np.isreal, np.iscomplex, np.isclose,
    np.allclose, np.array_equal, np.any, np.all,
    np.greater, np.greater_equal, np.less, np.less_equal, np.equal,
    np.not_equal, np.logical_and, np.logical_or, np.logical_not,
    np.logical_xor, np.bitwise_and, np.bitwise_or, np.bitwise_xor,
    np.invert, np.left_shift, np.right_shift,
    # integer results
    np.argmax, np.argmin, np.argsort, np.argwhere, np.nonzero,
    np.flatnonzero, np.count_nonzero, np.searchsorted,
    np.shape, np.ndim, np.size, np.iscomplexobj, np.isrealobj,
    # constants that ignore their argument's values
    np.zeros_like, np.ones_like, np.empty_like, np.zeros, np.ones, np.empty,
    np.eye, np.identity, np.arange,
)

# --- forward rules: the elementwise rules above serve forward mode as they are
# (the input's tangent in place of g); these are linear, or not ufuncs ---

linear(np.real, "ndarray.real", np.imag, "ndarray.imag", np.conjugate, "ndarray.conj",
       "ndarray.conjugate", np.full_like, np.full)
elementwise(np.ldexp)


@jvp(np.modf)
def modf_jvp(t, ans, x):
    # (a name: a tuple returned would read as one term per differentiable parameter)
    parts = (t + np.zeros_like(ans[0]), np.zeros_like(ans[1]))
    return parts


@jvp(np.frexp)
def frexp_jvp(t, ans, x):
    parts = (np.ldexp(t, -ans[1]), np.zeros_like(ans[1]))
    return parts


# -- facts (rules/registry.py: facts) ----------------------------------------------
# ufuncs a fused kernel may hold: their rules (or their lack of a gradient) are
# elementwise, and jax.numpy has a function of the same name
facts(*(getattr(np, _name) for _name in """
    add subtract multiply divide true_divide floor_divide remainder mod fmod power
    float_power negative positive absolute fabs sign exp exp2 expm1 log log2 log10
    log1p logaddexp logaddexp2 sqrt cbrt square reciprocal hypot sin cos tan arcsin
    arccos arctan arctan2 sinh cosh tanh arcsinh arccosh arctanh deg2rad rad2deg
    degrees radians maximum minimum fmax fmin floor ceil trunc rint signbit
    isnan isinf isfinite greater greater_equal less less_equal equal not_equal
    logical_and logical_or logical_not logical_xor copysign heaviside conjugate
""".split()), kernel=True)
facts(np.where, kernel="where", fresh=True, owned=True)
facts(np.clip, kernel="clip")
# elementwise, derivative not complex-linear: a forward tangent through them is
# wrong for complex values (abs, real part, ...)
facts(np.absolute, np.fabs, np.conjugate, np.sign, np.maximum, np.minimum, np.fmax,
      np.fmin, np.clip, np.hypot, np.arctan2, np.copysign, np.heaviside, holomorphic=False)
# constructors: a new array
facts(np.zeros, np.ones, np.zeros_like, np.ones_like, np.full, np.full_like, np.array,
      fresh=True, owned=True)
facts(np.empty, np.empty_like, np.eye, np.identity, np.arange, fresh=True)
facts(np.real, np.imag, view=True)
# real-valued functions of possibly complex values: their gradient is projected
# onto the reals before it flows on (JAX's convention)
facts(np.real, np.imag, np.absolute, np.angle, "ndarray.real", "ndarray.imag",
      real_output=True)
facts(np.clip, "ndarray.clip", shape="same")
facts(np.modf, np.frexp, np.ldexp, fresh=True)
facts(np.zeros, np.ones, np.empty, np.full, np.zeros_like, np.ones_like, np.empty_like,
      np.full_like, shape="new")
# functions that write into an argument (refused)
facts(np.copyto, np.put, np.place, np.putmask, np.fill_diagonal, np.put_along_axis,
      np.random.shuffle, writes_into=True)
