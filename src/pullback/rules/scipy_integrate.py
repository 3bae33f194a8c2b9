"""The adjoint rule of ``scipy.integrate.odeint`` (registered only when SciPy imports).

Gradients with respect to the initial state ``y0``, the output times ``t``
and the extra ``args`` come from the adjoint ODE, solved backward with
``odeint`` itself (``runtime.odeint_grad``); the integrator's internals are
never differentiated (JAX's and autograd's approach).  The vector field
``func`` is a user function: its vjp at each step comes from pullback
itself, through the dispatcher that differentiates calls of function values
(``driver.jit._field_vjp``, through ``dispatch.dynamic_call``).  Before/after::

    ys = odeint(f, y0, t, args=(theta,))
                                 y0_bar, t_bar, args_bar = odeint_grad(ys_bar, ys, f, y0, t, ...)
                                 theta_bar = args_bar[0]

Conventions (JAX's): the cotangent of ``t[i]`` (``i > 0``) is
``ys_bar[i] . f(ys[i], t[i])``; ``t[0]``'s gathers the rest.  The backward
solve uses the forward call's ``rtol``/``atol``/``mxstep`` (odeint's
defaults otherwise), so gradients are as accurate as the tolerances;
``full_output=True`` and complex states are refused.  ``Dfun`` and the
other solver options change only how the primal is solved.
"""
import scipy.integrate as integrate

from pullback.rules.scipy_common import vjp_diff
from pullback.runtime import odeint_grad


@vjp_diff(integrate.odeint, diff=("y0", "t", "args"))
def odeint(g, ans, func, y0, t, args=(), Dfun=None, col_deriv=0, full_output=0, ml=None,
           mu=None, rtol=None, atol=None, tcrit=None, h0=0.0, hmax=0.0, hmin=0.0, ixpr=0,
           mxstep=0, mxhnil=0, mxordn=12, mxords=5, printmessg=0, tfirst=False):
    grads = odeint_grad(g, ans, func, y0, t, args, rtol, atol, mxstep, tfirst, full_output)
    return grads[0], grads[1], grads[2]

