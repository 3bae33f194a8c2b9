"""Random programs (see ``fuzzing.py``): every check on a modest number of
them, the same ones on every run (``derandomize``).  ``make fuzz`` runs the
same checks on 10,000 other programs, one worker per core (``fuzzing.py``
run as a script); ``PULLBACK_FUZZ_EXAMPLES=n`` sets the count here."""
import os
import re

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import fuzzing

EXAMPLES = int(os.environ.get("PULLBACK_FUZZ_EXAMPLES", "30"))
SETTINGS = dict(deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))


def run(program, seed):
    try:
        fuzzing.check(program, seed)
    except fuzzing.Invalid:
        assume(False)       # these inputs overflow: not a program to judge


@settings(max_examples=EXAMPLES, **SETTINGS)
@given(fuzzing.programs(risky=False), st.integers(0, 2 ** 32 - 1))
def test_random_programs(program, seed):
    run(program, seed)


@settings(max_examples=max(EXAMPLES // 3, 1), **SETTINGS)
@given(fuzzing.programs(risky=True), st.integers(0, 2 ** 32 - 1))
def test_programs_with_writes_pullback_must_refuse(program, seed):
    """Writes into arguments, aliases and views: refused with the line, or
    (where pullback can follow them) differentiated exactly."""
    run(program, seed)


def test_jax_setting_is_restored():
    """The JAX comparison runs in float64 without leaving JAX in that mode."""
    jax = __import__("pytest").importorskip("jax")
    before = jax.config.jax_enable_x64
    program = fuzzing.Program("def f(x, s):\n    return np.sum(np.sin(x)) * s\n",
                              "def f(x, s):\n    return jnp.sum(jnp.sin(x)) * s\n",
                              [("x", "v"), ("s", "s")], False, "s")
    assert fuzzing.check(program, 0) == "ok"
    assert jax.config.jax_enable_x64 == before


# what real code does (issue 12): the fixed programs above reach each shape
FEATURES = {
    "function argument": lambda p: "fn=" in p.source or ", fn)" in p.source,
    "partial": lambda p: "functools.partial(" in p.source,
    "getattr": lambda p: "getattr(np," in p.source,
    "container of functions": lambda p: re.search(r"fs\d+ = [\[({]", p.source),
    "method or instance": lambda p: "class Model" in p.source,
    "wraps decorator": lambda p: "@functools.wraps" in p.source,
    "layer loop": lambda p: "in ls:" in p.source,
    "rebinding": lambda p: p.rebind,
    "pb.grad of partial, method, instance": lambda p: p.entry,
    "documented refusal": lambda p: p.must_refuse,
    "stateful class": lambda p: "= Sim(" in p.source,
    "dict, *args or **kwargs helper": lambda p: re.search(
        r"def h\d\((d, p|p, \*rest|p, \*\*opts)\)", p.source),
    "class hierarchy with super()": lambda p: re.search(r"layer\d+ = (Squashed|Gated)\(",
                                                         p.source),
    "itertools index loop": lambda p: "in itertools." in p.source,
    "namedtuple state with _replace": lambda p: "._replace(" in p.source,
    "tuple-returning helper": lambda p: re.search(r"def h\d\(p, q, scale=1.0\)", p.source),
    "dict of parameters stepped in a loop": lambda p: re.search(r"in prm\d+\.items\(\)",
                                                                p.source),
}


def test_grammar_reaches_what_real_code_does():
    seen = set()

    @settings(max_examples=400, **SETTINGS)  # draws enough to reach every feature
    @given(fuzzing.programs())
    def collect(program):
        seen.update(k for k, has in FEATURES.items() if has(program))
    collect()
    assert seen == set(FEATURES)


REBOUND = """\
act0 = np.tanh

def h0(p, fn=act0):
    return fn(p) * 0.5 + 0.5 * p

def f(x, s, ls):
    fs = [np.sin, act0]
    hid = x * s
    for wt, bs in ls:
        out = hid @ wt + bs
        hid = fs[-1](out)
    return np.sum(out ** 2) + np.sum(h0(x)) + np.sum(functools.partial(h0, fn=act0)(x))
"""


def test_rebinding_and_entries_are_checked():
    program = fuzzing.Program(REBOUND, REBOUND.replace("np.", "jnp."),
                              [("x", "v"), ("s", "s"), ("ls", "layers:4-5-1-3")], False,
                              "s", rebind={"act0": "np.sin"}, entry="method")
    program.source += ("\nclass Entry:\n    def __init__(self, c):\n        self.c = c\n\n"
                       "    def loss(self, x, s, ls):\n        return self.c * f(x, s, ls)\n")
    before = fuzzing.STATS["rebind_checked"]
    assert fuzzing.check(program, 3) == "ok"
    assert fuzzing.STATS["rebind_checked"] == before + 1


def test_documented_refusals_must_raise():
    source = ("def f(x, s):\n    c = x * 2.0\n    g = [lambda t: t * c]\n"
              "    c = x + s\n    return np.sum(g[0](x)) + s\n")
    program = fuzzing.Program(source, None, [("x", "v"), ("s", "s")], False, "s",
                              must_refuse=True)
    assert fuzzing.check(program, 0) == "refused"
    fine = fuzzing.Program(source.replace("    c = x + s\n", ""), None,
                           [("x", "v"), ("s", "s")], False, "s", must_refuse=True)
    with pytest.raises(AssertionError, match="documents as refused"):
        fuzzing.check(fine, 0)
