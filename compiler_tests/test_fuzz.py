"""Random programs (see ``fuzzing.py``): every check on a modest number of
them, the same ones on every run (``derandomize``).  ``make fuzz`` runs the
same checks on 10,000 other programs, one worker per core (``fuzzing.py``
run as a script); ``PULLBACK_FUZZ_EXAMPLES=n`` sets the count here."""
import os

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
