"""Rules for layout changes, order and selection, and a few statistics.

A layout change moves ``g`` back where each element came from: a view of
``g`` where the inverse is one (``flip``, ``roll``, ``rot90``), a sum where
an element was copied several times (``repeat``, ``tile``, ``pad`` with
``edge``/``reflect``/``symmetric``/``wrap``), a part of ``g`` per input for
splits and joins.  Static arguments (``pad_width``, ``weights`` of
``average``, ``y`` of ``cov``) are constants: a varied one is refused.

Conventions where the derivative is not unique: ``sort`` gives each element
the cotangent of the place a stable sort put it in (tied elements keep their
order, as in JAX); ``ptp`` splits ``g`` equally among tied maxima and among
tied minima, as ``max``/``min`` do; ``nan_to_num`` and ``nansum``/``nanmean``
give 0 to the replaced or skipped elements.

Before, a layout change; after, its rule (the roll back) in the adjoint:

>>> import numpy as np, pullback as pb
>>> from pullback.testing import adjoint_source, function_from_source
>>> f = function_from_source('''
... def f(x):
...     return np.sum(np.roll(x, 1) * x)
... ''')
>>> print(adjoint_source(f, np.array([1.0, 2.0, 3.0])))
def f_adjoint(residuals, out_bar):
    roll_x_x, x, roll_x = residuals
    roll_x_x_bar = unreduce(out_bar, roll_x_x)
    roll_x_bar = unbroadcast(roll_x_x_bar * x, roll_x)
    x_bar = unbroadcast(roll_x_x_bar * roll_x, x)
    x_bar += np.reshape(np.roll(roll_x_bar, np.negative(1), None), np.shape(x))
    return (project(x_bar, x),)
>>> pb.grad(f)(np.array([1.0, 2.0, 3.0]))
array([5., 4., 3.])
"""
import math

import numpy as np

from pullback.runtime.forward_support import pad_jvp as pad_jvp_helper, sort_jvp as sort_jvp_helper
from pullback.runtime.reduction_forward import (average_jvp as average_jvp_helper,
                                                corrcoef_jvp as corrcoef_jvp_helper,
                                                cov_jvp as cov_jvp_helper,
                                                cumprod_jvp as cumprod_jvp_helper,
                                                partition_jvp as partition_jvp_helper,
                                                ptp_jvp as ptp_jvp_helper,
                                                real_if_close_jvp as real_if_close_jvp_helper)
from pullback.rules.registry import facts, elementwise, jvp, linear, vjp
from pullback.runtime import (average_weights_grad, average_weights_jvp, select_default_grad,
                              select_default_jvp)
from pullback.runtime import (atleast_grads, average_grad, corrcoef_grad, cov_grad,
                              cumprod_grad, diff_end_grad, diff_grad, linspace_grads,
                              nan_to_num_grad, pad_grad, partition_grad, ptp_grad,
                              repeat_grad, rollaxis_grad,
                              select_grads, sort_grad, take_along_axis_grad, tile_grad,
                              unarray, unconcatenate, unjoin, unreduce)

# --- copies and rearrangements ---


@vjp(np.repeat, "ndarray.repeat", nondiff=("repeats",))
def repeat(g, ans, a, repeats, axis=None):
    return repeat_grad(g, a, repeats, axis)


@vjp(np.tile, nondiff=("reps",))
def tile(g, ans, A, reps):
    return tile_grad(g, A, reps)


@vjp(np.pad, nondiff=("pad_width",))
def pad(g, ans, array, pad_width, mode="constant", stat_length=None, constant_values=0,
        end_values=0, reflect_type="even"):
    return pad_grad(g, array, pad_width, mode, reflect_type)


@vjp(np.roll, nondiff=("shift",))
def roll(g, ans, a, shift, axis=None):
    return np.reshape(np.roll(g, np.negative(shift), axis), np.shape(a))


@vjp(np.rot90)
def rot90(g, ans, m, k=1, axes=(0, 1)):
    return np.rot90(g, -k, axes)


@vjp(np.flip)
def flip(g, ans, m, axis=None):
    return np.flip(g, axis)


@vjp(np.fliplr)
def fliplr(g, ans, m):
    return np.fliplr(g)


@vjp(np.flipud)
def flipud(g, ans, m):
    return np.flipud(g)


@vjp(np.rollaxis, nondiff=("axis",))
def rollaxis(g, ans, a, axis, start=0):
    return rollaxis_grad(g, a, axis, start)


@vjp(np.atleast_1d, np.atleast_2d, np.atleast_3d)
def atleast_nd(g, ans, *arys):
    return atleast_grads(g, arys)


