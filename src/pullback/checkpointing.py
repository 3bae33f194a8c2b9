"""Two callee handles whose reverse rule pullback makes from the function
itself: ``Checkpoint`` (``pb.checkpoint``) and ``ForwardPartials``
(``pb.forward``).

Both speak ``custom_rules.CustomVJP``'s protocol (``call_primal``,
``call_adjoint``, ``for_callers``), so the reverse pass, the run-time
dispatcher and the compiled artifacts take them as they take a
``custom_vjp``: a static call becomes a call of their primal and adjoint,
a call of a value (``pb.checkpoint(step)(x, w)`` inside a loop) goes
through the dispatcher.  Forward mode sees through both: the tangent of
such a call is the function's own (``jvp_of``).

``Checkpoint``: the primal keeps only the arguments; the adjoint runs the
function's transformed primal again to get its residuals, then its
adjoint.  Memory traded for one more primal run::

    # before: y, y_res = step_primal(x, w)      y_res: every value step's adjoint reads
    # after:  y, y_res = checkpoint_step_primal(x, w)      y_res: (x, w)

``ForwardPartials``: the primal runs the function's tangent function once
per scalar input (a unit tangent each) and keeps the partial derivatives
(or, with ``store=False``, the arguments, and the adjoint computes the
partials then); the adjoint multiplies the output's cotangent by them.

>>> import numpy as np
>>> def f(x, y):
...     return x * np.sin(y)
>>> fwd = ForwardPartials(f)
>>> out, res = fwd.call_primal((2.0, 0.0), (0, 1))
>>> float(out), fwd.call_adjoint(res, 1.0)
(0.0, (0.0, 2.0))
"""
from __future__ import annotations

import inspect
import types
import weakref

import numpy as np

from . import runtime
from .callees import Derivative, derivative_of
from .custom_rules import CustomVJP
from .forward import jacobian

__all__ = ["Checkpoint", "ForwardPartials", "checkpoint_of", "forward_partials_of"]


def _check_params(fun, api):
    if not callable(fun):
        raise TypeError(f"{api} expects a function, got {fun!r} (a {type(fun).__name__}).")
    if isinstance(fun, CustomVJP) or getattr(fun, "__pullback_forward_only__", False):
        raise TypeError(f"{api} takes a plain function; {getattr(fun, '__name__', fun)} has "
                        "a rule of its own already (pb.custom_vjp, pb.custom_jvp, "
                        "pb.checkpoint or pb.forward): apply it to the function inside.")
    try:
        sig = inspect.signature(fun, follow_wrapped=False)
    except (TypeError, ValueError):
        return
    odd = [p.name for p in sig.parameters.values()
           if p.kind not in (p.POSITIONAL_OR_KEYWORD, p.POSITIONAL_ONLY)]
    if odd:
        raise TypeError(f"{api} needs a function whose parameters are all positional; "
                        f"{getattr(fun, '__qualname__', fun)} has "
                        + ", ".join(f"`{n}`" for n in odd) + " (*args, **kwargs or "
                        "keyword-only). Wrap it: `def step(x, w): return f(x, w, k=1)`.")


