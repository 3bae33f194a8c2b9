"""Second derivatives with complex arguments (issue 13), in JAX's and
autograd's convention: ``pb.vjp`` of ``pb.grad(f)`` for a real ``f`` of a
complex ``z`` (reverse over reverse, by forward over reverse along the
cotangent), and forward mode through ``abs`` of a complex value
(``Re(conj(z) dz) / |z|``).  Every value against JAX (float64)."""
import numpy as np
import pytest

import pullback as pb
from pullback.testing import function_from_source

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
from jax import tree_util  # noqa: E402

CASES = [
    ("def f(z):\n    return np.abs(z)\n", (1.1 + 1.3j,), (0,)),
    ("def f(z):\n    return np.angle(z)\n", (0.7 + 0.6j,), (0,)),
    ("def f(z):\n    return np.abs(z) ** 2\n", (3.0 + 4.0j,), (0,)),
    ("def f(z):\n    return np.real(z * np.conj(z) * np.sin(z))\n", (0.4 - 0.9j,), (0,)),
    ("def f(z):\n    return abs(z) * np.imag(z)\n", (-0.3 + 0.8j,), (0,)),
    ("def f(z, w):\n    return np.sum(np.abs(z * w) ** 2) + np.sum(np.real(z) * w)\n",
     (np.array([0.4 - 0.9j, 1.2 + 0.3j]), np.array([0.5, -1.5])), (0, 1, (0, 1))),
]


def _both(text):
    ns = {"np": jnp, "abs": jnp.abs}
    exec(text, ns)
    return function_from_source(text), ns["f"]


def _close(a, b):
    la, lb = tree_util.tree_leaves(a), tree_util.tree_leaves(b)
    assert len(la) == len(lb), (a, b)
    for x, y in zip(la, lb):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("text,args,argnums", CASES, ids=[c[0].split("return ")[1].strip()
                                                            for c in CASES])
def test_vjp_of_the_gradient_of_a_real_function_of_complex_arguments_matches_jax(
        text, args, argnums):
    f, fj = _both(text)
    rng = np.random.default_rng(len(text))
    for a in argnums:
        out, back = pb.vjp(pb.grad(f, a), *args)
        out_j, back_j = jax.vjp(jax.grad(fj, a), *args)
        _close(out, out_j)
        ct = tree_util.tree_map(
            lambda o: rng.normal(size=np.shape(o)) + (
                1j * rng.normal(size=np.shape(o)) if np.iscomplexobj(o) else 0.0), out_j)
        ct_np = tree_util.tree_map(
            lambda c: np.asarray(c) if np.ndim(c) else complex(c) if np.iscomplexobj(c)
            else float(c), ct)
        _close(back(ct_np), back_j(ct))


def test_grad_of_a_real_part_of_the_gradient_matches_jax():
    f, fj = _both("def f(z):\n    return np.abs(z) * np.angle(z)\n")
    c = 0.3 - 0.2j
    z = 0.9 + 0.4j
    got = pb.grad(lambda z: np.real(pb.grad(f)(z) * c))(z)
    want = jax.grad(lambda z: jnp.real(jax.grad(fj)(z) * c))(z)
    np.testing.assert_allclose(got, want, rtol=1e-10)


def test_forward_mode_through_abs_of_complex_values_matches_jax():
    f, fj = _both("def f(z):\n    return np.sum(np.abs(z) * np.real(z))\n")
    z = np.array([0.3 + 0.4j, -1.0 + 0.5j, 0.0 + 0.0j])
    dz = np.array([1.0 - 2.0j, 0.5 + 0.5j, 1.0 + 1.0j])
    got = pb.jvp(f, (z,), (dz,))
    want = jax.jvp(fj, (z,), (dz,))
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
    # at z = 0 the slope splits (zero) where JAX gives NaN: compare away from it
    g2 = pb.jvp(f, (z[:2],), (dz[:2],))[1]
    np.testing.assert_allclose(g2, jax.jvp(fj, (z[:2],), (dz[:2],))[1], rtol=1e-12)
    assert np.isfinite(got[1])


def test_hessian_through_abs_of_real_values_is_unchanged():
    f, fj = _both("def f(x):\n    return np.sum(np.abs(x) * x ** 2) + np.abs(x[0] * x[1])\n")
    x = np.array([0.7, -1.3, 0.4])
    np.testing.assert_allclose(pb.hessian(f)(x), jax.hessian(fj)(x), rtol=1e-12, atol=1e-12)
