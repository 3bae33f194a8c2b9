"""Random programs for pullback, and the checks every one of them must pass.

``programs()`` is a hypothesis strategy for small NumPy functions ``f`` with
straight-line array code, branches, loops (``range``, arrays, ``enumerate``,
``zip``, ``reversed``, ``while``, ``break``/``continue``/``else``), early
returns, indexing reads and writes (``b[i] = v``, ``b[idx] += v``,
``np.add.at``), aliasing (``z = y``, views, ``+=``), comprehensions, closures
(``def``, ``lambda``, ``nonlocal``), calls of helper functions (one of them
recursive) and structured inputs.  Calls whose callee is a value, as real
code writes them (issue 12): a helper taking a function (``def h(p, fn)``,
``def h(p, fn=np.tanh)``) called with a ufunc or a user helper, local
aliases (``fn = np.sin``, rebound so the callee changes between iterations),
lists, tuples and dicts of functions, ``getattr(np, "sin")``, module-level
names bound to functions, ``functools.partial`` (called inside, stored,
given to other helpers), helpers decorated with ``functools.wraps`` wrappers
whose parameters are explicit (scaling, shifting the result), ``f`` itself
decorated, a small ``Model`` class holding constants and a function whose
methods and ``__call__`` are called, and the layer loop of an MLP over a
list of ``(W, b)`` with random widths (the carried value changes shape; the
loss reads the last ``outputs``).  What the corpus' third round found real code
doing: helpers taking a dict of parameters (``d["a"]``, ``d.values()``,
``d.get``), ``*args`` (walked with ``enumerate``, called with ``h(a, *[b, c])``)
and ``**kwargs`` with defaults, and a stateful ``Sim`` class built inside ``f``
from differentiated values, its methods calling methods (a ``staticmethod``, an
``*args`` method) and stepped by rebinding (``sim = sim.advance(dt, push)``,
``sim = sim.run(n)``); its ``kick`` stores into ``self``, called for its
effect (followed as a state function since method_state; once refused).  What the fourth round found (programs in the styles of
tutorials and papers' code): helpers with type hints, a keyword-only option,
an ``assert`` with an f-string message and a ``logging`` call; constants from a
``functools.lru_cache``'d helper taking an int; an ODE stepper taking the
right-hand side and odeint's ``args`` tuple (``fn(p, *args)``, given a lambda
or a helper); a parameter object built by a module-level factory function
(``state = make_state(a, b)``) and read by its attributes.  What the fifth round
found: a class hierarchy whose base's ``__call__`` dispatches to an overridden
``forward`` calling ``super().forward(p)`` (two levels, ``super().__init__``
too; the gradient of the object's attributes through ``super()`` was lost),
loops over ``enumerate(zip(v, w))`` unpacked into ``i, (a, b)``, and over index
pairs from ``itertools.pairwise``, ``combinations`` and ``product`` of ranges.
What the sixth round found: a namedtuple state stepped by a helper returning
``state._replace(...)``, in a loop that reads it (its gradient was lost), and
``a, u = d.values()`` (the same).  The seventh round's: helpers returning a
tuple (``return p + 0.5 * step, step * q``, an option ``scale=1.0``) whose
result is indexed, unpacked, summed or spread into a call (``np.multiply(*h(a,
b))``), and a dict of parameters stepped in a loop (``for key, val in
prm.items(): prm[key] = val - ...`` or rebuilt by a comprehension over
``.items()``), read by key or through ``.values()``.  Some programs are also differentiated
through ``pb.grad`` of ``functools.partial(f, x)``, of a bound method and of
a callable instance; some rebind a module-level function (or the ``model``
instance) in the program's globals after the first gradient, and the next
gradient must be the new program's.  Constructs pullback documents as
refused (a lambda value called after a name it reads is assigned again) must raise a
``PullbackError``, naming the program's line where it has one; every
sixteenth program's second derivative (``pb.jvp`` of ``pb.grad``, forward
over reverse) is checked against central differences of ``pb.grad``.  A generated program tracks, as it is
written, the type of every name (scalar, vector of 4, 3x4 matrix) and who
owns each array, so that it only writes where NumPy semantics are followed by
pullback; with ``risky`` programs it also writes where pullback must refuse
(into an argument, an alias, a view that is read again), and then the only
acceptable answers are a ``PullbackError`` naming a line of the program or a
correct gradient.

``check(program, seed)`` runs one program on random inputs and checks that

- the primal value is plain Python's, bit for bit (value and type);
- every gradient matches central finite differences in float64 (each
  element where the function is smooth there: two step sizes and the two
  one-sided differences must agree, otherwise a branch or a kink is near and
  the element is skipped);
- where JAX can express the program, the gradient matches ``jax.grad``
  (in float64, under a context that restores JAX's setting);
- inputs and cotangents are never written to;
- no gradient shares memory with an input, the cotangent or another gradient;
- gradients mirror the inputs: structure, shape, dtype (float32 inputs give
  float32 gradients), a Python float for a Python float;
- the in-place and the out-of-place accumulation give equal gradients;
- forward mode agrees: ``<vjp(ct), t> == <ct, jvp(t)>`` for a random tangent
  ``t`` of every input, ``pb.jvp``'s value is the primal's, and neither the
  inputs nor the tangents are written to (a program forward mode refuses is
  counted as refused, with its reason, not as failed).

Run as a script it is the long fuzzing run (``make fuzz``)::

    python compiler_tests/fuzzing.py --programs 10000 --jobs 2
"""
from __future__ import annotations

import collections
import copy
import dataclasses
import functools
import itertools
import math
import os
import re
import sys
import time
import types

import numpy as np
from hypothesis import strategies as st

import pullback as pb
from pullback.backend import codegen

N, ROWS = 4, 3                        # a vector has N entries, a matrix is ROWS x N
ORDER = {"s": 0, "v": 1, "m": 2}      # broadcasting: the larger type wins

#: counts over every program checked in this process (the fuzz run prints them)
STATS = collections.Counter()

Pair = collections.namedtuple("Pair", ["w", "b"])


@dataclasses.dataclass
class Box:
    w: np.ndarray
    b: float


@dataclasses.dataclass
class Program:
    source: str                 # defines helpers and f
    jax_source: str | None      # the same program for jax.numpy, or None
    params: list                # (name, kind) for f's parameters
    risky: bool                 # writes pullback is expected to refuse
    returns: str                # "s" or "v"
    # module-level names rebound after the first gradient ({name: expression
    # evaluated in the program's globals}); the next gradient must be the new
    # program's
    rebind: dict | None = None
    # f also differentiated through another callable: "partial" (pb.grad of
    # functools.partial(f, x)), "method" (pb.grad(Entry(c).loss)), "instance"
    # (pb.grad(Entry(c)))
    entry: str | None = None
    # a construct pullback documents as refused (a lambda value called
    # after a name it reads is assigned again): a PullbackError naming a
    # line, never a number
    must_refuse: bool = False

    def __str__(self):
        notes = [f"# then rebound: {self.rebind}"] if self.rebind else []
        if self.entry:
            notes.append(f"# also differentiated as: {self.entry}")
        if self.must_refuse:
            notes.append("# must be refused")
        return self.source + "".join(n + "\n" for n in notes)


# -- the generator -------------------------------------------------------------

@dataclasses.dataclass
class Var:
    type: str                   # "s", "v", "m", or "i" (an int index below `bound`)
    state: str = "input"        # arrays: "input", "fresh", "written", "shared"
    bound: int = 0
    known: bool = True          # pullback can tell it is a scalar (see `known`)
    access: tuple = ()          # type "f" (function values): texts that are a callable


