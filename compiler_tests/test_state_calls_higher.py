"""Higher order through a loop of calls of a method that stores into ``self``
(issue 13): ``pb.grad`` over ``pb.jvp``, ``pb.hessian``, ``pb.jacfwd`` of
``pb.grad`` and ``pb.grad`` of ``pb.grad`` of a function whose loop calls
``step`` (``self.s = self.s * x``) on an object it builds.  Exact values
(``s = x**3``) and JAX; an object the function did not build is refused
naming the user's line."""
import numpy as np
import pytest

import pullback as pb
from pullback.testing import function_from_source

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402

# a module name for the classes the texts define (exec without `__name__` makes a
# class's __module__ "builtins", which pullback takes for a built-in class)
NAMED = {"__name__": "state_example"}

TEXT = '''
def run(x):
    a = Acc(1.0)
    for i in range(3):
        a.step(x)
    return a.s

class Acc:
    def __init__(self, s):
        self.s = s

    def step(self, x):
        self.s = self.s * x
'''

ARRAY_TEXT = '''
def run_arr(x):
    a = Acc(np.ones_like(x))
    i = 0
    while i < 3:
        a.step(np.sin(x))
        i += 1
    return np.sum(a.s)

class Acc:
    def __init__(self, s):
        self.s = s

    def step(self, x):
        self.s = self.s * x
'''


def test_grad_over_jvp_and_second_derivatives_of_a_state_loop_are_exact():
    run = function_from_source(TEXT, NAMED)
    x = 2.0

    def outer(x):
        y, t = pb.jvp(run, (x,), (x,))     # y = x**3, t = 3 x**2 * x
        return t + y * x                   # 3 x**3 + x**4

    assert pb.jvp(run, (x,), (1.0,)) == (8.0, 12.0)
    assert pb.grad(outer)(x) == pytest.approx(9 * x ** 2 + 4 * x ** 3, rel=1e-14)
    for second in (pb.grad(pb.grad(run)), pb.hessian(run), pb.jacfwd(pb.grad(run)),
                   pb.jacfwd(pb.jacfwd(run))):
        assert second(x) == pytest.approx(6 * x, rel=1e-14)


def test_array_state_loop_second_derivatives_match_jax():
    run_arr = function_from_source(ARRAY_TEXT, NAMED)
    x = np.array([0.3, 0.7, -1.2])
    v = np.array([1.0, -0.5, 2.0])

    def ref(x):
        return jnp.sum(jnp.sin(x) ** 3)
    got = pb.grad(lambda x: np.sum(pb.jvp(run_arr, (x,), (v,))[1] * x))(x)
    want = jax.grad(lambda x: jnp.sum(jax.jvp(ref, (x,), (jnp.asarray(v),))[1] * x))(x)
    np.testing.assert_allclose(got, want, rtol=1e-11)
    np.testing.assert_allclose(pb.hessian(run_arr)(x), jax.hessian(ref)(x), rtol=1e-11,
                               atol=1e-13)


def test_state_call_on_an_object_the_function_did_not_build_names_the_line():
    acc_class = function_from_source(TEXT, NAMED).__globals__["Acc"]
    run2 = function_from_source('''
def run2(x, a):
    for i in range(3):
        a.step(x)
    return a.s
''')

    def outer(x):
        a = acc_class(1.0)
        y, t = pb.jvp(lambda z: run2(z, a), (x,), (1.0,))
        return t * x
    with pytest.raises(pb.PullbackError, match=r"`Acc.step`(.|\n)*a.step\(x\)"):
        pb.grad(outer)(2.0)
