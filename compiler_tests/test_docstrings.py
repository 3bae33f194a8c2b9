"""Every ``>>>`` example in the package's docstrings runs (each pass shows a
small before and after; the public functions show their use)."""
import doctest
import importlib
import pkgutil

import pytest

import pullback

MODULES = sorted(m.name for m in pkgutil.walk_packages(pullback.__path__, "pullback."))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    if name.startswith("pullback.rules.scipy_") and name != "pullback.rules.scipy_common":
        pytest.importorskip("scipy")       # the optional SciPy rules
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(module, name, globs={"__name__": name, **vars(module)}):
        runner.run(test)
    assert runner.failures == 0, f"{runner.failures} docstring example(s) failed in {name}"


# the stages of the compiler: each of their modules is a pass (or the toolkit
# the passes share) and shows a small before and after
PASS_PACKAGES = ("frontend", "normalize", "analyses", "reverse", "lowering", "backend", "ir")
NOT_PASSES = {"pullback.lowering.jax_bridge"}     # moving arrays to JAX and back


def test_every_pass_module_shows_an_example():
    missing = []
    for name in MODULES:
        parts = name.split(".")
        if len(parts) == 3 and parts[1] in PASS_PACKAGES and name not in NOT_PASSES:
            doc = importlib.import_module(name).__doc__ or ""
            if ">>>" not in doc:
                missing.append(name)
    assert not missing, f"pass modules whose docstring has no example: {missing}"
