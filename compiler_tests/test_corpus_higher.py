"""Second derivatives of corpus programs (issue 13): ``pb.hessian``,
``pb.jacfwd(pb.grad(f))``, ``pb.jacrev(pb.grad(f))`` and
``pb.jacfwd(pb.jacrev(f))`` (JAX's way to a Hessian) of a handful of
``compiler_tests/programs/`` with their small inputs, against
``jax.hessian`` of the JAX version each module gives (float64), with
respect to the first differentiated argument."""
import importlib
import os
import sys
import zlib

import numpy as np
import pytest

import pullback as pb

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
from jax import tree_util  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

RTOL = 1e-8

#: programs whose first differentiated argument is one small float array (or a float)
PROGRAMS = ("backtracking_line_search", "conv_loops", "decorated_batch_mean",
            "deq_fixed_point", "experiment_config")
#: the program also checked by reverse over reverse and by jacfwd of jacrev (more
#: transforms: one is enough to keep the file fast)
EVERY_WAY = "decorated_batch_mean"

MAKERS = {
    "hessian": lambda f, a: pb.hessian(f, argnums=a),
    "jacfwd(grad)": lambda f, a: pb.jacfwd(pb.grad(f, argnums=a), argnums=a),
    "jacrev(grad)": lambda f, a: pb.jacrev(pb.grad(f, argnums=a), argnums=a),
    "jacfwd(jacrev)": lambda f, a: pb.jacfwd(pb.jacrev(f, argnums=a), argnums=a),
}


def _program(name):
    module = importlib.import_module(f"programs.{name}")
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    return module, tuple(module.make_inputs(rng))


@pytest.mark.parametrize("name", PROGRAMS)
def test_second_derivatives_of_corpus_programs_match_jax_hessian(name):
    module, args = _program(name)
    a = module.argnums[0]
    before = tree_util.tree_map(lambda v: v.copy() if isinstance(v, np.ndarray) else v,
                                list(args))
    jargs = tree_util.tree_map(lambda v: jnp.asarray(v) if isinstance(v, np.ndarray) else v,
                               list(args))
    want = np.asarray(jax.hessian(module.jax_fun, argnums=a)(*jargs))
    scale = 1.0 + float(np.max(np.abs(want)))
    for kind in (MAKERS if name == EVERY_WAY else ("hessian", "jacfwd(grad)")):
        got = np.asarray(MAKERS[kind](module.fun, a)(*args))
        assert got.shape == want.shape, (name, kind, got.shape, want.shape)
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=RTOL * scale,
                                   err_msg=f"{name}: pb {kind} != jax.hessian")
    for x, y in zip(tree_util.tree_leaves(before), tree_util.tree_leaves(list(args))):
        assert np.array_equal(x, y), f"{name}: an input was changed"


def test_jacfwd_of_jacrev_of_a_vector_function_matches_jax():
    from pullback.testing import function_from_source
    text = "def v(x):\n    return np.tanh(x) * x[0] + np.sum(x ** 3)\n"
    v = function_from_source(text)
    ns = {"np": jnp}
    exec(text, ns)
    x = np.array([0.3, -0.7, 1.1])
    np.testing.assert_allclose(pb.jacfwd(pb.jacrev(v))(x), jax.jacfwd(jax.jacrev(ns["v"]))(x),
                               rtol=1e-12, atol=1e-14)
    t = np.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(pb.jvp(pb.jacrev(v), (x,), (t,))[1],
                               jax.jvp(jax.jacrev(ns["v"]), (x,), (t,))[1], rtol=1e-12)
    with pytest.raises(pb.NonDifferentiableError, match="jacrev"):
        pb.jacfwd(pb.jacrev(v, argnums=(0,)))(x)
