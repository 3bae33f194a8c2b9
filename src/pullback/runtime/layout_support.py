"""Helpers called by the contraction, layout and statistics rules
(``rules.numpy_contractions``, ``rules.numpy_layout``).

Contractions are multilinear, so each operand's cotangent is ``g``
contracted with the other operands, unconjugated (JAX's convention).
Layout changes move ``g`` back where each element came from, adding where
an element was used more than once (``repeat``, ``tile``, ``pad``).
Each helper returns one contribution (or a tuple or list of them for a rule
with several differentiable inputs), in the dtype of ``g``.
"""
from __future__ import annotations

import string

import numpy as np

from .core import unbroadcast, unreduce
from .rule_support import unarray

__all__ = ["einsum_grads", "tensordot_subscripts", "kron_grads", "cross_grads",
           "diagonal_grad", "trace_grad", "diag_grad", "tile_grad", "repeat_grad", "pad_grad",
           "rollaxis_grad", "unjoin", "atleast_grads", "sort_grad", "partition_grad",
           "linspace_grads", "take_along_axis_grad", "diff_grad", "diff_end_grad",
           "cumprod_grad", "select_grads", "average_grad", "ptp_grad", "cov_grad",
           "corrcoef_grad", "nan_to_num_grad", "running_winners", "cummax_grad", "unouter", "quantile_parts",
           "quantile_grad", "trapezoid_grad", "meshgrid_grads", "series_grad", "ediff1d_grad",
           "vander_powers", "vander_grad", "delete_grad"]


def _same_kind(seq, parts):
    return list(parts) if isinstance(seq, list) else tuple(parts)


def _dtype(g):
    return np.result_type(g)


# --- contractions ---


def _einsum_terms(subscripts, shapes):
    """Input terms and output term of ``subscripts`` with ``...`` spelled
    out as letters (right-aligned, as NumPy broadcasts) and an implicit
    output made explicit (labels used once, in order, after ``...``)."""
    subs = subscripts.replace(" ", "")
    ins, out = subs.split("->") if "->" in subs else (subs, None)
    terms = ins.split(",")
    free = [c for c in string.ascii_letters if c not in subs]
    counts = [len(s) - (len(t) - 3) if "..." in t else 0 for t, s in zip(terms, shapes)]
    ell = "".join(free[:max(counts, default=0)])
    if out is None:
        labels = ins.replace(".", "").replace(",", "")
        out = ("..." if "..." in ins else "") + "".join(
            sorted(c for c in set(labels) if labels.count(c) == 1))
    terms = [t.replace("...", ell[len(ell) - k:] if k else "") for t, k in zip(terms, counts)]
    return terms, out.replace("...", ell)


def _sublist(labels):
    return "".join("..." if i is Ellipsis else string.ascii_letters[i] for i in labels)


def einsum_grads(g, args, optimize=False):
    """Cotangents of the arguments of ``np.einsum(*args)``: ``(subscripts,
    *operands)`` or the interleaved ``(op, sublist, op, sublist, ..., [out])``;
    ``None`` for the subscripts and sublists.

    An operand's labels that appear nowhere else were summed: ``g`` is
    broadcast along them; a label repeated within an operand (``ii``) was a
    diagonal: the cotangent is written on that diagonal, zeros elsewhere.
    """
    if isinstance(args[0], str):
        return (None,) + _einsum_operand_grads(g, args[0], args[1:], optimize)
    body = args[:-1] if len(args) % 2 else args
    operands, spec = body[0::2], ",".join(_sublist(s) for s in body[1::2])
    if len(args) % 2:
        spec += "->" + _sublist(args[-1])
    parts = _einsum_operand_grads(g, spec, operands, optimize)
    return tuple(x for p in parts for x in (p, None))[:len(args)]


