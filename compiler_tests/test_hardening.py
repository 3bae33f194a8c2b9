"""Hardening (issue 19): what a careful user or an attacker can put in the
cache, in artifacts and in the source does not make pullback run wrong code.

- characters Python reads as part of a comment or a string (form feed,
  ``\\u2028``, ``\\x85``) stay there in artifacts and generated code;
- a cache entry that was edited, is broken, is not a regular file, is too
  large, or that another user could have written is never run: it is
  discarded (or ignored, with one warning) and the function transformed again;
- an artifact is stale when any file its functions came from changed, and is
  looked for only beside its module and on ``PULLBACK_PATH``;
- code nested deeper than Python compiles is refused with the user's line.
"""
import ast
import importlib
import io
import json
import os
import re
import stat
import subprocess
import sys
import textwrap
import tokenize
import warnings

import numpy as np
import pytest

import pullback as pb
from pullback.driver import aot, artifacts, cache, jit, trust
from pullback import api, checks
from pullback.backend import codegen
from pullback.testing import function_from_source


X = np.array([1.0, 2.0])


@pytest.fixture(autouse=True)
def fresh(monkeypatch, tmp_path):
    """Each test its own cache directory, nothing remembered of artifacts or
    of warnings already given."""
    monkeypatch.setenv("PULLBACK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("PULLBACK_PATH", raising=False)
    artifacts.forget()
    trust._warned.clear()
    yield
    artifacts.forget()
    trust._warned.clear()


def import_from(directory, name, monkeypatch):
    """``name`` imported from ``directory``; it and the modules it imported from
    there are dropped from ``sys.modules`` after the test.  (Only those: a
    library first imported meanwhile stays, as the rules registered when it
    imported are keyed by its functions.)"""
    monkeypatch.syspath_prepend(str(directory))
    sys.modules.pop(name, None)
    before = set(sys.modules)
    module = importlib.import_module(name)
    for key in set(sys.modules) - before:
        if (getattr(sys.modules[key], "__file__", None) or "").startswith(str(directory)):
            monkeypatch.setitem(sys.modules, key, sys.modules.pop(key))   # undone: dropped
    return module


def run(code, **env):
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                       text=True, env=dict(os.environ, **env))
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.splitlines()[-1])


# -- what Python reads as one line stays one line ---------------------------------------

ODD = (
    "import numpy as np\n"
    "import pullback as pb\n"
    "\n"
    "\n"
    "@pb.differentiable\n"
    "def f(x):\n"
    "    y = x * x\n"
    "    return np.sum(y * 1.0)  # note\f    y = y * 100.0\n"
    "\n"
    "\n"
    "@pb.differentiable\n"
    "def g(x):\n"
    "    s = 'a\u2028b\x85c\u2029'  # and here\u2028    x = x * 100.0\n"
    "    return np.sum(x * x) * len(s)\n"
)


def test_source_lines_are_pythons_lines():
    text = "a = 1  # \f b = 2 \x1c\x1d\x1e\x85\u2028\u2029\v\nc = 'x\u2028y'\r\nd = 3\re = 4"
    lines = codegen.source_lines(text)
    assert lines == ["a = 1  # \f b = 2 \x1c\x1d\x1e\x85\u2028\u2029\v", "c = 'x\u2028y'",
                     "d = 3", "e = 4"]
    assert "".join(codegen.source_lines(text, True)) == text
    toks = list(tokenize.generate_tokens(io.StringIO(text).readline))
    assert max(t.end[0] for t in toks) == len(lines)


