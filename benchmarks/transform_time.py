"""Transform time against the size of the function (issue 17): the first
transform of a fresh function, no on-disk cache, for five families of
generated programs:

    loop      a ``for`` loop whose body is N scalar statements
    write     a ``for`` loop whose body is N writes into a local array
    straight  N statements of straight-line array code
    reassign  N statements of straight-line array code reassigning one name
    if        ``if``/``else`` nested D deep
    for       ``for`` loops nested D deep (Python allows at most 20)

Each row prints N -> seconds and milliseconds per statement; each family the
ratio of its two largest sizes (2x apart: 2 for linear growth, 4 for
quadratic).  Then the transform of a 20-line model and its gradient's cost
against the primal.

    .venv/bin/python benchmarks/transform_time.py              # 100 .. 1,600: make bench-transform
    .venv/bin/python benchmarks/transform_time.py --quick      # 100 .. 400
    .venv/bin/python benchmarks/transform_time.py --families loop,write --sizes 200,400
"""
from __future__ import annotations

import os

if __name__ == "__main__":      # (the tests import this module for its programs)
    os.environ["PULLBACK_CACHE"] = "0"
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

import pullback as pb  # noqa: E402
from pullback.testing import function_from_source  # noqa: E402

# One statement of each family: the k-th of a chain, each reading the one
# before (and a parameter), with a mix of operations.
_SCALAR = ["t{k} = t{j} * 1.0001 + x", "t{k} = np.sin(t{j}) + t{j}", "t{k} = t{j} - 0.5 * x",
           "t{k} = t{j} * t{j} * 0.001 + t{j}", "t{k} = np.tanh(t{j}) * x"]
_ARRAY = ["t{k} = t{j} * 1.0001 + x", "t{k} = np.sin(t{j}) + t{j}", "t{k} = t{j} - 0.5 * x",
          "t{k} = t{j} * t{j} * 0.001 + t{j}", "t{k} = np.tanh(t{j}) * x",
          "t{k} = t{j} + np.sum(t{j}) * 0.01"]


def loop_body(n):
    """``for`` loop whose body is ``n`` scalar statements."""
    lines = ["def f(x, m):", "    s = 0.0", "    for i in range(m):", "        t0 = s + x"]
    lines += ["        " + _SCALAR[k % len(_SCALAR)].format(k=k, j=k - 1) for k in range(1, n - 1)]
    lines += [f"        s = t{n - 2} * 0.5", "    return s"]
    return "\n".join(lines) + "\n"


def array_writes(n):
    """``for`` loop whose body is ``n`` writes into a local array."""
    lines = ["def f(x, m):", "    y = np.zeros(8)", "    s = 0.0", "    for i in range(m):"]
    for k in range(n - 1):
        j, a, b = k % 8, (k + 3) % 8, (k + 5) % 8
        lines.append(f"        y[{j}] = y[{a}] * 0.5 + x[{b}] * {1 + k % 7}.0"
                     if k % 2 else f"        y[{j}] = np.sin(y[{a}]) + x[{b}] + s")
    lines += ["        s = s + np.sum(y) * 0.01", "    return s"]
    return "\n".join(lines) + "\n"


def straight_line(n):
    """``n`` statements of straight-line array code."""
    lines = ["def f(x):", "    t0 = x * 1.0"]
    lines += ["    " + _ARRAY[k % len(_ARRAY)].format(k=k, j=k - 1) for k in range(1, n - 1)]
    lines += [f"    return np.sum(t{n - 2})"]
    return "\n".join(lines) + "\n"


def reassign(n):
    """``n`` statements of straight-line array code reassigning one name."""
    lines = ["def f(x):", "    s = x * 1.0"]
    lines += [f"    s = np.sin(s) * {1 + k % 7}.0 + x" for k in range(n - 2)]
    lines += ["    return np.sum(s)"]
    return "\n".join(lines) + "\n"


def nested_if(d):
    """``if``/``else`` nested ``d`` deep, in the ``if`` arm; two statements in each arm."""
    lines = ["def f(x, c):", "    s = x * 1.0"]

    def level(k, depth):
        ind = "    " * depth
        if k == d:
            return [f"{ind}s = s * 2.0 + x"]
        return ([f"{ind}if c > {k}:", f"{ind}    s = s * 1.5 + x"] + level(k + 1, depth + 1)
                + [f"{ind}else:", f"{ind}    s = np.sin(s) - x", f"{ind}    s = s * s"])
    lines += level(0, 1) + ["    return s"]
    return "\n".join(lines) + "\n"


def nested_for(d):
    """``for`` loops nested ``d`` deep, one statement at each level."""
    lines = ["def f(x):", "    s = x * 1.0"]
    for k in range(d):
        ind = "    " * (k + 1)
        lines += [f"{ind}for i{k} in range(2):", f"{ind}    s = s * 0.9 + x"]
    lines += ["    return s"]
    return "\n".join(lines) + "\n"