class Gen:
    """Writes one program; every choice is a hypothesis draw (so failures
    shrink to short programs)."""

    def __init__(self, draw, risky):
        self.draw = draw
        self.risky_allowed = risky
        self.risky = False
        self.jaxable = True
        self.lines = []           # (indent, numpy text, jax text)
        self.helpers = []         # (name, kind, source lines)
        self.closures = []        # (name, param type)
        self.counter = itertools.count()
        self.loop_depth = 0
        self.exits = []           # per enclosing for loop: a break or continue was written
        self.in_while = False
        self.no_write = set()     # arrays another name holds somewhere: never written
        self.was_written = set()  # arrays written somewhere: never held by another name
        self.prelude = {}         # module-level definitions used: key -> lines
        self.act_globals = []     # module-level names bound to a function (`act0 = np.tanh`)
        self.layers = None        # the widths of f's `ls` parameter, if it has one
        self.layers_done = False
        self.must_refuse = False
        self.must_use = []        # names the final return adds

    # small helpers
    def pick(self, seq):
        return self.draw(st.sampled_from(list(seq)))

    def chance(self, p):
        return self.draw(st.integers(0, 999)) < p * 1000

    def fresh_name(self, prefix):
        return f"{prefix}{next(self.counter)}"

    def emit(self, indent, text, jax=None):
        self.lines.append((indent, text, _to_jax(text) if jax is None else jax))

    def names(self, env, t, states=None):
        return [n for n, v in env.items() if v.type == t and (states is None or v.state in states)]

    # expressions: text of a value of type t ("s", "v", "m")
    def expr(self, env, t, depth):
        if depth <= 0 or self.chance(0.35):
            return self.leaf(env, t)
        kinds = ["unary", "unary", "binary", "binary", "binary"]
        if self.names(env, "v"):          # not in a helper's body (scalars in scope only)
            kinds += ["special", "special", "call", "cond", "fcall", "fcall"]
        kind = self.pick(kinds)
        if kind == "unary":
            inner = self.expr(env, t, depth - 1)
            return self.pick(_UNARY_S if t == "s" else _UNARY).format(a=inner)
        if kind == "binary":
            ta, tb = self.pick(_PAIRS[t])
            a, b = self.expr(env, ta, depth - 1), self.expr(env, tb, depth - 1)
            ops = _BINARY_S if ta == tb == "s" else _BINARY
            return self.pick(ops).format(a=a, b=b)
        if kind == "special":
            return self.special(env, t, depth)
        if kind == "call":
            return self.call(env, t, depth)
        if kind == "fcall":
            return self.fcall(env, t, depth)
        c = self.condition(env)
        return f"({self.shared(env, t, depth - 1)} if {c} else {self.shared(env, t, depth - 1)})"

    def leaf(self, env, t):
        names = self.names(env, t)
        ints = [n for n, v in env.items() if v.type == "i"]
        choice = self.draw(st.integers(0, 9))
        if t == "s":
            vecs, mats = self.names(env, "v"), self.names(env, "m")
            if choice <= 1 or not (vecs or mats):
                if names and choice:
                    return self.pick(names)
                return self.pick(["0.5", "1.5", "-0.7", "2.0"])
            if choice <= 4 and names:
                return self.pick(names)
            if choice <= 6 and vecs:
                v = self.pick(vecs)
                index = [str(k) for k in range(-N, N)] + \
                    [i for i in ints if env[i].bound <= N]
                return f"{v}[{self.pick(index)}]"
            if choice == 7 and mats:
                m = self.pick(mats)
                r, c = self.draw(st.integers(0, ROWS - 1)), self.draw(st.integers(0, N - 1))
                return self.pick([f"{m}[{r}, {c}]", f"{m}[{r}][{c}]", f"{m}[{r - ROWS}, {c}]"])
            src = self.pick(vecs + mats)
            return self.pick(_REDUCE).format(a=src)
        if t == "v":
            mats = self.names(env, "m")
            if mats and choice >= 8:
                m = self.pick(mats)
                rows = [str(k) for k in range(ROWS)] + \
                    [i for i in ints if env[i].bound <= ROWS]
                return self.pick([f"{m}[{self.pick(rows)}]", f"np.sum({m}, axis=0)",
                                  f"{m}.mean(axis=0)", f"np.max({m}, axis=0)"])
            v = self.pick(names)
            if choice == 7:
                return self.pick([f"{v}[::-1]", f"{v}[{_perm(self)}]",
                                  f"np.take({v}, {_perm(self)})", f"np.cumsum({v})",
                                  f"np.concatenate([{v}[2:], {v}[:2]])",
                                  f"{v}.reshape(2, 2).T.ravel()"])
            return v
        if names and choice < 8:
            return self.pick(names)
        vecs = self.names(env, "v")
        a, b, c = (self.pick(vecs) for _ in range(3))
        return self.pick([f"np.stack([{a}, {b}, {c}])", f"np.outer(np.ones(3), {a})",
                          f"np.reshape(np.concatenate([{a}, {b}, {c}]), (3, 4))"])

    def special(self, env, t, depth):
        d = depth - 1
        if t == "s":
            k = self.draw(st.integers(0, 6))
            if k <= 1:
                return self.pick(_REDUCE).format(a=self.expr(env, self.pick("vm"), d))
            if k == 2:
                a, b = self.expr(env, "v", d), self.expr(env, "v", d)
                return self.pick([f"({a}) @ ({b})", f"np.dot({a}, {b})"])
            if k == 3:
                a, b = self.expr(env, "s", d), self.expr(env, "s", d)
                return self.pick([f"max({a}, {b})", f"min({a}, {b})", f"np.hypot({a}, 0.5 + {b})"])
            if k == 4:
                self.jaxable = False           # a boolean mask's shape depends on the values
                v = self.expr(env, "v", d)
                return f"np.sum(({v})[({v}) > 0.1])"
            if k == 5:
                v = self.expr(env, "v", d)
                return f"np.sum(np.where({v} > 0.1, {v}, 0.0))"
            return self.leaf(env, "s")
        if t == "v":
            a = self.expr(env, "v", d)
            k = self.draw(st.integers(0, 7))
            mats = self.names(env, "m")
            if k == 0:
                return f"np.cumsum({a})"
            if k == 1:
                return f"np.concatenate([({a})[2:], ({a})[:2]])"
            if k == 2:
                return f"({a})[{_perm(self)}]"
            if k == 3:
                b = self.expr(env, self.pick("sv"), d)
                return f"np.where({a} > {b}, {a}, {b})"
            if k == 4:
                return f"np.clip({a}, -1.0, 1.0)"
            if k == 5 and mats:
                m = self.pick(mats)
                return f"{m}.T @ np.tanh({m} @ ({a}))"
            if k == 6:
                return f"np.sum({self.expr(env, 'm', d)}, axis=0)"
            return f"({a})[::-1]"
        a = self.expr(env, "v", d)
        k = self.draw(st.integers(0, 3))
        if k == 0:
            return f"np.stack([{a}, {self.expr(env, 'v', d)}, {self.expr(env, 'v', d)}])"
        if k == 1 and self.names(env, "m"):
            m = self.pick(self.names(env, "m"))
            return f"np.outer({m} @ ({a}), {self.expr(env, 'v', d)})"
        if k == 2:
            return f"({self.expr(env, 'm', d)})[::-1]"
        return f"np.maximum({self.expr(env, 'm', d)}, {a})"

    def call(self, env, t, depth):
        """A call of a helper or a closure."""
        options = [(n, kind) for n, kind, _ in self.helpers]
        options += [(n, "closure:" + pt) for n, pt in self.closures]
        if not options:
            return self.leaf(env, t)
        name, kind = self.pick(options)
        d = depth - 1
        if kind == "elementwise":
            return f"{name}({self.shared(env, t, d)}, {self.shared(env, self.pick(_BELOW[t]), d)})"
        if kind == "recursive":
            return f"{name}({self.shared(env, t, d)}, {self.draw(st.integers(0, 3))})"
        if kind == "act":
            return f"{name}({self.shared(env, t, d)})"
        if kind in ("apply", "applyfn"):
            a = self.shared(env, t, d)
            k = self.draw(st.integers(0, 2))
            if k == 0 and kind == "apply":
                return f"{name}({a})"              # the default function
            fv = self.function_value(env)
            return f"{name}({a}, fn={fv})" if k == 1 else f"{name}({a}, {fv})"
        if kind == "dictarg":
            a, b = self.shared(env, "s", d), self.shared(env, "s", d)
            return f'{name}({{"a": {a}, "b": {b}}}, {self.shared(env, t, d)})'
        if kind == "starargs":
            rest = [self.shared(env, self.pick(_BELOW[t]), d)
                    for _ in range(self.draw(st.integers(0, 2)))]
            if rest and self.chance(0.3):
                return f"{name}({self.shared(env, t, d)}, *[{', '.join(rest)}])"
            return f"{name}({', '.join([self.shared(env, t, d)] + rest)})"
        if kind == "kwargs":
            a = self.shared(env, t, d)
            shift = self.shared(env, "s", d)
            if self.chance(0.5):
                return f"{name}({a}, shift={shift}, scale={self.shared(env, 's', d)})"
            return f"{name}({a}, shift={shift})"
        if kind == "annotated":
            a = self.shared(env, t, d)
            if self.chance(0.5):
                return f"{name}({a}, gain={self.shared(env, 's', d)})"
            return f"{name}({a})"
        if kind == "integrator":
            a = self.shared(env, t, d)
            two = [n for n, k2, _ in self.helpers if k2 == "elementwise"]
            if two and self.chance(0.5):
                fn = self.pick(two)
            else:
                body = _elementwise(self.expr({"p": Var("s"), "q": Var("s")}, "s", 1))
                fn = f"lambda p, q: 0.5 * p + {body}"
            q = self.shared(env, self.pick(_BELOW[t]), d)
            n = f", n={self.draw(st.integers(1, 2))}" if self.chance(0.3) else ""
            return f"{name}({fn}, {a}, args=({q},){n})"
        if kind == "pair":
            a, q = self.shared(env, t, d), self.shared(env, self.pick(_BELOW[t]), d)
            scale = f", scale={self.pick(['0.5', '2.0'])}" if self.chance(0.4) else ""
            return self.pick([f"{name}({a}, {q}{scale})[{self.pick('01')}]",
                              f"sum({name}({a}, {q}{scale}))",
                              f"np.multiply(*{name}({a}, {q}{scale}))"])
        if kind == "partialable":
            a = self.shared(env, t, d)
            c = self.pick(["0.5", "1.5", "-0.7"])
            return self.pick([f"{name}({a})", f"{name}({a}, a={c})", f"{name}({a}, b={c})",
                              f"functools.partial({name}, a={c})({a})",
                              f"functools.partial({name}, b={c}, a=0.5)({a})"])
        if t != "s":
            return self.leaf(env, t)
        if kind == "scalar":
            return f"{name}({self.shared(env, 's', d)}, {self.shared(env, 's', d)})"
        if kind == "vector":
            return f"{name}({self.shared(env, 'v', d)})"
        return f"{name}({self.shared(env, kind.split(':')[1], d)})"

    def fcall(self, env, t, depth):
        """A call whose callee is a value: a ufunc, a user helper, a global
        alias, an element of a list/dict/tuple, getattr, a partial, a bound
        method, a callable instance.  Every one is elementwise, so the
        result has the argument's type."""
        return f"{self.function_value(env)}({self.shared(env, t, depth - 1)})"

    def function_value(self, env):
        """The text of a one-argument elementwise callable."""
        kinds = ["ufunc", "ufunc", "getattr", "global", "model", "partial"]
        helpers = [n for n, kind, _ in self.helpers if kind in ("act", "partialable")]
        if helpers:
            kinds += ["helper", "helper"]
        held = [a for v in env.values() if v.type == "f" for a in v.access]
        if held:
            kinds += ["held"] * 4
        kind = self.pick(kinds)
        if kind == "ufunc":
            return self.pick(_UFUNCS)
        if kind == "getattr":
            return f'getattr(np, "{self.pick(_UFUNCS)[3:]}")'
        if kind == "global":
            return self.act_global()
        if kind == "model":
            self.need_model()
            return self.pick(["model", "model.forward"])
        if kind == "helper":
            return self.pick(helpers)
        if kind == "held":
            return self.pick(held)
        two = [(n, kind) for n, kind, _ in self.helpers if kind in ("elementwise", "applyfn")]
        if not two:
            return f"functools.partial(np.multiply, {self.pick(['0.5', '1.5', '-0.7'])})"
        name, kind = self.pick(two)
        if kind == "applyfn":
            return f"functools.partial({name}, fn={self.pick(_UFUNCS)})"
        return f"functools.partial({name}, q={self.pick(['0.5', '1.5', '-0.7'])})"

    def act_global(self):
        """A module-level name holding a function: a new one or one already
        made (rebinding one between calls is checked, see ``check``)."""
        if self.act_globals and self.chance(0.6):
            return self.pick(self.act_globals)
        name = f"act{len(self.act_globals)}"
        self.act_globals.append(name)
        self.prelude[name] = [f"{name} = {self.pick(_UFUNCS)}"]
        return name

    def need_model(self):
        if "Model" not in self.prelude:
            act = self.pick(_UFUNCS)
            self.prelude["Model"] = [
                "class Model:",
                f"    def __init__(self, scale, shift, act={act}):",
                "        self.scale = scale",
                "        self.shift = shift",
                "        self.act = act",
                "",
                "    def forward(self, p):",
                "        return self.act(self.scale * p) + self.shift",
                "",
                "    def __call__(self, p):",
                f"        return self.forward(p) * {self.pick(['0.5', '1.5'])} + 0.25 * p",
                "",
                f"model = Model({self.pick(['0.7', '1.3', '-0.4'])}, "
                f"{self.pick(['0.1', '-0.2'])})"]

    def need_sim(self):
        """A small stateful simulator class, as physics code writes it: state
        in attributes, methods calling methods (a ``staticmethod`` among
        them), ``*args`` in a method, a new object per step; ``kick`` stores
        into ``self`` (called for its effect, pullback must refuse it)."""
        if "Sim" not in self.prelude:
            self.prelude["Sim"] = [
                "class Sim:",
                "    def __init__(self, pos, vel, k=1.3):",
                "        self.pos = pos",
                "        self.vel = vel",
                "        self.k = k",
                "",
                "    @staticmethod",
                "    def squash(v):",
                f"        return {self.pick(['np.tanh(v)', 'np.sin(v)', 'v / (1.0 + v * v)'])}",
                "",
                "    def force(self):",
                "        return -self.k * self.squash(self.pos)",
                "",
                "    def advance(self, dt, *pushes):",
                "        acc = self.force() + sum(pushes)",
                "        return Sim(self.pos + dt * self.vel, self.vel + dt * acc, self.k)",
                "",
                "    def run(self, n, dt=0.1):",
                "        sim = self",
                "        for _ in range(n):",
                "            sim = sim.advance(dt)",
                "        return sim",
                "",
                "    def energy(self):",
                "        return 0.5 * np.sum(self.vel * self.vel) + self.k * np.sum(self.pos ** 2)",
                "",
                "    def kick(self, dv):",
                "        self.vel = self.vel + dv"]

    def shared(self, env, t, depth):
        """A value another name comes to hold (an assignment, an argument of a
        user function, a branch of a conditional expression): an array named
        here is shared from now on, so it is not written afterwards, and one
        already written is copied (pullback refuses to follow a write into an
        array that two names hold)."""
        text = self.expr(env, t, depth)
        view = _VIEW.match(text) or _VIEW_CALL.match(text)   # `b[::-1]`, `b.T`: b itself
        name = view.group(1) if view else text
        if name in self.was_written:
            return f"{text}.copy()"
        self.share(env, name)
        return text

    def share(self, env, name):
        """``name`` comes to be held by another name too: pullback's check is
        not path-sensitive, so it is never written anywhere after (or before)."""
        var = env.get(name)
        if var is not None and var.type in ("v", "m"):
            self.no_write.add(name)
            if var.state in ("fresh", "written"):
                var.state = "shared"

    def writable(self, env):
        """Arrays the program may write into: its own, shared with no other
        name, and of a rank pullback knows (else `t = b[0]` may be a row, a
        view that a later write would change, and pullback refuses)."""
        return [n for n, v in env.items() if v.state in ("fresh", "written")
                and n not in self.no_write and v.known]

    def iterables(self, env, t):
        """Arrays of type t a loop may walk over.  Inside a loop, not one
        written before: the next iteration's write comes after the loop's
        sequence took the array, and pullback's check, which does not see
        that the sequence is taken again, refuses it (make fuzz, seed 8)."""
        names = self.names(env, t)
        return [n for n in names if n not in self.was_written] if self.loop_depth else names

    def condition(self, env):
        a, b = self.leaf(env, "s"), self.leaf(env, "s")
        return self.pick([f"{a} > {b}", f"{a} < 0.3", f"{a} > {b} and {b} < 1.0",
                          f"not {a} > {b}", f"{a} > 0.0 or {b} > 0.5"])

    # statements
    def block(self, env, depth, indent, n_max=4, required=True):
        n = self.draw(st.integers(1 if required else 0, n_max))
        for _ in range(n):
            self.statement(env, depth, indent)

    def statement(self, env, depth, indent):
        kinds = ["assign"] * 6 + ["augassign", "alloc", "write", "write", "write", "alias",
                                  "view", "unpack", "list"]
        if depth > 0:
            kinds += ["if", "if", "for", "for", "while", "comprehension", "return"]
        if self.loop_depth:
            kinds += ["break"]
        if indent == 1:
            kinds += ["closure"]
            if self.layers and not self.layers_done:
                kinds += ["layers", "layers"]
        if self.names(env, "v"):
            kinds += ["fnvalue", "fnvalue"]
            if indent == 1 and self.chance(0.3):
                kinds += ["sim"]
            if self.chance(0.3):
                kinds += ["hierarchy"]
            if self.chance(0.3):
                kinds += ["state"]
            if indent == 1 and not self.loop_depth and self.chance(0.3):
                kinds += ["phase"]
            if depth > 0 and self.chance(0.3):
                kinds += ["dictloop"]
        if self.risky_allowed:
            kinds += ["risky"]
        getattr(self, "stmt_" + self.pick(kinds))(env, depth, indent)

    def target(self, env, t):
        """A name to assign a value of type t: an existing one or a new one."""
        existing = self.names(env, t, ("input", "shared"))
        if existing and self.chance(0.4):
            return self.pick(existing)
        return self.fresh_name({"s": "a", "v": "u", "m": "w"}[t])

    def stmt_assign(self, env, depth, indent):
        t = self.pick("sssvvm")
        name = self.target(env, t)
        value = self.shared(env, t, 2)
        if not self.rebind_ok(env, name, self.known(value, env)):
            name = self.fresh_name("a")
        self.emit(indent, f"{name} = {value}")
        # a value computed here is a new array, but only `alloc` marks arrays
        # as writable, so writes stay in few places and refusals stay rare
        env[name] = Var(t, "shared", known=self.known(value, env))

    def stmt_augassign(self, env, depth, indent):
        scalars = self.names(env, "s")
        owned = [n for n in self.writable(env) if env[n].state == "fresh" and env[n].known]
        if owned and self.chance(0.5):
            name = self.pick(owned)
            self.was_written.add(name)
            op = self.pick(["+=", "-=", "*="])
            t = self.pick(_BELOW[env[name].type])
            # the value does not read `name`: pullback refuses `y += y[0]`, as
            # `y[0]` is a view of y (conservatively: the view is used up here)
            others = {n: v for n, v in env.items() if n != name}
            self.emit(indent, f"{name} {op} {self.expr(others, t, 1)}")
            return
        scalars = [n for n in scalars if env[n].known]
        if not scalars:
            return self.stmt_assign(env, depth, indent)
        name = self.pick(scalars)
        op = self.pick(["+=", "-=", "*="])
        value = self.expr(env, 's', 1)
        if self.known(value, env):
            self.emit(indent, f"{name} {op} {value}")
        else:       # in a loop, the next `+=` would see a value of unknown kind
            target = name if self.rebind_ok(env, name, False) else self.fresh_name("a")
            self.emit(indent, f"{target} = {name} {op[0]} ({value})")
            env[target] = Var("s", "shared", known=False)

    def rebind_ok(self, env, name, known):
        """In a loop, a name pullback knows to be a scalar keeps that kind: an
        earlier `+=` in the body also sees the value of the previous iteration."""
        return not (self.loop_depth and name in env and env[name].known and not known)

    def known(self, text, env):
        """Whether pullback's kind inference can tell that a scalar expression
        is a scalar.  `a += v` on a value it cannot tell apart from an array
        is refused (if it were an array, other names could share it), so the
        generator writes `+=` only on names known to be scalars."""
        if _OPAQUE_KIND.search(text) or any(
                call not in _KIND_SAFE and not call.endswith((".sum", ".copy"))
                for call in re.findall(r"([\w.]+)\(", text)):
            return False
        return all(env[n].known for n in re.findall(r"(?<![\w.])[a-z]+\d*\b", text)
                   if n in env)

    def stmt_alloc(self, env, depth, indent):
        t = self.pick("vvm")
        name = self.fresh_name("b")
        srcs = self.names(env, t)
        forms = ([f"np.zeros({N})", f"np.ones({N})", "np.zeros_like(x)"] if t == "v"
                 else [f"np.zeros(({ROWS}, {N}))", f"np.ones(({ROWS}, {N}))"])
        if srcs:
            forms += [f"{self.pick(srcs)}.copy()", f"{self.pick(srcs)} * 1.0",
                      f"np.copy({self.pick(srcs)})"]
        text = self.pick(forms)
        self.emit(indent, f"{name} = {text}")
        env[name] = Var(t, "fresh", known=self.known(text, env))

    def stmt_write(self, env, depth, indent):
        owned = self.writable(env)
        if not owned:
            return self.stmt_alloc(env, depth, indent)
        b = self.pick(owned)
        env[b].state = "written"
        self.was_written.add(b)
        ints = [n for n, v in env.items() if v.type == "i"]
        if env[b].type == "m":
            rows = [str(k) for k in range(ROWS)] + [i for i in ints if env[i].bound <= ROWS]
            r = self.pick(rows)
            k = self.draw(st.integers(0, 3))
            if k == 0:
                index, value = f"{r}", self.expr(env, self.pick("sv"), 1)
            elif k == 1:
                index, value = f"{r}, {self.draw(st.integers(0, N - 1))}", self.expr(env, "s", 1)
            elif k == 2:
                index, value = f":, {self.draw(st.integers(0, N - 1))}", self.expr(env, "s", 1)
            else:
                index, value = "1:, 1:3", self.expr(env, "s", 1)
            op = self.pick(["=", "=", "+="])
            self.emit(indent, f"{b}[{index}] {op} {value}",
                      f"{b} = {b}.at[{index}].{'set' if op == '=' else 'add'}({_to_jax(value)})")
            return
        positions = [str(k) for k in range(-N, N)] + [i for i in ints if env[i].bound <= N]
        k = self.draw(st.integers(0, 7))
        if k <= 1:
            index, value = self.pick(positions), self.expr(env, "s", 1)
        elif k == 2:
            index, value = "1:3", f"({self.expr(env, 'v', 1)})[:2]"
        elif k == 3:
            index, value = "::2", self.expr(env, "s", 1)
        elif k == 4:
            index, value = ":", self.expr(env, self.pick("sv"), 1)
        elif k == 5:
            cond = self.expr(env, "v", 1)
            value = self.expr(env, "s", 1)
            self.emit(indent, f"{b}[{cond} > 0.0] = {value}",
                      f"{b} = jnp.where({_to_jax(cond)} > 0.0, {_to_jax(value)}, {b})")
            return
        elif k == 6:
            idx, unique = _index_array(self)
            value = self.expr(env, "v", 1)
            if self.chance(0.5):
                self.emit(indent, f"np.add.at({b}, {idx}, {value})",
                          f"{b} = {b}.at[{idx}].add({_to_jax(value)})")
                return
            if not unique:
                self.jaxable = False   # JAX leaves the order of repeated writes open
            op = self.pick(["=", "+="])
            self.emit(indent, f"{b}[{idx}] {op} {value}",
                      f"{b} = {b}.at[{idx}].{'set' if op == '=' else 'add'}({_to_jax(value)})")
            return
        else:
            index, value = self.pick(positions), self.expr(env, "s", 1)
            self.emit(indent, f"{b}[{index}] += {value}",
                      f"{b} = {b}.at[{index}].add({_to_jax(value)})")
            return
        self.emit(indent, f"{b}[{index}] = {value}",
                  f"{b} = {b}.at[{index}].set({_to_jax(value)})")

    def stmt_alias(self, env, depth, indent):
        arrays = [n for n, v in env.items() if v.type in "vm" and n not in self.was_written]
        if not arrays:
            return self.stmt_assign(env, depth, indent)
        src = self.pick(arrays)
        name = self.fresh_name("z")
        self.emit(indent, f"{name} = {src}")
        self.share(env, src)
        env[name] = Var(env[src].type, "shared", known=env[src].known)

    def stmt_view(self, env, depth, indent):
        arrays = [n for n, v in env.items() if v.type in "vm" and n not in self.was_written]
        if not arrays:
            return self.stmt_assign(env, depth, indent)
        src = self.pick(arrays)
        name = self.fresh_name("z")
        if env[src].type == "m":
            text, t = self.pick([(f"{src}[{self.draw(st.integers(0, ROWS - 1))}]", "v"),
                                 (f"{src}[::-1]", "m"), (f"{src}.T.T", "m")])
        else:
            text, t = self.pick([f"{src}[::-1]", f"{src}[:]", f"{src}.reshape({N})",
                                 f"np.ravel({src})"]), "v"
        self.emit(indent, f"{name} = {text}")
        self.share(env, src)
        env[name] = Var(t, "shared", known=env[src].known)

    def stmt_unpack(self, env, depth, indent):
        pairs = [n for n, kind, _ in self.helpers if kind == "pair"]
        if pairs and self.chance(0.5):
            t = self.pick("sv" if self.names(env, "v") else "s")
            n1, n2 = (self.fresh_name("a" if t == "s" else "u") for _ in range(2))
            q = self.shared(env, self.pick(_BELOW[t]), 1)
            self.emit(indent, f"{n1}, {n2} = {self.pick(pairs)}({self.shared(env, t, 1)}, {q})")
            env[n1], env[n2] = Var(t, "shared", known=False), Var(t, "shared", known=False)
            return
        scalars = self.names(env, "s")
        if len(scalars) >= 2 and self.chance(0.5):
            a, b = self.pick(scalars), self.pick(scalars)
            ta, tb = a, b
            if self.loop_depth and env[a].known != env[b].known:
                ta, tb = self.fresh_name("a"), self.fresh_name("a")   # see rebind_ok
            self.emit(indent, f"{ta}, {tb} = {b}, {a}")
            env[ta], env[tb] = (Var("s", "shared", known=env[b].known),
                                Var("s", "shared", known=env[a].known))
            return
        n1, n2 = self.fresh_name("a"), self.fresh_name("a")
        self.emit(indent, f"{n1}, {n2} = {self.expr(env, 's', 1)}, {self.expr(env, 's', 1)}")
        env[n1], env[n2] = Var("s", "shared", known=False), Var("s", "shared", known=False)

    def stmt_list(self, env, depth, indent):
        name, out = self.fresh_name("lst"), self.fresh_name("a")
        k = self.draw(st.integers(1, 3))
        items = ", ".join(self.expr(env, "s", 1) for _ in range(k))
        self.emit(indent, f"{name} = [{items}]")
        if self.chance(0.5):
            self.emit(indent, f"{name}.append({self.expr(env, 's', 1)})")
        self.emit(indent, f"{out} = {self.pick([f'sum({name})', f'{name}[0] * {name}[-1]', f'np.sum(np.array({name}))'])}")
        env[out] = Var("s", "shared", known=False)

    def stmt_dictloop(self, env, depth, indent):
        """A dict of parameters stepped in a loop, as optimiser code writes it:
        ``for name, p in prm.items(): prm[name] = p - ...`` (a store into a key
        the loop walks, which Python allows) or rebuilt by a comprehension over
        ``.items()``; then read by key or through ``.values()``."""
        d, key, val = self.fresh_name("prm"), self.fresh_name("key"), self.fresh_name("val")
        a, b = self.shared(env, "s", 1), self.shared(env, "v", 1)
        rate = self.shared(env, "s", 1)
        self.emit(indent, f'{d} = {{"a": {a}, "b": {b}}}')
        self.emit(indent, f"for _ in range({self.draw(st.integers(1, 2))}):")
        if self.chance(0.5):
            self.emit(indent + 1, f"for {key}, {val} in {d}.items():")
            self.emit(indent + 2, f"{d}[{key}] = {val} - 0.1 * np.tanh({val}) * np.cos({rate})")
        else:
            self.emit(indent + 1, f"{d} = {{{key}: {val} * 0.9 + 0.05 * np.sin({val} * {rate}) "
                                  f"for {key}, {val} in {d}.items()}}")
        out = self.fresh_name("a")
        self.emit(indent, f"{out} = " + self.pick([f'{d}["a"] * np.sum({d}["b"])',
                                                   f"sum(np.sum({val}) for {val} in "
                                                   f"{d}.values())"]))
        env[out] = Var("s", "shared", known=False)

    def stmt_if(self, env, depth, indent):
        self.emit(indent, f"if {self.condition(env)}:")
        branches = [self.sub_block(env, depth, indent + 1)]
        k = self.draw(st.integers(0, 2))
        if k == 2:
            self.emit(indent, f"elif {self.condition(env)}:")
            branches.append(self.sub_block(env, depth, indent + 1))
        if k >= 1:
            self.emit(indent, "else:")
            branches.append(self.sub_block(env, depth, indent + 1))
        _merge(env, branches)

    def sub_block(self, env, depth, indent):
        inner = {n: dataclasses.replace(v) for n, v in env.items()}
        self.block(inner, depth - 1, indent, n_max=3)
        return inner

    def stmt_for(self, env, depth, indent):
        vecs, mats = self.iterables(env, "v"), self.iterables(env, "m")
        k = self.draw(st.integers(0, 6))
        a, i = self.fresh_name("e"), self.fresh_name("i")
        inner = {n: dataclasses.replace(v) for n, v in env.items()}
        # arrays looped over are read in every iteration: no writes into them
        if k == 0 or not vecs:
            trips = self.draw(st.integers(0, N))
            self.emit(indent, f"for {i} in range({trips}):")
            inner[i] = Var("i", bound=trips)
        elif k == 1:
            v = self.pick(vecs)
            self.emit(indent, f"for {a} in {v}:")
            inner[a] = Var("s", "shared", known=False)
            _share(env, inner, v)
        elif k == 2:
            v = self.pick(vecs)
            self.emit(indent, f"for {i}, {a} in enumerate({v}):")
            inner[a], inner[i] = Var("s", "shared", known=False), Var("i", bound=N)
            _share(env, inner, v)
        elif k == 3:
            v, w = self.pick(vecs), self.pick(vecs)
            b = self.fresh_name("e")
            self.emit(indent, f"for {a}, {b} in zip({v}, {w}):")
            inner[a], inner[b] = Var("s", "shared", known=False), Var("s", "shared", known=False)
            _share(env, inner, v, w)
        elif k == 4:
            v = self.pick(vecs)
            self.emit(indent, f"for {a} in reversed({v}):")
            inner[a] = Var("s", "shared", known=False)
            _share(env, inner, v)
        elif k == 6 and self.chance(0.3):
            # index pairs from itertools: `v[i]`, `v[j]` read in the body
            self.prelude["itertools"] = ["import itertools"]
            b = self.fresh_name("i")
            self.emit(indent, f"for {i}, {b} in " + self.pick([
                f"itertools.pairwise(range({N})):", f"itertools.combinations(range({N}), 2):",
                f"itertools.product(range(2), range({N})):"]))
            inner[i], inner[b] = Var("i", bound=N), Var("i", bound=N)
        elif k == 6 and self.chance(0.5):
            v, w = self.pick(vecs), self.pick(vecs)
            b = self.fresh_name("e")
            self.emit(indent, f"for {i}, ({a}, {b}) in enumerate(zip({v}, {w})):")
            inner[a], inner[b] = Var("s", "shared", known=False), Var("s", "shared", known=False)
            inner[i] = Var("i", bound=N)
            _share(env, inner, v, w)
        elif k == 5 and mats:
            m = self.pick(mats)
            self.emit(indent, f"for {a} in {m}:")
            inner[a] = Var("v", "shared")
            _share(env, inner, m)
        else:
            trips = self.draw(st.integers(1, N))
            self.emit(indent, f"for {i} in range(len(x) - {N - trips}):")
            inner[i] = Var("i", bound=trips)
        runs = not (k == 0 or not vecs) or trips > 0
        self.loop_depth += 1
        self.exits.append(False)
        defined = {}        # names the body defines before any break or continue
        for _ in range(self.draw(st.integers(1, 3))):
            self.statement(inner, depth - 1, indent + 1)
            if not self.exits[-1]:
                defined.update({n: v for n, v in inner.items() if n not in env})
        self.exits.pop()
        self.loop_depth -= 1
        branches = [inner]
        if self.chance(0.15):
            self.emit(indent, "else:")
            branches.append(self.sub_block(env, depth, indent + 1))
        _merge(env, branches, also_unchanged=True)
        if runs:
            # a loop that runs leaves its names bound: read them after it (the
            # gradient of the last iteration's value only reaches what follows)
            env.update({n: inner[n] for n in defined if inner[n].type != "i"})

    def stmt_while(self, env, depth, indent):
        k = self.fresh_name("k")
        self.emit(indent, f"{k} = 0")
        self.emit(indent, f"while {k} < {self.draw(st.integers(1, 3))} and ({self.condition(env)}):")
        inner = {n: dataclasses.replace(v) for n, v in env.items()}
        self.loop_depth += 1
        was, self.in_while = self.in_while, True
        self.block(inner, depth - 1, indent + 1, n_max=3)
        self.in_while = was
        self.loop_depth -= 1
        self.emit(indent + 1, f"{k} = {k} + 1")
        _merge(env, [inner], also_unchanged=True)

    def stmt_break(self, env, depth, indent):
        word = "break" if self.in_while or self.chance(0.5) else "continue"
        if self.exits:
            self.exits[-1] = True
        self.emit(indent, f"if {self.condition(env)}:")
        self.emit(indent + 1, word)

    def stmt_return(self, env, depth, indent):
        self.exits[:] = [True] * len(self.exits)
        self.emit(indent, f"if {self.condition(env)}:")
        self.emit(indent + 1, f"return {self.result(env)}")

    def result(self, env):
        """The returned value: an expression, plus some of the names the
        program computed (so that their gradients matter)."""
        t = self.returns
        # a returned array is held by the caller: with an early return in the
        # function, pullback sees the final `return b` as another name for b
        terms = [self.shared(env, t, 2)]
        names = [n for n, v in env.items() if v.type in ("s", "v", "m")]
        for _ in range(self.draw(st.integers(0, 3)) if names else 0):
            n = self.pick(names)
            ty = env[n].type
            if ty == "s" or (t == "v" and ty == "v"):
                terms.append(n)
            elif t == "v":
                terms.append(f"np.sum({n}, axis=0)")
            else:
                terms.append(self.pick(_REDUCE).format(a=n))
        return " + ".join(terms)

    def stmt_comprehension(self, env, depth, indent):
        vecs = self.iterables(env, "v")
        name = self.fresh_name("a")
        e, f = self.fresh_name("e"), self.fresh_name("e")
        inner = dict(env)
        k = self.draw(st.integers(0, 4))
        if k != 4:
            inner[e] = Var("s", "shared", known=False)
        v = self.pick(vecs)
        if k == 0:
            self.emit(indent, f"{name} = sum({self.expr(inner, 's', 1)} for {e} in {v})")
        elif k == 1:
            name = self.fresh_name("u")
            self.emit(indent, f"{name} = np.array([{self.expr(inner, 's', 1)} for {e} in {v}])")
            # (an array of a list's elements: pullback does not know its rank)
            env[name] = Var("v", "shared", known=False)
            return
        elif k == 2:
            # a lambda is a closure: what it reads is passed to it, so no array
            # written anywhere (pullback refuses to pass one; see `shared`)
            captured = {n: w for n, w in inner.items() if n not in self.was_written}
            for n in list(captured):
                self.share(env, n)
            self.emit(indent, f"{name} = sum(map(lambda {e}: {self.expr(captured, 's', 1)}, "
                              f"{v}))")
        elif k == 3:
            inner[f] = Var("s", "shared", known=False)
            w = self.pick(vecs)
            self.emit(indent, f"{name} = sum({self.expr(inner, 's', 1)} for {e}, {f} in "
                              f"zip({v}, {w}))")
        else:
            i = self.fresh_name("i")
            inner[i] = Var("i", bound=N)
            self.emit(indent, f"{name} = sum([{self.expr(inner, 's', 1)} for {i} in "
                              f"range(len({v}))])")
        env[name] = Var("s", "shared", known=False)

    def stmt_closure(self, env, depth, indent):
        name = self.fresh_name("g")
        p = self.fresh_name("p")
        pt = self.pick("ssv")
        # a captured array is read at call time: it must not be written any more
        inner = {n: v for n, v in env.items() if n not in self.was_written}
        for n in list(inner):
            self.share(env, n)
        inner[p] = Var(pt, "shared")
        k = self.draw(st.integers(0, 3))
        body = self.expr(inner, "s", 2)
        if pt == "v":
            body = f"np.sum({p} * {p}) + {body}"
        if k == 0 and pt == "s":
            self.emit(indent, f"{name} = lambda {p}: {body}")
        elif k == 1 and pt == "s":
            acc = self.fresh_name("acc")
            self.emit(indent, f"{acc} = 0.0")
            self.emit(indent, f"def {name}({p}):")
            self.emit(indent + 1, f"nonlocal {acc}")
            self.emit(indent + 1, f"{acc} = {acc} * 0.5 + {p}")
            self.emit(indent + 1, f"return {acc} * {body}")
            env[acc] = Var("s", "shared", known=False)
        else:
            self.emit(indent, f"def {name}({p}):")
            if self.chance(0.5):
                self.emit(indent + 1, f"if {self.condition(inner)}:")
                self.emit(indent + 2, f"return {self.expr(inner, 's', 1)}")
            self.emit(indent + 1, f"return {body}")
        self.closures.append((name, pt))

    def stmt_fnvalue(self, env, depth, indent):
        """A name bound to function values: an alias (sometimes rebinding one
        already bound, so the callee changes between loop iterations or
        branches), a list, tuple or dict of them, a partial, an instance."""
        k = self.draw(st.integers(0, 6))
        aliases = [n for n, v in env.items() if v.type == "f" and v.access == (n,)]
        if k <= 1:
            name = self.pick(aliases) if aliases and self.chance(0.4) else self.fresh_name("fn")
            value = self.function_value(env)
            if self.chance(0.2):
                value = f'getattr(np, "{self.pick(_UFUNCS)[3:]}")'
            self.emit(indent, f"{name} = {value}")
            access = (name,)
        elif k <= 4:
            name = self.fresh_name("fs")
            a, b = self.function_value(env), self.function_value(env)
            if k == 2:
                self.emit(indent, f"{name} = [{a}, {b}]")
                access = (f"{name}[0]", f"{name}[1]", f"{name}[-1]")
            elif k == 3:
                self.emit(indent, f"{name} = ({a}, {b})")
                access = (f"{name}[0]", f"{name}[-1]")
            else:
                self.emit(indent, f'{name} = {{"a": {a}, "b": {b}}}')
                access = (f'{name}["a"]', f'{name}["b"]')
        elif k == 5:
            self.need_model()
            name = self.fresh_name("mdl")
            act = f", {self.function_value(env)}" if self.chance(0.5) else ""
            self.emit(indent, f"{name} = Model({self.pick(['0.6', '-1.1'])}, "
                              f"{self.pick(['0.3', '0.0'])}{act})")
            access = (name, f"{name}.forward")
        else:
            name = self.fresh_name("fn")
            self.emit(indent, f"{name} = {self.function_value(env)}")
            access = (name,)
        env[name] = Var("f", "shared", known=False, access=access)

    def stmt_sim(self, env, depth, indent):
        """A simulator object built from differentiated values, stepped by
        rebinding (``sim = sim.advance(dt, push)``, ``sim = sim.run(2)``), in
        straight line or a loop, then read by a method or its attributes."""
        self.need_sim()
        name, out = self.fresh_name("sim"), self.fresh_name("a")
        k = f", k={self.shared(env, 's', 1)}" if self.chance(0.3) else ""
        self.emit(indent, f"{name} = Sim({self.shared(env, 'v', 1)}, "
                          f"{self.shared(env, self.pick('sv'), 1)}{k})")
        how = self.draw(st.integers(0, 2))
        push = f", {self.shared(env, self.pick('sv'), 1)}" if self.chance(0.5) else ""
        if how == 0:
            for _ in range(self.draw(st.integers(1, 2))):
                self.emit(indent, f"{name} = {name}.advance({self.pick(['0.1', '0.05'])}{push})")
        elif how == 1:
            self.emit(indent, f"for _ in range({self.draw(st.integers(1, 3))}):")
            self.emit(indent + 1, f"{name} = {name}.advance(0.1{push})")
        else:
            self.emit(indent, f"{name} = {name}.run({self.draw(st.integers(1, 3))})")
        self.emit(indent, f"{out} = " + self.pick([
            f"{name}.energy()", f"np.sum({name}.pos * {name}.vel)",
            f"{name}.energy() + np.sum({name}.force())"]))
        env[out] = Var("s", "shared", known=False)

    def need_layers(self):
        """A class hierarchy as framework-style code writes it (the corpus'
        fifth round): a base ``Layer`` whose ``__call__`` dispatches to an
        overridden ``forward``, subclasses calling ``super().__init__`` and
        ``super().forward(p)`` (two levels: ``Gated(Squashed)``)."""
        if "Layers" not in self.prelude:
            self.prelude["Layers"] = [
                "class Layer:",
                "    def __init__(self, scale):",
                "        self.scale = scale",
                "",
                "    def forward(self, p):",
                "        return self.scale * p",
                "",
                "    def __call__(self, p):",
                "        return self.forward(p)",
                "",
                "",
                "class Squashed(Layer):",
                "    def __init__(self, scale, shift):",
                "        super().__init__(scale)",
                "        self.shift = shift",
                "",
                "    def forward(self, p):",
                f"        return {self.pick(['np.tanh', 'np.sin'])}(super().forward(p)) "
                "+ self.shift",
                "",
                "",
                "class Gated(Squashed):",
                "    def forward(self, p):",
                "        return " + self.pick(["0.5 * super().forward(p) + self.scale * p",
                                               "super().forward(p) * self.shift + p"])]

    def stmt_hierarchy(self, env, depth, indent):
        """A layer of the class hierarchy built from differentiated values and
        called (``layer(v)`` or ``layer.forward(v)``) on a vector or a scalar."""
        self.need_layers()
        name, t = self.fresh_name("layer"), self.pick("sv")
        out = self.fresh_name({"s": "a", "v": "u"}[t])
        self.emit(indent, f"{name} = {self.pick(['Squashed', 'Gated'])}("
                          f"{self.shared(env, 's', 1)}, {self.shared(env, 's', 1)})")
        call = self.pick(["{n}({a})", "{n}.forward({a})"])
        self.emit(indent, f"{out} = " + call.format(n=name, a=self.shared(env, t, 1)))
        env[out] = Var(t, "shared", known=False)

    def need_state(self):
        """A parameter object built by a module-level factory function from
        differentiated values (``state = make_state(a, b)``, as physics and
        statistics code builds a state or a distribution), read by its plain
        attributes in ``f``: pullback sees the object's class only when it
        runs.  Field names: ``_STATE_FIELDS`` (the corpus' fourth round found
        names an ndarray also has, ``T`` and ``size``, differentiated by the
        array attribute's rule; ``PULLBACK_FUZZ_STATE_FIELDS=T,size`` draws
        them)."""
        if "State" not in self.prelude:
            one, two = _STATE_FIELDS
            self.prelude["State"] = [
                "class State:",
                f"    def __init__(self, {one}, {two}):",
                f"        self.{one} = {one}",
                f"        self.{two} = {two}",
                "",
                "",
                "def make_state(a, b):",
                f"    return State({self.pick(['np.exp(0.3 * a)', '1.0 + a * a'])}, "
                f"{self.pick(['0.5 * b + 1.0', 'np.tanh(b)'])})"]

    def stmt_state(self, env, depth, indent):
        """``state = make_state(a, b)`` then a value read from its two fields."""
        self.need_state()
        one, two = _STATE_FIELDS
        name, t = self.fresh_name("state"), self.pick("sv")
        out = self.fresh_name({"s": "a", "v": "u"}[t])
        self.emit(indent, f"{name} = make_state({self.shared(env, 's', 1)}, "
                          f"{self.shared(env, 's', 1)})")
        self.emit(indent, f"{out} = ({self.shared(env, t, 1)}) / {name}.{one} + "
                          f"{name}.{two} * ({self.shared(env, t, 1)})")
        env[out] = Var(t, "shared", known=False)

    def need_phase(self):
        """A namedtuple state advanced by a module-level step returning
        ``state._replace(...)`` (an integrator's state, as the corpus' sixth
        round found real code writing it)."""
        if "Phase" not in self.prelude:
            self.prelude["Phase"] = [
                "import collections",
                "",
                'Phase = collections.namedtuple("Phase", ["u", "w"])',
                "",
                "",
                "def advance(ph, c):",
                "    u, w = ph",
                f"    return ph._replace(u={self.pick(['u * c + 0.1 * np.sum(w)', 'np.sin(u) + c'])},"
                f" w={self.pick(['w * np.tanh(u) + c', 'w + c * np.cos(w)'])})"]

    def stmt_phase(self, env, depth, indent):
        """``ph = Phase(a, v)`` stepped by ``advance`` (in a loop that reads
        the state, or once), then its fields read, in ``f``'s body (not in a
        branch or a loop: the result is returned); or the values of a dict
        display unpacked by ``a, u = d.values()``."""
        if self.chance(0.3):
            d, a, u = self.fresh_name("dq"), self.fresh_name("a"), self.fresh_name("u")
            self.emit(indent, f'{d} = {{"a": {self.shared(env, "s", 1)}, '
                              f'"b": {self.shared(env, "v", 1)}}}')
            self.emit(indent, f"{a}, {u} = {d}.values()")
            env[a], env[u] = Var("s", "shared", known=False), Var("v", "shared", known=False)
            return
        self.need_phase()
        ph, out = self.fresh_name("ph"), self.fresh_name("u")
        self.emit(indent, f"{ph} = Phase({self.shared(env, 's', 1)}, {self.shared(env, 'v', 1)})")
        c = self.shared(env, "s", 1)
        if self.chance(0.5):
            acc, k = self.fresh_name("a"), self.fresh_name("k")
            self.emit(indent, f"{acc} = 0.0")
            self.emit(indent, f"for {k} in range({self.pick('23')}):")
            self.emit(indent + 1, f"{ph} = advance({ph}, 0.5 * ({c}))")
            self.emit(indent + 1, f"{acc} = {acc} + {ph}.u")
            self.emit(indent, f"{out} = {ph}.w * {acc} + {ph}.u")
        else:
            self.emit(indent, f"{ph} = advance({ph}, 0.5 * ({c}))")
            self.emit(indent, f"{out} = {ph}.w * {ph}.u")
        env[out] = Var("v", "shared", known=False)
        # returned: a call of `advance` whose result the output does not use runs
        # as plain Python, and is refused (`_replace` may store into `ph`: test_corpus_findings)
        used = self.fresh_name("a")
        self.emit(indent, f"{used} = np.sum({out}) * 0.25")
        self.must_use.append(used)

    def stmt_layers(self, env, depth, indent):
        """The layer loop of an MLP: the carried value changes shape every
        iteration (widths drawn at random); the loss reads the last
        ``outputs`` after the loop."""
        self.layers_done = True
        t = "m" if self.names(env, "m") and self.chance(0.3) else "v"
        hid, out = self.fresh_name("hid"), self.fresh_name("out")
        w, c = self.fresh_name("wt"), self.fresh_name("bs")
        self.emit(indent, f"{hid} = {self.shared(env, t, 1)}")
        self.emit(indent, f"for {w}, {c} in ls:")
        self.emit(indent + 1, self.pick([f"{out} = {hid} @ {w} + {c}",
                                         f"{out} = np.dot({hid}, {w}) + {c}",
                                         f"{out} = {c} + {hid} @ {w}"]))
        act = self.pick(["np.tanh({a})", "{f}({a})", "{f}({a})", "1.0 / (1.0 + np.exp(-{a}))"])
        self.emit(indent + 1, f"{hid} = " + act.format(a=out, f=self.function_value(env)))
        name = self.fresh_name("a")
        self.emit(indent, f"{name} = " + self.pick([
            f"np.sum({out} ** 2)", f"np.mean(np.tanh({out})) + np.sum({hid})",
            f"np.sum({out} * {out}) * 0.5 + np.max({hid})"]))
        if self.returns == "s" or self.chance(0.5):
            # the layers' gradients matter: returned, and never rebound (so
            # kept out of env)
            self.must_use.append(name)
        else:
            env[name] = Var("s", "shared", known=False)

    def stmt_refused(self, env, indent):
        """A construct pullback documents as refused (`must_refuse`): a lambda
        made as a value that reads a name assigned again before it is called
        (Python's closure reads the new value)."""
        self.stmt_lambda_or_state(env, indent, self.draw(st.integers(0, 1)))

    def stmt_kick(self, env, indent):
        """A method storing into `self` called for its effect on an object
        built here from differentiated values (the corpus' particle system):
        followed as a state function (frontend/method_state.py), checked."""
        self.stmt_lambda_or_state(env, indent, 2)

    def stmt_lambda_or_state(self, env, indent, k):
        name = self.fresh_name("a")
        g = self.fresh_name("g")
        if k == 2:
            self.need_sim()
            sim = self.fresh_name("sim")
            self.emit(indent, f"{sim} = Sim({self.expr(env, 'v', 1)}, {self.pick(['s', 'x'])})")
            self.emit(indent, f"{sim}.kick({self.expr(env, self.pick('sv'), 1)})")
            self.emit(indent, f"{name} = {sim}.energy()")
        else:
            c = self.fresh_name("c")
            self.emit(indent, f"{c} = {self.expr(env, 'v', 1)}")
            self.emit(indent, f"{g} = [lambda t: t * {c}]")
            self.emit(indent, f"{c} = {self.expr(env, 'v', 1)}")
            self.emit(indent, f"{name} = np.sum({g}[0]({self.expr(env, 'v', 1)}))")
        # its gradient matters: the value is returned, and never rebound
        # (kept out of env, where a later statement could assign the name)
        self.must_use.append(name)
        self.jaxable = False

    def stmt_risky(self, env, depth, indent):
        """A write pullback must refuse (or follow exactly)."""
        arrays = [n for n, v in env.items() if v.type in "vm" and v.state in ("input", "shared")]
        if not arrays:
            return
        self.risky = True
        a = self.pick(arrays)
        idx = "0" if env[a].type == "v" else "0, 0"
        k = self.draw(st.integers(0, 3))
        if k == 0:
            self.emit(indent, f"{a}[{idx}] = {self.expr(env, 's', 1)}")
        elif k == 1:
            self.emit(indent, f"{a} += {self.expr(env, 's', 1)}")
        elif k == 2:
            # a copy that another name shares (an alias or a view), written, then read
            b, z, t = self.fresh_name("b"), self.fresh_name("z"), env[a].type
            self.emit(indent, f"{b} = {a} * 1.0")
            self.emit(indent, self.pick([f"{z} = {b}", f"{z} = {b}[::-1]"]))
            self.emit(indent, f"{b}[{idx}] = {self.expr(env, 's', 1)}")
            env[b], env[z] = Var(t, "shared"), Var(t, "shared")
        else:
            self.emit(indent, f"np.add.at({a}, 0, {self.expr(env, 's', 1)})")
        self.jaxable = False