class _Made(CustomVJP):
    """A callee whose reverse rule pullback makes from ``fun`` (see the
    module docstring); ``jvp_of``: what forward mode differentiates instead."""

    prefix = "made"

    def __init__(self, fun, api):
        _check_params(fun, api)
        super().__init__(fun)
        # `checkpoint_step_primal` in the generated source says what the call is
        self.__name__ = f"{self.prefix}_{getattr(fun, '__name__', 'callee')}"
        self.jvp_of = fun
        self.fwd = self.bwd = None
        self._writes_checked = False

    def _refuse_writer(self):
        """A ``fun`` that writes into its arguments changes the caller's
        arrays, which a call through this handle would not follow (a call by
        name goes to the function's variant, frontend.writes): refused, once
        per handle, when it is first called."""
        if self._writes_checked:
            return
        from .frontend.written import written_params
        from .errors import UnsupportedSyntaxError
        written = written_params(self.fun) if isinstance(self.fun, types.FunctionType) else {}
        if written:
            name, p = self.fun.__name__, next(iter(written))
            api = "pb.checkpoint" if isinstance(self, Checkpoint) else "pb.forward"
            raise UnsupportedSyntaxError(
                f"`{name}` writes into its argument `{p}`, and {api} cannot follow that "
                "change to the caller's array.",
                hint=f"Make `{name}` return the new `{p}` instead of writing into it, or call "
                     f"it without {api}.")
        self._writes_checked = True

    def defvjp(self, fwd, bwd):
        raise TypeError(f"{self.__name__} gets its rule from pullback; give a function "
                        "a rule of your own with pb.custom_vjp instead.")

    def _check(self):
        # asked for by code that would run a custom_vjp's fwd and bwd as
        # functions (derivatives of derivatives): there are none to run
        from .errors import NonDifferentiableError
        api = "pb.checkpoint" if isinstance(self, Checkpoint) else "pb.forward"
        raise NonDifferentiableError(
            f"{self.__name__} ({api}) has no fwd and bwd functions to differentiate again.",
            hint=f"For derivatives of derivatives, call {getattr(self.fun, '__name__', 'it')} "
                 f"without {api}.")

    def bind(self, args, kwargs):
        if not kwargs and len(args) == len(self.params):
            return tuple(args)              # the common call: no signature binding
        return super().bind(args, kwargs)

    def for_callers(self, mask, inplace=True):
        def primal(*args, **kwargs):
            return self.call_primal(self.bind(args, kwargs), mask, inplace=inplace)
        primal.__pullback_callee__ = (self, mask, inplace)   # describable (cache.describe)
        return primal, self.call_adjoint


class Checkpoint(_Made):
    """``pb.checkpoint(fun)``: the adjoint recomputes ``fun``'s primal."""

    prefix = "checkpoint"

    def __init__(self, fun):
        super().__init__(fun, "pb.checkpoint")

    @property
    def inner(self):
        return derivative_of(self.fun)

    @property
    def fresh_cotangents(self):
        # a transformed function's adjoint hands back gradients of its own
        return isinstance(self.inner, Derivative)

    def call_primal(self, args, wrt, has_aux=False, inplace=None):
        self._refuse_writer()
        inner = self.inner
        replay = _Replay(self.fun, args)
        out, _ = inner.call_primal(args, wrt, has_aux, inplace)    # residuals dropped here
        replay.first = _summary(out)
        return out, (args, wrt, has_aux, inplace, replay)

    def call_adjoint(self, res, ct):
        args, wrt, has_aux, inplace, replay = res
        inner = self.inner
        out, again = replay.again(self, lambda: inner.call_primal(args, wrt, has_aux, inplace))
        return inner.call_adjoint(again, ct)


