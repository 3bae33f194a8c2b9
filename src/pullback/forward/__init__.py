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
statement takes), ``tangents`` (the pass), ``rule_tangents`` (the pass's
tangents of rule calls: linear, multilinear, inlined), ``calls`` (which handle a
callee takes, function values), ``handles`` (user functions, ``custom_jvp``), ``jacobian`` (``pb.jacfwd``'s assembly of
columns).  Elsewhere, by stage: the steps run in order by
``pipeline.FORWARD_STEPS`` (front end, analyses and lowering as in reverse
mode), loaded by ``backend.loader.load_forward``, specialised per call
signature by ``driver.forward_jit``; the generated code's helpers are
``runtime.forward_support`` (and the forward rules' ``runtime.linalg_forward``,
``runtime.reduction_forward``); fused kernels' value-and-tangent calls are
``lowering.kernel_tangents``.
"""