# results whose kind pullback's inference does not follow: user functions,
# closures, sums of sequences, list elements, products of vectors
_OPAQUE_KIND = re.compile(
    r"(?<![\w.])(h\d+\(|g\d+\(|sum\(|lst\d+|acc\d+)|@|axis=|\[np\.|\[\(")
# calls whose result's kind (scalar, or array of a known rank) pullback infers
_KIND_SAFE = {"np.sin", "np.cos", "np.tanh", "np.exp", "np.sqrt", "np.log1p", "np.arctan",
              "np.abs", "np.maximum", "np.minimum", "np.hypot", "np.square", "np.sum",
              "np.mean", "np.max", "np.min", "np.var", "np.std", "np.prod", "np.arange",
              "np.zeros", "np.ones", "np.zeros_like", "np.copy", "np.clip", "math.exp",
              "math.sin", "math.tanh", "math.sqrt", "max", "min", "abs", ".copy"}


# what may be a view of an array: `(b)[::-1]`, `b[1]`, `b.reshape(2, 2).T.ravel()`,
# `np.ravel(b)` (pullback does not know that the last ravel copies)
_VIEW = re.compile(r"^\(?(\w+)\)?(\[[^\[\]]*\]|\.reshape\([^()]*\)|\.T|\.ravel\(\))+$")
_VIEW_CALL = re.compile(r"^np\.(?:ravel|reshape)\((\w+)[,)]")