class ForwardPartials(_Made):
    """``pb.forward(fun, store)``: partial derivatives by forward mode, one
    tangent per scalar input; the adjoint multiplies."""

    prefix = "forward"
    fresh_cotangents = True

    def __init__(self, fun, store=True):
        super().__init__(fun, "pb.forward")
        self.store = bool(store)

    def call_primal(self, args, wrt, has_aux=False, inplace=None):
        self._refuse_writer()
        args = tuple(args)
        if has_aux:
            raise TypeError(f"{self.__name__}: pb.forward takes no has_aux.")
        if self.store:
            out, partials = self.partials(args, wrt)
            return out, (args, wrt, partials)
        from .forward.calls import forward_of
        forward_of(self.fun).specialize(args, self._wrt(args, wrt))   # refusals come now
        replay = _Replay(self.fun, args)
        out = self.fun(*args)
        _check_output(self, out)
        replay.first = _summary(out)
        return out, (args, wrt, replay)

    def call_adjoint(self, res, ct):
        args, wrt, partials = res
        if isinstance(partials, _Replay):
            _, partials = partials.again(self, lambda: self.partials(args, wrt))
        grads = [None] * len(args)
        for i in wrt:
            if i not in partials:           # an integer: no partials, a zero
                grads[i] = runtime.zeros_like(args[i])
        for i, parts in partials.items():
            pieces = [(path, runtime.project(_contract(ct, jac, leaf), leaf))
                      for path, leaf, jac in parts]
            grads[i] = jacobian.rebuild(args[i], pieces)
        return tuple(grads)

    def _wrt(self, args, wrt):
        from .checks import is_inexact
        return tuple(i for i in wrt if is_inexact(args[i]))

    def _tangent_runner(self):
        """``run(args, wrt, tangents) -> (out, out_dot)``: the function's own
        tangent function for a plain function (no call binding on each run),
        else forward mode's dispatcher (partials, bound methods...)."""
        from .forward.calls import forward_of, jvp_call
        from .forward.handles import CustomJVP
        if isinstance(self.fun, (types.FunctionType, CustomJVP)):
            return forward_of(self.fun).call
        return lambda args, wrt, tangents: jvp_call(self.fun, args, {}, wrt, tangents,
                                                    top=True)

    def partials(self, args, wrt):
        """``fun(*args)`` and, per argument in ``wrt``, ``(path, leaf, jac)``
        for each of its leaves: ``jac[..., k]`` is the output's derivative
        along the leaf's ``k``-th element (along its real and imaginary
        parts for a complex leaf: the gradient's convention, JAX's)."""
        wrt = self._wrt(args, wrt)
        tangent_run = self._tangent_runner()
        replay = _Replay(self.fun, args)

        def run(args, wrt, tangents):
            # each run draws what the first drew (dropout: one mask for every partial)
            if replay.first is not None:
                replay.rewind()
            o, o_dot = tangent_run(args, wrt, tangents)
            if replay.first is None:
                replay.first = _summary(o)
            else:
                replay.check(self, o)
            return o, o_dot
        zeros = {i: runtime.zeros_like(args[i]) for i in wrt}
        out, done = None, False
        partials = {}
        for i in wrt:
            parts = []
            for path, leaf in jacobian.leaves(args[i]):
                cols = []
                directions = (1, 1j) if np.iscomplexobj(leaf) else (1,)
                for k in range(int(np.size(leaf))):
                    col = 0
                    for d in directions:
                        t = _unit(leaf, k, d)
                        tangents = tuple(jacobian.with_leaf(zeros[j], path, t) if j == i
                                         else zeros[j] for j in wrt)
                        o, o_dot = run(args, wrt, tangents)
                        if not done:
                            _check_output(self, o)
                            out, done = o, True
                        # d = 1j: the imaginary direction enters as -i (JAX's gradient)
                        col = col + (o_dot if d == 1 else -1j * np.asarray(o_dot))
                    cols.append(col)
                jac = np.stack([np.asarray(c) for c in cols], axis=-1) if cols \
                    else np.zeros(np.shape(out) + (0,))
                parts.append((path, leaf, jac))
            partials[i] = parts
        if not done:
            out = self.fun(*args)
            _check_output(self, out)
        return out, partials


class _Replay:
    """What a second run of ``fun`` in the adjoint must see as the first run
    did (issue 13: dropout in a checkpointed block drew another mask, and the
    gradient was the other mask's, silently): the states of the random
    generators it may draw from (NumPy's global one; Generators, RandomStates
    and BitGenerators among its arguments, globals and closure), rewound for
    the second run and put back after it; then the second run's output must
    be the first's (a summary of it), or the call is refused."""

    def __init__(self, fun, args):
        self.generators = _generators(fun, args)
        self.states = [_state(g) for g in self.generators]
        self.first = None

    def rewind(self):
        for g, state in zip(self.generators, self.states):
            _set_state(g, state)

    def again(self, handle, run):
        now = [_state(g) for g in self.generators]
        self.rewind()
        try:
            result = run()
        finally:
            for g, state in zip(self.generators, now):
                _set_state(g, state)
        self.check(handle, result[0])
        return result

    def check(self, handle, out):
        if not _same_summary(self.first, _summary(out)):
            from .errors import NonDifferentiableError
            api = "pb.checkpoint" if isinstance(handle, Checkpoint) else "pb.forward"
            name = getattr(handle.fun, "__name__", "the function")
            raise NonDifferentiableError(
                f"{api}: `{name}` gave another result when its adjoint ran it again (it "
                "reads a random generator pullback does not see, or state that changed "
                "since), so the gradient would belong to another result.",
                hint=f"Draw the random numbers outside `{name}` and pass them in, or pass the "
                     f"generator as an argument; or call `{name}` without {api}.")


_GENERATORS = (np.random.Generator, np.random.RandomState, np.random.BitGenerator)


