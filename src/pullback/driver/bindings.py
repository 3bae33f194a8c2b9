"""Bindings: what a transform resolved in the function's environment, checked
again on every call.

A transform looks up the globals and closure variables the function names
(``act`` resolves to a user function, ``np.tanh`` to a rule, ``DT`` is a
float) and bakes the answer into the generated code.  Python looks them up
again at every call, so after ``mod.act = act_b`` or a closure cell
rebound, or a function's code replaced in place (``f.__code__ = ...``, as
IPython's autoreload does), the old transform would be wrong.
``Bindings.capture`` records,
before a transform, each such name with what it holds (the object itself for
functions, modules and classes; the type, dtype and rank for data, which is
all the transform depends on), and ``current()`` says whether that still
holds.  A failed check makes ``Derivative.specialize`` transform again.

>>> import types
>>> g = {"scale": 2.0, "act": abs}
>>> f = types.FunctionType(compile("def f(x): return act(x) * scale", "<f>", "exec")
...                        .co_consts[0], g)
>>> b = Bindings.capture(f)
>>> b.current()
True
>>> g["scale"] = 3.0          # another float: the transform still holds
>>> b.current()
True
>>> g["act"] = round          # another function: it does not
>>> b.current()
False
"""
from __future__ import annotations

import builtins
import types

import numpy as np

__all__ = ["Bindings"]

_ABSENT = object()       # a name not bound in the globals (a builtin, or undefined)
_EMPTY = object()        # an empty closure cell
_CODE = object()         # a check of a function's `__code__`
# library modules whose attributes are not rebound by programs: the module's
# own identity is checked, not every function looked up in it
_LIBRARIES = ("numpy", "math", "builtins", "scipy", "jax", "functools", "operator")


def _snapshot(v):
    """What the transform depends on in ``v``."""
    if v is None or isinstance(v, (types.FunctionType, types.ModuleType, type,
                                   types.BuiltinFunctionType, np.ufunc)) or callable(v):
        return ("is", v)
    t = type(v)
    if t is np.ndarray:
        return ("kind", t, v.dtype.str, v.ndim)
    if isinstance(v, np.generic):
        return ("kind", t, v.dtype.str)
    return ("kind", t)


def _holds(v, snap):
    if snap[0] == "is":
        return v is snap[1]
    return _snapshot(v) == snap


def _names(fn):
    """Every global and attribute name the code of ``fn`` (and the functions
    nested in it) mentions."""
    names, stack = set(), [fn.__code__]
    while stack:
        code = stack.pop()
        names.update(code.co_names)
        stack.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    return names


class Bindings:
    """Checks of ``(where, name, snapshot)``: ``where`` is the globals dict, a
    closure cell, or the object an attribute is read from."""

    __slots__ = ("checks", "_same", "_other", "current")

    def __init__(self, checks):
        self.checks = checks
        # checked on every call of every callee, so split once: a global that
        # must still be the same object (a function, a module) or still be
        # absent is one dict lookup and an identity test; the rest (data,
        # closure cells, attributes) goes through the general check
        same, other = [], []
        for check in checks:
            how, where, name, snap = check
            if how == "code":           # `fn.__code__ is code`: an identity test too
                same.append((where, _CODE, snap))
            elif how == "global" and (snap is _ABSENT or snap[0] == "is"):
                same.append((where, name, _ABSENT if snap is _ABSENT else snap[1]))
            else:
                other.append(check)
        self._same, self._other = tuple(same), tuple(other)
        self.current = self._compiled()

    def _compiled(self):
        """``current`` as one expression of identity tests (``g[n] is o and
        ...``), compiled once: it runs on every call of every callee, and a
        loop over the checks costs twice as many instructions."""
        if not self._same:      # (no global function or module named: one call less)
            return self._current_other
        terms, namespace = [], {}
        for k, (where, name, obj) in enumerate(self._same):
            namespace[f"g{k}"], namespace[f"n{k}"], namespace[f"o{k}"] = where, name, obj
            terms.append(f"n{k} not in g{k}" if obj is _ABSENT else f"g{k}.__code__ is o{k}"
                         if name is _CODE else f"g{k}[n{k}] is o{k}")
        if self._other:
            namespace["other"] = self._current_other
            terms.append("other()")
        text = (f"def current():\n    try:\n        return {' and '.join(terms)}\n"
                "    except KeyError:      # a name no longer bound\n        return False\n")
        exec(compile(text, "<pullback bindings>", "exec"), namespace)
        return namespace["current"]

    @classmethod
    def capture(cls, fn):
        if not isinstance(fn, types.FunctionType):
            return cls(())
        names = _names(fn)
        g = fn.__globals__
        checks, roots = [], []
        for n in sorted(names):
            if n in g:
                checks.append(("global", g, n, _snapshot(g[n])))
                roots.append(g[n])
            elif hasattr(builtins, n):
                checks.append(("global", g, n, _ABSENT))     # a builtin nobody shadows
        for n, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
            try:
                v = cell.cell_contents
            except ValueError:
                checks.append(("cell", cell, n, _EMPTY))
                continue
            checks.append(("cell", cell, n, _snapshot(v)))
            roots.append(v)
        # a function's code replaced in place (IPython's autoreload, a hot reload):
        # its own, and that of each function it names (inlined or fused into its
        # transform)
        for v in [fn] + roots:
            if isinstance(v, types.FunctionType):
                checks.append(("code", v, "__code__", v.__code__))
        for v in roots:           # `mod.act`, `cfg.scale`: attributes one level down
            if isinstance(v, types.ModuleType) \
                    and v.__name__.split(".")[0] in _LIBRARIES:
                continue
            try:
                attrs = vars(v)
            except TypeError:
                continue
            for n in sorted(names & set(attrs)):
                checks.append(("attr", v, n, _snapshot(attrs[n])))
        return cls(tuple(checks))

    def _current(self):
        """Whether every name still holds what it held at capture (``current``,
        which the instance holds compiled)."""
        for where, name, obj in self._same:
            if (where.__code__ if name is _CODE else where.get(name, _ABSENT)) is not obj:
                return False
        return self._current_other()

    def _current_other(self):
        for how, where, name, snap in self._other:
            if how == "global":
                v = where.get(name, _ABSENT)
                if snap is _ABSENT:
                    if v is not _ABSENT:
                        return False
                    continue
            elif how == "cell":
                try:
                    v = where.cell_contents
                except ValueError:
                    v = _EMPTY
                if snap is _EMPTY:
                    if v is not _EMPTY:
                        return False
                    continue
            else:
                v = getattr(where, name, _ABSENT)
            if v is _ABSENT or v is _EMPTY or not _holds(v, snap):
                return False
        return True
