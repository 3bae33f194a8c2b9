"""Forward mode: a function's tangent function, as a source transform.

For ``f(x, w)`` differentiated with respect to both, the transform writes
``f_jvp(x, w, x_dot, w_dot) -> (y, y_dot)``: the user's statements, each
followed by its tangent, loops and branches as they were (forward mode
needs no tape)::

    def f(x, w):                       def f_jvp(x, w, x_dot, w_dot):
        y = np.tanh(x @ w)                 xw = x @ w
        return np.sum(y)                   xw_dot = x_dot @ w + x @ w_dot
                                           y = np.tanh(xw)
                                           y_dot = xw_dot * (1.0 - y * y)
                                           out = np.sum(y)
                                           out_dot = np.sum(y_dot)
                                           return (out, output_tangent(out_dot, out))

Modules, one pass or concern each: ``rules`` (which forward rule a
statement takes), ``tangents`` (the pass), ``calls`` (user functions,
function values, ``custom_jvp``), ``support`` (run-time helpers of the
generated code), ``driver`` (pipeline and loading).
"""
import importlib

__all__ = ["CustomJVP", "forward_of", "jvp_call", "transform", "support"]

_WHERE = {"CustomJVP": "calls", "forward_of": "calls", "jvp_call": "calls",
          "transform": "driver"}


def __getattr__(name):
    # late: the rule modules import ``support`` while the registry is being
    # filled, before ``calls`` (which imports the dispatcher) can be imported
    if name in _WHERE:
        return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    if name == "support":
        return importlib.import_module(f"{__name__}.support")
    raise AttributeError(name)
