"""The on-disk cache: a second process rebuilds transforms without the
compiler; anything the transform depends on changing makes it miss; what
cannot be described is never cached."""
import importlib
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import pullback as pb
from pullback import api, checks, runtime
from pullback.driver import cache, jit
from pullback.testing import function_from_source

MODULE = """
import numpy as np
import pullback as pb

SCALE = 3.0


def inner(a, b):
    return np.sin(a) * b


@pb.differentiable
def f(x, y):
    z = inner(x, y) + SCALE * x
    return np.sum(z * z)
"""

SCRIPT = """
import json, sys
import numpy as np
sys.path.insert(0, {proj!r})
import pullback as pb
from pullback.driver import cache
import {name} as m
x, y = np.linspace(-1.0, 1.0, 5), np.linspace(0.5, 2.0, 5)
g = pb.grad(m.f, argnums=(0, 1))(x, y)
np.savez({out!r}, *g)
print(json.dumps(dict(cache.stats, compiler="pullback.pipeline" in sys.modules)))
"""


def run_script(tmp_path, name, out, **env):
    code = SCRIPT.format(proj=str(tmp_path), name=name, out=str(tmp_path / out))
    full = dict(os.environ, PULLBACK_CACHE_DIR=str(tmp_path / "cache"), PULLBACK_ARTIFACTS="0")
    full.update(env)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full)
    assert p.returncode == 0, p.stderr
    got = np.load(tmp_path / out)
    return json.loads(p.stdout), [got[k] for k in got.files]


def expected(scale=3.0):
    x, y = np.linspace(-1.0, 1.0, 5), np.linspace(0.5, 2.0, 5)
    z = np.sin(x) * y + scale * x
    return [2 * z * (np.cos(x) * y + scale), 2 * z * np.sin(x)]


def test_second_process_loads_from_the_cache(tmp_path):
    (tmp_path / "cmod.py").write_text(MODULE)
    first, g1 = run_script(tmp_path, "cmod", "g1.npz")
    assert first["transforms"] == 2 and first["cache_stores"] == 2      # f and inner
    assert first["cache_hits"] == 0 and first["compiler"]
    second, g2 = run_script(tmp_path, "cmod", "g2.npz")
    assert second["transforms"] == 0 and second["cache_hits"] == 2, second
    assert not second["compiler"], "a cache hit must not import the compiler"
    for a, b, e in zip(g1, g2, expected()):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_allclose(a, e, rtol=1e-12)


def test_cache_off_and_editing_the_source(tmp_path):
    (tmp_path / "cmod2.py").write_text(MODULE)
    off, _ = run_script(tmp_path, "cmod2", "g.npz", PULLBACK_CACHE="0")
    assert off["cache_stores"] == 0 and not (tmp_path / "cache").exists()
    run_script(tmp_path, "cmod2", "g.npz")
    (tmp_path / "cmod2.py").write_text(MODULE.replace("SCALE * x", "SCALE * x * 2.0"))
    edited, g = run_script(tmp_path, "cmod2", "g.npz")
    assert edited["transforms"] == 2 and edited["cache_hits"] == 0, edited   # the file changed
    for a, e in zip(g, expected(scale=6.0)):
        np.testing.assert_allclose(a, e, rtol=1e-12)


def test_a_torn_entry_is_ignored(tmp_path):
    (tmp_path / "cmod3.py").write_text(MODULE)
    run_script(tmp_path, "cmod3", "g.npz")
    for entry in (tmp_path / "cache").iterdir():
        entry.write_text("{not json")
    stats, g = run_script(tmp_path, "cmod3", "g.npz")
    assert stats["transforms"] == 2 and stats["cache_hits"] == 0
    for a, e in zip(g, expected()):
        np.testing.assert_allclose(a, e, rtol=1e-12)


# -- in-process: keys, descriptions ------------------------------------------------