def test_form_feed_and_line_separators_survive_in_artifacts(tmp_path, monkeypatch):
    monkeypatch.setenv("PULLBACK_CACHE", "0")
    (tmp_path / "odd.py").write_text(ODD, encoding="utf-8")
    module = import_from(tmp_path, "odd", monkeypatch)
    result = aot.write(module, str(tmp_path / "__pullback__"))
    text = (tmp_path / "__pullback__" / "odd_pullback.py").read_text(encoding="utf-8")
    compile(text, "odd_pullback.py", "exec")          # valid Python
    assert "# note\f    y = y * 100.0" in text            # the comment, whole
    assert "a\\u2028b\\x85c\\u2029" in text                 # the string, escaped
    assert "# and here\u2028    x = x * 100.0" in text
    assert len(result.entries) == 2
    before = dict(cache.stats)
    value, grad = pb.value_and_grad(module.f)(X)
    assert cache.stats["artifact_hits"] == before["artifact_hits"] + 1
    assert value == 5.0 and grad.tolist() == [2.0, 4.0]
    value, grad = pb.value_and_grad(module.g)(X)
    assert cache.stats["artifact_hits"] == before["artifact_hits"] + 2
    assert value == 30.0 and grad.tolist() == [12.0, 24.0]     # (len(s) == 6)
    assert cache.stats["transforms"] == before["transforms"]
    shown = api.derivative_of(module.g).specialize((X,), (0,)).source   # (from the artifact)
    assert "def g_primal(x):" in shown and "def g_adjoint(" in shown and "f_primal" not in shown
    # the artifact imported as a module computes the same
    art = import_from(tmp_path / "__pullback__", "odd_pullback", monkeypatch)
    value, res = art.f_primal(X)
    assert value == 5.0 and art.f_adjoint(res, 1.0)[0].tolist() == [2.0, 4.0]


def test_form_feed_in_generated_code_keeps_line_numbers():
    f = function_from_source("def f(x):\n    y = x * 2.0  # a\fb\n    return np.log(y)\n")
    loaded = api.derivative_of(f).transform((X,), (0,))
    lines = loaded.text.split("\n")
    assert any(line.endswith("# line 2: y = x * 2.0  # a\fb") for line in lines)
    assert len(codegen.source_lines(loaded.text)) == len(lines) - 1
    with np.errstate(all="raise"), pytest.raises(FloatingPointError) as info:
        loaded.primal(np.zeros(2))
    frames = [n for name, n in _frames(info.value.__traceback__) if name == loaded.filename]
    assert frames and "np.log" in lines[frames[-1] - 1]
    assert loaded.user_line(frames[-1]) == 3


def _frames(tb):
    while tb is not None:
        yield tb.tb_frame.f_code.co_filename, tb.tb_lineno
        tb = tb.tb_next


# -- the cache: entries are checked, and discarded when they fail ------------------------

MODULE = """
import numpy as np
import pullback as pb


@pb.differentiable
def f(x):
    return np.sum(np.sin(x) * x)
"""


def exact(x):
    return np.cos(x) * x + np.sin(x)


@pytest.fixture
def module(tmp_path, monkeypatch, request):
    monkeypatch.setenv("PULLBACK_ARTIFACTS", "0")
    name = re.sub(r"\W", "_", f"hmod_{request.node.name}")
    (tmp_path / f"{name}.py").write_text(MODULE)
    return import_from(tmp_path, name, monkeypatch)


def obtain(fn):
    calls = []

    def make():
        calls.append(1)
        return api.derivative_of(fn).transform((X,), (0,))
    loaded = jit.obtain(fn, (checks.signature_key(X),), (0,), False, make)
    value, res = loaded.primal(X)
    grad = loaded.adjoint(res, 1.0)[0]
    np.testing.assert_allclose(grad, exact(X), rtol=1e-15)
    return len(calls)


def entry_path(tmp_path):
    entries = [p for p in (tmp_path / "cache").iterdir() if p.suffix == ".json"]
    assert len(entries) == 1
    return entries[0]


def edit(path, change, rehash=False):
    entry = json.loads(path.read_text())
    change(entry)
    if rehash:
        entry["sha256"] = cache._digest(entry)
    path.write_text(json.dumps(entry))


