"""Ahead-of-time artifacts: `pullback compile` output imported in a fresh
process gives the just-in-time gradients; the decorator uses an up-to-date
artifact instead of transforming, and ignores a stale one."""
import ast
import importlib
import json
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pullback as pb

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples")


def _r(seed, *shape):
    return np.random.default_rng(seed).normal(size=shape)


# Inputs for every @differentiable function in examples/ (module.function).
INPUTS = {
    "quickstart.loss": lambda: (_r(0, 3, 2), _r(1, 5, 3), _r(2, 5, 2)),
    "logistic.nll": lambda: (_r(0, 2), 0.3, _r(1, 7, 2), (_r(2, 7) > 0).astype(float)),
    "mlp.dense": lambda: (_r(0, 6, 1), _r(1, 1, 4), _r(2, 4)),
    "mlp.loss": lambda: (_r(0, 1, 4), _r(1, 4), _r(2, 4, 1), _r(3, 1), _r(4, 6, 1),
                         _r(5, 6, 1)),
}


def run(code, env=None, cwd=None):
    """Run ``code`` in a fresh interpreter; return its stdout (fail on error)."""
    full = dict(os.environ, **(env or {}))
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                       text=True, env=full, cwd=cwd)
    assert p.returncode == 0, p.stderr
    return p.stdout


def artifact_meta(path):
    with open(path) as fh:
        tree = ast.parse(fh.read())
    node = next(n for n in reversed(tree.body) if isinstance(n, ast.Assign))
    assert node.targets[0].id == "__pullback__"
    return ast.literal_eval(node.value)