def _merge(env, branches, also_unchanged=False):
    """After a branch or loop: an array is as shared as in its worst branch;
    names bound inside are dropped (they may not be bound)."""
    rank = {"input": 0, "fresh": 0, "written": 1, "shared": 2}
    for name, var in env.items():
        var.known = var.known and all(b[name].known for b in branches if name in b)
        states = [b[name].state for b in branches if name in b]
        if also_unchanged:
            states.append(var.state)
        worst = max(states, key=lambda s: rank[s])
        if var.state == "input":
            continue
        if worst == "shared" or var.state == "shared":
            var.state = "shared"
        elif worst == "written":
            var.state = "written"


def _share(env, inner, *names):
    """Arrays a loop walks over are not written any more."""
    for n in names:
        for e in (env, inner):
            if e[n].state in ("fresh", "written"):
                e[n].state = "shared"


def _perm(gen):
    return gen.pick(["np.array([3, 0, 1, 2])", "np.array([1, 1, 0, 3])",
                     "np.array([2, 3, 0, 1])", "np.array([0, 0, 0, 2])"])


def _index_array(gen):
    idx = gen.pick(["np.array([3, 0, 1, 2])", "np.array([1, 1, 0, 3])",
                    "np.array([2, 2, 2, 2])", "np.array([0, 3, 1, 2])"])
    values = idx[len("np.array(["):-2].split(", ")
    return idx, len(set(values)) == len(values)