FAMILIES = {"loop": (loop_body, "statements"), "write": (array_writes, "statements"),
            "straight": (straight_line, "statements"), "reassign": (reassign, "statements"),
            "if": (nested_if, "depth"),
            "for": (nested_for, "depth")}
SIZES = {"loop": [100, 200, 400, 800, 1600], "write": [100, 200, 400, 800, 1600],
         "straight": [100, 200, 400, 800, 1600], "reassign": [100, 200, 400, 800, 1600],
         "if": [10, 20, 40, 80], "for": [4, 6, 8, 10, 12, 16, 19]}
QUICK = {"loop": [100, 200, 400], "write": [100, 200, 400], "straight": [100, 200, 400],
         "reassign": [100, 200, 400], "if": [10, 20, 40], "for": [4, 8, 12]}


def statements(text):
    return sum(1 for line in text.splitlines()[1:] if line.strip())


def transform_seconds(text):
    """Seconds for the first (generic) transform of a fresh function of ``text``."""
    fn = function_from_source(text)
    t = time.perf_counter()
    pb.source(fn)
    return time.perf_counter() - t


def curve(family, sizes, limit=None):
    """Print and return [(size, statements, seconds)] for ``family``."""
    make, unit = FAMILIES[family]
    print(f"\n{family}: {make.__doc__}")
    print(f"  {unit:>10} {'statements':>10} {'seconds':>9} {'ms/stmt':>8}")
    rows = []
    for n in sizes:
        text = make(n)
        secs = transform_seconds(text)
        stmts = statements(text)
        rows.append((n, stmts, secs))
        print(f"  {n:>10} {stmts:>10} {secs:>9.2f} {secs / stmts * 1e3:>8.2f}", flush=True)
        if limit is not None and secs > limit:
            print(f"  (stopped: over {limit:.0f} s)")
            break
    if len(rows) >= 2:
        (n1, _, s1), (n2, _, s2) = rows[-2], rows[-1]
        print(f"  ratio {n2}/{n1}: {s2 / s1:.2f}")
    return rows


def model(w1, b1, w2, b2, x, y):
    z1 = x @ w1 + b1
    h1 = np.tanh(z1)
    z2 = h1 @ w2 + b2
    m = np.max(z2, axis=1, keepdims=True)
    e = np.exp(z2 - m)
    s = np.sum(e, axis=1, keepdims=True)
    logp = z2 - m - np.log(s)
    nll = -np.mean(np.sum(logp * y, axis=1))
    reg1 = np.sum(w1 * w1)
    reg2 = np.sum(w2 * w2)
    reg = 0.5 * 1e-3 * (reg1 + reg2)
    ent = -np.mean(np.sum(np.exp(logp) * logp, axis=1))
    conf = np.mean(np.max(logp, axis=1))
    act = np.mean(h1 ** 2)
    sparsity = np.mean(np.abs(h1))
    loss = nll + reg + 0.01 * ent
    loss = loss + 1e-4 * act + 1e-4 * sparsity
    loss = loss - 0.0 * conf
    loss = loss * 1.0
    return loss


def best(f, repeat=50):
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return min(ts)


def model_row(repeat=20):
    from pullback.callees import Derivative
    rng = np.random.default_rng(0)
    args = (rng.normal(size=(64, 32)) * 0.1, np.zeros(32), rng.normal(size=(32, 10)) * 0.1,
            np.zeros(10), rng.normal(size=(128, 64)), np.eye(10)[rng.integers(0, 10, 128)])
    ts = []
    for _ in range(repeat):
        d = Derivative(model)
        t = time.perf_counter()
        d.specialize(args, (0, 1, 2, 3))
        ts.append(time.perf_counter() - t)
    g = pb.grad(model, argnums=(0, 1, 2, 3))
    g(*args)
    primal = best(lambda: model(*args))
    grad = best(lambda: g(*args))
    print(f"\ntransform time (20-line function, median of {repeat}): {np.median(ts) * 1e3:.1f} ms")
    print(f"primal {primal * 1e6:.0f} us, value_and_grad {grad * 1e6:.0f} us, "
          f"ratio {grad / primal:.2f}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="smaller sizes")
    p.add_argument("--families", default=",".join(FAMILIES), help="comma-separated")
    p.add_argument("--sizes", help="comma-separated sizes for every family chosen")
    p.add_argument("--limit", type=float, default=120.0,
                   help="stop a family after a size that takes longer (seconds)")
    p.add_argument("--no-model", action="store_true", help="leave out the 20-line model row")
    args = p.parse_args(argv)
    for family in args.families.split(","):
        sizes = ([int(s) for s in args.sizes.split(",")] if args.sizes
                 else (QUICK if args.quick else SIZES)[family])
        curve(family, sizes, args.limit)
    if not args.no_model:
        model_row(5 if args.quick else 20)


if __name__ == "__main__":
    main()