def _einsum_operand_grads(g, subscripts, operands, optimize):
    shapes = [np.shape(x) for x in operands]
    terms, out = _einsum_terms(subscripts, shapes)
    parts = []
    for i, (term, shape) in enumerate(zip(terms, shapes)):
        others = [t for j, t in enumerate(terms) if j != i]
        seen = set(out).union(*others)
        labels = "".join(dict.fromkeys(term))
        kept = "".join(c for c in labels if c in seen)
        spec = ",".join([out] + others) + "->" + kept
        r = np.einsum(spec, g, *[x for j, x in enumerate(operands) if j != i],
                      optimize=optimize)
        size = {c: n for c, n in zip(term, shape)}
        r = np.sum(r, axis=tuple(k for k, c in enumerate(kept)
                                 if size[c] == 1 and r.shape[k] != 1), keepdims=True)
        missing = [c for c in labels if c not in seen]
        r = np.broadcast_to(np.reshape(r, r.shape + (1,) * len(missing)),
                            r.shape + tuple(size[c] for c in missing))
        r = np.transpose(r, [(kept + "".join(missing)).index(c) for c in labels])
        if len(labels) < len(term):       # repeated labels: the diagonal of a zero array
            full = np.zeros(shape, dtype=r.dtype)
            np.einsum(term + "->" + labels, full)[...] = r
            r = full
        parts.append(r)
    return tuple(parts)


def tensordot_subscripts(a, b, axes=2):
    """The ``einsum`` subscripts of ``np.tensordot(a, b, axes)``."""
    na, nb = np.ndim(a), np.ndim(b)
    if isinstance(axes, (int, np.integer)):
        ia, ib = list(range(na - axes, na)), list(range(axes))
    else:
        ia, ib = axes
        ia = [ia] if isinstance(ia, (int, np.integer)) else list(ia)
        ib = [ib] if isinstance(ib, (int, np.integer)) else list(ib)
    ia, ib = [i % na for i in ia], [i % nb for i in ib]
    la = string.ascii_letters[:na]
    lb = list(string.ascii_letters[na:na + nb])
    for i, j in zip(ia, ib):
        lb[j] = la[i]
    out = "".join(c for k, c in enumerate(la) if k not in ia) + "".join(
        c for k, c in enumerate(lb) if k not in ib)
    return f"{la},{''.join(lb)}->{out}"


def kron_grads(g, a, b):
    """Cotangents of ``a`` and ``b`` in ``np.kron(a, b)``: its result is
    ``a[i] * b[j]`` laid out at ``i * len(b) + j`` on every axis."""
    sa, sb = np.shape(a), np.shape(b)
    d = max(len(sa), len(sb))
    pa, pb = (1,) * (d - len(sa)) + sa, (1,) * (d - len(sb)) + sb
    gi = np.reshape(g, [n for pair in zip(pa, pb) for n in pair])
    la, lb = string.ascii_letters[:d], string.ascii_letters[d:2 * d]
    both = "".join(x + y for x, y in zip(la, lb))
    ga = np.einsum(f"{both},{lb}->{la}", gi, np.reshape(b, pb))
    gb = np.einsum(f"{both},{la}->{lb}", gi, np.reshape(a, pa))
    return np.reshape(ga, sa), np.reshape(gb, sb)