_UNARY_S = ["np.sin({a})", "np.tanh({a})", "np.cos({a})", "math.exp(0.3 * {a})",
            "({a}) * ({a})", "np.sqrt(1.0 + ({a}) ** 2)", "math.sin({a})",
            "math.tanh({a})", "abs({a})", "-({a})", "np.log1p(({a}) ** 2)",
            "math.sqrt(1.0 + ({a}) * ({a}))", "np.arctan({a})", "({a}) ** 3"]
_UNARY = ["np.sin({a})", "np.tanh({a})", "np.cos({a})", "np.exp(0.3 * {a})",
          "({a}) * ({a})", "np.sqrt(1.0 + ({a}) ** 2)", "np.abs({a})", "-({a})",
          "np.log1p(np.square({a}))", "1.0 / (1.0 + np.exp(-({a})))", "np.arctan({a})"]
_BINARY = ["({a} + {b})", "({a} - {b})", "({a} * {b})", "({a} / (1.5 + ({b}) * ({b})))",
           "np.maximum({a}, {b})", "np.minimum({a}, {b})", "(0.5 * {a} + {b})"]
_BINARY_S = _BINARY + ["max({a}, {b})", "min({a}, {b})"]
_REDUCE = ["np.sum({a})", "np.mean({a})", "np.max({a})", "np.min({a})", "({a}).sum()",
           "np.prod(np.tanh({a}))", "np.var({a})",
           "np.std({a} + np.arange(4.0))"]      # never a zero spread (no derivative there)