def test_an_edited_entry_is_not_run(module, tmp_path):
    assert obtain(module.f) == 1 and obtain(module.f) == 0
    path = entry_path(tmp_path)
    # still valid code, but another gradient: the entry's own hash catches it
    edit(path, lambda e: e.update(text=e["text"].replace("np.cos", "np.sin")))
    assert "np.sin(x)" in json.loads(path.read_text())["text"]
    assert obtain(module.f) == 1            # transformed again (obtain checks the values)
    assert obtain(module.f) == 0            # and the entry written anew is used
    assert json.loads(entry_path(tmp_path).read_text())["sha256"] == \
        cache._digest(json.loads(entry_path(tmp_path).read_text()))


@pytest.mark.parametrize("damage", ["syntax", "names", "helpers", "json", "hash"])
def test_a_broken_entry_is_discarded_and_the_function_transformed_again(
        module, tmp_path, damage):
    assert obtain(module.f) == 1
    path = entry_path(tmp_path)
    if damage == "syntax":
        edit(path, lambda e: e.update(text="def __pullback_make__(:\n"), rehash=True)
    elif damage == "names":
        edit(path, lambda e: e.update(names=["no_such_primal", "no_such_adjoint"]),
             rehash=True)
    elif damage == "helpers":
        edit(path, lambda e: e["helpers"].update(
            {n: ["object", "numpy", "no_such_thing"] for n in e["helpers"]}), rehash=True)
    elif damage == "json":
        path.write_text(path.read_text()[:100])
    else:
        edit(path, lambda e: e.pop("sha256"))
    assert obtain(module.f) == 1            # not an error: transformed again
    assert obtain(module.f) == 0            # the damaged entry was replaced


def test_cache_directory_and_entries_are_private_whatever_the_umask(module, tmp_path):
    old = os.umask(0)
    try:
        assert obtain(module.f) == 1
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "cache").st_mode) == 0o700
    assert stat.S_IMODE(os.stat(entry_path(tmp_path)).st_mode) == 0o600


posix_only = pytest.mark.skipif(not hasattr(os, "getuid"),
                                reason="no file owners or modes on this platform")


@posix_only
@pytest.mark.parametrize("mode", [0o620, 0o602, 0o666], ids=["g+w", "o+w", "go+w"])
def test_an_entry_others_can_write_is_ignored_with_one_warning(module, tmp_path, mode):
    assert obtain(module.f) == 1
    path = entry_path(tmp_path)
    edit(path, lambda e: e.update(text=e["text"].replace("np.cos", "np.sin")), rehash=True)
    os.chmod(path, mode)
    with pytest.warns(trust.UntrustedFileWarning, match="others can write"):
        assert obtain(module.f) == 1        # the (poisoned) entry was not run
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # once per directory
        os.chmod(entry_path(tmp_path), mode)
        assert obtain(module.f) == 1


@posix_only
def test_an_entry_of_another_user_is_ignored(module, tmp_path):
    assert obtain(module.f) == 1
    path = entry_path(tmp_path)
    edit(path, lambda e: e.update(text=e["text"].replace("np.cos", "np.sin")), rehash=True)
    other = 12345 if os.getuid() != 12345 else 12346
    try:
        os.chown(path, other, -1)
    except PermissionError:
        pytest.skip("only root can give a file to another user here")
    with pytest.warns(trust.UntrustedFileWarning, match=f"user id {other}"):
        assert obtain(module.f) == 1


@posix_only
@pytest.mark.parametrize("problem", ["group-writable", "world-writable", "other owner"])
def test_a_cache_directory_others_can_write_is_not_used(module, tmp_path, problem):
    assert obtain(module.f) == 1
    where = tmp_path / "cache"
    if problem == "other owner":
        try:
            os.chown(where, 12345, -1)
        except PermissionError:
            pytest.skip("only root can give a directory to another user here")
    else:
        os.chmod(where, 0o770 if problem == "group-writable" else 0o777)
    stores = cache.stats["cache_stores"]
    with pytest.warns(trust.UntrustedFileWarning, match="cache directory"):
        assert obtain(module.f) == 1
    assert obtain(module.f) == 1            # (no second warning: once per directory)
    assert cache.stats["cache_stores"] == stores       # nothing written there either


