"""The per-element path: ``np.vectorize(fn)`` for an ``fn`` that cannot be
fused.

``lower_broadcasts`` (``elementwise_maps``) gives such a call a
``PerElement`` operation: a callee with its own rule (``custom_rules.CustomVJP``'s
protocol) whose primal runs ``fn``'s own primal once per element, in order,
as NumPy would call ``fn``, and whose adjoint runs ``fn``'s adjoint per
element and projects the gradients it collects onto each input.

Before and after, for a ``g`` with an effect (it prints): ``g``'s own primal
and adjoint run once per element, in order (the first element twice, as
``np.vectorize`` calls it once more to learn the output's type):

>>> import numpy as np, pullback as pb, re
>>> from pullback.lowering import kernels
>>> from pullback.testing import function_from_source
>>> g = function_from_source('''
... def g(v):
...     print(v)
...     return math.sin(v) * v
... ''')
>>> f = function_from_source('''
... def f(x):
...     return np.sum(np.vectorize(g)(x))
... ''', {"g": g})
>>> with kernels.options(lower=True):
...     text = pb.source(f)
>>> print(re.sub(r" *#.*\\n", "", text).split("def f_adjoint")[0])
def f_primal(x):
    vectorize_g_x, vectorize_g_x_res = g_each_primal(x)
    out = np.sum(vectorize_g_x)
    return (out, (meta(vectorize_g_x), vectorize_g_x_res, x))
<BLANKLINE>
<BLANKLINE>
>>> x = np.array([0.0, 1.0])
>>> with kernels.options(lower=True):
...     grad = pb.grad(f)(x)
0.0
0.0
1.0
>>> np.allclose(grad, np.sin(x) + np.cos(x) * x)
True
"""
from __future__ import annotations

import numpy as np

from .. import runtime
from ..custom_rules import CustomVJP

__all__ = ["PerElement"]


class PerElement(CustomVJP):
    """``np.vectorize(fn)(*args)`` for a ``fn`` that cannot be fused (it has
    effects, or is not elementwise): ``fn``'s own primal and adjoint run once
    per element, in order, as NumPy calls ``fn``."""

    fresh_cotangents = True

    def __init__(self, fn, params, otypes=None):
        self.fn = self.fun = fn
        self.__name__ = self.__qualname__ = f"{getattr(fn, '__name__', 'fn')}_each"
        self.__doc__ = f"np.vectorize({getattr(fn, '__name__', 'fn')}), element by element"
        self.params = list(params)
        self.otypes = otypes
        self._pairs = {}
        self._forward = None

    @property
    def jvp_of(self):
        """Forward mode's handle (``forward.calls.forward_of``): a
        ``pb.custom_jvp`` function whose rule is the function's tangent at
        each element (``runtime.vectorize_support.each_element_jvp``), summed
        over the arguments."""
        if self._forward is None:
            self._forward = _tangent_handle(self.fn, self.params, self.otypes)
        return self._forward

    def __call__(self, *args):
        return np.vectorize(self.fn, otypes=self.otypes)(*args)

    def for_callers(self, mask, inplace=True):     # (no gradient buffers to accumulate into)
        pair = self._pairs.get(mask)
        if pair is None:
            pair = self._pairs[mask] = self._make_pair(tuple(mask))
        return pair

    def _make_pair(self, mask):
        from ..callees import derivative_of
        fn, otypes = self.fn, self.otypes

        def primal(*args):
            arrays = np.broadcast_arrays(*[np.asarray(a) for a in args])
            shape = arrays[0].shape if arrays else ()
            flat = [a.ravel() for a in arrays]
            diff = tuple(k for k in mask if np.asarray(args[k]).dtype.kind in "fc")
            prim, _ = derivative_of(fn).for_callers(diff)
            if otypes is None and flat and flat[0].size:
                fn(*[f[0] for f in flat])      # NumPy's vectorize probes the first element
            outs, ress = [], []
            for i in range(flat[0].size if flat else 1):
                o, r = prim(*[f[i].item() for f in flat])
                outs.append(o)
                ress.append(r)
            dtype = otypes[0] if otypes else (np.result_type(*[np.asarray(o) for o in outs[:1]])
                                              if outs else float)
            out = np.array(outs, dtype=dtype).reshape(shape)
            return out, (ress, diff, tuple(runtime.meta(a) for a in args), shape)

        def adjoint(res, g):
            ress, diff, metas, shape = res
            _, adj = derivative_of(fn).for_callers(diff)
            g = np.broadcast_to(g, shape).ravel()
            sums = {k: np.zeros(len(ress)) for k in diff}
            for i, r in enumerate(ress):
                grads = adj(r, g[i].item())
                for k in diff:
                    if grads[k] is not None:
                        sums[k][i] = grads[k]
            out = [None] * len(metas)
            for k in mask:
                if k in sums:
                    out[k] = runtime.project(sums[k].reshape(shape), metas[k])
                else:
                    out[k] = runtime.zeros_like(metas[k])
            return tuple(out)

        primal.__name__, adjoint.__name__ = f"{self.__name__}_primal", f"{self.__name__}_adjoint"
        return primal, adjoint

    @property
    def source(self):
        return f"# {self.__name__}: {self.__doc__}"


def _tangent_handle(fn, params, otypes):
    import inspect
    from ..forward.handles import CustomJVP
    from ..runtime.vectorize_support import each_element_jvp
    vec = np.vectorize(fn, otypes=otypes)

    def each(*args):
        return vec(*args)
    each.__name__ = f"{getattr(fn, '__name__', 'fn')}_each"
    each.__signature__ = inspect.Signature(
        [inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in params])
    handle = CustomJVP(each)

    @handle.defjvp
    def each_jvp(primals, tangents):
        out = vec(*primals)
        total = None
        for k, t in enumerate(tangents):
            if not np.issubdtype(np.result_type(primals[k]), np.inexact):
                continue                    # (an integer argument: no tangent)
            dot = each_element_jvp(t, out, vec, tuple(primals), {})[k]
            total = dot if total is None else total + dot
        return out, (np.zeros_like(out, dtype=float) if total is None else total)
    return handle
