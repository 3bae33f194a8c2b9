"""Compact call sites: a call of a plain user function keeps the callee's
adjoint in its residuals (``g_res = (adjoint, r)``) and the caller's adjoint
runs ``g_adjoint, g_saved = g_res[0], g_res[1]; g_adjoint(g_saved, g_bar)``, which gives the gradients of the active
arguments only, in order (``reverse.context.compact_callee``).  Checked
against exact gradients, through the disk cache, an artifact written ahead
of time, a callee entering a ``with`` block, and second derivatives."""
import importlib
import math
import sys
import textwrap

import numpy as np
import pytest

import pullback as pb
from pullback.callees import derivative_of
from pullback.driver import cache


def weigh(c, x, s, y):
    return c * math.sin(x) + s * y * y


def outer(x, y):
    # weigh's 1st and 3rd arguments are constants: its active parameters are (1, 3)
    return weigh(2.0, x, 3.0, y) + weigh(0.5, y, 1.0, x)


def _outer_grad(x, y):
    return (2.0 * math.cos(x) + 2.0 * x, 6.0 * y + 0.5 * math.cos(y))


def test_gradients_of_the_active_arguments_only():
    for x, y in ((0.3, -1.2), (2.0, 0.5)):
        value, grads = pb.value_and_grad(outer, argnums=(0, 1))(x, y)
        assert value == pytest.approx(weigh(2.0, x, 3.0, y) + weigh(0.5, y, 1.0, x))
        assert grads == pytest.approx(_outer_grad(x, y), rel=1e-14)
    src = pb.source(outer, 0.3, -1.2)
    adjoint = src.split("def outer_adjoint")[1]
    # the callee's adjoint read from the residual, two gradients (the active ones)
    assert "weigh_adjoint, weigh_saved = " in adjoint and "[1]" in adjoint \
        and "[2]" not in adjoint


def test_arrays_through_a_compact_call_site():
    def scale(w, x):
        return np.tanh(w * x)

    def loss(w, x):
        return np.sum(scale(w, x) ** 2) + np.sum(scale(x, w))

    w, x = np.linspace(-1.0, 1.0, 5), np.linspace(0.5, 2.0, 5)
    gw, gx = pb.grad(loss, argnums=(0, 1))(w, x)
    t = np.tanh(w * x)
    s = 1.0 - t * t
    assert np.allclose(gw, 2 * t * s * x + s * x, rtol=1e-13, atol=0)
    assert np.allclose(gx, 2 * t * s * w + s * w, rtol=1e-13, atol=0)


def test_a_compact_primal_is_found_again_from_its_description():
    h = derivative_of(weigh)
    primal, adjoint = h.for_callers((1, 3), True, True)
    assert adjoint is None and primal.__pullback_compact__
    home = sys.modules[__name__].__dict__
    for value in (primal, primal.positional):
        desc = cache.describe(value, home)
        assert desc[-1] == (["compact", "positional"] if value is primal.positional
                            else ["compact"])
        assert cache.resolve(desc, outer) is value
    generic = h.for_callers((1, 3), True)
    assert cache.resolve(cache.describe(generic[0].positional, home), outer) \
        is generic[0].positional
    assert cache.resolve(cache.describe(generic[0], home), outer) is generic[0]


def test_the_compact_residuals_and_gradients():
    h = derivative_of(weigh)
    primal = h.for_callers((1, 3), True, True)[0].positional
    out, (adjoint, r) = primal(2.0, 0.3, 3.0, -1.2)
    assert out == weigh(2.0, 0.3, 3.0, -1.2)
    assert adjoint(r, 1.0) == pytest.approx((2.0 * math.cos(0.3), 6.0 * -1.2), rel=1e-15)


def with_errstate(x):
    with np.errstate(divide="ignore"):
        y = np.log(x)
    return np.sum(y * x)


def calls_with_errstate(x):
    return with_errstate(x) + with_errstate(2.0 * x)


def test_a_callee_with_a_with_block():
    # the callee entered a `with` block: its adjoint runs through the
    # handle's path (error settings, the user's line on an error)
    x = np.array([0.5, 1.0, 3.0])
    g = pb.grad(calls_with_errstate)(x)
    assert np.allclose(g, (np.log(x) + 1.0) + 2.0 * (np.log(2.0 * x) + 1.0), rtol=1e-14)


def test_second_derivatives_through_calls():
    # code differentiated again keeps the handle's call sites (forward mode
    # follows the callee by name)
    h = pb.hessian(outer, argnums=(0, 1))(0.3, -1.2)
    assert np.allclose(np.array(h, dtype=float),
                       [[-2.0 * math.sin(0.3) + 2.0, 0.0], [0.0, 6.0 - 0.5 * math.sin(-1.2)]],
                       rtol=1e-13)


MODULE = '''
import math
import pullback as pb


def leaf(c, x):
    return c * math.sin(x) * x


@pb.differentiable
def tree(x, y):
    return leaf(2.0, x) + leaf(y, y)
'''


def test_an_artifact_binds_compact_primals(tmp_path, monkeypatch):
    from pullback.driver import aot
    (tmp_path / "compact_mod.py").write_text(textwrap.dedent(MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = importlib.import_module("compact_mod")
    result = aot.write(mod, str(tmp_path))
    text = open(result.path).read()
    assert "_callee_primal(" in text and "_saved = " in text
    art = importlib.import_module(result.path.rsplit("/", 1)[1][:-3])
    names = [n for n in vars(art) if n.startswith("tree_primal")]
    primal, adjoint = getattr(art, names[0]), getattr(art, names[0].replace("primal", "adjoint"))
    x, y = 0.7, 1.3
    out, res = primal(x, y)
    gx, gy = adjoint(res, 1.0)
    assert out == pytest.approx(2.0 * math.sin(x) * x + y * math.sin(y) * y)
    assert (gx, gy) == pytest.approx((2.0 * (math.cos(x) * x + math.sin(x)),
                                      2 * y * math.sin(y) + y * y * math.cos(y)), rel=1e-14)