@posix_only
@pytest.mark.parametrize("kind", ["symlink to /dev/zero", "fifo", "oversized", "directory"])
def test_an_entry_that_is_not_a_sane_regular_file_is_discarded(module, tmp_path, kind):
    assert obtain(module.f) == 1
    path = entry_path(tmp_path)
    os.unlink(path)
    if kind == "symlink to /dev/zero":
        if not os.path.exists("/dev/zero"):
            pytest.skip("no /dev/zero here")
        os.symlink("/dev/zero", path)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "oversized":
        with open(path, "wb") as fh:
            fh.truncate(trust.MAX_BYTES + 1)        # (sparse: costs no disk)
    else:
        os.mkdir(path)
    assert obtain(module.f) == 1            # neither hangs nor reads without bound
    if kind != "directory":
        assert obtain(module.f) == 0        # replaced by a good entry
        assert stat.S_ISREG(os.lstat(path).st_mode)


def test_read_bytes_bounds_the_size(tmp_path, monkeypatch):
    path = tmp_path / "f"
    path.write_bytes(b"x" * 100)
    assert trust.read_bytes(str(path)) == b"x" * 100
    monkeypatch.setattr(trust, "MAX_BYTES", 99)
    with pytest.raises(trust.BadFile, match="larger"):
        trust.read_bytes(str(path))
    with pytest.raises(FileNotFoundError):
        trust.read_bytes(str(tmp_path / "missing"))


@posix_only
def test_read_bytes_reads_only_regular_files(tmp_path):
    (tmp_path / "real").write_bytes(b"{}")
    os.symlink(tmp_path / "real", tmp_path / "link")
    os.mkfifo(tmp_path / "fifo")
    os.mkdir(tmp_path / "dir")
    for name, why in [("link", "cannot open"), ("fifo", "not a regular file"),
                      ("dir", "not a regular file")]:
        with pytest.raises(trust.BadFile, match=why):
            trust.read_bytes(str(tmp_path / name))


# -- artifacts: stale across modules, found only beside the module -----------------------

HELPER = """
def h(x):
    return x * x
"""

MAIN = """
import numpy as np
import pullback as pb
from helper import h


@pb.differentiable
def f(x):
    return np.sum(h(x))
"""

GRAD = """
    import json, sys
    import numpy as np
    sys.path[:0] = [{proj!r}, {proj!r} + "/__pullback__"]
    import pullback as pb
    from pullback.driver import cache
    import main
    x = np.array([1.0, 2.0])
    out = dict(grad=pb.grad(main.f)(x).tolist())
    out.update(cache.stats)
    try:
        import main_pullback as art
    except ImportError as err:
        out["imported"] = str(err)
    else:
        value, res = art.f_primal(x)
        out["imported"] = art.f_adjoint(res, 1.0)[0].tolist()
    print(json.dumps(out))
"""