_PAIRS = {"s": [("s", "s")], "v": [("v", "v"), ("v", "s"), ("s", "v"), ("v", "v")],
          "m": [("m", "m"), ("m", "v"), ("v", "m"), ("m", "s"), ("s", "m")]}
_BELOW = {"s": "s", "v": "sv", "m": "svm"}


def _to_jax(text):
    text = re.sub(r"\bgetattr\(np,", "getattr(jnp,", text)
    return re.sub(r"\bmath\.", "jnp.", re.sub(r"\bnp\.", "jnp.", text))


def _helpers(gen):
    """Zero to three module-level helper functions."""
    out = []
    for k in range(gen.draw(st.integers(0, 3))):
        name = f"h{k}"
        kind = gen.pick(["elementwise", "scalar", "recursive", "vector", "act", "apply",
                         "applyfn", "partialable", "dictarg", "starargs", "kwargs",
                         "annotated", "cached", "integrator", "pair"])
        env = {"p": Var("s", "shared", known=False), "q": Var("s", "shared", known=False)}
        if kind == "elementwise":
            body = gen.expr({"p": Var("s"), "q": Var("s")}, "s", 2)
            # `0.5 * p +`: the result has p's shape even when the body ignores p
            body = _elementwise(body)
            lines = [f"def {name}(p, q):", f"    return 0.5 * p + {body}"]
        elif kind == "scalar":
            lines = [f"def {name}(p, q):", f"    if {gen.condition(env)}:",
                     f"        return {_elementwise(gen.expr(env, 's', 1))}",
                     "    r = p",
                     f"    for i in range({gen.draw(st.integers(0, 2))}):",
                     f"        r = r * 0.5 + {_elementwise(gen.expr(env, 's', 1))}",
                     "    return r * q"]
        elif kind == "recursive":
            lines = [f"def {name}(p, n):", "    if n <= 0:", "        return p",
                     f"    return {name}(np.sin(p) + 0.5 * p, n - 1) * 0.9"]
        elif kind == "vector":
            lines = [f"def {name}(p):",
                     f"    return np.sum(p * p) * 0.25 + p[{gen.draw(st.integers(0, N - 1))}]"]
        elif kind == "act":
            body = _elementwise(gen.expr({"p": Var("s")}, "s", 2))
            lines = [f"def {name}(p):", f"    return 0.5 * p + {body}"]
        elif kind in ("apply", "applyfn"):
            # a function passed as an argument, or held by a default
            default = ""
            if kind == "apply":
                acts = [n for n, k2, _ in out if k2 == "act"]
                default = "=" + gen.pick(_UFUNCS + acts + [gen.act_global()])
            c = gen.pick(["0.5", "1.5", "-0.7"])
            lines = [f"def {name}(p, fn{default}):",
                     gen.pick([f"    return fn(p) * {c} + 0.5 * p",
                               f"    return fn({c} * p) + fn(p) * 0.5"])]
        elif kind == "dictarg":
            # a dict of parameters (as optimiser and config code passes them)
            body = _elementwise(gen.expr({"p": Var("s")}, "s", 1))
            lines = [f"def {name}(d, p):",
                     gen.pick([f'    return d["a"] * ({body}) + np.tanh(d["b"] * p)',
                               f'    return sum(v * p for v in d.values()) + {body}',
                               f'    return d.get("a", 1.0) * p + d["b"] * ({body})'])]
        elif kind == "starargs":
            # `*args` collected and walked (a variadic combinator)
            lines = [f"def {name}(p, *rest):", "    out = p",
                     "    for k, r in enumerate(rest):",
                     f"        out = out * {gen.pick(['0.5', '0.8'])} + r / (k + 1.0)",
                     "    return out"]
        elif kind == "kwargs":
            # options passed through `**kwargs`, read with a default
            body = _elementwise(gen.expr({"p": Var("s")}, "s", 1))
            lines = [f"def {name}(p, **opts):",
                     f'    return opts.get("scale", 1.0) * ({body}) + opts["shift"] * p']
        elif kind == "annotated":
            # as a library's utility is written: type hints, a keyword-only
            # option, an assert with an f-string message, a logging call
            gen.prelude["logging"] = _LOGGING
            body = _elementwise(gen.expr({"p": Var("s")}, "s", 2))
            lines = [f"def {name}(p: np.ndarray, *, gain: float = 1.5) -> np.ndarray:",
                     f'    assert np.ndim(p) <= 2, f"{name}: expected at most a matrix, '
                     f'got {{np.ndim(p)}} dimensions"',
                     f'    log.debug("{name}: gain %s", gain)',
                     f"    return gain * ({body}) + 0.5 * p"]
        elif kind == "cached":
            # constants from a functools.lru_cache'd helper taking an int
            # (quadrature nodes, a stencil): an elementwise helper to its callers
            gen.prelude["table"] = _TABLE
            body = _elementwise(gen.expr({"p": Var("s"), "q": Var("s")}, "s", 2))
            lines = [f"def {name}(p, q):",
                     f"    w = table({gen.draw(st.integers(2, 5))})",
                     f"    return 0.5 * p + w[{gen.pick(['0', '1', '-1'])}] * ({body}) "
                     f"+ w[-2] * q"]
            kind = "elementwise"
        elif kind == "integrator":
            # an ODE stepper taking the right-hand side and odeint's `args`
            lines = [f"def {name}(fn, p, args=(), n={gen.draw(st.integers(1, 3))}):",
                     "    for _ in range(n):",
                     f"        p = p + {gen.pick(['0.1', '0.25'])} * fn(p, *args)",
                     "    return p"]
        elif kind == "pair":
            # two results returned as a tuple, an option with a default (a
            # step returning the new state and its increment); callers index
            # it, unpack it, add its parts or spread it into a call
            body = _elementwise(gen.expr({"p": Var("s"), "q": Var("s")}, "s", 2))
            lines = [f"def {name}(p, q, scale=1.0):", f"    step = scale * ({body})",
                     f"    return p + {gen.pick(['0.5', '0.1'])} * step, step * q + 0.5 * p"]
        else:
            body = _elementwise(gen.expr({"p": Var("s")}, "s", 2))
            lines = [f"def {name}(p, a=1.0, b=0.0):", f"    return a * ({body}) + b * p + 0.5 * p"]
        if kind in ("elementwise", "scalar") and gen.chance(0.25):
            # a decorator made with functools.wraps, the wrapper's parameters explicit
            if gen.chance(0.5):
                gen.prelude["scaled"] = _SCALED
                lines.insert(0, f"@scaled({gen.pick(['1.5', '-0.5', '2.0'])}, "
                                f"{gen.pick(['0.25', '0.0', '-1.0'])})")
            else:
                gen.prelude["doubled"] = _DOUBLED
                lines.insert(0, "@doubled")
        if out:
            # a helper may call the one before it
            prev, prev_kind, _ = out[-1]
            if prev_kind == "elementwise" and kind == "elementwise":
                lines[-1] = lines[-1].replace("return ", f"return {prev}(p, q) + ", 1)
        out.append((name, kind, lines))
    return out


_UFUNCS = ["np.sin", "np.tanh", "np.cos", "np.arctan"]

_LOGGING = ["import logging", "", 'log = logging.getLogger("pullback.fuzz")']

_TABLE = ["@functools.lru_cache(maxsize=None)",
          "def table(n: int):",
          "    return np.linspace(0.5, 1.5, n)"]

#: the two attribute names of ``State`` (``Gen.need_state``)
_STATE_FIELDS = tuple(os.environ.get("PULLBACK_FUZZ_STATE_FIELDS", "temp,gain").split(","))

_SCALED = ["def scaled(c, shift):",
           "    def deco(fn):",
           "        @functools.wraps(fn)",
           "        def wrapper(p, q):",
           "            return c * fn(p, q) + shift",
           "        return wrapper",
           "    return deco"]

_DOUBLED = ["def doubled(fn):",
            "    @functools.wraps(fn)",
            "    def wrapper(p, q):",
            "        return 2.0 * fn(p, q) - 0.5 * q",
            "    return wrapper"]


def _elementwise(text):
    """Keep a helper body valid for arrays: no builtins that need scalars."""
    text = re.sub(r"\bmath\.", "np.", text)
    for scalar, array in (("abs", "np.abs"), ("max", "np.maximum"), ("min", "np.minimum")):
        text = re.sub(rf"(?<![\w.]){scalar}\(", array + "(", text)
    return text


@st.composite
def programs(draw, risky=None):
    """A random program (a ``Program``)."""
    if risky is None:
        risky = draw(st.integers(0, 9)) == 0
    gen = Gen(draw, risky)
    gen.returns = "v" if draw(st.integers(0, 4)) == 0 else "s"
    params = [("x", "v")]
    env = {"x": Var("v"), "s": Var("s")}
    if draw(st.booleans()):
        params.append(("y", "v"))
        env["y"] = Var("v")
    if draw(st.integers(0, 2)) == 0:
        params.append(("m", "m"))
        env["m"] = Var("m")
    params.append(("s", "s"))
    struct = draw(st.sampled_from([None, None, None, "tuple", "dict", "list", "namedtuple",
                                   "dataclass"]))
    lines_before = []
    if struct:
        params.append(("p", struct))
        first, second = {"tuple": ("p[0]", "p[1]"), "dict": ('p["w"]', 'p["b"]'),
                         "list": ("p[0]", "p[1]"),
                         "namedtuple": draw(st.sampled_from([("p.w", "p.b"), ("p[0]", "p[1]"),
                                                             ("p.w", "p[-1]")])),
                         "dataclass": ("p.w", "p.b")}[struct]
        if struct == "dataclass":
            gen.jaxable = False         # not a JAX pytree
        if struct in ("tuple", "namedtuple") and draw(st.booleans()):
            lines_before.append("pw, pb = p")
        else:
            lines_before += [f"pw = {first}", f"pb = {second}"]
        # a structure's fields are of unknown kind to pullback
        env["pw"] = Var("v", known=False)
        env["pb"] = Var("v" if struct == "list" else "s", known=False)
    if draw(st.integers(0, 4)) == 0:
        # a list of (W, b) layers whose widths change: 4 -> ... (1 to 3 layers)
        widths = [N] + draw(st.lists(st.integers(1, 5), min_size=1, max_size=3))
        params.append(("ls", "layers:" + "-".join(map(str, widths))))
        gen.layers = widths
    gen.helpers = _helpers(gen)
    for text in lines_before:
        gen.emit(1, text)
    if not risky and draw(st.integers(0, 24)) == 0:
        gen.must_refuse = True
        gen.stmt_refused(env, 1)
    elif not risky and draw(st.integers(0, 24)) == 0:
        gen.stmt_kick(env, 1)
    gen.block(env, 2, 1, n_max=6)
    if gen.layers and not gen.layers_done:
        gen.stmt_layers(env, 2, 1)
    gen.emit(1, f"return {' + '.join([gen.result(env)] + gen.must_use)}")
    names = [n for n, _ in params]
    header = f"def f({', '.join(names)}):"
    if draw(st.integers(0, 7)) == 0:
        # f itself decorated: the wrapper is what is called and differentiated
        gen.prelude["around"] = [
            "def around(c, shift):", "    def deco(fn):", "        @functools.wraps(fn)",
            f"        def wrapper({', '.join(names)}):",
            f"            return fn({', '.join(names)}) * c + shift",
            "        return wrapper", "    return deco"]
        header = f"@around({draw(st.sampled_from(['1.5', '-0.5']))}, 0.25)\n" + header
    entry = None
    if gen.returns == "s":
        entry = draw(st.sampled_from([None] * 6 + ["partial", "method", "instance"]))
    tail = []
    if entry in ("method", "instance"):
        args = ", ".join(names)
        tail = ["", "", "class Entry:", "    def __init__(self, c):", "        self.c = c", "",
                f"    def loss(self, {args}):", f"        return self.c * f({args})", "",
                f"    def __call__(self, {args}):", f"        return f({args}) * self.c + 0.5"]
    # rebinding between calls: a module-level function the program calls
    rebind = None
    candidates = list(gen.act_globals) + [n for n, kind, _ in gen.helpers if kind == "act"]
    if "Model" in gen.prelude:
        candidates.append("model")
    if candidates and draw(st.integers(0, 2)) == 0:
        name = draw(st.sampled_from(candidates))
        if name == "model":
            new = f"Model({draw(st.sampled_from(['0.4', '-0.9']))}, 0.2, np.cos)"
        else:
            others = [n for n, kind, _ in gen.helpers if kind == "act" and n != name]
            new = draw(st.sampled_from(_UFUNCS + others))
        rebind = {name: new}
    order = ["itertools", "logging", "table", "doubled", "scaled", "around", "Model", "Sim",
             "State", "Phase", "Layers"] + list(gen.act_globals)
    prelude = [line for key in order if key in gen.prelude
               for line in gen.prelude[key] + [""]]
    body = [header] + ["    " * i + text for i, text, _ in gen.lines]
    jbody = [header] + ["    " * i + text for i, _, text in gen.lines]
    helper_lines = [line for _, _, lines in gen.helpers for line in lines + [""]]
    source = "\n".join(prelude + helper_lines + body + tail) + "\n"
    jax_source = "\n".join([_to_jax(h) for h in prelude + helper_lines] + jbody) + "\n"
    # nothing in a risky program's helpers is risky; the flag is for f
    return Program(source, jax_source if gen.jaxable else None, params, gen.risky,
                   gen.returns, rebind, entry, gen.must_refuse)


