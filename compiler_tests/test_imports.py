"""The import graph of ``src/pullback``: no cycle, and ``runtime/`` (what
generated code and artifacts import) imports nothing of the compiler.

The graph is read from the modules' syntax trees, so imports inside
functions count as much as those at the top, and relative imports are
resolved against the importing module.  ``python compiler_tests/test_imports.py``
prints the graph's longest path.
"""
import ast
import os

import pytest

import pullback

PACKAGE = os.path.dirname(os.path.abspath(pullback.__file__))

#: What ``runtime/`` may import besides itself: the error types.
RUNTIME_MAY_IMPORT = {"pullback.errors"}


def module_files(package_dir, name="pullback"):
    """Module name -> (path, is a package) for every ``.py`` file under ``package_dir``."""
    out = {}
    root = os.path.dirname(package_dir)
    for d, _, files in os.walk(package_dir):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(d, f)
                mod = os.path.relpath(path, root)[:-3].replace(os.sep, ".")
                is_pkg = mod.endswith(".__init__")
                out[mod[:-len(".__init__")] if is_pkg else mod] = (path, is_pkg)
    assert name in out, f"{package_dir} is not the package {name}"
    return out


def _targets(module, is_pkg, node, known, top):
    """The modules of ``known`` that the import statement ``node`` in ``module`` names."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        base = node.module or ""
        if node.level:
            parts = module.split(".") if is_pkg else module.split(".")[:-1]
            parts = parts[:len(parts) - (node.level - 1)]
            base = ".".join(parts + ([base] if base else []))
        # `from package import module` names the module; `from module import name` the module
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
    out = set()
    for name in names:
        if name.split(".")[0] != top:
            continue
        while name not in known and "." in name:
            name = name.rsplit(".", 1)[0]
        if name in known and name != module:
            out.add(name)
    return out


def import_graph(package_dir, name="pullback"):
    """Module -> the set of modules of the package it imports, anywhere in its code."""
    known = module_files(package_dir, name)
    graph = {}
    for module, (path, is_pkg) in known.items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        graph[module] = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                graph[module] |= _targets(module, is_pkg, node, known, name)
    return graph


def find_cycle(graph):
    """A list of modules ``[a, b, ..., a]`` that import each other in a ring, or None."""
    state = {}      # module -> 1 while on the path, 2 when done

    for start in sorted(graph):
        if state.get(start):
            continue
        path, stack = [start], [iter(sorted(graph[start]))]
        state[start] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            elif not state.get(nxt):
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(sorted(graph.get(nxt, ()))))
    return None


def runtime_violations(graph, runtime="pullback.runtime", allowed=RUNTIME_MAY_IMPORT):
    """``(module, import)`` pairs where ``runtime`` imports something outside itself."""
    return sorted((m, t) for m, ts in graph.items()
                  if m == runtime or m.startswith(runtime + ".")
                  for t in ts
                  if not (t == runtime or t.startswith(runtime + ".")) and t not in allowed)


def longest_path(graph):
    """The longest chain of imports (the graph must have no cycle)."""
    memo = {}

    def longest(m):
        if m not in memo:
            memo[m] = [m] + max((longest(t) for t in sorted(graph[m])), key=len, default=[])
        return memo[m]
    return max((longest(m) for m in sorted(graph)), key=len)


# -- the checks can fail ---------------------------------------------------------

def test_cycle_finder_on_synthetic_graphs():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"b"}}) == ["b", "b"]
    assert find_cycle({"x": {"a"}, "a": {"b", "c"}, "b": set(), "c": {"x"}}) == \
        ["a", "c", "x", "a"]
    assert longest_path({"a": {"b", "c"}, "b": set(), "c": {"b"}}) == ["a", "c", "b"]


def test_runtime_rule_on_a_synthetic_graph():
    graph = {"pullback.runtime": {"pullback.runtime.core"},
             "pullback.runtime.core": {"pullback.errors"},
             "pullback.runtime.extra": {"pullback.pipeline", "pullback.runtime"}}
    assert runtime_violations(graph) == [("pullback.runtime.extra", "pullback.pipeline")]


def test_graph_reads_function_level_and_relative_imports(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .a import f\n")
    (pkg / "a.py").write_text("import os\n\ndef f():\n    from .sub import b\n    return b\n")
    (pkg / "sub" / "__init__.py").write_text('"""sub"""\n')
    (pkg / "sub" / "b.py").write_text("from .. import a\nfrom ..sub.c import g\n")
    (pkg / "sub" / "c.py").write_text("import pkg.a\n\ndef g():\n    pass\n")
    graph = import_graph(str(pkg), "pkg")
    assert graph == {"pkg": {"pkg.a"}, "pkg.a": {"pkg.sub.b"}, "pkg.sub": set(),
                     "pkg.sub.b": {"pkg.a", "pkg.sub.c"}, "pkg.sub.c": {"pkg.a"}}
    assert find_cycle(graph) == ["pkg.a", "pkg.sub.b", "pkg.a"]


# -- the package ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def graph():
    return import_graph(PACKAGE)


def test_no_import_cycle(graph):
    assert len(graph) > 50                      # the whole package was read
    assert "pullback.driver.jit" in graph["pullback.api"]
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_runtime_imports_no_compiler_module(graph):
    assert runtime_violations(graph) == []


if __name__ == "__main__":
    g = import_graph(PACKAGE)
    path = longest_path(g)
    print(f"{len(g)} modules, longest import path ({len(path)} modules):")
    print(" -> ".join(path))