def test_an_artifact_is_stale_when_a_helper_module_changed(tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "helper.py").write_text(HELPER)
    (proj / "main.py").write_text(MAIN)
    p = subprocess.run([sys.executable, "-m", "pullback", "compile", str(proj / "main.py")],
                       capture_output=True, text=True, cwd=proj)
    assert p.returncode == 0, p.stderr
    text = (proj / "__pullback__" / "main_pullback.py").read_text()
    assert "def h_primal(x):" in text           # the helper's own transform is in it
    meta = artifacts._metadata(ast.parse(text))
    assert sorted(meta["sources"]) == ["helper.py", "main.py"]
    code = GRAD.format(proj=str(proj))
    got = run(code, PULLBACK_CACHE="0")
    assert got["artifact_hits"] == 1 and got["stale_artifacts"] == 0, got
    assert got["grad"] == [2.0, 4.0] and got["imported"] == [2.0, 4.0]
    (proj / "helper.py").write_text(HELPER.replace("x * x", "x * x * x"))
    got = run(code, PULLBACK_CACHE="0")
    assert got["artifact_hits"] == 0 and got["stale_artifacts"] == 1, got
    assert got["grad"] == [3.0, 12.0]
    assert "helper.py changed" in got["imported"] and "pullback compile" in got["imported"]
    (proj / "helper.py").write_text(HELPER)         # the same text again: up to date
    got = run(code, PULLBACK_CACHE="0")
    assert got["artifact_hits"] == 1 and got["imported"] == [2.0, 4.0], got


SIMPLE = """
import numpy as np
import pullback as pb


@pb.differentiable
def f(x):
    return np.sum(x * x)
"""


def compiled(tmp_path, monkeypatch, outdir, name="amod"):
    """A module ``name`` in ``tmp_path/proj``, its artifact written to
    ``outdir``, whose generic entry is poisoned (it returns the cotangent
    times 7) so that using it shows."""
    monkeypatch.setenv("PULLBACK_CACHE", "0")
    proj = tmp_path / "proj"
    proj.mkdir(exist_ok=True)
    (proj / f"{name}.py").write_text(SIMPLE)
    module = import_from(proj, name, monkeypatch)
    path = aot.write(module, str(outdir)).path
    with open(path) as fh:
        text = fh.read()
    with open(path, "w") as fh:
        poisoned = text.replace("return (project(x_bar, x),)",
                                "return (project(x_bar, x) * 7.0,)")
        assert poisoned != text
        fh.write(poisoned)
    return module, path


def grad_and_hits(fn):
    hits = cache.stats["artifact_hits"]
    g = pb.grad(fn)(X)
    return g.tolist(), cache.stats["artifact_hits"] - hits


def test_artifacts_beside_the_module_and_on_pullback_path_are_used(tmp_path, monkeypatch):
    module, _ = compiled(tmp_path, monkeypatch, tmp_path / "proj" / "__pullback__")
    assert grad_and_hits(module.f) == ([14.0, 28.0], 1)       # (the poisoned artifact)
    module, _ = compiled(tmp_path, monkeypatch, tmp_path / "elsewhere", "bmod")
    assert grad_and_hits(module.f) == ([2.0, 4.0], 0)
    artifacts.forget()
    monkeypatch.setenv("PULLBACK_PATH", str(tmp_path / "elsewhere"))
    loaded = artifacts.lookup(module.f, cache.identity(
        module.f, (checks.signature_key(X),), (0,), False))
    assert loaded is not None and loaded.filename.startswith(str(tmp_path / "elsewhere"))
    value, res = loaded.primal(X)
    assert value == 5.0 and loaded.adjoint(res, 1.0)[0].tolist() == [14.0, 28.0]


def test_an_artifact_on_sys_path_or_in_the_current_directory_is_not_used(
        tmp_path, monkeypatch):
    module, _ = compiled(tmp_path, monkeypatch, tmp_path / "other")
    monkeypatch.syspath_prepend(str(tmp_path / "other"))
    monkeypatch.chdir(tmp_path / "other")
    assert str(tmp_path / "other") not in artifacts.search_dirs(module.__file__)
    assert grad_and_hits(module.f) == ([2.0, 4.0], 0)


@posix_only
@pytest.mark.parametrize("what", ["file", "directory"])
def test_an_artifact_others_can_write_is_ignored(tmp_path, monkeypatch, what):
    module, path = compiled(tmp_path, monkeypatch, tmp_path / "proj" / "__pullback__")
    os.chmod(path if what == "file" else os.path.dirname(path), 0o777)
    with pytest.warns(trust.UntrustedFileWarning, match="artifact"):
        assert grad_and_hits(module.f) == ([2.0, 4.0], 0)