def _generators(fun, args):
    found = [np.random.get_state.__self__]          # NumPy's global RandomState
    seen = list(args)
    code = getattr(fun, "__code__", None)
    if code is not None:
        names = getattr(fun, "__globals__", {})
        seen += [names[n] for n in code.co_names if n in names]
        for cell in getattr(fun, "__closure__", None) or ():
            try:
                seen.append(cell.cell_contents)
            except ValueError:                      # an empty cell
                pass
    for value in seen:
        if isinstance(value, _GENERATORS) and not any(value is g for g in found):
            found.append(value)
    return found


def _state(g):
    return g.get_state() if isinstance(g, np.random.RandomState) else (
        g.bit_generator.state if isinstance(g, np.random.Generator) else g.state)


def _set_state(g, state):
    if isinstance(g, np.random.RandomState):
        g.set_state(state)
    elif isinstance(g, np.random.Generator):
        g.bit_generator.state = state
    else:
        g.state = state


def _summary(out):
    """Shapes and two sums (plain, and weighted by position) of the float
    leaves of ``out``: a second run that computed something else differs."""
    if isinstance(out, (list, tuple)):
        return [s for v in out for s in _summary(v)]
    if isinstance(out, dict):
        return [s for v in out.values() for s in _summary(v)]
    if isinstance(out, (bool, np.bool_)) or not isinstance(
            out, (np.ndarray, np.generic, float, complex, int)):
        return []
    flat = np.asarray(out).ravel()
    if flat.dtype.kind not in "fc":
        return []
    weights = np.cos(0.7 * np.arange(flat.size)) + 2.0
    return [(np.shape(out), complex(np.sum(flat)), complex(np.dot(weights, flat)))]


def _same_summary(a, b):
    return a is None or len(a) == len(b) and all(
        sa == sb and np.allclose([x1, y1], [x2, y2], rtol=1e-9, atol=1e-12, equal_nan=True)
        for (sa, x1, y1), (sb, x2, y2) in zip(a, b))


def _unit(leaf, k, d):
    """The tangent of ``leaf`` that is ``d`` at its ``k``-th element, 0 elsewhere."""
    if type(leaf) is float or type(leaf) is complex:
        return type(leaf)(d)
    unit = np.zeros(np.shape(leaf), dtype=np.result_type(leaf))
    unit.reshape(-1)[k] = d
    return unit if isinstance(leaf, np.ndarray) else unit[()]


def _contract(ct, jac, leaf):
    """The cotangent of ``leaf`` from the output's cotangent ``ct`` and the
    partials ``jac`` (output's shape, then one column per element of the leaf)."""
    ct = np.asarray(ct)
    g = np.tensordot(ct, jac, axes=(tuple(range(ct.ndim)), tuple(range(ct.ndim)))) \
        if ct.ndim else ct * jac
    return g.reshape(np.shape(leaf))


def _check_output(handle, out):
    if isinstance(out, (bool, np.bool_)) or not (
            isinstance(out, (float, int, np.ndarray, np.generic))):
        raise TypeError(f"pb.forward needs a function returning a real float or an array of "
                        f"floats; {handle.fun.__qualname__} returned {type(out).__name__}. "
                        "Split a structured output into one function per value.")
    if np.iscomplexobj(out) or np.result_type(out).kind not in "f" and not isinstance(out, int):
        raise TypeError(f"pb.forward needs a real float output; {handle.fun.__qualname__} "
                        f"returned {np.result_type(out)}. Return np.real(y) and np.imag(y) "
                        "from two functions.")


_checkpoints = weakref.WeakKeyDictionary()
_forwards = weakref.WeakKeyDictionary()


def checkpoint_of(fun):
    """The ``Checkpoint`` of ``fun``, one per function (so a call of
    ``pb.checkpoint(step)`` inside a loop finds the same one each time)."""
    try:
        made = _checkpoints.get(fun)
    except TypeError:           # not weakly referable: made anew
        return Checkpoint(fun)
    if made is None:
        made = Checkpoint(fun)
        try:
            _checkpoints[fun] = made
        except TypeError:
            pass
    return made


def forward_partials_of(fun, store=True):
    """The ``ForwardPartials`` of ``fun`` for ``store``, one per pair."""
    try:
        made = _forwards.get(fun)
    except TypeError:
        return ForwardPartials(fun, store)
    made = made or {}
    if store not in made:
        made[bool(store)] = ForwardPartials(fun, store)
        try:
            _forwards[fun] = made
        except TypeError:
            pass
    return made[bool(store)]
