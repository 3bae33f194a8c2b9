"""Rules for Python's operators (the ``operator`` module) and their NumPy twins.

``a + b`` is keyed by ``operator.add``; the same rule serves ``np.add``.  The
bodies use only arithmetic, so on Python floats the adjoint stays plain
Python arithmetic and on arrays it is NumPy's.  Contributions have the
broadcast output's shape (``broadcasts=True``); the machinery sums them back
onto each operand's shape.

Complex numbers follow JAX: a holomorphic operation's rule is the real
formula, with no conjugation (``mul``: ``g * y``).

Builtin ``abs`` and ``operator.abs`` live in ``math_rules``; ``operator.getitem``
in ``numpy_linalg_shape``.  These rules assume numeric operands: list or tuple
concatenation (``xs + ys``) and repetition (``xs * 3``) need their own
handling in the machinery.

Before, an operator; after, its rule inlined in the adjoint:

>>> import numpy as np, pullback as pb
>>> from pullback.testing import adjoint_source, function_from_source
>>> f = function_from_source('''
... def f(x, y):
...     return x / y
... ''')
>>> print(adjoint_source(f, 3.0, 2.0))
def f_adjoint(residuals, out_bar):
    y, out, x = residuals
    x_bar = out_bar / y
    y_bar = -out_bar * out / y
    return (x_bar if type(x_bar) is float else project(x_bar, x), y_bar if type(y_bar) is float else project(y_bar, y))
>>> pb.grad(f, argnums=(0, 1))(3.0, 2.0)
(0.5, -0.75)
"""
import operator

import numpy as np

from pullback.rules.registry import jvp, nondifferentiable, vjp, multilinear
from pullback.runtime import matmul_lhs_grad, matmul_rhs_grad


@vjp(operator.add, np.add, broadcasts=True)
def add(g, ans, x, y):
    return g, g


@vjp(operator.sub, np.subtract, broadcasts=True)
def sub(g, ans, x, y):
    return g, -g


@vjp(operator.mul, np.multiply, broadcasts=True)
def mul(g, ans, x, y):
    return g * y, g * x


@vjp(operator.truediv, np.divide, broadcasts=True)
def truediv(g, ans, x, y):
    return g / y, -g * ans / y


@vjp(operator.mod, np.mod, np.fmod, broadcasts=True)
def mod(g, ans, x, y):
    # x mod y = x - n*y with n an integer constant between jumps, and
    # n = (x - ans) / y; this serves floor (%) and truncated (fmod) modulo alike
    return g, g * (ans - x) / y


@vjp(operator.pow, np.power, broadcasts=True)
def pow_(g, ans, x, y):
    # d/dx = y * x**(y - 1), written so that y == 0 gives 0 even at x == 0;
    # d/dy = x**y * log(x), taken as 0 at x == 0 (as JAX does)
    return (g * y * x ** (y - 1 + (y == 0)),
            g * ans * np.log(x + (x == 0)))


@vjp(np.float_power, broadcasts=True)
def float_power(g, ans, x1, x2):
    return (g * x2 * np.float_power(x1, x2 - 1 + (x2 == 0)),
            g * ans * np.log(x1 + (x1 == 0)))


@vjp(operator.matmul, np.matmul)
def matmul(g, ans, x1, x2):
    return matmul_lhs_grad(g, x1, x2), matmul_rhs_grad(g, x1, x2)


@vjp(operator.neg, np.negative)
def neg(g, ans, x):
    return -g


@vjp(operator.pos, np.positive)
def pos(g, ans, x):
    return g


# Piecewise constant or not numeric: their outputs carry no gradient.
nondifferentiable(
    operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne,
    operator.not_, operator.truth, operator.is_, operator.is_not,
    operator.contains, operator.countOf, operator.indexOf, operator.index,
    operator.length_hint,
    operator.and_, operator.or_, operator.xor, operator.invert, operator.inv,
    operator.lshift, operator.rshift,
    operator.floordiv, np.floor_divide,
)

# --- forward rules (the elementwise operators need none: see registry) ---

multilinear(operator.matmul, np.matmul)


@jvp(operator.pow, np.power)
def pow_jvp(t, ans, x, y):
    # the reverse rule read forwards, but the exponent's term is exactly 0 where its
    # tangent is: x**y * log(x) is NaN for x < 0, and a zero tangent times it must not be
    # (forward over reverse gives a helper's constant exponent, a residual, a zero tangent)
    # (the log's argument is 1 there too, so that no warning is raised for it)
    base = np.where(t == 0, 1.0, x + (x == 0))
    return (t * y * x ** (y - 1 + (y == 0)),
            np.where(t == 0, 0.0, t * ans * np.log(base)))


@jvp(np.float_power)
def float_power_jvp(t, ans, x1, x2):
    base = np.where(t == 0, 1.0, x1 + (x1 == 0))
    return (t * x2 * np.float_power(x1, x2 - 1 + (x2 == 0)),
            np.where(t == 0, 0.0, t * ans * np.log(base)))