@pytest.fixture
def module(tmp_path, monkeypatch, request):
    monkeypatch.setenv("PULLBACK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PULLBACK_ARTIFACTS", "0")
    name = f"cmod_{request.node.name}"
    (tmp_path / f"{name}.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield importlib.import_module(name)
    sys.modules.pop(name, None)


def obtain(fn, args, wrt):
    calls = []

    def make():
        calls.append(1)
        return api.derivative_of(fn).transform(args, wrt)
    key = tuple(checks.signature_key(a) for a in args)
    return jit.obtain(fn, key, wrt, False, make), len(calls)


def test_obtain_transforms_once_then_loads(module):
    x, y = np.ones(3), np.ones(3)
    first, made = obtain(module.f, (x, y), (0,))
    assert made == 1
    again, made = obtain(module.f, (x, y), (0,))
    assert made == 0 and again.text == first.text and again.source == first.source
    assert again.primal is not first.primal
    _, made = obtain(module.f, (x, 1.0), (0,))             # another signature
    assert made == 1
    _, made = obtain(module.f, (x, y), (0, 1))             # other gradients
    assert made == 1
    out, res = again.primal(x, y)
    np.testing.assert_allclose(again.adjoint(res, 1.0)[0], first.adjoint(
        first.primal(x, y)[1], 1.0)[0], rtol=0)


def test_rebinding_a_global_changes_the_key(module, monkeypatch):
    key = (checks.signature_key(np.ones(2)),) * 2
    before = cache.identity(module.f, key, (0,), False)
    monkeypatch.setattr(module, "inner", lambda a, b: a * b)    # no longer describable
    assert cache.identity(module.f, key, (0,), False) is None
    monkeypatch.setattr(module, "inner", np.multiply)
    after = cache.identity(module.f, key, (0,), False)
    assert after["globals"]["inner"] == ["object", "numpy", "multiply"]
    assert before["globals"]["inner"][0] == "function" and before != after
    monkeypatch.setattr(module, "SCALE", np.float32(3.0))      # data: keyed by type
    assert cache.identity(module.f, key, (0,), False)["globals"]["SCALE"] == \
        ["value", "numpy", "float32", "float32", 0]


def test_describe_and_resolve_round_trip(module):
    home = module.f.__globals__
    for value in (runtime.unbroadcast, np.tanh, np.linalg.norm, math.sin, abs, np, math):
        desc = cache.describe(value, home)
        assert desc is not None and json.loads(json.dumps(desc)) == desc
        assert cache.resolve(desc, module.f) is value
    primal, adjoint = api.derivative_of(module.inner).for_callers((0, 1))
    assert cache.describe(primal, home) == ["callee", ".", "inner", [0, 1], "primal"]
    assert cache.describe(adjoint, home) == ["callee", ".", "inner", [0, 1], "adjoint"]
    assert cache.resolve(cache.describe(primal, home), module.f) is primal
    assert cache.resolve(cache.describe(adjoint, home), module.f) == adjoint
    assert cache.describe(lambda v: v, home) is None


def test_undescribable_functions_are_not_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("PULLBACK_CACHE_DIR", str(tmp_path / "cache"))
    helper = function_from_source("""
        def helper(a):
            return a * a
    """)
    f = function_from_source("""
        def f(x):
            return np.sum(helper(x))
    """, {"helper": helper})
    before = dict(cache.stats)
    np.testing.assert_allclose(pb.grad(f)(np.arange(3.0)), 2 * np.arange(3.0))
    assert cache.stats["transforms"] == before["transforms"] + 2
    # helper's own transform is cached; f's, which binds helper, cannot be
    assert cache.stats["cache_stores"] == before["cache_stores"] + 1
    assert cache.identity(f, (checks.signature_key(np.ones(3)),), (0,), False) is None
    assert len(os.listdir(tmp_path / "cache")) == 1


def test_settings(monkeypatch, tmp_path):
    monkeypatch.delenv("PULLBACK_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache.directory() == os.path.join(str(tmp_path), "pullback")
    monkeypatch.setenv("PULLBACK_CACHE_DIR", "/somewhere")
    assert cache.directory() == "/somewhere"
    for off in ("0", "off", "false", "no"):
        monkeypatch.setenv("PULLBACK_CACHE", off)
        assert not cache.enabled()
    monkeypatch.setenv("PULLBACK_CACHE", "1")
    assert cache.enabled()
    assert cache.compiler_version().startswith(pb.__version__ + "+")


def test_a_changed_compiler_misses(module, monkeypatch):
    _, made = obtain(module.f, (np.ones(2), np.ones(2)), (0,))
    assert made == 1
    monkeypatch.setattr(cache, "compiler_version", lambda: "0.0.0+other")
    _, made = obtain(module.f, (np.ones(2), np.ones(2)), (0,))
    assert made == 1



def test_settings_in_the_environment_are_part_of_the_key(module, monkeypatch):
    key = (checks.signature_key(np.ones(2)),) * 2
    before = cache.identity(module.f, key, (0,), False)
    monkeypatch.setenv("PULLBACK_INPLACE", "0")
    after = cache.identity(module.f, key, (0,), False)
    assert after["env"]["PULLBACK_INPLACE"] == "0" and before != after
    monkeypatch.setenv("PULLBACK_CACHE_DIR", "/elsewhere")       # where, not what
    assert cache.identity(module.f, key, (0,), False) == after


# -- JAX's persistent compilation cache, under pullback's -----------------------------

JAX_SCRIPT = """
import json, sys
import numpy as np
import pullback as pb

def chain(x):
    y = np.tanh(x)
    y = 2.0 * y + 1.0
    y = np.sin(y) * x
    return np.sum(y ** 2)

x = np.linspace(-1.0, 1.0, 4096)
g = pb.grad(chain)(x)
import jax
print(json.dumps({"dir": jax.config.jax_compilation_cache_dir, "g0": float(g[0])}))
"""


def _run_jax(tmp_path, **env):
    # (JAX's own setting, which pullback only ever lowers to 0.1 s: a kernel this
    # small may compile faster than that)
    full = dict(os.environ, PULLBACK_CACHE_DIR=str(tmp_path / "cache"), PULLBACK_ARTIFACTS="0",
                PULLBACK_JAX_THRESHOLD="1000", JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0")
    full.update(env)
    (tmp_path / "chain_script.py").write_text(JAX_SCRIPT)
    p = subprocess.run([sys.executable, str(tmp_path / "chain_script.py")],
                       capture_output=True, text=True, env=full)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_fused_kernels_go_to_jaxs_cache_under_pullbacks(tmp_path):
    pytest.importorskip("jax")
    out = _run_jax(tmp_path)
    where = tmp_path / "cache" / "jax"
    assert out["dir"] == str(where)
    entries = sorted(p.name for p in where.iterdir())
    assert entries and any("fused" in e for e in entries), entries
    assert oct(where.stat().st_mode & 0o777) == "0o700"
    again = _run_jax(tmp_path)         # a second process: the same entries, the same gradient
    assert sorted(p.name for p in where.iterdir()) == entries and again["g0"] == out["g0"]
    x0 = -1.0
    y = np.sin(2.0 * np.tanh(x0) + 1.0) * x0
    dy = np.sin(2.0 * np.tanh(x0) + 1.0) \
        + x0 * np.cos(2.0 * np.tanh(x0) + 1.0) * 2.0 * (1 - np.tanh(x0) ** 2)
    assert out["g0"] == pytest.approx(2 * y * dy, rel=1e-12)


def test_cache_off_leaves_jax_alone(tmp_path):
    pytest.importorskip("jax")
    out = _run_jax(tmp_path, PULLBACK_CACHE="0")
    assert out["dir"] is None and not (tmp_path / "cache").exists()


class _FakeConfig:
    def __init__(self, cache_dir=None):
        self.jax_compilation_cache_dir = cache_dir
        self.jax_persistent_cache_min_compile_time_secs = 1.0

    def update(self, name, value):
        setattr(self, name, value)


class _FakeJax:
    def __init__(self, cache_dir=None):
        self.config = _FakeConfig(cache_dir)


def test_jax_compilation_cache_keeps_the_users_own_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("PULLBACK_CACHE_DIR", str(tmp_path / "pb"))
    mine = _FakeJax(str(tmp_path / "mine"))
    assert cache.jax_compilation_cache(mine) is None
    assert mine.config.jax_compilation_cache_dir == str(tmp_path / "mine")
    assert mine.config.jax_persistent_cache_min_compile_time_secs == 1.0
    fresh = _FakeJax()
    assert cache.jax_compilation_cache(fresh) == str(tmp_path / "pb" / "jax")
    assert fresh.config.jax_compilation_cache_dir == str(tmp_path / "pb" / "jax")
    assert fresh.config.jax_persistent_cache_min_compile_time_secs == 0.1
    lower = _FakeJax()
    lower.config.jax_persistent_cache_min_compile_time_secs = 0.0      # the user's: kept
    cache.jax_compilation_cache(lower)
    assert lower.config.jax_persistent_cache_min_compile_time_secs == 0.0


def test_jax_compilation_cache_refuses_a_directory_others_can_write(tmp_path, monkeypatch):
    shared = tmp_path / "shared"
    (shared / "jax").mkdir(parents=True)
    os.chmod(shared, 0o700)
    os.chmod(shared / "jax", 0o777)
    monkeypatch.setenv("PULLBACK_CACHE_DIR", str(shared))
    fake = _FakeJax()
    with pytest.warns(UserWarning):
        assert cache.jax_compilation_cache(fake) is None
    assert fake.config.jax_compilation_cache_dir is None
