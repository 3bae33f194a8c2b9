"""Every name imported from ``pullback`` exists: ``from pullback.X import y``
(also relative, and inside functions) in ``src/`` and ``compiler_tests/``,
``X.y`` where ``X`` names a pullback module so imported, and the dotted
strings ``"pullback.X.y"`` handed to ``monkeypatch.setattr`` or ``mock.patch``.

A module split in two keeps every import site honest this way: an import
left pointing at the old module fails here, not in the one test that runs it.
``python compiler_tests/test_import_names.py`` prints what is missing.
"""
import ast
import importlib
import os

import pullback

PACKAGE = os.path.dirname(os.path.abspath(pullback.__file__))
TESTS = os.path.dirname(os.path.abspath(__file__))
#: calls whose first argument may be a dotted name: "pullback.callees.Derivative"
_TAKES_DOTTED = {"setattr", "delattr", "patch", "import_module"}


_OPTIONAL = object()      # _resolve: a module that needs a package not installed
_MISSING = object()       # _resolve: no such module or attribute


def _called(call):
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)


def _python_files(root):
    for d, _, files in os.walk(root):
        for f in sorted(files):
            if f.endswith(".py"):
                yield os.path.join(d, f)


def _module_of(path):
    """The dotted name of a file under the package, or None for a test file."""
    if not path.startswith(PACKAGE + os.sep):
        return None
    rel = os.path.relpath(path, os.path.dirname(PACKAGE))[:-3].replace(os.sep, ".")
    return rel[:-len(".__init__")] if rel.endswith(".__init__") else rel


def _base(node, module, path):
    """The absolute module an ``ImportFrom`` reads from (None: not pullback's)."""
    base = node.module or ""
    if node.level:
        if module is None:
            return None
        parts = module.split(".") if path.endswith("__init__.py") else module.split(".")[:-1]
        parts = parts[:len(parts) - (node.level - 1)]
        base = ".".join(parts + ([base] if base else []))
    return base if base.split(".")[0] == "pullback" else None


def _resolve(dotted):
    """The object a dotted name names, or ``_MISSING``: the longest importable
    module, then attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError as err:
            if (err.name or "pullback").split(".")[0] != "pullback":
                return _OPTIONAL      # (SciPy, say): not checked
            continue
        except ImportError:
            continue
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                return _MISSING
            obj = getattr(obj, attr)
        return obj
    return _MISSING


def missing_names(roots=(PACKAGE, TESTS)):
    """``file:line: what`` for every imported pullback name that does not exist."""
    out = []
    for root in roots:
        for path in _python_files(root):
            with open(path, encoding="utf-8") as f:
                text = f.read()
            tree = ast.parse(text, path)
            module, aliases = _module_of(path), {}
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom):
                    base = _base(node, module, path)
                    if base is None:
                        continue
                    owner = _resolve(base)
                    if owner is _OPTIONAL:
                        continue
                    for a in node.names:
                        if a.name == "*":
                            continue
                        target = _resolve(f"{base}.{a.name}")
                        if target is _MISSING:
                            out.append(f"{path}:{node.lineno}: from {base} import {a.name}")
                            continue
                        if isinstance(target, type(pullback)):
                            aliases[a.asname or a.name] = target
                elif isinstance(node, ast.Import):
                    for a in node.names:
                        if a.name.split(".")[0] == "pullback":
                            if _resolve(a.name) is _MISSING:
                                out.append(f"{path}:{node.lineno}: import {a.name}")
                            elif a.asname:
                                aliases[a.asname] = _resolve(a.name)
            for node in ast.walk(tree):
                if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                        and node.value.id in aliases and isinstance(node.ctx, ast.Load) \
                        and not hasattr(aliases[node.value.id], node.attr):
                    out.append(f"{path}:{node.lineno}: {node.value.id}.{node.attr}")
                elif isinstance(node, ast.Call) and _called(node) in _TAKES_DOTTED:
                    for arg in node.args[:1]:
                        if isinstance(arg, ast.Constant) and isinstance(arg.value, str) \
                                and arg.value.startswith("pullback.") \
                                and _resolve(arg.value) is _MISSING:
                            out.append(f"{path}:{node.lineno}: '{arg.value}'")
    return out


def test_resolver_can_fail():
    assert _resolve("pullback.callees.derivative_of") is not _MISSING
    assert _resolve("pullback.callees.no_such_name") is _MISSING
    assert _resolve("pullback.no_such_module") is _MISSING


def test_checker_finds_what_is_missing(tmp_path):
    (tmp_path / "test_x.py").write_text(
        "from pullback import callees\n"
        "from pullback.callees import derivative_of, nope\n"
        "import pullback.runtime as rt\n\n"
        "def test(monkeypatch):\n"
        "    from pullback.driver.jit import also_nope\n"
        "    monkeypatch.setattr('pullback.callees.gone', 1)\n"
        "    return callees.derivative_of, callees.missing, rt.nor_this\n")
    found = [m.split(": ", 1)[1] for m in missing_names([str(tmp_path)])]
    assert sorted(found) == sorted(["from pullback.callees import nope", "callees.missing",
                                    "from pullback.driver.jit import also_nope", "rt.nor_this",
                                    "'pullback.callees.gone'"])


def test_every_imported_pullback_name_exists():
    missing = missing_names()
    assert not missing, "names imported but not defined:\n" + "\n".join(missing)


if __name__ == "__main__":
    print("\n".join(missing_names()) or "every imported pullback name exists")
