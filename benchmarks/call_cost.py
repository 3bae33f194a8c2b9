"""Issue 17's loop and per-call rows, side by side in one process: gradient
time over the primal's and over the hand-written gradient's, for the
problems of ``problems.py`` at the issue's sizes, and the cost of one call to
a user function from generated code.

    python benchmarks/call_cost.py                 # every row
    python benchmarks/call_cost.py quadrature,fpu_chain
    python benchmarks/call_cost.py --cpu fpu_chain  # CPU time, not wall time
    python benchmarks/call_cost.py --instructions fpu_chain,quadrature
    python benchmarks/call_cost.py calls,entry     # one user call; pb.grad(f)(x) at n = 50

Each row times the primal, the hand-written gradient and
``pb.value_and_grad`` in turn, three rounds, and prints the median of the
rounds' medians and the ratio of the fastest calls.  On a shared machine the
minima move least: a call that takes milliseconds is often cut short by
another process, a call of microseconds rarely.  Thread pools are pinned to
one thread, as in ``run.py``.  With ``--cpu`` every call is timed by the
process's CPU time (``time.process_time``): on a machine shared by many
processes the wall-clock ratios move by 2x from run to run, the CPU-time
ratios by a few per cent.  With ``--instructions`` each row is counted, not
timed: the process runs itself under valgrind (``--tool=cachegrind``), once
with one call of each function and once with ten more of one of them, and
prints the instructions one call executes (the difference over ten), which
do not move with the machine's load.

A call too short for the clock's resolution is timed in batches: its time
is the batch's over the batch's size, never zero.
"""
import os

for _k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_k, "1")

import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import problems as P  # noqa: E402
import pullback as pb  # noqa: E402

ROWS = [("sum_squares_list", 1_000), ("sum_squares_gen", 1_000), ("evalpoly", 1_000),
        ("column_loop", 1_000), ("fpu_chain", 1_000), ("quadrature", 10), ("sum_abs", 10_000),
        ("closure", 10_000)]


CLOCK = time.perf_counter


def clock_tick():
    """The smallest step the clock takes, seen by reading it in a spin: a
    process clock may move only every millisecond (or ten)."""
    steps, last, start = [], CLOCK(), time.perf_counter()
    while len(steps) < 20 and time.perf_counter() - start < 0.5:
        now = CLOCK()
        if now != last:
            steps.append(now - last)
            last = now
    return min(steps) if steps else 0.01


def batch_size(f, args):
    """How many calls of ``f`` one sample times: one where a call takes a
    hundred ticks of the clock or more, else enough calls for a hundred
    ticks, so that no sample reads zero (a coarse process clock)."""
    tick, reps = clock_tick(), 1
    while reps < 1 << 20:
        t = CLOCK()
        for _ in range(reps):
            f(*args)
        if CLOCK() - t >= 100 * tick:
            break
        reps *= 2
    return reps


def timed(f, args, budget=0.4, fewest=5):
    f(*args)
    reps = batch_size(f, args)
    ts, start = [], time.perf_counter()
    while len(ts) < fewest or (time.perf_counter() - start < budget and len(ts) < 3000):
        t = CLOCK()
        for _ in range(reps):
            f(*args)
        ts.append((CLOCK() - t) / reps)
    return statistics.median(ts), min(ts)


def row(name, n):
    p = P.BY_NAME[name]
    args = p.inputs(n)
    vg = pb.value_and_grad(p.fn, argnums=p.argnums)
    got = {"primal": [], "hand": [], "pullback": []}
    for _ in range(3):
        for system, f in (("primal", p.fn), ("hand", p.hand), ("pullback", vg)):
            got[system].append(timed(f, args))
    med = {s: statistics.median(m for m, _ in v) for s, v in got.items()}
    low = {s: min(m for _, m in v) for s, v in got.items()}
    print(f"{name:17s} n={n:<6d} median primal {med['primal'] * 1e6:9.1f} us, hand "
          f"{med['hand'] * 1e6:9.1f} us, pullback {med['pullback'] * 1e6:9.1f} us | "
          f"pullback/primal {med['pullback'] / med['primal']:5.2f}x (fastest "
          f"{low['pullback'] / low['primal']:5.2f}x) | pullback/hand "
          f"{med['pullback'] / med['hand']:5.2f}x (fastest {low['pullback'] / low['hand']:5.2f}x)",
          flush=True)


def scaled(a):
    return a * 1.5


def calls(a, n):
    s = 0.0
    for i in range(n):
        s = s + scaled(a)
    return s


def through(a, n, fn):
    s = 0.0
    for i in range(n):
        s = s + fn(a)
    return s


