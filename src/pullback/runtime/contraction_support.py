"""Helpers called by the contraction rules (``rules.numpy_contractions``,
``rules.numpy_array_api``): ``einsum``, ``tensordot``, ``kron``, ``cross``,
``diagonal``, ``trace`` and ``diag``.

Contractions are multilinear, so each operand's cotangent is ``g``
contracted with the other operands, unconjugated (JAX's convention).
Each helper returns one contribution (or a tuple of them for a rule with
several differentiable inputs), in the dtype of ``g``.

>>> trace_grad(2.0, np.zeros((2, 3)), 1)
array([[0., 2., 0.],
       [0., 0., 2.]])
"""
from __future__ import annotations

import string

import numpy as np
import numpy as _numpy      # the diagonal's mask: never rebound to another namespace

from .core import unbroadcast

__all__ = ["einsum_grads", "tensordot_subscripts", "kron_grads", "cross_grads",
           "diagonal_grad", "trace_grad", "diag_grad"]


def _dtype(g):
    return np.result_type(g)


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
    """Cotangent of ``np.diagonal(a, offset, axis1, axis2)``: ``g`` on that
    diagonal, zeros elsewhere.  For traced and lazy arrays built, not written
    (``g`` padded to a column of the matrix and put where the diagonal is)."""
    shape = tuple(np.shape(a))
    nd = len(shape)
    axis1, axis2 = axis1 % nd, axis2 % nd
    n1, n2 = shape[axis1], shape[axis2]
    r0, c0 = max(-offset, 0), max(offset, 0)
    k = max(0, min(n1 - r0, n2 - c0))
    lead = tuple(n for d, n in enumerate(shape) if d not in (axis1, axis2))
    g = np.broadcast_to(g, lead + (k,))
    if isinstance(g, _numpy.ndarray):       # NumPy: written into zeros (8x faster at 500x500)
        out = _numpy.zeros(shape, g.dtype)
        diagonal = _numpy.arange(k)
        _numpy.moveaxis(out, (axis1, axis2), (-2, -1))[..., diagonal + r0, diagonal + c0] = g
        return out
    rows = np.pad(g, [(0, 0)] * len(lead) + [(r0, n1 - k - r0)])        # (..., n1)
    on = _numpy.arange(n2)[None, :] - _numpy.arange(n1)[:, None] == offset
    out = np.where(on, rows[..., :, None], np.zeros((), rows.dtype))     # (..., n1, n2)
    return np.moveaxis(out, (-2, -1), (axis1, axis2))


def trace_grad(g, a, offset=0, axis1=0, axis2=1):
    """Cotangent of ``np.trace(a, offset, axis1, axis2)``: ``g`` along the diagonal."""
    return diagonal_grad(np.asarray(g)[..., None], a, offset, axis1, axis2)


def diag_grad(g, v, k=0):
    """Cotangent of ``np.diag(v, k)``: the diagonal of ``g`` for a 1-d ``v``,
    ``g`` on the diagonal for a 2-d one."""
    if np.ndim(v) == 1:
        return np.diagonal(g, k)
    return diagonal_grad(g, v, k)
