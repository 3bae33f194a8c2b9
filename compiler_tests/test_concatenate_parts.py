"""The cotangent of ``np.concatenate`` of a literal pack with one active part
is that part's slice between the other parts' lengths, and the pack is not
taped (reverse/concatenate_parts).  Gradients checked against JAX; where the
other parts may change length, ``unconcatenate`` stays."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pullback as pb

jax.config.update("jax_enable_x64", True)


def chain(x0, k, steps):
    x = x0
    wall = np.zeros(1)
    for t in range(steps):
        xp = np.concatenate((wall, x, wall))
        d = xp[1:] - xp[:-1]
        x = x + 0.1 * (k * d)[1:] - 0.1 * (k * d)[:-1] + 0.01 * d[1:] * d[:-1]
    return np.sum(x * x)


def chain_j(x0, k, steps):
    x = x0
    wall = jnp.zeros(1)
    for t in range(steps):
        xp = jnp.concatenate((wall, x, wall))
        d = xp[1:] - xp[:-1]
        x = x + 0.1 * (k * d)[1:] - 0.1 * (k * d)[:-1] + 0.01 * d[1:] * d[:-1]
    return jnp.sum(x * x)


def test_a_loops_padding_reads_one_slice_and_tapes_no_pack():
    x0, k = np.linspace(-1.0, 1.0, 6), np.linspace(0.5, 1.5, 7)
    gx, gk = pb.grad(chain, argnums=(0, 1))(x0, k, 5)
    jx, jk = jax.grad(chain_j, argnums=(0, 1))(x0, k, 5)
    assert np.allclose(gx, jx, rtol=1e-13, atol=1e-15)
    assert np.allclose(gk, jk, rtol=1e-13, atol=1e-15)
    src = pb.source(chain, x0, k, 5)
    adjoint = src.split("def chain_adjoint")[1]
    assert "unconcatenate" not in src
    assert "xp_bar[len(wall):len(xp_bar) - len(wall)]" in adjoint
    taped = [ln for ln in src.splitlines() if "tape.append" in ln]
    assert taped and all("pack" not in ln for ln in taped)


def ends(x, w):
    left = np.ones((2, 3))
    right = 2.0 * np.ones((1, 3))
    a = np.concatenate((x, right))          # the first part
    b = np.concatenate((left, x))           # the last part
    return np.sum(np.sin(a) * w[:a.shape[0]]) + np.sum(b[1:] * b[:-1])


def ends_j(x, w):
    left = jnp.ones((2, 3))
    right = 2.0 * jnp.ones((1, 3))
    a = jnp.concatenate((x, right))
    b = jnp.concatenate((left, x))
    return jnp.sum(jnp.sin(a) * w[:a.shape[0]]) + jnp.sum(b[1:] * b[:-1])


def test_the_first_and_the_last_part_of_a_2d_concatenation():
    x = np.arange(12.0).reshape(4, 3) / 7.0
    w = np.linspace(0.0, 1.0, 18).reshape(6, 3)
    g = pb.grad(ends)(x, w)
    assert np.allclose(g, jax.grad(ends_j)(x, w), rtol=1e-13, atol=1e-15)
    src = pb.source(ends, x, w)
    assert "unconcatenate" not in src
    assert "a_bar[:len(a_bar) - len(right)]" in src.replace("pack_bar", "a_bar") \
        or "[:len(a_bar) - len(right)]" in src
    assert "[len(left):]" in src


def grown(x, steps):
    for t in range(steps):
        pad = np.zeros(t + 1)                # assigned in the loop: its length moves
        xp = np.concatenate((pad, x))
        x = xp[t + 1:] * xp[:-t - 1] + xp[t + 1:]
    return np.sum(x)


def grown_j(x, steps):
    for t in range(steps):
        pad = jnp.zeros(t + 1)
        xp = jnp.concatenate((pad, x))
        x = xp[t + 1:] * xp[:-t - 1] + xp[t + 1:]
    return jnp.sum(x)


def both(x, y):
    return np.sum(np.concatenate((x, np.ones(2), y)) ** 2)


def test_parts_of_changing_length_or_two_active_parts_keep_unconcatenate():
    x = np.linspace(0.1, 0.9, 4)
    assert np.allclose(pb.grad(grown)(x, 3), jax.grad(grown_j)(x, 3), rtol=1e-13)
    assert "unconcatenate" in pb.source(grown, x, 3)
    gx, gy = pb.grad(both, argnums=(0, 1))(x, 2.0 * x)
    assert np.allclose(gx, 2 * x) and np.allclose(gy, 4 * x)
    assert "unconcatenate" in pb.source(both, x, 2.0 * x)


@pytest.mark.parametrize("inplace", ["0", "1"])
def test_bitwise_as_with_unconcatenate(monkeypatch, inplace):
    # the slice is the view unconcatenate gave: the same floats
    from pullback.runtime.rule_support import unconcatenate
    monkeypatch.setenv("PULLBACK_INPLACE", inplace)
    x0, k = np.linspace(-1.0, 1.0, 6), np.linspace(0.5, 1.5, 7)
    g = pb.grad(chain)(x0, k, 4)
    xp_bar = np.arange(8.0)
    wall = np.zeros(1)
    assert unconcatenate(xp_bar, (wall, x0, wall))[1].tobytes() == \
        xp_bar[len(wall):len(xp_bar) - len(wall)].tobytes()
    assert np.allclose(g, jax.grad(chain_j)(x0, k, 4), rtol=1e-13, atol=1e-15)