@posix_only
def test_an_artifact_of_another_user_is_ignored(tmp_path, monkeypatch):
    module, path = compiled(tmp_path, monkeypatch, tmp_path / "proj" / "__pullback__")
    try:
        os.chown(path, 12345, -1)
    except PermissionError:
        pytest.skip("only root can give a file to another user here")
    with pytest.warns(trust.UntrustedFileWarning, match="user id 12345"):
        assert grad_and_hits(module.f) == ([2.0, 4.0], 0)


@posix_only
def test_an_artifact_that_is_a_symlink_is_not_followed(tmp_path, monkeypatch):
    module, path = compiled(tmp_path, monkeypatch, tmp_path / "proj" / "real")
    link_dir = tmp_path / "proj" / "__pullback__"
    link_dir.mkdir()
    os.symlink(path, link_dir / os.path.basename(path))
    assert grad_and_hits(module.f) == ([2.0, 4.0], 0)


def test_artifacts_are_written_readable_and_writable_by_their_owner_only(
        tmp_path, monkeypatch):
    old = os.umask(0)
    try:
        _, path = compiled(tmp_path, monkeypatch, tmp_path / "proj" / "__pullback__")
    finally:
        os.umask(old)
    assert not os.stat(path).st_mode & 0o022
    assert not os.stat(os.path.dirname(path)).st_mode & 0o022


# -- generated code nested deeper than Python compiles -------------------------------------

def nested_ifs(n):
    return ("def f(x):\n    y = x\n"
            + "".join("    " * (i + 1) + f"if x > {-i - 1}.0:\n" for i in range(n))
            + "    " * (n + 1) + "y = y * x\n    return y\n")


def test_nesting_python_cannot_compile_is_refused_with_the_users_line():
    f = function_from_source(nested_ifs(98))
    with pytest.raises(pb.UnsupportedSyntaxError) as info:
        pb.grad(f)(2.0)
    err = info.value
    assert err.filename == f.__code__.co_filename
    assert err.lineno == 2 + codegen.MAX_INDENT + 1     # the first `if` too deep
    assert f"if x > {-codegen.MAX_INDENT - 1}.0:" in str(err) and "^" in str(err)
    assert "indentation" in str(err) and "`and`" in err.hint


def test_nesting_within_the_limit_is_differentiated():
    f = function_from_source(nested_ifs(codegen.MAX_INDENT))
    assert pb.grad(f)(2.0) == 4.0
    assert pb.grad(f)(-200.0) == 1.0


# -- generated code does not depend on the user's names ----------------------------

def test_a_parameter_named_np_does_not_shadow_numpy_in_the_adjoint():
    def g(x, np):                      # this module imports NumPy as np too
        return x.std() * np
    x = np.array([1.0, 2.0, 4.0])
    expected = 2.0 * (x - x.mean()) / (x.size * x.std())
    np.testing.assert_allclose(pb.grad(g)(x, 2.0), expected, rtol=1e-12)


def test_a_rule_whose_file_changed_after_import_is_refused(tmp_path, monkeypatch):
    # rules are inlined from their source, read when first used: a module
    # edited on disk since it was imported would give another function's body
    # (an np.abs adjoint came out with arctanh's rule): refused instead
    import importlib
    from pullback.rules import inline
    path = tmp_path / "edited_rules.py"
    path.write_text("def one(g, ans, x):\n    return g * 2.0\n\n\n"
                    "def two(g, ans, x):\n    return g / (1.0 - x * x)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = importlib.import_module("edited_rules")
    path.write_text("def two(g, ans, x):\n    return g / (1.0 - x * x)\n\n\n"
                    "def one(g, ans, x):\n    return g * 2.0\n")
    import linecache
    linecache.checkcache(str(path))
    with pytest.raises(RuntimeError, match="no longer matches"):
        inline._template(mod.one)
