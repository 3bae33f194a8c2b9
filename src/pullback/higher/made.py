"""What a function made by pullback's API holds, and what the handles of such
functions share.

``pb.grad(f)`` carries a ``Made`` (``fn.__pullback_made__``): the function
``f`` it differentiates and the options it was made with.  A handle of it
(reverse or forward mode, one per module of this package) takes the
arguments of the function under all the derivatives::

    g = pb.grad(pb.grad(f, argnums=1))     # made_by(g).fun is pb.grad(f, argnums=1)
    base_signature(g)                      # the signature of f

``MadeHandle`` binds those arguments; ``ForwardCallers`` and
``ReverseCallers`` give generated code the callables it calls a handle by
(``fwd(tangents, *args)``; the pair ``primal(*args)``, ``adjoint(res, ct)``);
``params_of`` places a call's tangents at the handle's parameters.
"""
from __future__ import annotations

import inspect

from ..checks import check_argnums

__all__ = ["Made", "made_by", "base_signature", "MadeHandle", "ForwardCallers",
           "ReverseCallers", "name_of", "leaves", "add", "scale", "params_of"]


class Made:
    """How a function made by pullback's API was made: the function it
    differentiates and the options (``pb.grad``: ``argnums``, ``has_aux``)."""

    def __init__(self, kind, fun, argnums=0, has_aux=False, primals=None):
        self.kind = kind     # "grad", "value_and_grad", "vjp", "jacfwd" or "linearize"
        self.fun = fun
        self.argnums = argnums
        self.argnums_t = check_argnums(argnums) if kind != "vjp" else ()
        self.has_aux = has_aux
        self.primals = primals           # pb.vjp: the primals it was taken at


def made_by(fn):
    """The ``Made`` of a function made by ``pb.grad``, ``pb.value_and_grad``
    or ``pb.vjp`` (its pullback), else None."""
    return getattr(fn, "__pullback_made__", None)


def base_signature(fn):
    """The signature of the function under the derivatives ``fn`` was made of."""
    while made_by(fn) is not None:
        fn = made_by(fn).fun
    try:
        return inspect.signature(fn, follow_wrapped=False)
    except (TypeError, ValueError):
        return inspect.signature(fn)


class MadeHandle:
    """A handle of ``fn``, made by ``pb.grad``, ``pb.value_and_grad`` or
    ``pb.jacfwd``: it takes the arguments of the function under them."""

    def __init__(self, fn):
        self.fn = fn
        self.made = made_by(fn)
        self.signature = base_signature(fn)
        self.params = list(self.signature.parameters)
        # *args or keyword-only parameters: a positional call is kept as it is
        # (the function's own handle flattens it: ``call_layouts.Flat``)
        self.positional = any(p.kind not in (p.POSITIONAL_OR_KEYWORD, p.POSITIONAL_ONLY)
                              for p in self.signature.parameters.values())

    def bind(self, args, kwargs):
        if not kwargs and (len(args) == len(self.params) or self.positional):
            return tuple(args)
        b = self.signature.bind(*args, **kwargs)
        b.apply_defaults()
        return tuple(b.arguments.values())


class ForwardCallers:
    """``for_callers`` of a forward-mode handle (one with ``bind`` and
    ``call``): ``fwd(tangents, *args, **kwargs) -> (out, out_dot)``, the
    parameters ``mask`` carrying the ``tangents``, one per mask."""

    #: the ``__name__`` of the functions made (None: ``fwd``)
    caller_name = None

    def for_callers(self, mask):
        callers = self.__dict__.setdefault("_fwd_callers", {})
        fwd = callers.get(mask)
        if fwd is None:
            def fwd(tangents, *args, **kwargs):
                return self.call(self.bind(args, kwargs), mask, tangents)
            if self.caller_name is not None:
                fwd.__name__ = self.caller_name
            callers[mask] = fwd
        return fwd


class ReverseCallers:
    """``for_callers`` of a reverse-mode handle (one with ``bind``,
    ``call_primal`` and ``call_adjoint``): the pair ``(primal, adjoint)``
    generated code calls, one per mask; the primal is tagged
    ``__pullback_callee__`` (unless ``tag_primal`` is False) so that forward
    mode (``higher.reverse_calls``) and the artifact cache (``driver.cache``)
    find the handle again."""

    #: whether the primals made carry ``__pullback_callee__`` (without it
    #: forward mode transforms the primal's own source)
    tag_primal = True

    def for_callers(self, mask, inplace=True):
        pairs = self.__dict__.setdefault("_pairs", {})
        pair = pairs.get(mask)
        if pair is None:
            def primal(*args, **kwargs):
                return self.call_primal(self.bind(args, kwargs), mask)
            if self.tag_primal:
                primal.__pullback_callee__ = (self, mask, inplace)
            pair = pairs[mask] = (primal, self.call_adjoint)
        return pair


# -- small helpers -------------------------------------------------------------------

def name_of(fn):
    """The name a message gives ``fn``."""
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", repr(fn))


def leaves(x):
    """The arrays and numbers in ``x`` (a structure: tuple, list, dict, ...)."""
    from ..runtime.structures import fields_of, is_structure
    if x is None:
        return []
    if is_structure(x):
        out = []
        for _, v in fields_of(x):
            out.extend(leaves(v))
        return out
    return [x]


def add(a, b):
    """``a + b`` of two cotangents (structures field by field)."""
    from ..runtime.core import add_cotangents
    return add_cotangents(a, b)


def scale(g, s):
    """``g * s``, field by field for a structure ``g``."""
    from ..runtime.structures import fields_of, is_structure, rebuild_like
    if is_structure(g):
        return rebuild_like(g, {k: scale(v, s) for k, v in fields_of(g)})
    return g * s


def params_of(handle, fn, args, kwargs, given):
    """A call's arguments bound to ``handle``'s parameters, and the tangents
    ``given`` (by position or keyword) by parameter index."""
    from ..driver.plans import _Marker
    from ..errors import NonDifferentiableError
    if getattr(handle, "variadic", False):
        flat = handle.bind(tuple(_Marker(i) for i in range(len(args))),
                           {k: _Marker(k) for k in kwargs})
        where = {m.key: i for i, m in enumerate(flat) if isinstance(m, _Marker)}
    else:
        sig = getattr(handle, "signature", None) or inspect.signature(fn, follow_wrapped=False)
        params = list(sig.parameters)
        markers = sig.bind(*range(len(args)), **{k: k for k in kwargs}).arguments
        where = {m: params.index(p) for p, m in markers.items()
                 if not isinstance(m, (tuple, dict))}
    by_param = {}
    for k, t in given.items():
        if k not in where:
            raise NonDifferentiableError(
                f"pullback cannot differentiate the gradient of {name_of(fn)} again through "
                "its *args or **kwargs.", hint="Give the function named parameters.")
        i = where[k]
        by_param[i] = t if i not in by_param else by_param[i] + t
    return handle.bind(tuple(args), dict(kwargs)), by_param
