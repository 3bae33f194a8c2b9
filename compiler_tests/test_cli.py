"""The command line: `pullback show` prints what `pb.source` gives, `python -m
pullback` is the same program, and mistakes get one clear line and status 2."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import pullback as pb
from pullback.driver import cli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QUICKSTART = os.path.join(ROOT, "examples", "quickstart.py")
ANSI = re.compile(r"\033\[[0-9;]*m")


def pullback(*args, cwd=None):
    p = subprocess.run([sys.executable, "-m", "pullback", *args], capture_output=True,
                       text=True, cwd=cwd)
    return p.returncode, p.stdout, p.stderr


@pytest.fixture(scope="module")
def quickstart():
    sys.path.insert(0, os.path.dirname(QUICKSTART))
    import quickstart
    return quickstart


def test_show_prints_the_generated_source(quickstart):
    rc, out, err = pullback("show", QUICKSTART + ":loss")
    assert rc == 0, err
    assert out == pb.source(quickstart.loss)
    assert "def loss_primal(w, x, y):" in out and "def loss_adjoint(" in out
    assert "\033[" not in out                       # not a terminal: no colour


def test_show_argnums_and_signature(quickstart, capsys):
    assert cli.main(["show", QUICKSTART + ":loss", "--argnums", "0,2"]) == 0
    assert capsys.readouterr().out == pb.source(quickstart.loss, argnums=(0, 2))
    assert cli.main(["show", QUICKSTART + ":loss", "--argnums", "-1",
                     "--signature", "float32[:,:], float32[:,:], float32[:,:]"]) == 0
    f32 = np.zeros((1, 1), np.float32)
    assert capsys.readouterr().out == pb.source(quickstart.loss, f32, f32, f32, argnums=2)


def test_show_in_colour(quickstart, capsys):
    assert cli.main(["show", QUICKSTART + ":loss", "--color", "always"]) == 0
    out = capsys.readouterr().out
    assert "\033[35mdef\033[0m" in out and "\033[1;34mloss_adjoint\033[0m" in out
    assert ANSI.sub("", out) == pb.source(quickstart.loss)


def test_highlight_leaves_the_text_alone():
    src = 'def f(x):\n    """doc"""\n    # c\n    return x ** 2 if x else "s"\n'
    assert ANSI.sub("", cli.highlight(src)) == src
    assert cli.highlight("def (") == "def ("                # untokenizable: as is


def test_the_console_script_and_module_agree():
    rc, out, _ = pullback("--help")
    assert rc == 0 and "show" in out and "compile" in out


def one_line_error(rc, out, err, *fragments):
    assert rc == 2, (out, err)
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pullback: error: "), err
    for f in fragments:
        assert f in lines[0], lines[0]


def test_missing_file(tmp_path):
    missing = str(tmp_path / "nope.py")
    one_line_error(*pullback("show", missing + ":f"), "no such file", missing)
    one_line_error(*pullback("compile", missing), "no such file", missing)


def test_no_such_function():
    one_line_error(*pullback("show", QUICKSTART + ":lose"), "has no function 'lose'",
                   "loss, main")


def test_syntax_error_in_the_module(tmp_path):
    bad = tmp_path / "broken.py"
    bad.write_text("import numpy as np\n\ndef f(x)\n    return x\n")
    one_line_error(*pullback("show", f"{bad}:f"), f"{bad}:3:", "syntax error")
    one_line_error(*pullback("compile", str(bad)), f"{bad}:3:", "syntax error")


def test_module_that_fails_to_import(tmp_path):
    bad = tmp_path / "raises.py"
    bad.write_text("raise RuntimeError('no data')\n")
    one_line_error(*pullback("show", f"{bad}:f"), "importing", "RuntimeError: no data")


def test_other_mistakes(tmp_path, capsys):
    for argv, fragment in [
            (["show", QUICKSTART], "expected FILE:FUNCTION"),
            (["show", QUICKSTART + ":loss", "--argnums", "5"], "out of range"),
            (["show", QUICKSTART + ":loss", "--signature", "float64[:]"], "gives 1 types"),
            (["show", QUICKSTART + ":loss", "--signature", "floot"], "not a NumPy dtype"),
            (["compile", QUICKSTART, "-o", str(tmp_path), "--signature", "nope(float)"],
             "no module given defines 'nope'")]:
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and fragment in err, err
    with pytest.raises(SystemExit) as exc:              # argparse's own
        cli.main(["show", QUICKSTART + ":loss", "--argnums", "x"])
    assert exc.value.code == 2


def test_compile_writes_and_reports(tmp_path):
    rc, out, err = pullback("compile", QUICKSTART, "-o", str(tmp_path))
    assert rc == 0, err
    assert (tmp_path / "quickstart_pullback.py").exists()
    assert "loss_primal, loss_adjoint" in out


def test_a_function_pullback_cannot_differentiate(tmp_path):
    mod = tmp_path / "nodiff.py"
    mod.write_text("import numpy as np\nimport pullback as pb\n\n\n@pb.differentiable\n"
                   "def f(x):\n    return np.sum(np.trim_zeros(x))\n")
    rc, out, err = pullback("show", f"{mod}:f")
    assert rc == 1 and "np.trim_zeros" in err and "Traceback" not in err
    rc, out, err = pullback("compile", str(mod), "-o", str(tmp_path / "out"))
    assert rc == 1 and "skipped f" in err and not (tmp_path / "out").exists()