def value_calls(a, n):
    return through(a, n, scaled)


def inline(a, n):
    s = 0.0
    for i in range(n):
        s = s + a * 1.5
    return s


def per_call():
    """A user call's cost in a gradient: a loop of n calls to ``scaled``
    (by name, then as a function value, which ``driver.dispatch`` routes)
    against the same loop with the call written out, less the primal's
    own difference."""
    n = 1000
    times = {}
    for name, f in (("calls", calls), ("inline", inline)):
        times[name] = (timed(f, (2.0, n))[1], timed(pb.value_and_grad(f), (2.0, n))[1])
    times["value"] = (timed(value_calls, (2.0, n))[1], timed(pb.value_and_grad(value_calls),
                                                             (2.0, n))[1])
    for name, what in (("calls", "a user function"),
                       ("value", "a user function passed as a value (dispatched)")):
        extra = (times[name][1] - times["inline"][1]) - (times[name][0] - times["inline"][0])
        print(f"one call to {what} in a gradient (primal and adjoint): "
              f"{extra / n * 1e6:.2f} us (fastest of repeated loops of {n})")


def tiny(x):
    return (x * x).sum()


def entry():
    """The fixed cost at the ``grad`` entry for a small problem (n = 50): the
    primal, a gradient function made once and called again, and
    ``pb.grad(f)(x)`` made and called each time (fastest of repeated calls)."""
    import numpy as np
    x = np.linspace(0.0, 1.0, 50)
    g = pb.grad(tiny)
    low = {name: timed(f, (x,))[1] for name, f in (
        ("primal", tiny), ("grad", g), ("made", lambda x: pb.grad(tiny)(x)))}
    print(f"n=50 entry: primal {low['primal'] * 1e6:.2f} us, g(x) {low['grad'] * 1e6:.2f} us, "
          f"pb.grad(f)(x) {low['made'] * 1e6:.2f} us (fastest of repeated calls)", flush=True)


SYSTEMS = ("primal", "hand", "pullback")


def count_child(name, extra):
    """Under valgrind: each system called once (compiling, warming), then
    ``extra[i]`` more times for system ``i``."""
    p = P.BY_NAME[name]
    args = p.inputs(dict(ROWS)[name])
    fs = (p.fn, p.hand, pb.value_and_grad(p.fn, argnums=p.argnums))
    for f in fs:
        f(*args)
    for f, k in zip(fs, extra):
        for _ in range(k):
            f(*args)


def instructions(name, extra=10):
    """Instructions one call of each system executes, from cachegrind's
    totals of four runs: one call each, then ``extra`` more of one system."""
    totals = []
    for which in (None,) + SYSTEMS:
        ks = [extra if s == which else 0 for s in SYSTEMS]
        cmd = ["valgrind", "--tool=cachegrind", "--cache-sim=no",
               "--cachegrind-out-file=/dev/null", sys.executable, os.path.abspath(__file__),
               "--count-child", name] + [str(k) for k in ks]
        # every run transforms alike, and hashes alike (a random hash seed moves
        # the count by a few per cent from run to run)
        env = dict(os.environ, PULLBACK_CACHE="0", PYTHONHASHSEED="0")
        run = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env)
        refs = [ln for ln in run.stderr.splitlines() if "I   refs:" in ln or "I refs:" in ln]
        totals.append(int(refs[-1].split(":")[1].replace(",", "")))
    per = {s: (t - totals[0]) / extra for s, t in zip(SYSTEMS, totals[1:])}
    print(f"{name:17s} n={dict(ROWS)[name]:<6d} instructions per call: primal "
          f"{per['primal'] / 1e6:8.2f}M, hand {per['hand'] / 1e6:8.2f}M, pullback "
          f"{per['pullback'] / 1e6:8.2f}M | pullback/primal {per['pullback'] / per['primal']:5.2f}x"
          f" | pullback/hand {per['pullback'] / per['hand']:5.2f}x", flush=True)


if __name__ == "__main__":
    argv = sys.argv[1:]
    if argv and argv[0] == "--count-child":
        count_child(argv[1], [int(k) for k in argv[2:5]])
        sys.exit(0)
    if "--instructions" in argv:
        argv.remove("--instructions")
        only = set(argv[0].split(",")) if argv else None
        for name, n in ROWS:
            if only is None or name in only:
                instructions(name)
        sys.exit(0)
    if "--cpu" in argv:
        argv.remove("--cpu")
        CLOCK = time.process_time
    only = set(argv[0].split(",")) if argv else None
    for name, n in ROWS:
        if only is None or name in only:
            row(name, n)
    if only is None or "calls" in only:
        per_call()
    if only is None or "entry" in only:
        entry()
