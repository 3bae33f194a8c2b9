"""Calls generated code makes into pullback itself: a callee known only at
run time (``dynamic_call``, ``dynamic_method_call``, ``dynamic_adjoint``)
and a callee's handle (``derivative_of``, which an artifact's code uses).

Picking a dynamic callee's derivative needs the compiler, which the runtime
never imports: the just-in-time driver installs its dispatcher here
(``driver.jit``, when ``pullback`` is imported), and ``callees`` installs
``derivative_of``.  Generated code and artifacts import only
``pullback.runtime``, and importing it imports ``pullback``, so both hooks
are in place before generated code runs::

    y, y_res = dynamic_call(fn, (0,), True, x)        # primal: y = fn(x)
    fn_grads = dynamic_adjoint(y_res, y_bar)          # adjoint
    x_bar = fn_grads[0]

>>> import numpy as np, pullback
>>> y, res = dynamic_call(np.sin, (0,), True, 0.0)
>>> y, dynamic_adjoint(res, 1.0)
(np.float64(0.0), (1.0,))
"""
from __future__ import annotations

__all__ = ["dynamic_call", "dynamic_method_call", "dynamic_adjoint", "derivative_of"]

#: Set by ``install``: ``"dispatcher"`` -> a function returning the
#: dispatcher (``driver.dispatch``), ``"derivative_of"`` -> ``callees.derivative_of``,
#: ``"writes_variant"`` -> ``frontend.written.variant``.
_HOOKS = {}


def install(**hooks):
    """Install the compiler's side of these calls (see the module docstring)."""
    _HOOKS.update(hooks)


def _hook(name):
    hook = _HOOKS.get(name)
    if hook is None:
        raise RuntimeError(f"pullback's {name} is not installed: import pullback before "
                           "running generated code")
    return hook


def dynamic_call(callee, mask, inplace, *args, **kwargs):
    """``callee(*args, **kwargs)`` and the residual its adjoint needs."""
    return _hook("dispatcher")().dynamic_call(callee, mask, inplace, *args, **kwargs)


def dynamic_method_call(obj, name, mask, inplace, *args, **kwargs):
    """``obj.name(*args, **kwargs)``; ``-1`` in ``mask``: ``obj`` carries a gradient."""
    return _hook("dispatcher")().dynamic_method_call(obj, name, mask, inplace, *args, **kwargs)


def dynamic_adjoint(res, ct):
    """One cotangent per entry of the call's ``mask``."""
    plan, r = res
    return plan.adjoint(r, ct)


def derivative_of(fun, writes=False):
    """The handle that differentiates ``fun`` (``callees.derivative_of``);
    with ``writes``, ``fun``'s variant that also returns the new values of
    the arguments it writes into (``frontend.written.variant``)."""
    if writes:
        fun = _hook("writes_variant")(fun)
    return _hook("derivative_of")(fun)