# -- running and checking ----------------------------------------------------------

_files = itertools.count()


class Invalid(Exception):
    """The program cannot be checked on these inputs (overflow, NaN...)."""


def load(source, namespace=None, name="f"):
    """Define the functions in ``source`` as if they lived in a file."""
    n = next(_files)
    filename = f"<fuzz program {n}>"
    codegen.register_source(filename, source)
    # a module of its own, as a file's classes have (`inspect.getsource(cls)`
    # finds the file through it; a class of module `builtins` is a library's)
    module = types.ModuleType(f"fuzz_program_{n}")
    module.__file__ = filename
    sys.modules[module.__name__] = module
    ns = {"np": np, "math": math, "functools": functools, "pullback": pb,
          "__name__": module.__name__, **(namespace or {})}
    exec(compile(source, filename, "exec"), ns)
    return ns[name]


def make_args(program, rng, dtype=np.float64):
    args = []
    for name, kind in program.params:
        vec = lambda: rng.uniform(-1.5, 1.5, size=N).astype(dtype)  # noqa: E731
        if kind == "v":
            args.append(vec())
        elif kind == "m":
            args.append(rng.uniform(-1.5, 1.5, size=(ROWS, N)).astype(dtype))
        elif kind == "s":
            args.append(float(rng.uniform(-1.5, 1.5)))
        elif kind.startswith("layers:"):
            widths = [int(w) for w in kind.split(":")[1].split("-")]
            args.append([(rng.uniform(-1.0, 1.0, size=(a, b)).astype(dtype),
                          rng.uniform(-0.5, 0.5, size=b).astype(dtype))
                         for a, b in zip(widths[:-1], widths[1:])])
        else:
            b = float(rng.uniform(-1.5, 1.5))
            args.append({"tuple": lambda: (vec(), b), "dict": lambda: {"w": vec(), "b": b},
                         "list": lambda: [vec(), vec()], "namedtuple": lambda: Pair(vec(), b),
                         "dataclass": lambda: Box(vec(), b)}[kind]())
    return args


def _items(x):
    """(key, value) pairs of a structure, or None for a number or an array."""
    if isinstance(x, dict):
        return list(x.items())
    if isinstance(x, (tuple, list)):
        return list(enumerate(x))
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return [(f.name, getattr(x, f.name)) for f in dataclasses.fields(x)]
    return None


def _build(x, values):
    """A structure like ``x`` holding ``values`` (in ``x``'s order)."""
    if isinstance(x, dict):
        return dict(zip(x, values))
    if isinstance(x, list):
        return list(values)
    if isinstance(x, tuple) and not hasattr(x, "_fields"):
        return tuple(values)
    return type(x)(*values)         # a namedtuple or a dataclass


def leaves(x, path=()):
    """(path, value) for every number and array inside ``x``."""
    items = _items(x)
    if items is None:
        return [(path, x)]
    return [lf for k, v in items for lf in leaves(v, path + (k,))]


def get(x, path):
    for p in path:
        x = dict(_items(x))[p]
    return x


def replace(x, path, value):
    if not path:
        return value
    return _build(x, [replace(v, path[1:], value) if k == path[0] else v
                      for k, v in _items(x)])


def same_bits(a, b):
    """Equal value, dtype and type, bit for bit."""
    if type(a) is not type(b):
        return False
    items_a, items_b = _items(a), _items(b)
    if items_a is not None:
        return [k for k, _ in items_a] == [k for k, _ in items_b] and \
            all(same_bits(p, q) for (_, p), (_, q) in zip(items_a, items_b))
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def pairing(ct, out):
    return float(np.sum(np.asarray(ct) * np.asarray(out)))


def check(program, seed, jax_check=True):
    """Run every check on ``program`` with inputs drawn from ``seed``.

    Returns "ok" or "refused" (a risky program pullback refused); raises
    ``Invalid`` when these inputs make the program overflow or NaN, and
    ``AssertionError`` (with the program) when a check fails."""
    STATS["generated"] += 1
    f = load(program.source)
    rng = np.random.default_rng(seed)
    args = make_args(program, rng)

    def plain(*a):
        with np.errstate(all="raise"):
            return f(*copy.deepcopy(a))

    try:
        value = plain(*args)
    except (FloatingPointError, OverflowError, ZeroDivisionError, ValueError):
        STATS["invalid"] += 1
        raise Invalid from None
    if not np.all(np.isfinite(value)) or np.max(np.abs(value)) > 1e6:
        STATS["invalid"] += 1
        raise Invalid
    ct = np.float64(rng.uniform(0.5, 1.5)) if program.returns == "s" \
        else rng.uniform(-1.0, 1.0, size=np.shape(value))
    saved_args, saved_ct = copy.deepcopy(args), copy.deepcopy(ct)

    if program.must_refuse:
        check_refused(program, f, args)
        return "refused"
    try:
        out, back = pb.vjp(f, *args)
    except pb.PullbackError as err:
        assert program.risky, f"pullback refused a supported program:\n{program}\n{err}"
        assert err.filename == f.__code__.co_filename and err.lineno, str(err)
        STATS["refused"] += 1
        return "refused"
    assert same_bits(out, value), f"primal value {out!r} != plain Python {value!r}\n{program}"
    grads = back(ct)
    slow_out, slow_back = pb.vjp(f, *args, inplace=False)
    slow = slow_back(ct)
    again = back(ct)          # a pullback may be called twice
    assert all(same_bits(a, b) for a, b in zip(args, saved_args)), f"input mutated\n{program}"
    assert same_bits(ct, saved_ct), f"cotangent mutated\n{program}"
    check_structure(grads, args, program)
    check_no_sharing(grads, args, ct, program)
    for (path, g), (_, h), (_, k) in zip(leaves(grads), leaves(slow), leaves(again)):
        # in place and out of place may differ only in the sign of a zero
        np.testing.assert_array_equal(g, h, err_msg=f"in-place != out-of-place at {path}\n"
                                      f"{program}")
        np.testing.assert_array_equal(g, k, err_msg=f"second pullback differs\n{program}")
    smooth = check_finite_differences(program, plain, args, ct, grads)
    check_forward(program, f, args, ct, grads, value, seed)
    if program.returns == "s":
        check_grad_api(program, f, args, grads, ct, value)
        if program.entry:
            check_entry(program, f, args, grads, ct)
        if seed % 16 == 0:
            check_grad_of_grad(program, f, args, smooth)
    if jax_check and program.jax_source and smooth:
        check_jax(program, args, ct, grads)
    check_float32(program, f, args)
    if program.rebind:
        check_rebind(program, f, plain, args, ct, jax_check)
    STATS["checked"] += 1
    return "ok"


def random_tangent(x, rng):
    """A random tangent shaped like ``x`` (floats and float arrays; the same
    structure for containers; other leaves as they are)."""
    if isinstance(x, np.ndarray) and x.dtype.kind == "f":
        return rng.standard_normal(x.shape).astype(x.dtype)
    if isinstance(x, float):
        return float(rng.standard_normal())
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*(random_tangent(v, rng) for v in x))
    if isinstance(x, (list, tuple)):
        return type(x)(random_tangent(v, rng) for v in x)
    if isinstance(x, dict):
        return {k: random_tangent(v, rng) for k, v in x.items()}
    if dataclasses.is_dataclass(x):
        return type(x)(**{f.name: random_tangent(getattr(x, f.name), rng)
                          for f in dataclasses.fields(x)})
    return x


def check_forward(program, f, args, ct, grads, value, seed):
    """Forward mode against reverse mode: ``<vjp(ct), t> == <ct, jvp(t)>``."""
    rng = np.random.default_rng(seed + 1)
    tangents = tuple(random_tangent(a, rng) for a in args)
    saved = copy.deepcopy((args, tangents))
    try:
        out, dot = pb.jvp(f, tuple(args), tangents)
    except pb.PullbackError as err:
        STATS["jvp_refused"] += 1
        STATS["jvp_refused: " + str(err).split("\n")[0][:90]] += 1
        return
    assert same_bits(out, value), f"jvp's value {out!r} != plain Python {value!r}\n{program}"
    assert same_bits(saved[0], args) and same_bits(saved[1], tangents), \
        f"jvp wrote into an input or a tangent\n{program}"
    assert np.shape(dot) == np.shape(value), f"jvp's tangent shape {np.shape(dot)}\n{program}"
    terms = [np.asarray(g, float) * np.asarray(t, float)
             for (_, g), (_, t) in zip(leaves(grads), leaves(tangents))
             if isinstance(t, (np.ndarray, float)) and g is not None]
    lhs = sum(float(np.sum(x)) for x in terms)
    right = np.asarray(ct) * np.asarray(dot, float)
    rhs = float(np.sum(right))
    scale = sum(float(np.sum(np.abs(x))) for x in terms) + float(np.sum(np.abs(right)))
    assert abs(lhs - rhs) <= 1e-8 * scale + 1e-10, \
        f"<vjp(ct), t> = {lhs!r} but <ct, jvp(t)> = {rhs!r}\n{program}"
    STATS["jvp_checked"] += 1


def check_refused(program, f, args):
    """A construct pullback documents as refused: a PullbackError naming a
    line of the program, never a number."""
    try:
        pb.vjp(f, *args)
    except pb.PullbackError as err:
        assert err.filename == f.__code__.co_filename and err.lineno, \
            f"refusal without the program's line: {err}\n{program}"
        STATS["refused"] += 1
        STATS["must_refuse"] += 1
        return
    raise AssertionError(f"pullback differentiated a construct it documents as refused\n"
                         f"{program}")


def check_grad_of_grad(program, f, args, smooth=True):
    """Second derivatives: the Hessian-vector product forward over reverse
    (``pb.jvp`` of ``pb.grad``) against central differences of ``pb.grad``
    along the same direction.  A refusal names the user's file and line."""
    argnums = tuple(range(len(args)))
    rng = np.random.default_rng(len(program.source) if hasattr(program, "source") else 0)
    direction = list(args)
    for path, x in leaves(list(args)):
        d = rng.standard_normal(np.shape(x))
        d = d.astype(x.dtype) if isinstance(x, np.ndarray) else type(x)(d) if \
            isinstance(x, float) else d
        direction = replace(direction, path, d)
    grad_f = pb.grad(f, argnums=argnums)
    try:
        _, hv = pb.jvp(grad_f, tuple(args), tuple(direction))
    except pb.PullbackError as err:
        assert str(err), f"an empty refusal\n{program}"
        STATS["grad_of_grad_refused"] += 1
        return
    STATS["grad_of_grad"] += 1
    if not smooth:
        return

    def moved(eps):
        a = list(args)
        for path, x in leaves(list(args)):
            a = replace(a, path, x + eps * get(direction, path))
        try:
            return list(grad_f(*a))
        except (FloatingPointError, OverflowError, ZeroDivisionError, ValueError):
            return None
    h1, h2 = 1e-5, 1e-3
    up, down, up2, down2 = moved(h1), moved(-h1), moved(h2), moved(-h2)
    if any(v is None for v in (up, down, up2, down2)):
        return
    for path, _ in leaves(list(args)):
        c1 = (np.asarray(get(up, path)) - np.asarray(get(down, path))) / (2 * h1)
        c2 = (np.asarray(get(up2, path)) - np.asarray(get(down2, path))) / (2 * h2)
        got = np.asarray(get(list(hv), path))
        scale = 1.0 + np.abs(c1)
        if not np.all(np.abs(c1 - c2) <= 1e-3 * scale):
            continue            # a branch or a kink within a step
        STATS["hvp_compared"] += 1
        assert np.all(np.abs(got - c1) <= 1e-4 * scale), \
            f"Hessian-vector product {got} != finite differences {c1} at {path}\n{program}"


