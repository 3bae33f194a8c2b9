"""The command line: ``pullback show`` and ``pullback compile``.

::

    pullback show examples/mlp.py:loss [--argnums 0,1] [--signature 'float64[:,:], float']
                                       [--mode forward]
    pullback compile examples/mlp.py [more.py | dir/ ...] [-o build/] [--signature SPEC]

``python -m pullback`` is the same command line.  A mistake in what was
asked (a missing file, no such function, a module with a syntax error or
that fails to import) prints one line and exits with status 2; a function
pullback cannot differentiate prints pullback's error and exits with 1.
"""
from __future__ import annotations

import argparse
import importlib
import io
import keyword
import os
import sys
import tokenize
import types

__all__ = ["main", "highlight", "load_module"]


class UsageError(Exception):
    """A mistake in the command line or the module it names (exit status 2)."""


def main(argv=None):
    """Run the command line; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except UsageError as err:
        print(f"pullback: error: {err}", file=sys.stderr)
        return 2


def _parser():
    p = argparse.ArgumentParser(prog="pullback", description="Source-to-source reverse-mode "
                                "automatic differentiation for Python and NumPy.")
    sub = p.add_subparsers(dest="command", metavar="{show,compile}", required=True)
    show = sub.add_parser("show", help="print the generated primal and adjoint of a function",
                          description="Print the primal and adjoint pullback generates for "
                          "FILE:FUNCTION (the generic version, for real arguments of any "
                          "shape, unless --signature is given).")
    show.add_argument("target", metavar="FILE:FUNCTION")
    show.add_argument("--argnums", type=_argnums, default=None,
                      help="differentiate with respect to these arguments only, e.g. 0,1")
    show.add_argument("--signature", default=None, metavar="TYPES",
                      help="specialise to argument types, e.g. 'float64[:,:], complex128, "
                      "float' ([:] per axis)")
    show.add_argument("--mode", choices=("reverse", "forward"), default="reverse",
                      help="reverse: the primal and adjoint (default); forward: the "
                           "tangent function f_jvp(x, x_dot) -> (y, y_dot)")
    show.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                      help="syntax highlighting (default: when writing to a terminal)")
    show.set_defaults(run=_show)
    comp = sub.add_parser("compile", help="write importable modules of generated code",
                          description="Write NAME_pullback.py for each module: the primal and "
                          "adjoint of every @differentiable function in it and of the "
                          "functions they call.  pullback then uses it instead of "
                          "transforming, until the module's source changes.")
    comp.add_argument("paths", nargs="+", metavar="PATH",
                      help="a module, or a directory of modules")
    comp.add_argument("-o", "--output", default=None, metavar="DIR",
                      help="where to write (default: __pullback__/ next to each module, "
                      "where pullback looks first)")
    comp.add_argument("--signature", action="append", default=[], metavar="SPEC",
                      help="also specialise a function, e.g. 'loss(float32[:,:], float32[:])'")
    comp.set_defaults(run=_compile)
    return p


def _argnums(text):
    try:
        nums = tuple(int(t) for t in text.split(",") if t.strip())
    except ValueError:
        nums = ()
    if not nums:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}")
    return nums


# -- loading the user's module -------------------------------------------------

def load_module(path):
    """Import the module at ``path`` (under its package's dotted name, with
    its root on ``sys.path``); raise ``UsageError`` with one line if it
    cannot be."""
    if not os.path.exists(path):
        raise UsageError(f"no such file: {path}")
    if not os.path.isfile(path) or not path.endswith(".py"):
        raise UsageError(f"not a Python file: {path}")
    path = os.path.abspath(path)
    root, parts = os.path.dirname(path), [os.path.splitext(os.path.basename(path))[0]]
    while os.path.isfile(os.path.join(root, "__init__.py")):
        root, parts = os.path.dirname(root), [os.path.basename(root)] + parts
    name = ".".join(parts)
    if root not in sys.path:
        sys.path.insert(0, root)
    try:
        module = importlib.import_module(name)
    except SyntaxError as err:
        where = f"{err.filename}:{err.lineno}" + (f":{err.offset}" if err.offset else "")
        raise UsageError(f"{where}: syntax error: {err.msg}") from None
    except (Exception, SystemExit) as err:
        raise UsageError(f"importing {path} failed: {type(err).__name__}: {err}") from None
    found = getattr(module, "__file__", None)
    if not found or not os.path.samefile(found, path):
        raise UsageError(f"importing {name!r} found {found or 'a built-in module'}, not "
                         f"{path}: rename the file so that its name is not already taken")
    return module


def _functions(module):
    from ..custom_rules import CustomVJP
    return [n for n, v in vars(module).items()
            if isinstance(v, (types.FunctionType, CustomVJP))
            and getattr(v, "__module__", None) == module.__name__]


# -- show -----------------------------------------------------------------------

def _show(args):
    from .. import api, sources
    from .aot import parse_spec
    from ..errors import PullbackError
    path, sep, qualname = args.target.rpartition(":")
    if not sep or not path or not qualname:
        raise UsageError(f"expected FILE:FUNCTION, as in examples/mlp.py:loss, "
                         f"got {args.target!r}")
    module = load_module(path)
    fn = module
    for part in qualname.split("."):
        fn = getattr(fn, part, None)
    if not callable(fn) or isinstance(fn, type):
        names = ", ".join(_functions(module)) or "none"
        raise UsageError(f"{path} has no function {qualname!r} (its functions: {names})")
    if isinstance(fn, api.CustomVJP):
        raise UsageError(f"{qualname} has a rule of its own (custom_vjp): there is no "
                         "generated source to show")
    examples = ()
    if args.signature is not None:
        try:
            examples = parse_spec(f"f({args.signature})")[1]
        except ValueError as err:
            raise UsageError(str(err)) from None
    n = len(api.derivative_of(fn).params)
    if examples and len(examples) != n:
        raise UsageError(f"--signature gives {len(examples)} types, but {qualname} takes "
                         f"{n} arguments")
    for i in args.argnums or ():
        if not -n <= i < n:
            raise UsageError(f"--argnums {i} is out of range: {qualname} takes {n} arguments")
    argnums = None if args.argnums is None else tuple(i % n for i in args.argnums)
    try:
        text = sources.source(fn, *examples, argnums=argnums, mode=args.mode)
    except PullbackError as err:
        print(err, file=sys.stderr)
        return 1
    color = args.color == "always" or (args.color == "auto" and sys.stdout.isatty()
                                       and not os.environ.get("NO_COLOR"))
    sys.stdout.write(highlight(text) if color else text)
    return 0


# -- compile --------------------------------------------------------------------

def _compile(args):
    from . import aot
    from .aot_text import _what
    from ..errors import PullbackError
    try:
        specs = [(aot.parse_spec(s)[0], s) for s in args.signature]
    except ValueError as err:
        raise UsageError(str(err)) from None
    files = []
    for p in args.paths:
        if os.path.isdir(p):
            files += sorted(os.path.join(p, f) for f in os.listdir(p)
                            if f.endswith(".py") and not f.endswith("_pullback.py"))
        else:
            files.append(p)
    modules = [load_module(f) for f in files]
    used, status = set(), 0
    for module in modules:
        names = set(_functions(module))
        mine = [s for name, s in specs if name in names]
        used.update(mine)
        outdir = args.output or os.path.join(os.path.dirname(module.__file__), "__pullback__")
        try:
            result = aot.write(module, outdir, mine)
        except (ValueError, PullbackError) as err:
            print(f"pullback: {module.__file__}: {err}", file=sys.stderr)
            status = 1
            continue
        rel = _shown(module.__file__)
        if result.path is None and not result.skipped:
            print(f"{rel}: no @differentiable functions; nothing written", file=sys.stderr)
        if result.path is not None:
            print(f"wrote {_shown(result.path)} from {rel}:")
            for e in result.entries:
                print(f"  {e.public[0]}, {e.public[1]}  ({_what(e)})")
            if result.needs_module:
                print(f"  (it imports {module.__name__}, whose globals the generated code reads)")
        for qualname, reason, failed in result.skipped:
            print(f"{rel}: skipped {qualname}: {reason}", file=sys.stderr)
            status = 1 if failed else status
    for name, s in specs:
        if s not in used:
            raise UsageError(f"--signature {s!r}: no module given defines {name!r}")
    return status


def _shown(path):
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


# -- highlighting -----------------------------------------------------------------

_STYLE = {"keyword": "\033[35m", "string": "\033[32m", "comment": "\033[2;37m",
          "number": "\033[36m", "definition": "\033[1;34m"}
_RESET = "\033[0m"


def highlight(src):
    """``src`` with ANSI colours for keywords, names defined, strings,
    numbers and comments (the text is unchanged between the codes).

    >>> highlight("def f(x):  # one\\n    return 1\\n") == (
    ...     "\\033[35mdef\\033[0m \\033[1;34mf\\033[0m(x):  \\033[2;37m# one\\033[0m\\n"
    ...     "    \\033[35mreturn\\033[0m \\033[36m1\\033[0m\\n")
    True
    """
    from ..backend.codegen import source_lines
    offsets, total = [], 0
    for line in source_lines(src, True):        # (the lines tokenize counts)
        offsets.append(total)
        total += len(line)
    offsets.append(total)
    spans, previous = [], None
    try:
        for tok in tokenize.generate_tokens(io.StringIO(src).readline):
            style = None
            if tok.type == tokenize.NAME and keyword.iskeyword(tok.string):
                style = "keyword"
            elif tok.type == tokenize.NAME and previous in ("def", "class"):
                style = "definition"
            elif tok.type in (tokenize.STRING, tokenize.COMMENT, tokenize.NUMBER):
                style = tokenize.tok_name[tok.type].lower()
            if style is not None:
                start = offsets[tok.start[0] - 1] + tok.start[1]
                end = offsets[tok.end[0] - 1] + tok.end[1]
                spans.append((start, end, _STYLE[style]))
            if tok.type not in (tokenize.NL, tokenize.COMMENT):
                previous = tok.string
    except (tokenize.TokenError, SyntaxError):
        return src
    out, at = [], 0
    for start, end, code in spans:
        out += [src[at:start], code, src[start:end], _RESET]
        at = end
    out.append(src[at:])
    return "".join(out)


if __name__ == "__main__":
    sys.exit(main())
