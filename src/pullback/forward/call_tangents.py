r"""Tangents of calls: forward mode's statement ``y = g(x)`` for a user
function, a function value, a fused kernel or a ``pb.checkpoint`` callee (a
part of the tangents pass, ``forward.tangents``, which mixes it in; it reads
the pass's names, activity and helpers through ``self``).

Before, a call of a user function; after, a call of its tangent function,
which returns the value and its tangent::

    y = g(x, w)                 y, y_dot = g_jvp((x_dot,), x, w)

A function value goes through ``forward.calls.dynamic_jvp`` (``y, y_dot =
dynamic_jvp(f, (0,), (x_dot,), x)``); a fused kernel through its
``for_forward`` (``y, y_dot = fused_tangent(x, w, (x_dot, w_dot))``).

>>> import numpy as np, pullback as pb
>>> from pullback.testing import function_from_source
>>> g = function_from_source("def g(v):\n    return v * v\n")
>>> f = function_from_source("def f(x):\n    return np.sum(g(x))\n", {"g": g})
>>> pb.jvp(f, (np.array([1.0, 2.0]),), (np.ones(2),))[1]
np.float64(6.0)
"""
from __future__ import annotations

import gast

from ..driver import dispatch
from ..errors import NonDifferentiableError
from ..ir.build import assign as _assign, call as _call, name as _name

__all__ = ["CallTangents"]


class CallTangents:
    """The tangents of the calls of the tangents pass (mixed into it)."""

    def call(self, stmt, op, t):
        active = [(p, n) for p, n in op.operands if n in self.active]
        if op.kind == "custom":
            from ..lowering.kernels import Kernel
            if isinstance(op.primitive, Kernel):
                return self.kernel_call(stmt, op, t, active)
            if getattr(op.primitive, "jvp_of", None) is not None:
                return self.user_call(stmt, op, t, active)    # pb.checkpoint, pb.forward
            if not active:
                return [stmt, _assign(self.dot(t), self.zero_of(_name(t)))]
            raise NonDifferentiableError(
                f"forward mode has no rule for {op.label}, a pb.custom_vjp function (it has "
                "a reverse rule only).", self.parsed.location(op.node),
                "Use pb.vjp or pb.grad for this function, or define the function with "
                "pb.custom_jvp and its defjvp rule.")
        if op.kind == "dynamic":
            return self.dynamic_call(stmt, op, t)
        return self.user_call(stmt, op, t, active)

    def user_call(self, stmt, op, t, active):
        """A call of a user function: its own tangent function."""
        if not active:
            return [stmt, _assign(self.dot(t), self.zero_of(_name(t)))]
        stmt.value = self.jvp_call(stmt.value, op, active)
        stmt.targets = [gast.Tuple(elts=[_name(t, True), _name(self.dot(t), True)],
                                   ctx=gast.Store())]
        self.assigned.setdefault(self.dot(t), []).append((self.depth, False))
        return [stmt]

    def jvp_call(self, call, op, active):
        """``call`` of a user function made a call of its tangent function."""
        from .calls import forward_of
        handle = forward_of(op.primitive)
        params = list(handle.params)
        mask = tuple(sorted({params.index(p) for p, _ in active}))
        by_index = {params.index(p): n for p, n in active}
        fn = handle.for_callers(mask)
        name = getattr(op.primitive, "__name__", "callee")
        callee = self.helper(f"{name}_jvp", fn)
        tangents = gast.Tuple(elts=[self.tangent_or_zero(_name(by_index[i])) for i in mask],
                              ctx=gast.Load())
        return gast.Call(func=_name(callee), args=[tangents] + call.args,
                         keywords=call.keywords)

    def kernel_call(self, stmt, op, t, active):
        """``y = fused(x, w)`` -> ``y, y_dot = fused_tangent(x, w, (x_dot, w_dot))``:
        the value and its tangent in one call (``lowering.kernel_tangents``)."""
        kernel = op.primitive
        names = dict(op.operands)
        mask = tuple(sorted(kernel.params.index(p) for p, _ in active))
        fn = kernel.for_forward(mask)
        stmt.value.func = _name(self.helper(fn.__name__, fn))
        stmt.value.args.append(gast.Tuple(
            elts=[_name(self.dot(names[kernel.params[i]])) for i in mask], ctx=gast.Load()))
        stmt.targets = [gast.Tuple(elts=[_name(t, True), _name(self.dot(t), True)],
                                   ctx=gast.Store())]
        out = [stmt]
        if t in self.written:
            out.append(_assign(self.dot(t), _call(self.support("owned_tangent"),
                                                  _name(self.dot(t)), _name(t))))
        # a new array (NumPy's t * partial, or JAX's, copied where the value
        # leaves the region: Kernel.copy_out): handed out without a copy
        self.assigned.setdefault(self.dot(t), []).append((self.depth, True))
        return out

    def dynamic_call(self, stmt, op, t):
        from . import calls
        where = self.parsed.location(op.node if op.node is not None else stmt)
        why = dispatch.refusal(op.primitive) if op.primitive is not None else None
        if why is not None and not calls.is_forward_callable(op.primitive):
            raise NonDifferentiableError(why[0], where, why[1])
        callee = op.bound["callee"]
        if isinstance(callee, gast.Name) and callee.id in self.varied:
            self.adjoints.check_function_value(callee.id, where)
        receiver = op.bound["receiver"]
        if receiver is not None and receiver.id in self.active \
                and self.kind(receiver.id).is_number:
            self.refuse_opaque(stmt, op)
        active = [(k, n) for k, n in op.operands if n in self.active]
        mask = gast.Tuple(elts=[gast.Constant(k, None) for k, _ in active], ctx=gast.Load())
        tangents = gast.Tuple(elts=[_name(self.dot(n)) for _, n in active], ctx=gast.Load())
        call = stmt.value
        if receiver is not None:
            head = [_name(receiver.id), gast.Constant(call.func.attr, None)]
            func = self.helper("dynamic_method_jvp", calls.dynamic_method_jvp)
        else:
            head = [call.func]
            func = self.helper("dynamic_jvp", calls.dynamic_jvp)
        stmt.value = gast.Call(func=_name(func), args=head + [mask, tangents] + call.args,
                               keywords=call.keywords)
        stmt.targets = [gast.Tuple(elts=[_name(t, True), _name(self.dot(t), True)],
                                   ctx=gast.Store())]
        self.assigned.setdefault(self.dot(t), []).append((self.depth, False))
        return [stmt]

    # -- refusals ----------------------------------------------------------------------

    def refuse_opaque(self, stmt, op):
        self.adjoints.adjoint_opaque(None, stmt, op, None, None)