def check_entry(program, f, args, grads, ct):
    """The same gradient through pb.grad of a partial object, a bound
    method, a callable instance."""
    n = len(args)
    if program.entry == "partial":
        fn, call, scale, skip = functools.partial(f, args[0]), args[1:], 1.0, 1
    else:
        obj = f.__globals__["Entry"](1.5)
        fn = obj.loss if program.entry == "method" else obj
        call, scale, skip = args, 1.5, 0
    # the plain call on copies, the partial's own argument too: a function that
    # writes into its argument changes it (pullback's transforms never do)
    plain = functools.partial(f, copy.deepcopy(args[0])) if program.entry == "partial" else fn
    value = plain(*copy.deepcopy(call))
    val, g = pb.value_and_grad(fn, argnums=tuple(range(n - skip)))(*call)
    assert same_bits(val, value), f"{program.entry}: value {val!r} != {value!r}\n{program}"
    for (path, a), (_, b) in zip(leaves(list(g)), leaves(list(grads)[skip:])):
        np.testing.assert_allclose(np.asarray(a) * ct, scale * np.asarray(b), rtol=1e-10,
                                   atol=1e-12, err_msg=f"{program.entry}: gradient != f's at "
                                   f"{path}\n{program}")
    STATS["entry_" + program.entry] += 1


def check_rebind(program, f, plain, args, ct, jax_check):
    """Rebind module-level functions the program calls (in its globals): the
    next gradient is the new program's (finite differences, jax.grad)."""
    ns = f.__globals__
    for name, text in program.rebind.items():
        ns[name] = eval(text, ns)
    try:
        value = plain(*args)
    except (FloatingPointError, OverflowError, ZeroDivisionError, ValueError):
        return
    if not np.all(np.isfinite(value)) or np.max(np.abs(value)) > 1e6:
        return
    try:
        out, back = pb.vjp(f, *args)
    except pb.PullbackError as err:
        raise AssertionError(f"pullback refused after rebinding {program.rebind}:\n"
                             f"{program}\n{err}") from None
    assert same_bits(out, value), \
        f"after rebinding {program.rebind}: primal {out!r} != plain {value!r}\n{program}"
    grads = back(ct)
    check_structure(grads, args, program)
    note = f"after rebinding {program.rebind}"
    smooth = check_finite_differences(program, plain, args, ct, grads, note)
    if jax_check and program.jax_source and smooth:
        check_jax(program, args, ct, grads, program.rebind)
    STATS["rebind_checked"] += 1


def check_structure(grads, args, program):
    assert isinstance(grads, tuple) and len(grads) == len(args), program
    for g, a in zip(grads, args):
        assert type(g) is type(a), (type(g), type(a), str(program))
        glv, alv = leaves(g), leaves(a)
        assert [p for p, _ in glv] == [p for p, _ in alv], program
        for (path, gl), (_, al) in zip(glv, alv):
            assert type(gl) is type(al), (path, type(gl), type(al), str(program))
            if isinstance(al, np.ndarray):
                assert gl.dtype == al.dtype and gl.shape == al.shape, \
                    (path, gl.dtype, gl.shape, str(program))
                # the caller's own array, to update in place (an optimizer step)
                assert gl.flags.writeable, (path, "a gradient is read-only", str(program))


def check_no_sharing(grads, args, ct, program):
    gl = [v for _, v in leaves(grads) if isinstance(v, np.ndarray)]
    others = [v for _, v in leaves(list(args)) if isinstance(v, np.ndarray)]
    if isinstance(ct, np.ndarray):
        others.append(ct)
    for i, g in enumerate(gl):
        for h in gl[i + 1:] + others:
            assert not np.shares_memory(g, h), f"a gradient shares memory\n{program}"


def check_finite_differences(program, plain, args, ct, grads, note=""):
    """Central differences of <ct, f> for every input element; returns
    whether every element was smooth."""
    smooth = True
    for path, x in leaves(list(args)):
        g = get(list(grads), path)
        for k in np.ndindex(np.shape(x)):
            def at(eps):
                if isinstance(x, np.ndarray):
                    y = x.copy()
                    y[k] += eps
                else:
                    y = x + eps
                a = replace(list(args), path, y)
                try:
                    return pairing(ct, plain(*a))
                except (FloatingPointError, OverflowError, ZeroDivisionError, ValueError):
                    return math.nan
            base = pairing(ct, plain(*args))
            h1, h2 = 1e-6, 1e-4
            up, down = at(h1), at(-h1)
            c1 = (up - down) / (2 * h1)
            c2 = (at(h2) - at(-h2)) / (2 * h2)
            fwd, bwd = (up - base) / h1, (base - down) / h1
            scale = 1.0 + abs(c1)
            if not (abs(c1 - c2) <= 1e-4 * scale and abs(fwd - bwd) <= 1e-3 * scale):
                smooth = False      # a branch or a kink is within a step: not comparable
                STATS["fd_skipped"] += 1
                continue
            gk = float(np.asarray(g)[k]) if isinstance(x, np.ndarray) else g
            STATS["fd_compared"] += 1
            assert abs(gk - c1) <= 1e-5 * scale + 1e-9 * abs(base) / h1, \
                f"gradient {gk} != finite difference {c1} at {path}{k} {note}\n{program}"
    return smooth


def check_grad_api(program, f, args, grads, ct, value):
    argnums = tuple(range(len(args)))
    val, g = pb.value_and_grad(f, argnums=argnums)(*args)
    assert same_bits(val, value), f"value_and_grad value {val!r} != {value!r}\n{program}"
    for (path, a), (_, b) in zip(leaves(list(g)), leaves(list(grads))):
        np.testing.assert_allclose(np.asarray(a) * ct, b, rtol=1e-12, atol=1e-14,
                                   err_msg=f"grad != vjp / ct at {path}\n{program}")


def check_float32(program, f, args):
    """Float32 arrays in, float32 gradients out (Python floats stay floats)."""
    args32 = [_to32(a) for a in args]
    saved = copy.deepcopy(args32)
    try:
        with np.errstate(all="ignore"):
            out, back = pb.vjp(f, *args32)
            ct = np.float32(1.0) if program.returns == "s" else np.ones(np.shape(out), np.float32)
            grads = back(ct)
    except pb.PullbackError:
        raise AssertionError(f"pullback refused the float32 version\n{program}") from None
    assert all(same_bits(a, b) for a, b in zip(args32, saved)), f"float32 input mutated\n{program}"
    check_structure(grads, args32, program)
    check_no_sharing(grads, args32, ct, program)


def _to32(x):
    if isinstance(x, np.ndarray):
        return x.astype(np.float32)
    items = _items(x)
    return x if items is None else _build(x, [_to32(v) for _, v in items])


def check_jax(program, args, ct, grads, rebind=None):
    """``jax.grad`` of the jax.numpy version agrees (float64, restored after)."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        STATS["jax_unavailable"] += 1
        return
    with jax.enable_x64(True):
        fj = load(program.jax_source, {"jnp": jnp})
        for name, text in (rebind or {}).items():
            fj.__globals__[name] = eval(_to_jax(text), fj.__globals__)
        jargs = jax.tree_util.tree_map(
            lambda a: jnp.asarray(a) if isinstance(a, np.ndarray) else a, list(args))

        def phi(*a):
            return jnp.sum(jnp.asarray(ct) * fj(*a))
        jg = jax.grad(phi, argnums=tuple(range(len(args))))(*jargs)
        jg = jax.tree_util.tree_map(np.asarray, jg)
    STATS["jax_compared"] += 1
    for path, a in leaves(list(grads)):
        b = get(list(jg), path)          # by path: JAX sorts a dict's keys
        scale = 1.0 + float(np.max(np.abs(b), initial=0.0))
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9 * scale,
                                   err_msg=f"pullback != jax.grad at {path} "
                                   f"{'after rebinding ' + str(rebind) if rebind else ''}"
                                   f"\n{program}")


# -- the long run ---------------------------------------------------------------------

CHUNK = 250      # programs per hypothesis run: a failure ends only its own chunk


def _run(programs_n, seed, jax_check, shrink=False):
    """Check ``programs_n`` programs drawn from ``seed``, in chunks, so that
    a failure is reported and the run goes on; returns the counts and the
    failures (their messages hold the programs).  Without ``shrink`` a
    failing program is reported as drawn (shrinking one can take minutes)."""
    from hypothesis import HealthCheck, Phase, assume, given, settings
    from hypothesis import seed as hseed
    phases = list(Phase) if shrink else [Phase.generate]
    failures = []
    for chunk in itertools.count():
        judged = STATS["checked"] + STATS["refused"]
        if chunk:       # progress, so that a run cut short still tells its counts
            print(f"fuzz worker {seed}: {judged} judged, {STATS['checked']} checked, "
                  f"{STATS['refused']} refused, {len(failures)} failed",
                  file=sys.stderr, flush=True)
        if judged >= programs_n or chunk > 2 * programs_n // CHUNK + 10:
            break

        @hseed(seed * 100_000 + chunk)
        @settings(max_examples=min(CHUNK, programs_n - judged), deadline=None, database=None,
                  phases=phases, suppress_health_check=list(HealthCheck))
        @given(programs(), st.integers(0, 2 ** 32 - 1))
        def run(program, s):
            try:
                check(program, s, jax_check)
            except Invalid:
                assume(False)

        try:
            run()
        except Exception as err:        # a failed check: keep it, go on
            import traceback
            STATS["failed"] += 1        # (with hypothesis's note: the program and inputs)
            failures.append("".join(traceback.format_exception_only(err)))
    return dict(STATS), failures


def main(argv=None):
    import argparse
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--programs", type=int, default=10000)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-jax", action="store_true")
    parser.add_argument("--shrink", action="store_true",
                        help="shrink each failing program (slow) before reporting it")
    opts = parser.parse_args(argv)
    # as in the tests (conftest.py): transforms are cached in a directory of
    # this run's own, never the user's
    import shutil
    import tempfile
    cache = tempfile.mkdtemp(prefix="pullback-fuzz-cache-")
    os.environ["PULLBACK_CACHE_DIR"] = cache
    try:
        return _main(opts)
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def _main(opts):
    import multiprocessing
    start = time.time()
    per = [opts.programs // opts.jobs + (i < opts.programs % opts.jobs)
           for i in range(opts.jobs)]
    jobs = [(n, opts.seed * 1000 + i, not opts.no_jax, opts.shrink)
            for i, n in enumerate(per)]
    if opts.jobs == 1:
        results = [_run(*jobs[0])]
    else:
        with multiprocessing.get_context("spawn").Pool(opts.jobs) as pool:
            results = pool.starmap(_run, jobs)
    total, failures = collections.Counter(), []
    for counts, failed in results:
        total.update(counts)
        failures.extend(failed)
    for i, text in enumerate(failures):
        print(f"\n=== failure {i + 1} of {len(failures)} ===\n{text}")
    print(f"fuzz: {total['checked'] + total['refused']} programs judged "
          f"({total['checked']} differentiated and checked, {total['refused']} risky ones "
          f"refused with their line), {len(failures)} failed; {total['invalid']} draws "
          f"rejected (overflow or NaN); {total['jax_compared']} compared with jax.grad, "
          f"{total['fd_compared']} gradient entries against finite differences "
          f"({total['fd_skipped']} skipped near a kink); forward mode: {total['jvp_checked']} "
          f"jvp checked against vjp, {total['jvp_refused']} refused; "
          f"{time.time() - start:.0f} s")
    reasons = sorted((n, k.split(": ", 1)[1]) for k, n in total.items()
                     if k.startswith("jvp_refused: "))
    for n, why in reversed(reasons):
        print(f"  jvp refused {n:5d}x: {why}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.exit(main())