# --- splits and joins (g of a split is a list with one cotangent per part) ---


@vjp(np.split, np.array_split, nondiff=("indices_or_sections",))
def split(g, ans, ary, indices_or_sections, axis=0):
    return np.concatenate(g, axis=axis)


@vjp(np.hsplit, nondiff=("indices_or_sections",))
def hsplit(g, ans, ary, indices_or_sections):
    return np.concatenate(g, axis=1 if np.ndim(ary) > 1 else 0)


@vjp(np.vsplit, nondiff=("indices_or_sections",))
def vsplit(g, ans, ary, indices_or_sections):
    return np.concatenate(g, axis=0)


@vjp(np.dsplit, nondiff=("indices_or_sections",))
def dsplit(g, ans, ary, indices_or_sections):
    return np.concatenate(g, axis=2)


@vjp(np.column_stack)
def column_stack(g, ans, tup):
    # 1-d inputs become columns
    return unjoin(g, tup, 1, 2)


@vjp(np.dstack)
def dstack(g, ans, tup):
    # inputs are promoted to 3-d (atleast_3d), then joined along axis 2
    return unjoin(g, tup, 2, 3)


def row_stack(g, ans, tup, dtype=None, casting="same_kind"):
    # vstack's other name (deprecated, absent from some NumPy versions)
    return unconcatenate(g, tup, 0, 2)


if hasattr(np, "row_stack"):
    vjp(np.row_stack)(row_stack)


@vjp(np.append)
def append(g, ans, arr, values, axis=None):
    # a list (of numbers) gets a list of parts
    parts = unconcatenate(g, (arr, values), axis)
    return unarray(parts[0], arr), unarray(parts[1], values)


# --- order and selection ---


@vjp(np.sort)
def sort(g, ans, a, axis=-1, kind=None, order=None, stable=None):
    # g goes back through the inverse of a stable sorting permutation
    return sort_grad(g, a, axis)


@vjp(np.partition, nondiff=("kth",))
def partition(g, ans, a, kth, axis=-1, kind="introselect", order=None):
    return partition_grad(g, ans, a, axis)


@vjp(np.real_if_close)
def real_if_close(g, ans, a, tol=100):
    # the real part (when NumPy drops a negligible imaginary part) or a itself
    return g


