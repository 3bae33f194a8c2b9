"""Classes made by a ``class`` statement run through ``exec`` whose globals
lack ``__name__`` (``testing.function_from_source``, notebook tools): their
``__module__`` reads ``"builtins"``, and pullback took them for built-in
classes (a loop of ``o.step(x)`` storing into ``self`` was refused, an
object of such a class passed in was refused as an argument).  Exact values
in both modes; ``runtime.origin.module_name`` is the one predicate."""
import builtins

import pytest

import pullback as pb
from pullback.runtime.origin import made_by_class_statement, module_name
from pullback.testing import function_from_source

STEPS = '''
def run(x):
    o = Acc()
    for _ in range(3):
        o.step(x)
    return o.s

class Acc:
    def __init__(self):
        self.s = 1.0

    def step(self, x):
        self.s = self.s * x
'''

HELD = '''
def f(p, x):
    return p.w * x * x

class P:
    def __init__(self, w):
        self.w = w
'''


def test_exec_class_reads_builtins_but_is_the_users():
    run = function_from_source(STEPS)
    acc = run.__globals__["Acc"]
    assert acc.__module__ == "builtins"                  # what the checks were misled by
    assert module_name(acc) == "" and module_name(acc()) == ""
    assert made_by_class_statement(acc)
    for cls in (int, float, dict, getattr(builtins, "ExceptionGroup", object), object):
        assert module_name(cls) == "builtins", cls
    assert not made_by_class_statement(int)


def test_method_storing_into_self_in_a_loop_forward():
    run = function_from_source(STEPS)            # s = x**3: ds/dx = 3 x**2 = 12 at 2
    assert pb.jvp(run, (2.0,), (1.0,)) == (8.0, 12.0)
    assert pb.jvp(run, (3.0,), (0.5,)) == (27.0, 13.5)


def test_method_storing_into_self_in_a_loop_reverse():
    run = function_from_source(STEPS)
    assert pb.grad(run)(2.0) == 12.0
    assert pb.value_and_grad(run)(-1.5) == (-3.375, 6.75)


def test_object_of_an_exec_class_passed_in():
    f = function_from_source(HELD)
    p_cls = f.__globals__["P"]
    gp, gx = pb.grad(f, argnums=(0, 1))(p_cls(3.0), 2.0)
    assert type(gp) is p_cls and gp.w == 4.0 and gx == 12.0     # d/dw w x^2, d/dx: 2 w x
    out, tangent = pb.jvp(lambda x: f(p_cls(3.0), x), (2.0,), (1.0,))
    assert (out, tangent) == (12.0, 12.0)


@pytest.mark.parametrize("namespace", [{}, {"__name__": "named_example"}])
def test_same_gradient_with_or_without_a_module_name(namespace):
    run = function_from_source(STEPS, namespace)
    assert pb.grad(run)(0.5) == 0.75