def cross_grads(g, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """Cotangents of ``a`` and ``b`` in ``np.cross``: ``b x g`` and ``g x a``
    (2-vectors as 3-vectors with a zero third component)."""
    if axis is not None:
        axisa = axisb = axisc = axis
    a_, b_ = np.moveaxis(np.asarray(a), axisa, -1), np.moveaxis(np.asarray(b), axisb, -1)
    na, nb = a_.shape[-1], b_.shape[-1]
    if na == 2 and nb == 2:
        g3 = np.zeros(np.shape(g) + (3,), _dtype(g))
        g3[..., 2] = g
    else:
        g3 = np.moveaxis(np.asarray(g), axisc, -1)

    def three(x):
        return x if x.shape[-1] == 3 else np.concatenate(
            [x, np.zeros(x.shape[:-1] + (1,), x.dtype)], axis=-1)
    ga = unbroadcast(np.cross(three(b_), g3)[..., :na], a_)
    gb = unbroadcast(np.cross(g3, three(a_))[..., :nb], b_)
    return np.moveaxis(ga, -1, axisa), np.moveaxis(gb, -1, axisb)


def diagonal_grad(g, a, offset=0, axis1=0, axis2=1):
    """Cotangent of ``np.diagonal(a, offset, axis1, axis2)``: ``g`` on that diagonal."""
    out = np.zeros(np.shape(a), _dtype(g))
    view = np.moveaxis(out, (axis1, axis2), (-2, -1))
    k = np.arange(np.shape(g)[-1])
    view[..., k + max(-offset, 0), k + max(offset, 0)] = g
    return out


def trace_grad(g, a, offset=0, axis1=0, axis2=1):
    """Cotangent of ``np.trace(a, offset, axis1, axis2)``: ``g`` along the diagonal."""
    n1, n2 = np.shape(a)[axis1], np.shape(a)[axis2]
    n = max(0, min(n1, n2 - offset) if offset >= 0 else min(n1 + offset, n2))
    g = np.asarray(g)
    return diagonal_grad(np.broadcast_to(g[..., None], g.shape + (n,)), a, offset, axis1, axis2)


def diag_grad(g, v, k=0):
    """Cotangent of ``np.diag(v, k)``: the diagonal of ``g`` for a 1-d ``v``,
    ``g`` on the diagonal for a 2-d one."""
    if np.ndim(v) == 1:
        return np.diagonal(g, k)
    return diagonal_grad(g, v, k)


# --- layout ---


def tile_grad(g, A, reps):
    """Cotangent of ``np.tile(A, reps)``: the tiles of ``g`` added up."""
    shape = np.shape(A)
    reps = (reps,) if isinstance(reps, (int, np.integer)) else tuple(reps)
    d = max(len(shape), len(reps))
    s, r = (1,) * (d - len(shape)) + shape, (1,) * (d - len(reps)) + reps
    gi = np.reshape(g, [n for pair in zip(r, s) for n in pair])
    return np.reshape(np.sum(gi, axis=tuple(range(0, 2 * d, 2))), shape)


def repeat_grad(g, a, repeats, axis=None):
    """Cotangent of ``np.repeat(a, repeats, axis)``: each copy's ``g`` added back."""
    shape = np.shape(a)
    work = (np.size(a),) if axis is None else shape
    axis = 0 if axis is None else axis % len(shape)
    gm = np.moveaxis(np.reshape(g, work[:axis] + (-1,) + work[axis + 1:]), axis, 0)
    n = work[axis]
    if np.size(repeats) == 1:
        r = int(np.reshape(repeats, -1)[0])
        out = np.sum(np.reshape(gm, (n, r) + gm.shape[1:]), axis=1)
    else:
        out = np.zeros((n,) + gm.shape[1:], gm.dtype)
        np.add.at(out, np.repeat(np.arange(n), repeats), gm)
    return np.reshape(np.moveaxis(out, 0, axis), shape)


def pad_grad(g, array, pad_width, mode="constant", reflect_type="even"):
    """Cotangent of ``np.pad(array, pad_width, mode)``: for ``constant``, the
    inner part of ``g``; for ``edge``, ``reflect``, ``symmetric`` and ``wrap``
    (each output element a copy of an input element), ``g`` added back to
    the element each came from."""
    shape = np.shape(array)
    if mode == "constant":
        widths = np.broadcast_to(np.asarray(pad_width, dtype=int), (len(shape), 2))
        return g[tuple(slice(w[0], w[0] + n) for w, n in zip(widths, shape))]
    if mode not in ("edge", "reflect", "symmetric", "wrap") or reflect_type != "even":
        raise NotImplementedError(f"the gradient of np.pad(mode={mode!r}) is not implemented")
    extra = {} if mode in ("edge", "wrap") else {"reflect_type": reflect_type}
    where = np.pad(np.arange(np.prod(shape, dtype=int)).reshape(shape), pad_width, mode, **extra)
    out = np.zeros(np.prod(shape, dtype=int), _dtype(g))
    np.add.at(out, np.ravel(where), np.ravel(g))
    return np.reshape(out, shape)


def rollaxis_grad(g, a, axis, start=0):
    """Cotangent of ``np.rollaxis(a, axis, start)``: the inverse permutation."""
    n = np.ndim(a)
    axis, start = axis % n, start + n if start < 0 else start
    order = [i for i in range(n) if i != axis]
    order.insert(start if start <= axis else start - 1, axis)
    return np.transpose(g, np.argsort(order))


def unjoin(g, tup, axis, rank):
    """Split the cotangent of ``column_stack`` (``rank=2``) or ``dstack``
    (``rank=3``) into one part per input, shaped like it."""
    parts, start = [], 0
    for x in tup:
        shape = np.shape(x)
        if rank == 2:
            n = shape[1] if len(shape) >= 2 else 1
        else:
            n = shape[2] if len(shape) >= 3 else 1
        index = (slice(None),) * axis + (slice(start, start + n),)
        parts.append(np.reshape(g[index], shape))
        start += n
    return _same_kind(tup, parts)


def atleast_grads(g, arys):
    """Cotangents of ``np.atleast_1d/2d/3d(*arys)`` (one result, or one per input)."""
    parts = (g,) if len(arys) == 1 else g
    return tuple(np.reshape(p, np.shape(x)) for p, x in zip(parts, arys))


def sort_grad(g, a, axis=-1):
    """Cotangent of ``np.sort(a, axis)``: ``g`` sent back through the inverse
    of a stable sorting permutation (tied elements keep their order)."""
    along = -1 if axis is None else axis
    places = np.argsort(np.argsort(a, axis=axis, kind="stable"), axis=along)
    return np.reshape(np.take_along_axis(g, places, axis=along), np.shape(a))


def partition_grad(g, ans, a, axis=-1):
    """Cotangent of ``np.partition(a, kth, axis)``, or of any rearrangement
    ``ans`` of ``a`` along ``axis``: equal values are matched in stable order."""
    shape = np.shape(a)
    if axis is None:
        g, ans, axis = np.ravel(g), np.ravel(ans), -1
    a = np.reshape(a, np.shape(ans))
    src = np.empty(np.shape(ans), dtype=np.intp)
    np.put_along_axis(src, np.argsort(ans, axis=axis, kind="stable"),
                      np.argsort(a, axis=axis, kind="stable"), axis=axis)
    out = np.zeros(np.shape(a), _dtype(g))
    np.put_along_axis(out, src, g, axis=axis)
    return np.reshape(out, shape)


def linspace_grads(g, start, stop, num=50, endpoint=True, retstep=False, axis=0):
    """Cotangents of ``start`` and ``stop`` in ``np.linspace``: sample ``i``
    is ``start + (stop - start) i / div``, the step ``(stop - start) / div``."""
    gs, gstep = (g[0], g[1]) if retstep else (g, 0)
    div = (num - 1) if endpoint else num
    t = np.arange(num) / div if div > 0 else np.zeros(num)
    gs = np.moveaxis(np.asarray(gs), axis, 0)
    t = np.reshape(t.astype(_dtype(gs), copy=False), (num,) + (1,) * (gs.ndim - 1))
    up = np.sum(gs * t, axis=0) + (gstep / div if div > 0 else 0)
    down = np.sum(gs, axis=0) - up
    return unbroadcast(down, start), unbroadcast(up, stop)


def take_along_axis_grad(g, arr, indices, axis=-1):
    """Cotangent of ``np.take_along_axis``: ``g`` added back at the taken positions."""
    out = np.zeros(np.shape(arr), _dtype(g))
    if axis is None:
        np.add.at(np.reshape(out, -1), indices, g)
        return out
    axis = axis % out.ndim
    index = [np.reshape(np.arange(n), [-1 if d == k else 1 for d in range(out.ndim)])
             for k, n in enumerate(out.shape)]
    index[axis] = indices
    np.add.at(out, tuple(index), g)
    return out


def _diff_width(x, axis):
    if x is None or x is np._NoValue:
        return 0
    return 1 if np.ndim(x) == 0 else np.shape(x)[axis]


def _diff_adjoint(g, a, n, axis, prepend, append):
    """``n`` adjoint differences (``g[j-1] - g[j]``) of ``g``: the cotangent of
    ``a`` with ``prepend`` and ``append`` joined to it along ``axis``."""
    g = np.asarray(g)
    length = np.shape(a)[axis] + _diff_width(prepend, axis) + _diff_width(append, axis)
    for _ in range(min(n, length)):     # differences of an empty axis are empty
        zero = np.zeros(g.shape[:axis % g.ndim] + (1,) + g.shape[axis % g.ndim + 1:], g.dtype)
        g = np.concatenate([zero, g], axis=axis) - np.concatenate([g, zero], axis=axis)
    return g, length


def diff_grad(g, a, n=1, axis=-1, prepend=None, append=None):
    """Cotangent of ``a`` in ``np.diff(a, n, axis, prepend, append)``: ``n``
    adjoint differences (``g[j-1] - g[j]``), less the prepended and appended
    parts."""
    g, length = _diff_adjoint(g, a, n, axis, prepend, append)
    return np.take(g, np.arange(_diff_width(prepend, axis),
                                length - _diff_width(append, axis)), axis=axis)


def diff_end_grad(g, a, n, axis, prepend, append, end):
    """Cotangent of ``prepend`` (``end == 0``) or ``append`` (``end == 1``)
    in ``np.diff``: its part of the adjoint differences, summed for a
    scalar (NumPy broadcasts one along ``axis``)."""
    g, length = _diff_adjoint(g, a, n, axis, prepend, append)
    x = append if end else prepend
    width = _diff_width(x, axis)
    part = np.take(g, np.arange(length - width, length) if end else np.arange(width), axis=axis)
    return np.sum(part) if np.ndim(x) == 0 else part


def cumprod_grad(g, ans, a, axis=None):
    """Cotangent of ``np.cumprod(a, axis)``; correct with zeros in ``a``."""
    shape = np.shape(a)
    a, ans, g = np.asarray(a), np.asarray(ans), np.asarray(g)
    if axis is None:
        a, ans, g, axis = np.ravel(a), np.ravel(ans), np.ravel(g), 0
    if not np.any(a == 0):        # sum_{i >= j} g_i ans_i / a_j
        tail = np.flip(np.cumsum(np.flip(g * ans, axis), axis), axis)
        return np.reshape(tail / a, shape)
    x, gm = np.moveaxis(a, axis, 0), np.moveaxis(g, axis, 0)
    before = np.concatenate([np.ones_like(x[:1]), np.cumprod(x, axis=0)[:-1]])
    tail = np.array(gm, dtype=np.result_type(gm, x))   # tail_j = g_j + a_(j+1) tail_(j+1)
    for j in range(len(x) - 2, -1, -1):
        tail[j] += x[j + 1] * tail[j + 1]
    return np.reshape(np.moveaxis(before * tail, 0, axis), shape)


# --- selection and statistics ---


def select_grads(g, condlist, choicelist):
    """Cotangents of the choices in ``np.select``: each gets ``g`` where its
    condition is the first true one."""
    taken, parts = False, []
    for c, x in zip(condlist, choicelist):
        mine = np.logical_and(c, np.logical_not(taken))
        taken = np.logical_or(taken, c)
        parts.append(unbroadcast(np.where(mine, g, 0), x))
    return _same_kind(choicelist, parts)


def average_grad(g, ans, a, axis=None, weights=None, returned=False, keepdims=False):
    """Cotangent of ``a`` in ``np.average(a, axis, weights)`` (weights constant)."""
    g, ans = (g[0], ans[0]) if returned else (g, ans)
    a = np.asarray(a)
    if weights is None:
        return unreduce(g, a, axis, keepdims) / (a.size // np.size(ans))
    w = np.asarray(weights)
    if w.shape != a.shape:
        w = np.reshape(w, [-1 if d == axis % a.ndim else 1 for d in range(a.ndim)])
    w = np.broadcast_to(w, a.shape)
    return unreduce(g, a, axis, keepdims) * w / np.sum(w, axis=axis, keepdims=True)


def ptp_grad(g, a, axis=None, keepdims=False):
    """Cotangent of ``np.ptp``: max minus min, ties sharing equally."""
    hi = a == np.max(a, axis=axis, keepdims=True)
    lo = a == np.min(a, axis=axis, keepdims=True)
    dt = np.result_type(a, g)
    return unreduce(g, a, axis, keepdims) * (
        hi / np.sum(hi, axis=axis, keepdims=True, dtype=dt)
        - lo / np.sum(lo, axis=axis, keepdims=True, dtype=dt))


def _cov_rows(x, rowvar):
    x = np.array(x, ndmin=2)
    return x.T if not rowvar and x.shape[0] != 1 else x


def cov_grad(g, m, y=None, rowvar=True, bias=False, ddof=None, fweights=None,
             aweights=None):
    """Cotangent of ``m`` in ``np.cov`` (``y`` and the weights constant):
    ``c = Xc W Xc^H / f``, so ``Xc`` gets ``(G + G^H) conj(Xc) W / f``, centered."""
    x = _cov_rows(m, rowvar)
    rows = x.shape[0]
    if y is not None:
        x = np.concatenate([x, _cov_rows(y, rowvar)], axis=0)
    w = np.ones(x.shape[1])
    for extra in (fweights, aweights):
        if extra is not None:
            w = w * np.asarray(extra, dtype=float)
    total = np.sum(w)
    ddof = (0 if bias else 1) if ddof is None else ddof
    if aweights is None:
        fact = total - ddof
    else:
        fact = total - ddof * np.sum(w * np.asarray(aweights)) / total
    xc = x - np.sum(x * w, axis=1, keepdims=True) / total
    gm = np.reshape(g, (x.shape[0], x.shape[0]))
    gx = np.matmul(gm + np.conj(gm.T), np.conj(xc) * w) / fact
    gx = gx - np.sum(gx, axis=1, keepdims=True) * w / total
    gx = gx[:rows]
    if not rowvar and np.array(m, ndmin=2).shape[0] != 1:
        gx = gx.T
    return np.reshape(gx, np.shape(m)).astype(np.result_type(g, m), copy=False)


def corrcoef_grad(g, m, y=None, rowvar=True):
    """Cotangent of ``m`` in ``np.corrcoef`` (real input; ``y`` constant):
    ``r_ij = c_ij / sqrt(c_ii c_jj)`` through ``cov``."""
    c = np.atleast_2d(np.cov(m, y, rowvar))
    d = np.diagonal(c)
    s = np.sqrt(d)
    r = c / s[:, None] / s[None, :]
    gm = np.reshape(g, c.shape)
    gc = gm / s[:, None] / s[None, :]
    gd = -0.5 * (np.sum(gm * r, axis=1) + np.sum(gm * r, axis=0)) / d
    return cov_grad(gc + np.diag(gd), m, y, rowvar)


def nan_to_num_grad(g, x):
    """Cotangent of ``np.nan_to_num``: ``g`` where ``x`` was finite (per part
    for complex ``x``), 0 where it was replaced."""
    if np.iscomplexobj(x):
        return (np.where(np.isfinite(np.real(x)), np.real(g), 0)
                + 1j * np.where(np.isfinite(np.imag(x)), np.imag(g), 0))
    return np.where(np.isfinite(x), g, 0)


# --- ufunc methods (rules.numpy_ufunc_methods) ---


def running_winners(a, ans, axis):
    """For ``ans = np.maximum.accumulate(a, axis)`` (or ``minimum``), with
    ``axis`` moved last: ``hit`` (``a`` attains the running extremum), the
    first and last position of the run of equal ``ans`` each position lies in,
    and ``count``, how many positions up to each one attain its value (the
    tied winners that share its cotangent, as ``np.max``'s rule shares it)."""
    a = np.moveaxis(np.asarray(a), axis, -1)
    ans = np.moveaxis(np.asarray(ans), axis, -1)
    n = a.shape[-1]
    hit = a == ans
    new = np.ones(a.shape, bool)
    new[..., 1:] = ans[..., 1:] != ans[..., :-1]
    last = np.ones(a.shape, bool)
    last[..., :-1] = new[..., 1:]
    idx = np.arange(n)
    first = np.maximum.accumulate(np.where(new, idx, 0), axis=-1)
    end = np.flip(np.minimum.accumulate(np.flip(np.where(last, idx, n - 1), -1), axis=-1), -1)
    hits = np.cumsum(hit, axis=-1)
    count = hits - np.take_along_axis(hits, first, -1) + np.take_along_axis(hit, first, -1)
    return hit, first, end, count


def cummax_grad(g, ans, a, axis=0):
    """Cotangent of ``np.maximum.accumulate(a, axis)`` (and ``minimum``):
    each ``g_i`` is shared equally by the positions ``j <= i`` where ``a_j``
    equals ``ans_i``.

    >>> cummax_grad(np.ones(4), np.array([1., 3., 3., 3.]), np.array([1., 3., 2., 3.]))
    array([1. , 2.5, 0. , 0.5])
    """
    axis = 0 if axis is None else axis
    hit, first, end, count = running_winners(a, ans, axis)
    with np.errstate(divide="ignore", invalid="ignore"):     # a NaN: no winner, NaN
        g = np.moveaxis(np.asarray(g), axis, -1)
        w = g / count.astype(np.result_type(g, np.float16))
    total = np.cumsum(w, axis=-1)
    # sum of w over positions i >= j in j's run of equal ans
    tail = np.take_along_axis(total, end, -1) - total + w
    return np.moveaxis(np.where(hit, tail, 0 * tail), -1, axis)


def unouter(g, A, B, kind, which):
    """The cotangent of ``A`` (``which=0``) or ``B`` (1) in ``np.add.outer(A,
    B)`` (``kind`` ``"add"``), ``np.subtract.outer`` or ``np.multiply.outer``
    (unconjugated): ``g`` has ``A``'s axes then ``B``'s.

    >>> unouter(np.ones((2, 3)), np.ones(2), np.arange(3.0), "multiply", 0)
    array([3., 3.])
    """
    na, nb = np.ndim(A), np.ndim(B)
    if kind == "multiply":
        if which == 0:
            return np.tensordot(g, B, nb) if nb else g * B
        return np.tensordot(A, g, na) if na else A * g
    if which == 0:
        return np.sum(g, axis=tuple(range(na, na + nb)))
    gb = np.sum(g, axis=tuple(range(na)))
    return -gb if kind == "subtract" else gb


# --- quantiles, integration, grids, polynomials (rules.numpy_statistics) ---


def quantile_parts(a, q, axis, method="linear", weights=None):
    """``a`` with the reduced axes moved last and joined (``rest + (n,)``), the
    order that sorts it, and for each element of ``q`` the two sorted
    positions and the weight of the second (NumPy's default ``linear``
    method: position ``q (n - 1)``), as ``np.quantile(a, q, axis)`` reads them."""
    if method != "linear" or weights is not None:
        raise NotImplementedError(
            f"the gradient of np.quantile/np.percentile with method={method!r}"
            + (" and weights" if weights is not None else "") + " is not implemented; "
            "pullback follows method='linear' (the default) without weights")
    a = np.asarray(a)
    axes = tuple(range(a.ndim)) if axis is None else tuple(
        int(ax) % a.ndim for ax in np.atleast_1d(axis))
    rest = [d for d in range(a.ndim) if d not in axes]
    perm = rest + list(axes)
    moved = np.transpose(a, perm)
    flat = np.reshape(moved, moved.shape[:len(rest)] + (-1,))
    n = flat.shape[-1]
    order = np.argsort(flat, axis=-1, kind="stable")
    pos = np.ravel(np.asarray(q, dtype=np.float64)) * (n - 1)
    lo = np.floor(pos).astype(np.intp)
    hi = np.minimum(lo + 1, n - 1)
    return flat, order, lo, hi, pos - lo, perm, moved.shape


def quantile_grad(g, a, q, axis=None, keepdims=False, method="linear", weights=None):
    """Cotangent of ``a`` in ``np.quantile(a, q, axis)`` (``np.median``: ``q =
    0.5``; ``np.percentile``: ``q / 100``): each output's ``g`` goes to the two
    sorted elements it interpolates, weighted as it weighs them (tied values:
    to the one the stable sort puts there, as JAX's sort-based rule does).

    >>> quantile_grad(1.0, np.array([3.0, 1.0, 2.0, 0.0]), 0.5)
    array([0. , 0.5, 0.5, 0. ])
    """
    flat, order, lo, hi, f, perm, shape = quantile_parts(a, q, axis, method, weights)
    rest = flat.shape[:-1]
    gq = np.reshape(np.asarray(g), (len(lo),) + rest)
    w = np.zeros(flat.shape, dtype=np.result_type(gq, flat))
    for k in range(len(lo)):
        w[..., lo[k]] += gq[k] * (1 - f[k])
        w[..., hi[k]] += gq[k] * f[k]
    out = np.empty_like(w)
    np.put_along_axis(out, order, w, -1)
    return np.transpose(np.reshape(out, shape), np.argsort(perm))


def trapezoid_grad(g, y, x=None, dx=1.0, axis=-1):
    """Cotangent of ``y`` in ``np.trapezoid(y, x, dx, axis)``: each sample
    weighs half of the widths of the intervals it bounds.

    >>> trapezoid_grad(1.0, np.ones(4), dx=0.5)
    array([0.25, 0.5 , 0.5 , 0.25])
    """
    ym = np.moveaxis(np.asarray(y), axis, -1)
    n = ym.shape[-1]
    if x is None:
        d = np.full(max(n - 1, 0), dx, dtype=np.result_type(dx, 1.0))
    elif np.ndim(x) == 1:
        d = np.diff(np.asarray(x))
    else:
        d = np.moveaxis(np.diff(np.asarray(x), axis=axis), axis, -1)
    w = np.zeros(d.shape[:-1] + (n,), dtype=np.result_type(d, 1.0))
    w[..., :-1] += d / 2
    w[..., 1:] += d / 2
    return np.moveaxis(unbroadcast(np.expand_dims(np.asarray(g), -1) * w, ym), -1, axis)


def meshgrid_grads(g, xi, indexing="xy"):
    """Cotangents of the inputs of ``np.meshgrid(*xi)``: the ``i``-th grid's
    cotangent summed over every axis but the one ``xi[i]`` runs along (axes 0
    and 1 swapped for ``indexing='xy'``)."""
    out = []
    for i, x in enumerate(xi):
        along = {0: 1, 1: 0}.get(i, i) if indexing == "xy" and len(xi) > 1 else i
        gi = np.asarray(g[i])
        gi = np.sum(gi, axis=tuple(d for d in range(gi.ndim) if d != along))
        out.append(np.reshape(gi, np.shape(x)))
    return tuple(out)


_POLY = {"polyval": ("polynomial", "poly"), "polynomial": ("polynomial", "poly"),
         "chebyshev": ("chebyshev", "cheb"), "legendre": ("legendre", "leg"),
         "hermite": ("hermite", "herm"), "hermite_e": ("hermite_e", "herme"),
         "laguerre": ("laguerre", "lag")}


def _series(kind, c):
    """``(val, der, vander, c)`` of a NumPy series kind, ``c`` lowest degree
    first (``np.polyval``'s highest-first coefficients reversed)."""
    module, prefix = _POLY[kind]
    m = getattr(np.polynomial, module)
    c = np.asarray(c)
    if c.ndim != 1:
        raise NotImplementedError(
            "the gradient of a polynomial with coefficients of more than one axis is not "
            "implemented; evaluate each polynomial apart (a loop over the columns)")
    if kind == "polyval":
        c = c[::-1]
    return (getattr(m, prefix + "val"), getattr(m, prefix + "der"),
            getattr(m, prefix + "vander"), c)


def series_grad(g, x, c, kind, which):
    """Cotangent of ``x`` (``which="x"``) or of the coefficients ``c`` in the
    value of a series (``np.polyval(c, x)``, ``kind="polyval"``; or
    ``np.polynomial.<kind>.<prefix>val(x, c)``) with 1-d ``c``: the derivative
    series at ``x``, or ``g`` against the basis at ``x`` (the Vandermonde
    matrix), unconjugated.

    >>> float(series_grad(1.0, 2.0, np.array([1.0, 0.0, 3.0]), "polyval", "x"))   # x**2 + 3
    4.0
    """
    val, der, vander, cs = _series(kind, c)
    if which == "x":
        return g * val(x, der(cs))
    basis = np.reshape(vander(x, len(cs) - 1), np.shape(x) + (len(cs),))   # (1-d for a number)
    cbar = np.tensordot(g, basis, np.ndim(g))
    return unarray(cbar[::-1] if kind == "polyval" else cbar, c)


def ediff1d_grad(g, ary, to_end=None, to_begin=None):
    """Cotangent of ``ary`` in ``np.ediff1d(ary, to_end, to_begin)``: the
    differences' part of ``g`` (between the constants) moved back as
    ``np.diff``'s."""
    start = 0 if to_begin is None else np.size(to_begin)
    stop = np.size(g) - (0 if to_end is None else np.size(to_end))
    mid = np.ravel(g)[start:stop]
    zero = np.zeros(1, dtype=mid.dtype)
    return np.reshape(np.concatenate([zero, mid]) - np.concatenate([mid, zero]), np.shape(ary))


def vander_powers(x, N=None, increasing=False):
    """The exponents of ``np.vander(x, N, increasing)``'s columns."""
    n = len(x) if N is None else N
    return np.arange(n) if increasing else np.arange(n - 1, -1, -1)


def vander_grad(g, x, N=None, increasing=False):
    """Cotangent of ``x`` in ``np.vander(x, N, increasing)``: ``sum_j g_ij k_j
    x_i ** (k_j - 1)`` over the columns' exponents ``k_j``."""
    k = vander_powers(x, N, increasing)
    x = np.asarray(x)
    slope = k * np.power(x[:, None], np.maximum(k - 1, 0)) * (k > 0)
    g = np.asarray(g)
    return np.sum(g * slope, axis=1).astype(np.result_type(g, x), copy=False)


def delete_grad(g, arr, obj, axis=None):
    """Cotangent of ``arr`` in ``np.delete(arr, obj, axis)``: ``g`` at the
    positions kept, zero at those deleted."""
    arr = np.asarray(arr)
    g = np.asarray(g)
    if axis is None:
        out = np.zeros(arr.size, dtype=g.dtype)
        out[np.delete(np.arange(arr.size), obj)] = g
        return np.reshape(out, arr.shape)
    out = np.zeros(arr.shape, dtype=g.dtype)
    kept = np.delete(np.arange(arr.shape[axis]), obj)
    np.moveaxis(out, axis, 0)[kept] = np.moveaxis(g, axis, 0)
    return out