@vjp(np.linspace)
def linspace(g, ans, start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    grads = linspace_grads(g, start, stop, num, endpoint, retstep, axis)
    return grads[0], grads[1]


@vjp(np.take_along_axis, nondiff=("indices",))
def take_along_axis(g, ans, arr, indices, axis=-1):
    # repeated indices accumulate
    return take_along_axis_grad(g, arr, indices, axis)


@vjp(np.select, nondiff=("condlist",), optional=("default",))
def select(g, ans, condlist, choicelist, default=0):
    # the default gets g where no condition holds
    return select_grads(g, condlist, choicelist), select_default_grad(g, condlist, default)


@vjp(np.nan_to_num)
def nan_to_num(g, ans, x, copy=True, nan=0.0, posinf=None, neginf=None):
    return nan_to_num_grad(g, x)


# --- differences, products, elementwise ---


@vjp(np.diff, optional=("prepend", "append"))
def diff(g, ans, a, n=1, axis=-1, prepend=None, append=None):
    # prepend and append are joined to a along axis before differencing
    return (diff_grad(g, a, n, axis, prepend, append),
            diff_end_grad(g, a, n, axis, prepend, append, 0),
            diff_end_grad(g, a, n, axis, prepend, append, 1))


@vjp(np.cumprod, "ndarray.cumprod")
def cumprod(g, ans, a, axis=None, dtype=None):
    # correct with zeros in a
    return cumprod_grad(g, ans, a, axis)


@vjp(np.sinc)
def sinc(g, ans, x):
    # sinc(x) = sin(pi x) / (pi x); its slope is (cos(pi x) - sinc(x)) / x, 0 at 0
    flat = x == 0
    return g * np.where(flat, 0, (np.cos(math.pi * x) - ans) / np.where(flat, 1, x))


# --- statistics ---


@vjp(np.nansum)
def nansum(g, ans, a, axis=None, dtype=None, keepdims=False):
    return np.where(np.isnan(a), 0, unreduce(g, a, axis, keepdims))


@vjp(np.nanmean)
def nanmean(g, ans, a, axis=None, dtype=None, keepdims=False):
    # each element that is not NaN weighs 1 / (how many in its slice are not NaN)
    kept = np.logical_not(np.isnan(a))
    return np.where(kept, unreduce(g, a, axis, keepdims), 0) / np.sum(
        kept, axis=axis, keepdims=True, dtype=np.result_type(ans))


@vjp(np.ptp)
def ptp(g, ans, a, axis=None, keepdims=False):
    return ptp_grad(g, a, axis, keepdims)


@vjp(np.average, optional=("weights",))
def average(g, ans, a, axis=None, weights=None, returned=False, keepdims=False):
    # sum(w a) / sum(w); with returned=True the sum of the weights carries g[1]
    return (average_grad(g, ans, a, axis, weights, returned, keepdims),
            average_weights_grad(g, ans, a, axis, weights, returned, keepdims))


@vjp(np.cov)
def cov(g, ans, m, y=None, rowvar=True, bias=False, ddof=None, fweights=None,
        aweights=None, dtype=None):
    return cov_grad(g, m, y, rowvar, bias, ddof, fweights, aweights)


@vjp(np.corrcoef)
def corrcoef(g, ans, x, y=None, rowvar=True, dtype=None):
    return corrcoef_grad(g, x, y, rowvar)

# --- forward rules: moving elements around is linear ---

linear(np.repeat, "ndarray.repeat", np.tile, np.roll, np.rot90, np.flip, np.fliplr,
       np.flipud, np.rollaxis, np.atleast_1d, np.atleast_2d, np.atleast_3d, np.split,
       np.array_split, np.hsplit, np.vsplit, np.dsplit, np.column_stack, np.dstack,
       np.append, np.linspace, np.take_along_axis,
       np.diff)   # (with prepend and append: their tangents joined as they are)


@jvp(np.cumprod, "ndarray.cumprod")
def cumprod_jvp(t, ans, a, axis=None, dtype=None):
    return cumprod_jvp_helper(t, ans, a, axis, dtype)


@jvp(np.ptp)
def ptp_jvp(t, ans, a, axis=None, keepdims=False):
    return ptp_jvp_helper(t, ans, a, axis, keepdims)


@jvp(np.average)
def average_jvp(t, ans, a, axis=None, weights=None, returned=False, keepdims=False):
    return (average_jvp_helper(t, ans, a, axis, weights, returned, keepdims),
            average_weights_jvp(t, ans, a, axis, weights, returned, keepdims))


@jvp(np.cov)
def cov_jvp(t, ans, m, y=None, rowvar=True, bias=False, ddof=None, fweights=None,
            aweights=None, dtype=None):
    return cov_jvp_helper(t, ans, m, y, rowvar, bias, ddof, fweights, aweights)


@jvp(np.corrcoef)
def corrcoef_jvp(t, ans, x, y=None, rowvar=True, dtype=None):
    return corrcoef_jvp_helper(t, ans, x, y, rowvar)


@jvp(np.partition)
def partition_jvp(t, ans, a, kth, axis=-1, kind="introselect", order=None):
    return partition_jvp_helper(t, ans, a, kth, axis)


@jvp(np.real_if_close)
def real_if_close_jvp(t, ans, a, tol=100):
    return real_if_close_jvp_helper(t, ans, a, tol)


@jvp(np.select)
def select_jvp(t, ans, condlist, choicelist, default=0):
    return np.select(condlist, t, 0), select_default_jvp(t, condlist, ans)


@jvp(np.sort)
def sort_jvp(t, ans, a, axis=-1, kind=None, order=None):
    return sort_jvp_helper(t, ans, a, axis)


if hasattr(np, "row_stack"):
    linear(np.row_stack)
elementwise(np.sinc, np.nan_to_num)


@jvp(np.pad)
def pad_jvp(t, ans, array, pad_width, mode="constant", stat_length=None, constant_values=0,
            end_values=0, reflect_type="even"):
    return pad_jvp_helper(t, pad_width, mode, stat_length, reflect_type)


@jvp(np.nansum)
def nansum_jvp(t, ans, a, axis=None, dtype=None, keepdims=False):
    return np.sum(np.where(np.isnan(a), 0, t), axis=axis, keepdims=keepdims)


@jvp(np.nanmean)
def nanmean_jvp(t, ans, a, axis=None, dtype=None, keepdims=False):
    kept = np.logical_not(np.isnan(a))
    return np.sum(np.where(kept, t, 0), axis=axis, keepdims=keepdims) / np.sum(
        kept, axis=axis, keepdims=keepdims, dtype=np.result_type(ans))


# -- facts (rules/registry.py: facts) ----------------------------------------------
facts(np.linspace, np.tile, np.repeat, fresh=True)
facts(np.atleast_1d, np.atleast_2d, view=True)