def example_module(name):
    if EXAMPLES not in sys.path:
        sys.path.insert(0, EXAMPLES)
    return importlib.import_module(name)


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    out = tmp_path_factory.mktemp("build")
    p = subprocess.run([sys.executable, "-m", "pullback", "compile", EXAMPLES, "-o", str(out)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return out


def example_entries():
    names = sorted(f[:-3] for f in os.listdir(EXAMPLES) if f.endswith(".py"))
    return [(m, q) for m in names for q, v in vars(example_module(m)).items()
            if getattr(v, "__pullback_differentiable__", False)
            and getattr(v, "__module__", None) == m]


@pytest.mark.parametrize("module,qualname", example_entries())
def test_artifact_in_fresh_process_matches_jit(build, tmp_path, module, qualname):
    key = f"{module}.{qualname}"
    assert key in INPUTS, f"add example inputs for {key} to INPUTS in test_aot.py"
    args = INPUTS[key]()
    meta = artifact_meta(build / f"{module}_pullback.py")
    entry = next(e for e in meta["entries"] if e["qualname"] == qualname and e["own"]
                 and e["signature"] is None and e["wrt"] == list(range(len(args))))
    fn = getattr(example_module(module), qualname)
    value = fn(*args)
    ct = _r(9, *np.shape(value)) if np.ndim(value) else 1.0
    np.savez(tmp_path / "args.npz", *[np.asarray(a) for a in args], ct=ct)
    scalar = [not isinstance(a, np.ndarray) for a in args]
    assert entry["names"] == [f"{qualname}_primal", f"{qualname}_adjoint"]
    out = run(f"""
        import json, sys
        import numpy as np
        sys.path[:0] = [{str(build)!r}, {EXAMPLES!r}]
        import {module}_pullback as art
        data = np.load({str(tmp_path / "args.npz")!r})
        args = [float(data[f"arr_{{i}}"]) if s else data[f"arr_{{i}}"]
                for i, s in enumerate({scalar!r})]
        value, res = art.{qualname}_primal(*args)
        grads = art.{qualname}_adjoint(res, data["ct"][()])
        np.savez({str(tmp_path / "grads.npz")!r}, value, *grads)
        print(json.dumps({{"compiler": "pullback.pipeline" in sys.modules,
                           "user_module": {module!r} in sys.modules}}))
    """)
    loaded = json.loads(out)
    assert not loaded["compiler"], "importing an artifact must not need the compiler"
    needs_module = any(f"import {module} as" in line for line in
                       (build / f"{module}_pullback.py").read_text().splitlines())
    assert loaded["user_module"] == needs_module
    os.environ["PULLBACK_ARTIFACTS"] = "0"
    try:
        value, back = pb.vjp(fn, *args)
        jit = back(ct)
    finally:
        del os.environ["PULLBACK_ARTIFACTS"]
    got = np.load(tmp_path / "grads.npz")
    np.testing.assert_array_equal(got["arr_0"], value)
    assert len(got.files) == len(jit) + 1
    for k, g in enumerate(jit):
        np.testing.assert_allclose(got[f"arr_{k + 1}"], g, rtol=1e-12, atol=0)


def test_artifact_is_readable_and_imports_little(build):
    text = (build / "mlp_pullback.py").read_text()
    assert "def loss_primal(w1, b1, w2, b2, x, y):" in text
    assert "def loss_adjoint(residuals, out_bar):" in text
    assert "# line" in text and "__pullback_make__" not in text
    modules = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            modules.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            modules.add(f"{node.module}.{node.names[0].name}")
    # (builtins: `type` and `float`, which scalar code tests its gradients with)
    assert modules <= {"numpy", "pullback.runtime", "types", "mlp", "hashlib", "os", "builtins"}, \
        modules
    from pullback.driver import cache
    meta = artifact_meta(build / "mlp_pullback.py")
    assert meta["source_sha256"] == cache.file_sha256(os.path.join(EXAMPLES, "mlp.py"))
    assert meta["sources"] == {"mlp.py": meta["source_sha256"]}


GRAD_SCRIPT = """
    import json, sys
    import numpy as np
    sys.path.insert(0, {proj!r})
    import pullback as pb
    from pullback.driver import cache
    import {module} as m
    args = {args}
    value, grads = pb.value_and_grad(m.{fn}, argnums={argnums})(*args)
    grads = grads if isinstance(grads, tuple) else (grads,)
    np.savez({out!r}, value, *grads)
    print(json.dumps(cache.stats))
"""


def grads_in_fresh_process(proj, module, fn, args, argnums, out, **env):
    code = GRAD_SCRIPT.format(proj=str(proj), module=module, fn=fn, args=args,
                              argnums=argnums, out=str(out))
    stats = json.loads(run(code, env={"PULLBACK_CACHE": "0", **env}))
    got = np.load(out)
    return stats, [got[k] for k in got.files]


MLP_ARGS = ("[np.random.default_rng(i).normal(size=s) for i, s in enumerate("
            "[(1, 4), (4,), (4, 1), (1,), (6, 1), (6, 1)])]")


def test_decorator_uses_fresh_artifact_and_ignores_stale_one(tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    shutil.copy(os.path.join(EXAMPLES, "mlp.py"), proj / "mlp.py")
    p = subprocess.run([sys.executable, "-m", "pullback", "compile", str(proj / "mlp.py")],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert (proj / "__pullback__" / "mlp_pullback.py").exists()
    call = (proj, "mlp", "loss", MLP_ARGS, (0, 1, 2, 3))

    stats, from_artifact = grads_in_fresh_process(*call, tmp_path / "a.npz")
    assert stats["artifact_hits"] >= 1 and stats["transforms"] == 0, stats
    stats, jit = grads_in_fresh_process(*call, tmp_path / "j.npz", PULLBACK_ARTIFACTS="0")
    assert stats["artifact_hits"] == 0 and stats["transforms"] >= 1, stats
    for a, j in zip(from_artifact, jit):
        np.testing.assert_allclose(a, j, rtol=1e-12, atol=0)

    source = (proj / "mlp.py").read_text()
    edited = source.replace("return np.mean((pred - y) ** 2) + penalty",
                            "return np.mean((pred - y) ** 4) + penalty")
    assert edited != source
    (proj / "mlp.py").write_text(edited)
    stats, after = grads_in_fresh_process(*call, tmp_path / "b.npz")
    assert stats["stale_artifacts"] == 1 and stats["artifact_hits"] == 0, stats
    assert stats["transforms"] >= 1
    assert not np.allclose(after[1], jit[1])          # the new function's gradient...
    stats, jit_after = grads_in_fresh_process(*call, tmp_path / "c.npz",
                                              PULLBACK_ARTIFACTS="0")
    for a, j in zip(after, jit_after):                # ...as the compiler gives it
        np.testing.assert_array_equal(a, j)


def test_a_script_run_as_main_uses_its_artifact(tmp_path):
    shutil.copy(os.path.join(EXAMPLES, "quickstart.py"), tmp_path / "quickstart.py")
    p = subprocess.run([sys.executable, "-m", "pullback", "compile",
                        str(tmp_path / "quickstart.py")], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    out = run(f"""
        import contextlib, io, json, runpy, sys
        with contextlib.redirect_stdout(io.StringIO()) as printed:
            runpy.run_path({str(tmp_path / "quickstart.py")!r}, run_name="__main__")
        from pullback.driver import cache
        print(json.dumps(dict(cache.stats, compiler="pullback.pipeline" in sys.modules,
                              printed=printed.getvalue())))
    """, env={"PULLBACK_CACHE": "0"})
    stats = json.loads(out)
    assert stats["artifact_hits"] == 1 and stats["transforms"] == 0, stats
    assert not stats["compiler"] and "def loss_adjoint(" in stats["printed"]


SPECIALISED = """
import numpy as np
import pullback as pb


@pb.custom_vjp
def cube(x):
    return x ** 3


cube.defvjp(lambda x: (x ** 3, x), lambda x, g: (3 * x ** 2 * g,))


@pb.differentiable
def energy(z):
    return np.sum(np.abs(z) ** 2) + np.sum(cube(np.real(z)))


def make(k):
    @pb.differentiable
    def scaled(x):
        return k * np.sum(x)
    return scaled


scaled = make(2.0)
"""


def test_signatures_custom_callees_and_closures(tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "spec.py").write_text(SPECIALISED)
    p = subprocess.run([sys.executable, "-m", "pullback", "compile", str(proj / "spec.py"),
                        "--signature", "energy(complex128[:])"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "skipped make.<locals>.scaled" in p.stderr and "enclosing function" in p.stderr
    text = (proj / "__pullback__" / "spec_pullback.py").read_text()
    assert "def _make_energy_1(" in text and "_runtime.derivative_of(_spec.cube)" in text
    z = "[np.array([1.0 + 2.0j, -0.5 + 0.25j, 3.0 - 1.0j])]"
    x = "[np.array([1.0, -0.5, 3.0])]"
    for args in (z, x):
        call = (proj, "spec", "energy", args, 0)
        stats, got = grads_in_fresh_process(*call, tmp_path / "a.npz")
        assert stats["artifact_hits"] == 1, stats
        _, jit = grads_in_fresh_process(*call, tmp_path / "j.npz", PULLBACK_ARTIFACTS="0")
        for a, j in zip(got, jit):
            np.testing.assert_allclose(a, j, rtol=1e-12, atol=0)
    xs = np.array([1.0, -0.5, 3.0])                   # the last call's: d/dx (x^2 + x^3)
    np.testing.assert_allclose(got[1], 2 * xs + 3 * xs ** 2)


def test_parse_spec():
    from pullback.driver.aot import parse_spec
    name, args = parse_spec("loss(float64[:, :], complex128, float, int, float32[:])")
    assert name == "loss"
    assert args[0].shape == (1, 1) and args[0].dtype == np.float64
    assert isinstance(args[1], np.complex128) and args[2] == 0.0 and args[3] == 0
    assert args[4].dtype == np.float32 and args[4].ndim == 1
    assert parse_spec("f()") == ("f", ())
    for bad in ("loss", "loss(float64[:], floot)", "loss(float64[1])"):
        with pytest.raises(ValueError, match="cannot read|not a NumPy dtype"):
            parse_spec(bad)


CONTROL_MODULE = '''
import numpy as np
import pullback as pb


@pb.differentiable
def loss(x, y):
    with np.errstate(divide="ignore"):
        z = np.log(x) * y
    parts = (x, y)
    return np.sum(z * z) + helper(*parts, scale=0.5)


def helper(*args, scale=1.0):
    return scale * np.sum(args[0] * args[1])
'''


def test_errstate_and_star_calls_compile_ahead_of_time(tmp_path):
    # the helpers desugar and normalize write (runtime.control) are named in
    # the artifact through pullback.runtime, so it imports them without the compiler
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "ctl.py").write_text(CONTROL_MODULE)
    p = subprocess.run([sys.executable, "-m", "pullback", "compile", str(proj / "ctl.py")],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    text = (proj / "__pullback__" / "ctl_pullback.py").read_text()
    assert "_runtime.control.star_call" in text and "_runtime.control.context_enter" in text
    assert _pullback_imports(text) == {"pullback.runtime"}
    args = "[np.array([1.0, 2.0, 3.0]), np.array([0.5, 0.25, 2.0])]"
    stats, got = grads_in_fresh_process(proj, "ctl", "loss", args, (0, 1), tmp_path / "a.npz")
    assert stats["artifact_hits"] >= 1, stats
    x, y = np.array([1.0, 2.0, 3.0]), np.array([0.5, 0.25, 2.0])
    np.testing.assert_allclose(got[1], 2 * np.log(x) * y ** 2 / x + 0.5 * y, rtol=1e-12)
    np.testing.assert_allclose(got[2], 2 * np.log(x) ** 2 * y + 0.5 * x, rtol=1e-12)


DYNAMIC = """
import numpy as np
import pullback as pb


def apply(fn, x):
    return fn(x)


def cube(x):
    return x ** 3


@pb.differentiable
def energy(x):
    return np.sum(apply(np.sin, x)) + np.sum(cube(x))
"""


def test_artifact_with_dynamic_calls_imports_only_the_runtime(tmp_path):
    # generated code reaches the dispatcher and callee handles through
    # pullback.runtime (runtime/calls.py), never through a compiler module
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "dyn.py").write_text(DYNAMIC)
    p = subprocess.run([sys.executable, "-m", "pullback", "compile", str(proj / "dyn.py"),
                        "--signature", "energy(float64[:])"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    text = (proj / "__pullback__" / "dyn_pullback.py").read_text()
    assert "_runtime.dynamic_call" in text and "_runtime.dynamic_adjoint" in text
    assert "_runtime.derivative_of(_dyn.apply)" in text
    assert _pullback_imports(text) == {"pullback.runtime"}
    call = (proj, "dyn", "energy", "[np.array([1.0, -0.5, 3.0])]", 0)
    stats, got = grads_in_fresh_process(*call, tmp_path / "a.npz")
    assert stats["artifact_hits"] >= 1, stats
    xs = np.array([1.0, -0.5, 3.0])
    np.testing.assert_allclose(got[1], np.cos(xs) + 3 * xs ** 2, rtol=1e-12)


def _pullback_imports(text):
    """The pullback modules an artifact's source imports."""
    modules = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            modules.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            modules.update(f"{node.module}.{a.name}" for a in node.names)
    return {m for m in modules if m.startswith("pullback")}


TRY_MODULE = '''
import numpy as np
import pullback as pb

LOG = []


@pb.differentiable
def chol_norm(K, y):
    try:
        L = np.linalg.cholesky(K)
    except np.linalg.LinAlgError as err:
        raise ValueError("K is not positive definite") from err
    else:
        z = np.linalg.solve(L, y)
    return np.sum(z ** 2)


@pb.differentiable
def fallback(x):
    try:
        y = 1.0 / x
    except ZeroDivisionError:
        y = 0.0
    finally:
        LOG.append(1)
    return y * x * x


@pb.differentiable
def first_big(xs):
    t = 0.0
    for x in xs:
        try:
            t = t + x * x
            if t > 1.0:
                break
        finally:
            LOG.append(2)
    return t


@pb.differentiable
def nested(x):
    def sq(v):
        return v * v
    return sq(x) + sq(2.0 * x)


@pb.differentiable
def star(*xs, k=1.0):
    return sum(np.sum(x) * k for x in xs)
'''


def test_try_nested_and_variadic_functions_compile_ahead_of_time(tmp_path):
    # try bodies and nested functions are written into the artifact (their
    # gradients come from a transform of that copy, made when first called);
    # a function with *args is compiled per --signature, flattened
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "tries.py").write_text(TRY_MODULE)
    p = subprocess.run([sys.executable, "-m", "pullback", "compile", str(proj / "tries.py"),
                        "--signature", "star(float64[:], float64[:])"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "compiled ahead of time per signature" in p.stdout + p.stderr
    text = (proj / "__pullback__" / "tries_pullback.py").read_text()
    assert _pullback_imports(text) == {"pullback.runtime"}
    assert "def _make_try_body" in text and "_runtime.control.attempt" in text
    K = np.array([[2.0, 0.5], [0.5, 1.0]])
    y = np.array([1.0, 2.0])
    xs = np.array([0.5, 2.0, 3.0])
    a, b = np.array([1.0, 2.0]), np.array([-1.0, 0.5, 4.0])
    np.savez(tmp_path / "in.npz", K=K, y=y, xs=xs, a=a, b=b)
    out = run(f"""
        import json, sys
        import numpy as np
        sys.path[:0] = [{str(proj / "__pullback__")!r}, {str(proj)!r}]
        import tries_pullback as art
        imported_compiler = "pullback.pipeline" in sys.modules
        d = np.load({str(tmp_path / "in.npz")!r})
        got = {{}}
        v, r = art.chol_norm_primal(d["K"], d["y"])
        got["chol"] = art.chol_norm_adjoint(r, 1.0)
        try:
            art.chol_norm_primal(-d["K"], d["y"])
        except ValueError as e:
            raised = str(e)
        for x in (2.0, 0.0):
            v, r = art.fallback_primal(x)
            got[f"fallback{{x}}"] = art.fallback_adjoint(r, 1.0)
        v, r = art.first_big_primal(d["xs"])
        got["first_big"] = art.first_big_adjoint(r, 1.0)
        v, r = art.nested_primal(1.5)
        got["nested"] = art.nested_adjoint(r, 1.0)
        v, r = art.star_primal_1(d["a"], d["b"], 2.0)     # xs_0, xs_1, then k
        got["star"] = art.star_adjoint_1(r, 1.0)[:2]
        np.savez({str(tmp_path / "out.npz")!r},
                 **{{f"{{k}}_{{i}}": g for k, gs in got.items() for i, g in enumerate(gs)}})
        print(json.dumps({{"compiler": imported_compiler, "raised": raised}}))
    """)
    info = json.loads(out)
    assert not info["compiler"], "importing an artifact must not need the compiler"
    assert info["raised"] == "K is not positive definite"
    got = np.load(tmp_path / "out.npz")
    sys.path.insert(0, str(proj))
    os.environ["PULLBACK_ARTIFACTS"] = "0"
    try:
        m = importlib.import_module("tries")
        jit = {"chol": pb.grad(m.chol_norm, argnums=(0, 1))(K, y),
               "fallback2.0": (pb.grad(m.fallback)(2.0),),
               "fallback0.0": (pb.grad(m.fallback)(0.0),),
               "first_big": (pb.grad(m.first_big)(xs),),
               "nested": (pb.grad(m.nested)(1.5),),
               "star": pb.grad(lambda u, w: m.star(u, w, k=2.0), argnums=(0, 1))(a, b)}
    finally:
        del os.environ["PULLBACK_ARTIFACTS"]
        sys.path.remove(str(proj))
    for key, grads in jit.items():
        for i, g in enumerate(grads):
            np.testing.assert_allclose(got[f"{key}_{i}"], g, rtol=1e-12, atol=0)
    np.testing.assert_array_equal(got["first_big_0"], [1.0, 4.0, 0.0])
    np.testing.assert_array_equal(got["star_0"], [2.0, 2.0])
    assert float(got["fallback2.0_0"]) == 1.0 and float(got["fallback0.0_0"]) == 0.0


WRITER_MODULE = '''
import numpy as np
import pullback as pb


def step(q, p, dt):
    p -= dt * q ** 3
    q += dt * p


@pb.differentiable
def energy(q, p):
    for _ in range(3):
        step(q, p, 0.1)
    return np.sum(q ** 2 + p ** 2)


def scale(y):
    y *= 2.0


@pb.differentiable
def bare(x):
    y = x * 1.0
    scale(y)
    return np.sum(y ** 2)
'''


def _energy_by_hand(q, p):
    q, p = q.copy(), p.copy()
    for _ in range(3):
        p -= 0.1 * q ** 3
        q += 0.1 * p
    return np.sum(q ** 2 + p ** 2)


def test_functions_calling_writers_compile_ahead_of_time(tmp_path):
    # a call of a function writing into its argument goes to the writer's
    # variant (frontend.written): written into the artifact as an entry of its
    # own in a generic transform, made again through the runtime's
    # derivative_of(step, writes=True) in a specialised one; the checks on a
    # writer's arguments come from pullback.runtime, not the compiler
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "writer.py").write_text(WRITER_MODULE)
    p = subprocess.run([sys.executable, "-m", "pullback", "compile", str(proj / "writer.py"),
                        "--signature", "energy(float64[:], float64[:])",
                        "--signature", "bare(float64[:])"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    text = (proj / "__pullback__" / "writer_pullback.py").read_text()
    assert _pullback_imports(text) == {"pullback.runtime"}
    assert "def _make_step_writes" in text
    assert "derivative_of(_writer.step, writes=True)" in text
    q, pm = np.array([0.5, -1.0]), np.array([1.0, 0.25])
    x = np.array([1.0, 2.0])
    np.savez(tmp_path / "in.npz", q=q, p=pm, x=x)
    out = run(f"""
        import json, sys
        import numpy as np
        sys.path[:0] = [{str(proj / "__pullback__")!r}, {str(proj)!r}]
        import writer_pullback as art
        d = np.load({str(tmp_path / "in.npz")!r})
        q, p, x = d["q"].copy(), d["p"].copy(), d["x"].copy()
        got = {{}}
        v, r = art.energy_primal_1(q, p)
        got["energy"] = art.energy_adjoint_1(r, 1.0)
        unchanged = bool((q == d["q"]).all() and (p == d["p"]).all())
        v, r = art.bare_primal_1(x)
        got["bare"] = art.bare_adjoint_1(r, 1.0)
        v, r = art.energy_primal(0.5, 1.0)      # generic: numbers, rebound in step
        got["energy_numbers"] = art.energy_adjoint(r, 1.0)
        v, r = art.bare_primal(1.5)
        got["bare_number"] = art.bare_adjoint(r, 1.0)
        try:
            art.energy_primal(q, p)               # generic entry given arrays
            refused = ""
        except Exception as e:
            refused = type(e).__name__ + ": " + str(e)
        np.savez({str(tmp_path / "out.npz")!r},
                 **{{f"{{k}}_{{i}}": g for k, gs in got.items() for i, g in enumerate(gs)}})
        print(json.dumps({{"unchanged": unchanged, "refused": refused}}))
    """)
    info = json.loads(out)
    assert info["unchanged"], "the artifact's primal changed the caller's arrays"
    assert info["refused"].startswith("UnsupportedSyntaxError: `q` is an array that the "
                                      "function updates in place")
    assert "--signature" in info["refused"]
    got = np.load(tmp_path / "out.npz")
    sys.path.insert(0, str(proj))
    os.environ["PULLBACK_ARTIFACTS"] = "0"
    try:
        m = importlib.import_module("writer")
        jit = {"energy": pb.grad(m.energy, argnums=(0, 1))(q, pm),
               "bare": (pb.grad(m.bare)(x),),
               "energy_numbers": pb.grad(m.energy, argnums=(0, 1))(0.5, 1.0),
               "bare_number": (pb.grad(m.bare)(1.5),)}
    finally:
        del os.environ["PULLBACK_ARTIFACTS"]
        sys.path.remove(str(proj))
        sys.modules.pop("writer", None)
    for key, grads in jit.items():
        for i, g in enumerate(grads):
            np.testing.assert_allclose(got[f"{key}_{i}"], g, rtol=1e-12, atol=0)
    h = 1e-6
    fd = [(_energy_by_hand(q + h * e, pm) - _energy_by_hand(q - h * e, pm)) / (2 * h)
          for e in np.eye(2)]
    np.testing.assert_allclose(got["energy_0"], fd, rtol=1e-7)
    np.testing.assert_array_equal(got["bare_0"], 8.0 * x)
    # numbers updated in a callee stay the caller's (Python): d/dq of q**2 + p**2
    assert float(got["energy_numbers_0"]) == 1.0 and float(got["energy_numbers_1"]) == 2.0
    assert float(got["bare_number_0"]) == 3.0
