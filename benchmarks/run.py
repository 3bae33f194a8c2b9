"""The benchmark suite: every problem of ``problems.py`` for every system,
side by side in one run on one machine.

    python benchmarks/run.py            # full run (make bench): results/latest.{md,json,png}
    python benchmarks/run.py --quick    # smaller sizes, short bounds (make bench-quick):
                                        # results/quick.{md,json,png}
    python benchmarks/run.py --problems evalpoly,mlp --systems pullback,jax_jit

Systems: the primal, a hand-written NumPy gradient, pullback
(``pb.value_and_grad``), ``jax.value_and_grad`` eager, ``jax.jit`` of it,
autograd and PyTorch eager.  Every gradient is computed with the value
(``value_and_grad``; PyTorch: forward then ``torch.autograd.grad``), in
float64, from inputs already in the system's own array type.

How it measures.  Each system runs in its own worker process (started once,
restarted after a timeout), so a peer that hangs or crashes costs only its
own cells, and the bound per (problem, system) is a hard one.  Rows run one
after the other, each row's systems back to back, so that a row's numbers
share the machine's state.  Thread pools are pinned to one thread (OpenBLAS,
OpenMP, MKL, XLA's Eigen pool, PyTorch's intra- and inter-op pools).
In a cell: the first call is timed on its own (it includes pullback's
transform, JAX's tracing and compilation), then the median of repeated calls
after it (``time.perf_counter``), for a time budget with a minimum count.
Each system's value and gradient are checked once against the hand-written
gradient, which is itself checked against central differences.  Peak memory
of one call: ``tracemalloc`` for the NumPy-based systems (it sees NumPy's
and Python's allocations), and the growth of the resident set's high-water
mark (``/proc/self/clear_refs``, small mmap threshold) for JAX and PyTorch,
whose buffers tracemalloc does not see.

Then pullback's own costs, each in a fresh process: the transform alone, the
first call (transform included, no on-disk cache), the first call with a
warm on-disk cache, and a steady call.  Last, the Dask row
(``dask_mlp.py``, with the ``mlp`` problem; ``--no-dask`` skips it): the MLP
gradient over a batch in 4 chunks on a 2-worker ``dask.distributed`` cluster
against NumPy.
"""
from __future__ import annotations

import os

THREAD_ENV = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
    "TF_CPP_MIN_LOG_LEVEL": "2",
}
for _k, _v in THREAD_ENV.items():
    os.environ.setdefault(_k, _v)

import argparse  # noqa: E402
import ctypes  # noqa: E402
import datetime  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import selectors  # noqa: E402
import signal  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
import tracemalloc  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RESULTS = os.path.join(HERE, "results")
sys.path.insert(0, HERE)

SYSTEMS = [
    ("primal", "primal"),
    ("hand", "hand-written NumPy"),
    ("pullback", "pullback"),
    ("jax", "jax.grad eager"),
    ("jax_jit", "jax.jit(jax.grad)"),
    ("autograd", "autograd"),
    ("torch", "PyTorch eager"),
]
LABEL = dict(SYSTEMS)
GRADIENT_SYSTEMS = [s for s, _ in SYSTEMS if s != "primal"]
NUMPY_BASED = {"primal", "hand", "pullback", "autograd"}

MODES = {
    #         bound per cell (s), timing budget (s), fewest repeats, most repeats
    "full": dict(bound=60.0, budget=1.5, min_reps=3, max_reps=2000, scaling_budget=3.0),
    "quick": dict(bound=5.0, budget=0.1, min_reps=3, max_reps=200, scaling_budget=0.3),
}

#: issue 4: the scalar-index loops whose gradient time must grow linearly, and
#: the two sizes compared (interleaved calls, see run_scaling)
SCALING = {
    "full": {"sum_squares_list": (1_000, 10_000), "sum_squares_gen": (1_000, 10_000),
             "evalpoly": (1_000, 10_000)},
    "quick": {"sum_squares_list": (50, 500), "sum_squares_gen": (50, 500),
              "evalpoly": (50, 500)},
}

GRAD_RTOL = 1e-6        # relative to the largest entry of the hand-written gradient
VALUE_RTOL = 1e-8


# =====================================================================================
# Worker side: one process per system
# =====================================================================================

class CannotExpress(Exception):
    """The peer has no way to write this problem."""


def _jax_cannot(err):
    names = {type(e).__name__ for e in _chain(err)}
    return bool(names & {"ConcretizationTypeError", "TracerBoolConversionError",
                         "TracerIntegerConversionError"})


def _chain(err):
    while err is not None:
        yield err
        err = err.__cause__ or err.__context__


class Runner:
    """Builds a (call, to_numpy) pair for a problem on one system."""

    def __init__(self, system):
        self.system = system
        self.versions = {}
        if system in ("jax", "jax_jit"):
            import jax
            jax.config.update("jax_enable_x64", True)
            jax.config.update("jax_platforms", "cpu")
            self.jax = jax
            self.ports = None
        elif system == "autograd":
            import autograd
            self.autograd = autograd
        elif system == "torch":
            import torch
            torch.set_num_threads(1)
            try:
                torch.set_num_interop_threads(1)
            except RuntimeError:
                pass
            self.torch = torch
        elif system == "pullback":
            import pullback as pb
            self.pb = pb
        self.ports = None
        if system in ("jax", "jax_jit", "autograd", "torch"):
            import problems
            self.ports = problems.PORTS["jax" if system.startswith("jax") else system]()

    def build(self, problem, args):
        s = self.system
        fn = problem.fn
        argnums = problem.argnums
        if s == "primal":
            return (lambda: fn(*args)), (lambda out: (float(out), None))
        if s == "hand":
            hand = problem.hand
            return (lambda: hand(*args)), (lambda out: (float(out[0]), out[1]))
        if s == "pullback":
            vg = self.pb.value_and_grad(fn, argnums=argnums)     # a tuple: grads in a tuple

            def to_np(out):
                v, g = out
                return float(v), tuple(g)
            return (lambda: vg(*args)), to_np
        port = self.ports.get(problem.name)
        if port is None:
            raise CannotExpress("no port")
        if s in ("jax", "jax_jit"):
            jax = self.jax
            import jax.numpy as jnp
            # arrays and differentiated floats become JAX arrays; integers stay
            # Python integers (static under jit: loop trip counts)
            jargs = tuple(jnp.asarray(a) if isinstance(a, np.ndarray)
                          else jnp.asarray(a, dtype=jnp.float64) if i in argnums else a
                          for i, a in enumerate(args))
            vg = jax.value_and_grad(port, argnums=argnums)
            if s == "jax_jit":
                vg = jax.jit(vg, static_argnums=tuple(
                    i for i, a in enumerate(args) if isinstance(a, int)))

            def call():
                return jax.block_until_ready(vg(*jargs))

            def to_np(out):
                v, g = out
                return float(v), tuple(np.asarray(x) for x in g)
            return call, to_np
        if s == "autograd":
            ag = self.autograd

            def packed(diff):
                full = list(args)
                for i, d in zip(argnums, diff):
                    full[i] = d
                return port(*full)
            vg = ag.value_and_grad(packed)
            diff0 = tuple(args[i] for i in argnums)

            def to_np(out):
                v, g = out
                return float(v), tuple(np.asarray(x) for x in g)
            return (lambda: vg(diff0)), to_np
        if s == "torch":
            torch = self.torch

            def tensor(a, diff):
                if isinstance(a, np.ndarray):
                    return torch.from_numpy(a).requires_grad_(diff)
                if diff:
                    return torch.tensor(a, dtype=torch.float64, requires_grad=True)
                return a                    # integers and constants stay Python numbers
            targs = [tensor(a, i in argnums) for i, a in enumerate(args)]
            wrt = [targs[i] for i in argnums]

            def call():
                out = port(*targs)
                return out.detach(), torch.autograd.grad(out, wrt)

            def to_np(out):
                v, g = out
                return float(v), tuple(x.numpy() for x in g)
            return call, to_np
        raise ValueError(s)

    def kernel_calls(self):
        if self.system != "pullback":
            return None
        try:
            from pullback.lowering import kernels
            return dict(kernels.stats)
        except Exception:
            return None


import numpy as np  # noqa: E402  (after the thread settings)


def _status_kib(key):
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(key):
                return int(line.split()[1])
    return None


_libc = None


def _rss_peak(call):
    """MiB by which the resident set's high-water mark rises during one call
    (large allocations mmapped for the call, so freed memory leaves the set)."""
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL("libc.so.6")
    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
    _libc.mallopt(M_MMAP_THRESHOLD, 64 * 1024)
    _libc.mallopt(M_TRIM_THRESHOLD, 128 * 1024)
    try:
        gc.collect()
        _libc.malloc_trim(0)
        base = _status_kib("VmRSS")
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")                   # the high-water mark restarts from here
        out = call()
        peak = _status_kib("VmHWM")
        del out
        return max(peak - base, 0) / 1024.0
    finally:
        # glibc's dynamic thresholds settle at these values after large frees
        _libc.mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024)
        _libc.mallopt(M_TRIM_THRESHOLD, 64 * 1024 * 1024)


def _traced_peak(call):
    """MiB of the peak of Python's and NumPy's traced allocations during one
    call, the returned gradient included."""
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        out = call()
        peak = tracemalloc.get_traced_memory()[1]
        del out
    finally:
        tracemalloc.stop()
    return (peak - base) / 2 ** 20


def _compare(value, grads, ref_value, ref_grads):
    """None when they agree, else what differs."""
    if not math.isfinite(value) or abs(value - ref_value) > VALUE_RTOL * max(1.0, abs(ref_value)):
        return f"value {value!r} != {ref_value!r}"
    if grads is None:
        return None
    if len(grads) != len(ref_grads):
        return f"{len(grads)} gradients, expected {len(ref_grads)}"
    worst = 0.0
    for k, (g, r) in enumerate(zip(grads, ref_grads)):
        g, r = np.asarray(g, dtype=float), np.asarray(r, dtype=float)
        if g.shape != r.shape:
            return f"gradient {k} has shape {g.shape}, expected {r.shape}"
        scale = max(float(np.max(np.abs(r))) if r.size else 0.0, 1e-300)
        err = float(np.max(np.abs(g - r))) / scale if r.size else 0.0
        if not math.isfinite(err):
            return f"gradient {k} has non-finite entries"
        worst = max(worst, err)
    if worst > GRAD_RTOL:
        return f"gradient differs from hand-written: max error {worst:.2e} of the largest entry"
    return None


def _short(err):
    text = f"{type(err).__name__}: {err}".strip().splitlines()[0]
    return text if len(text) <= 160 else text[:157] + "..."


def worker_main(system):
    out = sys.stdout
    sys.stdout = sys.stderr            # anything the libraries print goes to the log

    def send(msg):
        out.write("@@ " + json.dumps(msg) + "\n")
        out.flush()

    try:
        runner = Runner(system)
    except Exception as err:            # not installed, or broken
        send({"type": "unavailable", "error": _short(err)})
        return
    import problems
    send({"type": "ready"})
    for line in sys.stdin:
        task = json.loads(line)
        try:
            if task.get("kind") == "scaling":
                res = run_scaling(runner, problems.BY_NAME[task["problem"]], task)
            else:
                res = run_cell(runner, problems.BY_NAME[task["problem"]], task["n"], task, send)
        except CannotExpress as err:
            res = {"status": "n/a", "error": str(err)}
        except Exception as err:
            traceback.print_exc()
            if system == "jax_jit" and _jax_cannot(err):
                res = {"status": "n/a", "error": "data-dependent Python branch under jit: "
                       + _short(err)}
            else:
                res = {"status": "error", "error": _short(err)}
        res["type"] = "done"
        send(res)
        gc.collect()


def run_cell(runner, problem, n, task, send):
    bound, budget = task["bound"], task["budget"]
    start = time.perf_counter()
    args = problem.inputs(n)
    res = {"status": "ok"}
    if runner.system == "hand":
        res["fd_error"] = problems_check_hand(problem, n)
    ref_value, ref_grads = problem.hand(*args)
    call, to_np = runner.build(problem, args)
    before = runner.kernel_calls()

    t = time.perf_counter()
    out = call()
    first = time.perf_counter() - t
    value, grads = to_np(out)
    del out
    res["first"] = first
    mismatch = _compare(value, grads, float(ref_value), ref_grads)
    if runner.system == "hand" and res["fd_error"] > 1e-5:
        mismatch = f"hand-written gradient disagrees with central differences " \
                   f"({res['fd_error']:.1e})"
    if mismatch:
        res["status"] = "wrong"
        res["error"] = mismatch
    send({"type": "first", "first": first, "status": res["status"], "error": res.get("error")})

    times = []
    t = time.perf_counter()
    call()                                  # the warm-up, and a measure of the steady call
    last = time.perf_counter() - t
    if first > 1.0 or last > 1.0:
        times.append(last)                  # slow calls: no time to throw one away
    rep_start = time.perf_counter()
    # fewest repeats: min_reps, or 2 for calls of a second or more
    fewest = task["min_reps"] if last < 1.0 else 2
    while len(times) < task["max_reps"]:
        elapsed = time.perf_counter() - start
        if elapsed + last > 0.8 * bound:
            break
        if len(times) >= fewest and time.perf_counter() - rep_start > budget:
            break
        t = time.perf_counter()
        call()
        last = time.perf_counter() - t
        times.append(last)
    if not times:
        times.append(last)
    res["median"] = statistics.median(times)
    res["min"], res["max"] = min(times), max(times)
    res["reps"] = len(times)

    after = runner.kernel_calls()
    if before is not None and after is not None:
        res["kernel_calls"] = {k: after.get(k, 0) - before.get(k, 0) for k in after}

    if task.get("memory", True):
        remaining = bound - (time.perf_counter() - start)
        if runner.system in NUMPY_BASED:
            # tracemalloc slows down Python-level allocation several times over
            if remaining > 8 * res["median"] + 0.5:
                res["mem_traced"] = _traced_peak(call)
                remaining = bound - (time.perf_counter() - start)
        if remaining > 2 * res["median"] + 0.5:
            res["mem_rss"] = _rss_peak(call)
    res["cell_seconds"] = time.perf_counter() - start
    return res


def run_scaling(runner, problem, task):
    """Medians of calls at each size, the sizes' calls interleaved so that
    the machine's changing load falls on all of them alike."""
    calls = []
    for n in task["sizes"]:
        call, _ = runner.build(problem, problem.inputs(n))
        call()
        call()
        calls.append(call)
    times = [[] for _ in calls]
    start = time.perf_counter()
    while len(times[0]) < 5 or (time.perf_counter() - start < task["budget"]
                                and len(times[0]) < 2000):
        for k, call in enumerate(calls):
            t = time.perf_counter()
            call()
            times[k].append(time.perf_counter() - t)
    return {"status": "ok", "sizes": task["sizes"],
            "medians": [statistics.median(t) for t in times], "rounds": len(times[0])}


def problems_check_hand(problem, n):
    import problems
    return problems.check_hand(problem, n)


# =====================================================================================
# Parent side
# =====================================================================================

class Worker:
    def __init__(self, system, env, log):
        self.system = system
        self.proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--worker", system],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=env, cwd=ROOT,
            start_new_session=True, bufsize=0)
        self.buf = b""
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.proc.stdout, selectors.EVENT_READ)

    def message(self, timeout):
        """The next message, or None at the deadline; raises EOFError if the
        worker died."""
        deadline = time.monotonic() + timeout
        while True:
            while b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                if line.startswith(b"@@ "):
                    return json.loads(line[3:])
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            if not self.sel.select(left):
                return None
            chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
            if not chunk:
                self.proc.wait()
                raise EOFError(self.proc.returncode)
            self.buf += chunk

    def send(self, task):
        self.proc.stdin.write((json.dumps(task) + "\n").encode())
        self.proc.stdin.flush()

    def kill(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        self.sel.close()

    def close(self):
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except Exception:
            self.kill()
        else:
            self.sel.close()


def worker_env():
    env = dict(os.environ)
    env.update(THREAD_ENV)
    env["PULLBACK_CACHE"] = "0"          # the first call includes the transform
    env["PYTHONPATH"] = os.pathsep.join(
        [HERE, os.path.join(ROOT, "src")] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return env


def run_grid(rows, systems, mode, log):
    cfg = MODES[mode]
    env = worker_env()
    workers, unavailable = {}, {}
    results = {}
    timed_out = {}           # (problem, system) -> size label that timed out
    first_at = {}            # (problem, system) -> (n, size label, first call's time)

    def get_worker(system):
        if system in unavailable:
            return None
        w = workers.get(system)
        if w is None or w.proc.poll() is not None:
            w = Worker(system, env, log)
            try:
                msg = w.message(180.0)
            except EOFError as err:
                msg = {"type": "unavailable", "error": f"worker exited with {err}"}
            if msg is None:
                w.kill()
                msg = {"type": "unavailable", "error": "worker did not start in 180 s"}
            if msg["type"] == "unavailable":
                unavailable[system] = msg["error"]
                w.close()
                return None
            workers[system] = w
        return w

    total = len(rows) * len(systems)
    done = 0
    t_start = time.monotonic()
    for problem, n, size_label in rows:
        for system in systems:
            done += 1
            key = (problem.name, size_label, system)
            if (problem.name, system) in timed_out:
                results[key] = {"status": "timeout", "skipped": True,
                                "error": f"skipped: timed out at {timed_out[problem.name, system]}"}
                continue
            prior = first_at.get((problem.name, system))
            if prior and n > prior[0] and prior[2] * n / prior[0] > cfg["bound"]:
                # every system's first call grows at least linearly with the size
                results[key] = {"status": "timeout", "skipped": True,
                                "error": f"skipped: the first call took {prior[2]:.0f} s at "
                                         f"{prior[1]}, so at least {prior[2] * n / prior[0]:.0f} s "
                                         f"here, over {cfg['bound']:.0f} s"}
                print(f"[{done}/{total}] {problem.name} {size_label} {system}: "
                      f"{_cell_text(results[key])}", file=sys.stderr, flush=True)
                continue
            w = get_worker(system)
            if w is None:
                results[key] = {"status": "unavailable", "error": unavailable[system]}
                continue
            task = {"problem": problem.name, "n": n, "bound": cfg["bound"],
                    "budget": cfg["budget"], "min_reps": cfg["min_reps"],
                    "max_reps": cfg["max_reps"], "memory": True}
            w.send(task)
            partial = None
            res = None
            while res is None:
                try:
                    msg = w.message(cfg["bound"] + 5.0)
                except EOFError as err:
                    res = {"status": "error", "error": f"worker died (exit {err})"}
                    workers.pop(system, None)
                    break
                if msg is None:
                    w.kill()
                    workers.pop(system, None)
                    res = {"status": "timeout", "error": f"over {cfg['bound']:.0f} s"}
                    if partial:
                        res["first"] = partial["first"]
                        res["error"] = (f"first call {partial['first']:.1f} s, then the next "
                                        f"call ran over {cfg['bound']:.0f} s")
                    timed_out[problem.name, system] = size_label
                    break
                if msg["type"] == "first":
                    partial = msg
                elif msg["type"] == "done":
                    res = msg
            results[key] = res
            if res.get("first") is not None:
                first_at[problem.name, system] = (n, size_label, res["first"])
                if res["first"] > cfg["bound"]:
                    timed_out[problem.name, system] = size_label
            print(f"[{done}/{total} {time.monotonic() - t_start:6.0f}s] {problem.name} "
                  f"{size_label} {system}: {_cell_text(res)}", file=sys.stderr, flush=True)
    # issue 4: how the loop gradients scale, sizes interleaved
    scaling = {}
    for name, sizes in SCALING[mode].items():
        if not any(p.name == name for p, _, _ in rows):
            continue
        for system in ("primal", "hand", "pullback"):
            w = get_worker(system) if system in systems else None
            if w is None:
                continue
            w.send({"kind": "scaling", "problem": name, "sizes": list(sizes),
                    "budget": cfg["scaling_budget"]})
            try:
                msg = w.message(cfg["bound"] + 5.0)
            except EOFError as err:
                msg = {"status": "error", "error": f"worker died (exit {err})"}
                workers.pop(system, None)
            if msg is None:
                w.kill()
                workers.pop(system, None)
                msg = {"status": "timeout"}
            scaling[name, system] = msg
            print(f"[scaling] {name} {system}: {msg.get('medians', msg.get('error'))}",
                  file=sys.stderr, flush=True)
    for w in workers.values():
        w.close()
    return results, unavailable, scaling


# -- pullback's own costs --------------------------------------------------------------

COST_SCRIPT = r"""
import json, os, statistics, sys, time
t0 = time.perf_counter()
import numpy as np
import pullback as pb
from pullback.callees import Derivative
t_import = time.perf_counter() - t0
import problems
p = problems.BY_NAME[sys.argv[1]]
args = p.inputs(int(sys.argv[2]))
budget = float(sys.argv[4])
res = {"import": t_import}
vg = pb.value_and_grad(p.fn, argnums=p.argnums)
t = time.perf_counter()
vg(*args)
res["first"] = time.perf_counter() - t
if sys.argv[3] == "cold":
    ts = []
    deadline = time.perf_counter() + budget
    while len(ts) < 3 or (time.perf_counter() < deadline and len(ts) < 200):
        t = time.perf_counter()
        vg(*args)
        ts.append(time.perf_counter() - t)
    res["steady"] = statistics.median(ts)
    ts = []
    deadline = time.perf_counter() + budget
    while len(ts) < 3 or (time.perf_counter() < deadline and len(ts) < 20):
        d = Derivative(p.fn)
        t = time.perf_counter()
        d.transform(args, tuple(p.argnums))
        ts.append(time.perf_counter() - t)
    res["transform"] = statistics.median(ts)
print("@@ " + json.dumps(res))
"""


#: the problems whose pullback costs the quick run measures (each takes two processes)
QUICK_COSTS = ("evalpoly", "closure", "mlp", "quadrature")


def pullback_costs(rows, mode, log):
    """pullback's transform time, first call without and with a warm on-disk
    cache, and steady call: each problem in two fresh processes sharing an
    on-disk cache directory that starts empty."""
    cfg = MODES[mode]
    env = worker_env()
    out = {}
    seen = set()
    for problem, n, size_label in rows:
        if problem.name in seen or (mode == "quick" and problem.name not in QUICK_COSTS):
            continue
        seen.add(problem.name)
        res = {"size": size_label}
        with tempfile.TemporaryDirectory(prefix="pullback-bench-cache-") as cache_dir:
            e = dict(env, PULLBACK_CACHE="1", PULLBACK_CACHE_DIR=cache_dir)
            for tag in ("cold", "warm"):
                try:
                    p = subprocess.run(
                        [sys.executable, "-c", COST_SCRIPT, problem.name, str(n), tag,
                         str(cfg["budget"])],
                        capture_output=True, text=True, env=e, cwd=ROOT,
                        timeout=2 * cfg["bound"] + 30)
                except subprocess.TimeoutExpired:
                    res[tag] = {"error": "timeout"}
                    break
                log.write(p.stderr.encode())
                log.flush()
                lines = [ln for ln in p.stdout.splitlines() if ln.startswith("@@ ")]
                if p.returncode != 0 or not lines:
                    res[tag] = {"error": _last_error(p.stderr)}
                    break
                res[tag] = json.loads(lines[-1][3:])
        out[problem.name] = res
        print(f"[costs] {problem.name}: " + json.dumps(
            {k: v for k, v in res.items() if k != "size"}), file=sys.stderr, flush=True)
    return out


def dask_row(mode, log):
    """The Dask row (``dask_mlp.py``, issue 18): the MLP gradient over a batch in
    4 chunks on a 2-worker ``dask.distributed`` cluster against NumPy, in a
    fresh process; ``{"error": ...}`` where Dask is not installed or it fails."""
    cmd = [sys.executable, os.path.join(HERE, "dask_mlp.py")] + (
        ["--quick"] if mode == "quick" else [])
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=worker_env(), cwd=ROOT,
                           timeout=600)
    except subprocess.TimeoutExpired:
        return {"error": "timeout (600 s)"}
    log.write(p.stderr.encode())
    log.flush()
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("@@ ")]
    if p.returncode != 0 or not lines:
        return {"error": _last_error(p.stderr)}
    out = json.loads(lines[-1][3:])
    print(f"[dask] {json.dumps(out)}", file=sys.stderr, flush=True)
    return out


def _dask_section(d):
    if not d:
        return []
    L = ["## Dask (issue 18)", ""]
    if "error" in d:
        return L + [f"The Dask row did not run: {d['error']}", ""]
    L.append(f"`benchmarks/dask_mlp.py`: the MLP gradient (`pb.grad`, four weight gradients) "
             f"over a {d['batch']:,} x 784 batch, 256 hidden units, the batch persisted on a "
             f"`dask.distributed` `LocalCluster` of {d['workers']} worker processes (one "
             f"thread each) in {d['chunks']} chunks; a call is `pb.grad` on the dask arrays "
             "(the lazy graph) and `client.compute` of it. NumPy: the same gradient on NumPy "
             "arrays in one process.")
    L.append("")
    L.append("| NumPy | Dask, 2 workers | Dask ÷ NumPy | graph build | Dask, threads in one "
             "process | tasks per worker (all timed calls) | max abs error |")
    L.append("|---|---|---|---|---|---|---|")
    L.append(f"| {fmt_time(d['numpy'])} | {fmt_time(d['dask'])} | "
             f"{fmt_ratio(d['dask'] / d['numpy'])} | {fmt_time(d['build'])} | "
             f"{fmt_time(d.get('threads'))} | "
             f"{', '.join(str(n) for n in d['tasks_per_worker'])} | "
             f"{d['max_abs_error']:.1e} |")
    L.append("")
    return L


# =====================================================================================
# Reporting
# =====================================================================================

def fmt_time(t):
    if t is None or not math.isfinite(t):
        return "—"
    if t < 1e-3:
        return f"{t * 1e6:.1f} µs" if t < 1e-4 else f"{t * 1e6:.0f} µs"
    if t < 1.0:
        return f"{t * 1e3:.2f} ms" if t < 1e-2 else f"{t * 1e3:.1f} ms" if t < 0.1 else \
            f"{t * 1e3:.0f} ms"
    return f"{t:.2f} s" if t < 10 else f"{t:.1f} s"


def fmt_ratio(r):
    if r is None or not math.isfinite(r):
        return "—"
    return f"{r:.2f}" if r < 10 else f"{r:.1f}" if r < 100 else f"{r:,.0f}"


def fmt_mib(m):
    if m is None:
        return "—"
    return "<0.1" if m < 0.1 else f"{m:.2f}" if m < 10 else f"{m:.1f}" if m < 100 else \
        f"{m:,.0f}"


def _cell_text(res):
    st = res.get("status")
    if st == "ok":
        return fmt_time(res["median"])
    if st == "wrong":
        return f"WRONG {fmt_time(res.get('median'))}: {res.get('error')}"
    return f"{st}: {res.get('error', '')}"


class Notes:
    """Footnotes, numbered in order of first use, shared text shared number."""

    def __init__(self):
        self.items = []

    def ref(self, text):
        if text not in self.items:
            self.items.append(text)
        return f"[{self.items.index(text) + 1}]"

    def render(self):
        return "\n".join(f"{i + 1}. {t}" for i, t in enumerate(self.items))


def cell_status(res, notes, problem, system):
    """A cell for a system that did not give a good timing, else None."""
    st = res.get("status")
    if st == "ok":
        return None
    if st == "timeout":
        return f"timeout {notes.ref(res.get('error', ''))}"
    if st == "n/a":
        return f"n/a (cannot express) {notes.ref(f'{LABEL[system]}: ' + res.get('error', ''))}"
    if st == "unavailable":
        return f"not installed {notes.ref(f'{LABEL[system]}: ' + res.get('error', ''))}"
    if st == "wrong":
        return None     # timed, but flagged where the time is shown
    return f"error {notes.ref(f'{LABEL[system]} on {problem.name}: ' + res.get('error', ''))}"


def time_cell(res, notes, problem, system, field="median"):
    bad = cell_status(res, notes, problem, system)
    text = bad or fmt_time(res.get(field))
    if res.get("status") == "wrong":
        text += " **WRONG** " + notes.ref(f"{LABEL[system]} on {problem.name}: "
                                           + res.get("error", ""))
    note = problem.notes.get(system)
    if note:
        text += " " + notes.ref(f"{LABEL[system]}: {note}")
    return text


#: the rows README.md shows (problem, size label in the full run)
HEADLINE = [("sum_squares_list", "n=10,000"), ("evalpoly", "n=10,000"),
            ("column_loop", "100x1000"), ("sum_tanh", "n=1,000,000"),
            ("net", "50x50x50x50"), ("mlp", "512x784 batch, 256 hidden"),
            ("fpu_chain", "1,000 steps"), ("quadrature", "tol 1e-10")]


def headline(rows, systems, results):
    """The README's table: gradient time and its ratio to the primal's."""
    picked = [(p, sl) for p, n, sl in rows if (p.name, sl) in HEADLINE]
    if not picked or "primal" not in systems:
        return []
    grads = [s for s in systems if s != "primal"]
    out = ["| problem | primal | " + " | ".join(LABEL[s] for s in grads) + " |",
           "|---|---|" + "---|" * len(grads)]
    for p, sl in picked:
        prim = results[p.name, sl, "primal"]
        cells = [f"{p.label}, {sl}", fmt_time(prim.get("median"))]
        for s in grads:
            r = results[p.name, sl, s]
            if r.get("status") == "ok" and prim.get("status") == "ok":
                text = f"{fmt_time(r['median'])} ({fmt_ratio(r['median'] / prim['median'])}×)"
                if s == "jax_jit" and r.get("first"):
                    text += f", compile {fmt_time(r['first'])}"
            elif r.get("status") == "timeout":
                text = f"> {MODES['full']['bound']:.0f} s" + (" (predicted)" if r.get("skipped")
                                                              else "")
            elif r.get("status") == "n/a":
                text = "cannot express"
            else:
                text = r.get("status", "—")
            cells.append(text)
        out.append("| " + " | ".join(cells) + " |")
    return out


def render(meta, rows, systems, results, costs, mode, scaling, dask=None):
    notes = Notes()
    L = []
    L.append(f"# pullback benchmarks ({mode} run)")
    L.append("")
    L.append(f"Run {meta['date']} in {meta['wall']:.0f} s with `{meta['command']}`.")
    L.append("")
    head = headline(rows, systems, results)
    if head:
        L.append("Headline rows (the README's): time per gradient call, and in brackets its "
                 "ratio to the primal's time; the full tables and the notes are below.")
        L.append("")
        L.extend(head)
        L.append("")
    L.append("## Machine and versions")
    L.append("")
    for k, v in meta["machine"].items():
        L.append(f"- {k}: {v}")
    L.append("- versions: " + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()))
    L.append("")
    L.append("## How to read this")
    L.append("")
    L.append(
        "Every gradient is the value and the gradient together (`value_and_grad`; PyTorch: "
        "forward, then `torch.autograd.grad`), float64, inputs already in the system's own "
        "array type, one thread everywhere (OpenBLAS, OpenMP, XLA, PyTorch). Times are "
        "medians of repeated calls after the first call and a warm-up "
        f"(`time.perf_counter`, {MODES[mode]['budget']:g} s or at least "
        f"{MODES[mode]['min_reps']} calls per cell, 2 for calls over a second); the first call "
        "is reported separately for `jax.jit` (tracing and compilation) and for pullback (its "
        "transform, without the on-disk cache, in a process that has already imported "
        "everything; fresh processes are in \"pullback's own costs\"). Each "
        "system's value and gradient were checked once against the hand-written gradient "
        "(itself checked against central differences); a mismatch is marked **WRONG**. "
        f"Each (problem, system) cell has {MODES[mode]['bound']:.0f} s "
        "(timeout), and runs in its own worker process. The hand-written gradient keeps "
        "the primal's style: a Python loop gets a hand-written reverse loop.")
    L.append("")

    # -- times
    L.append("## Time per call")
    L.append("")
    head = ["problem", "size"] + [LABEL[s] for s in systems]
    firsts = [s for s in ("pullback", "jax_jit") if s in systems]
    head += [f"{LABEL[s]} first call" for s in firsts]
    L.append("| " + " | ".join(head) + " |")
    L.append("|" + "---|" * len(head))
    for problem, n, size_label in rows:
        cells = [problem.label, size_label]
        for s in systems:
            cells.append(time_cell(results[problem.name, size_label, s], notes, problem, s))
        for s in firsts:
            r = results[problem.name, size_label, s]
            cells.append(fmt_time(r["first"]) if r.get("first") is not None
                         else (cell_status(r, notes, problem, s) or "—").split(" [")[0])
        L.append("| " + " | ".join(cells) + " |")
    L.append("")

    # -- ratios
    grads = [s for s in systems if s != "primal"]
    if "primal" in systems:
        L.append("## Gradient time ÷ primal time  (÷ hand-written gradient time)")
        L.append("")
        L.append("The cheap gradient principle says a few times the primal; the hand-written "
                 "gradient is the practical limit.")
        L.append("")
        head = ["problem", "size"] + [LABEL[s] for s in grads]
        L.append("| " + " | ".join(head) + " |")
        L.append("|" + "---|" * len(head))
        for problem, n, size_label in rows:
            p = results[problem.name, size_label, "primal"]
            h = results.get((problem.name, size_label, "hand"), {})
            cells = [problem.label, size_label]
            for s in grads:
                r = results[problem.name, size_label, s]
                bad = cell_status(r, notes, problem, s)
                if bad:
                    cells.append(bad.split(" [")[0])
                    continue
                rp = r["median"] / p["median"] if p.get("status") == "ok" else None
                rh = r["median"] / h["median"] if h.get("status") == "ok" else None
                text = f"{fmt_ratio(rp)} ({fmt_ratio(rh)})" if s != "hand" else fmt_ratio(rp)
                if r.get("status") == "wrong":
                    text += " WRONG"
                cells.append(text)
            L.append("| " + " | ".join(cells) + " |")
        L.append("")

    # -- memory
    L.append("## Peak memory of one call, MiB")
    L.append("")
    L.append("NumPy-based systems (primal, hand-written, pullback, autograd): `tracemalloc` "
             "peak during the call (NumPy's and Python's allocations, the returned "
             "gradient included). JAX and PyTorch (marked †): growth of the resident set's "
             "high-water mark during the call (`/proc/self/clear_refs`, large allocations "
             "mmapped), since tracemalloc does not see their buffers; it counts pages, so "
             "below ~0.1 MiB it is noise. The two measures are comparable only roughly; "
             "`latest.json` has the resident-set measure for every system.")
    L.append("")
    head = ["problem", "size"] + [LABEL[s] for s in systems]
    L.append("| " + " | ".join(head) + " |")
    L.append("|" + "---|" * len(head))
    for problem, n, size_label in rows:
        cells = [problem.label, size_label]
        for s in systems:
            r = results[problem.name, size_label, s]
            bad = cell_status(r, notes, problem, s)
            if bad:
                cells.append(bad.split(" [")[0])
            elif s in NUMPY_BASED:
                cells.append(fmt_mib(r.get("mem_traced")))
            else:
                m = r.get("mem_rss")
                cells.append(fmt_mib(m) + " †" if m is not None else "—")
        L.append("| " + " | ".join(cells) + " |")
    L.append("")

    # -- pullback's costs
    if costs:
        L.append("## pullback's own costs")
        L.append("")
        L.append("Per problem, two fresh processes sharing an on-disk cache directory that "
                 "starts empty. The first measures the first `value_and_grad` call (the "
                 "transform of every function reached, storing it in the cache, then the "
                 "call), the cached call (median of repeats: the steady state), and the "
                 "transform of the problem's own function alone (`Derivative.transform`, "
                 "median; callees are transformed at their first call, not here). The second "
                 "process measures its first call, served from the on-disk cache. "
                 "Import of pullback itself: " + _import_time(costs) + ".")
        L.append("")
        L.append("| problem | size | transform | first call | first call, warm disk cache "
                 "| cached call | first ÷ cached |")
        L.append("|---|---|---|---|---|---|---|")
        for problem, n, size_label in rows:
            c = costs.get(problem.name)
            if not c or c["size"] != size_label:
                continue

            def g(tag, field):
                v = c.get(tag, {})
                if "error" in v:
                    return "error " + notes.ref(f"pullback costs on {problem.name}: "
                                                + v["error"])
                return fmt_time(v.get(field))
            cold, steady = c.get("cold", {}).get("first"), c.get("cold", {}).get("steady")
            ratio = fmt_ratio(cold / steady) if cold and steady else "—"
            L.append(f"| {problem.label} | {size_label} | {g('cold', 'transform')} | "
                     f"{g('cold', 'first')} | {g('warm', 'first')} | {g('cold', 'steady')} | "
                     f"{ratio} |")
        L.append("")

    # -- issue-4 ratios
    issue4 = issue4_ratios(rows, results, scaling, mode)
    if issue4:
        small, large = next(iter(SCALING[mode].values()))
        L.append("## Scalar-index loops (issue 4)")
        L.append("")
        L.append(f"pullback's gradient ÷ the primal and ÷ the hand-written gradient (medians "
                 f"from the tables above), and how the time of one call grows from n = {small:,} "
                 f"to n = {large:,} (linear growth: {large // small}; the bar for pullback is "
                 f"≤ {large // small * 1.2:g}). The growth is measured apart, calls at the two "
                 "sizes interleaved so that the machine's changing load falls on both alike.")
        L.append("")
        L.extend(issue4)
        L.append("")

    L.extend(_dask_section(dask))

    kern = [(problem, size_label, results[problem.name, size_label, "pullback"]
             .get("kernel_calls")) for problem, n, size_label in rows
            if "pullback" in systems]
    used = [f"{p.label} ({sl})" for p, sl, k in kern if k and k.get("jax")]
    L.append("## pullback's fused JAX kernels")
    L.append("")
    L.append(f"`PULLBACK_JAX={os.environ.get('PULLBACK_JAX', '(unset)')}`. Rows whose pullback "
             "gradient ran a fused JAX kernel: " + (", ".join(used) if used else "none") + ".")
    L.append("")
    if notes.items:
        L.append("## Notes")
        L.append("")
        L.append(notes.render())
        L.append("")
    return "\n".join(L)


def _last_error(stderr):
    """The exception line of a traceback (pullback's messages go on with the
    source line after it)."""
    lines = stderr.strip().splitlines() or ["no output"]
    for ln in reversed(lines):
        head = ln.split(":", 1)[0]
        if head and " " not in head and (head.endswith("Error") or head.endswith("Exception")):
            return ln[:160]
    return lines[-1][:160]


def _import_time(costs):
    ts = [v["cold"]["import"] for v in costs.values() if "import" in v.get("cold", {})]
    return fmt_time(statistics.median(ts)) if ts else "—"


def issue4_ratios(rows, results, scaling, mode):
    """The scalar-index loops: pullback's gradient against the primal and the
    hand-written gradient at each size (from the grid), and how each grows
    from the small size to the large one (interleaved calls)."""
    out = []
    names = [n for n in SCALING[mode] if any(p.name == n for p, _, _ in rows)]
    if not names:
        return out
    small, large = next(iter(SCALING[mode].values()))
    out.append(f"| problem | pullback ÷ primal, n={small:,} | pullback ÷ primal, n={large:,} "
               f"| pullback ÷ hand, n={large:,} | time(n={large:,}) ÷ time(n={small:,}): "
               "pullback | primal | hand-written |")
    out.append("|---|---|---|---|---|---|---|")
    for name in names:
        label = next(p.label for p, _, _ in rows if p.name == name)
        ratios = {}
        for p, n, size_label in rows:
            if p.name != name:
                continue
            r, pr, h = (results[name, size_label, s] for s in ("pullback", "primal", "hand"))
            if r.get("status") == "ok" and pr.get("status") == "ok":
                ratios["primal", n] = r["median"] / pr["median"]
            if r.get("status") == "ok" and h.get("status") == "ok":
                ratios["hand", n] = r["median"] / h["median"]
        growth = []
        for s in ("pullback", "primal", "hand"):
            sc = scaling.get((name, s), {})
            med = sc.get("medians")
            growth.append(fmt_ratio(med[1] / med[0]) if med else sc.get("status", "—"))
        out.append(f"| {label} | {fmt_ratio(ratios.get(('primal', small)))} | "
                   f"{fmt_ratio(ratios.get(('primal', large)))} | "
                   f"{fmt_ratio(ratios.get(('hand', large)))} | " + " | ".join(growth) + " |")
    return out


def chart(rows, systems, results, path, title):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as err:
        return f"no chart: {err}"
    colors = {"primal": "#444444", "hand": "#1b9e77", "pullback": "#d95f02", "jax": "#7570b3",
              "jax_jit": "#e7298a", "autograd": "#66a61e", "torch": "#e6ab02"}
    markers = {"primal": "s", "hand": "D", "pullback": "o", "jax": "^", "jax_jit": "v",
               "autograd": "P", "torch": "X"}
    labels = [f"{p.label[:48]}  [{sl}]" for p, n, sl in rows]
    fig, ax = plt.subplots(figsize=(11, 0.42 * len(rows) + 1.8))
    ys = list(range(len(rows)))[::-1]
    finite = [results[p.name, sl, s]["median"] for p, n, sl in rows for s in systems
              if results[p.name, sl, s].get("median")]
    lo, hi = min(finite), max(finite)
    fail_x = hi * 8
    offsets = np.linspace(-0.27, 0.27, len(systems))
    for k, s in enumerate(systems):
        xs, yy, fx, fy = [], [], [], []
        for y, (p, n, sl) in zip(ys, rows):
            r = results[p.name, sl, s]
            if r.get("status") in ("ok", "wrong") and r.get("median"):
                xs.append(r["median"])
                yy.append(y + offsets[k])
            elif r.get("status") != "unavailable":
                fx.append(fail_x)
                fy.append(y + offsets[k])
        ax.scatter(xs, yy, color=colors.get(s), marker=markers.get(s), s=36, label=LABEL[s],
                   zorder=3, edgecolors="none")
        if fx:
            ax.scatter(fx, fy, color=colors.get(s), marker="x", s=30, zorder=3)
    ax.axvline(fail_x / 2.5, color="#bbbbbb", lw=0.8, ls="--")
    ax.text(fail_x, len(rows) - 0.4, "timeout /\nerror / n/a", ha="center", va="bottom",
            fontsize=7, color="#666666")
    ax.set_xscale("log")
    ax.set_xlim(lo / 2, fail_x * 3)
    ax.set_yticks(ys)
    ax.set_yticklabels(labels, fontsize=8)
    ax.set_ylim(-0.7, len(rows) - 0.3 + 0.6)
    for y in ys:
        ax.axhline(y + 0.5, color="#eeeeee", lw=0.6, zorder=0)
    ax.grid(axis="x", which="major", color="#dddddd", lw=0.6)
    ax.set_xlabel("seconds per call (median, log scale); gradient systems compute value and "
                  "gradient")
    ax.set_title(title, fontsize=10)
    height = 0.42 * len(rows) + 2.2
    fig.set_size_inches(11, height)
    fig.legend(*ax.get_legend_handles_labels(), loc="lower center", ncol=4, fontsize=8,
               frameon=False)
    fig.tight_layout(rect=(0, 0.55 / height, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None


def machine_info():
    info = {}
    try:
        with open("/proc/cpuinfo") as fh:
            model = next((ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")),
                         platform.processor())
    except OSError:
        model = platform.processor()
    info["cpu"] = f"{model}, {os.cpu_count()} cores visible (1 thread used per system)"
    try:
        with open("/proc/meminfo") as fh:
            kb = int(next(ln for ln in fh if ln.startswith("MemTotal")).split()[1])
        info["memory"] = f"{kb / 2 ** 20:.0f} GiB"
    except (OSError, StopIteration):
        pass
    info["os"] = platform.platform()
    info["python"] = platform.python_version()
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        info["NumPy BLAS"] = f"{blas.get('name')} {blas.get('version')}"
    except Exception:
        pass
    info["thread settings"] = ", ".join(f"{k}={v}" for k, v in THREAD_ENV.items()
                                        if k != "TF_CPP_MIN_LOG_LEVEL") + \
        ", torch.set_num_threads(1)"
    return info


def versions():
    import importlib.metadata as md
    out = {}
    for name in ("numpy", "pullback", "jax", "jaxlib", "autograd", "torch", "matplotlib"):
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            out[name] = "not installed"
    try:
        rev = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=ROOT,
                             capture_output=True, text=True, timeout=10).stdout.strip()
        if rev:
            out["pullback"] += f" (git {rev})"
    except Exception:
        pass
    return out


def select_rows(problem_names, quick):
    import problems
    rows = []
    for p in problems.PROBLEMS:
        if problem_names and p.name not in problem_names:
            continue
        for n, label in (p.quick if quick else p.sizes):
            rows.append((p, n, label))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, 5 s bound (< 2 min)")
    ap.add_argument("--problems", help="comma-separated problem names (default: all)")
    ap.add_argument("--systems", help="comma-separated systems (default: all): "
                    + ",".join(s for s, _ in SYSTEMS))
    ap.add_argument("--no-costs", action="store_true", help="skip pullback's own costs")
    ap.add_argument("--no-dask", action="store_true", help="skip the Dask row (dask_mlp.py)")
    ap.add_argument("--out", help="output name in benchmarks/results (default: latest, or "
                    "quick with --quick)")
    ap.add_argument("--render", metavar="NAME", help="only rewrite results/NAME.md and "
                    "NAME.png from results/NAME.json")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        worker_main(a.worker)
        return
    if a.render:
        with open(os.path.join(RESULTS, a.render + ".json")) as fh:
            write_report(json.load(fh), a.render)
        return
    mode = "quick" if a.quick else "full"
    systems = [s for s, _ in SYSTEMS]
    if a.systems:
        want = a.systems.split(",")
        unknown = set(want) - set(systems)
        if unknown:
            ap.error(f"unknown systems: {sorted(unknown)}")
        systems = [s for s in systems if s in want]
    rows = select_rows(set(a.problems.split(",")) if a.problems else None, a.quick)
    if not rows:
        ap.error("no problems selected")
    name = a.out or ("quick" if a.quick else "latest")
    os.makedirs(RESULTS, exist_ok=True)
    log_path = os.path.join(RESULTS, name + ".log")
    start = time.monotonic()
    with open(log_path, "wb") as log:
        load_start = os.getloadavg()
        results, unavailable, scaling = run_grid(rows, systems, mode, log)
        costs = {} if a.no_costs or "pullback" in unavailable or "pullback" not in systems \
            else pullback_costs(rows, mode, log)
        dask = {} if a.no_dask or "pullback" not in systems or not any(
            p.name == "mlp" for p, _, _ in rows) else dask_row(mode, log)
    meta = {"date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
            "wall": time.monotonic() - start,
            "command": "make bench-quick" if a.quick else "make bench",
            "machine": machine_info(), "versions": versions()}
    meta["machine"]["load average (1, 5, 15 min)"] = (
        f"{', '.join(f'{v:.2f}' for v in load_start)} at the start, "
        f"{', '.join(f'{v:.2f}' for v in os.getloadavg())} at the end (2 cores shared with "
        "other work: timings are medians, not minima, and still move by tens of per cent)")
    data = {"meta": meta, "mode": mode, "systems": systems,
            "rows": [[p.name, n, sl] for p, n, sl in rows],
            "results": {"|".join(k): v for k, v in results.items()},
            "pullback_costs": costs, "dask": dask,
            "scaling": {"|".join(k): v for k, v in scaling.items()}}
    with open(os.path.join(RESULTS, name + ".json"), "w") as fh:
        json.dump(data, fh, indent=1)
    md_text = write_report(data, name)
    print(md_text)
    print(f"\nwrote {os.path.relpath(os.path.join(RESULTS, name + '.md'), ROOT)} "
          f"({time.monotonic() - start:.0f} s)", file=sys.stderr)


def write_report(data, name):
    """results/NAME.md and results/NAME.png from the measurements in ``data``
    (what results/NAME.json holds)."""
    import problems
    mode, systems, meta = data["mode"], data["systems"], data["meta"]
    rows = [(problems.BY_NAME[p], n, sl) for p, n, sl in data["rows"]]
    results = {tuple(k.split("|")): v for k, v in data["results"].items()}
    scaling = {tuple(k.split("|")): v for k, v in data.get("scaling", {}).items()}
    bound = MODES[mode]["bound"]
    for res in results.values():
        # a first call past the bound is a timeout, whatever came after it
        if res.get("status") in ("ok", "wrong") and (res.get("first") or 0) > bound:
            res["status"] = "timeout"
            res["error"] = f"the first call took {res['first']:.0f} s, over {bound:.0f} s"
    md_text = render(meta, rows, systems, results, data["pullback_costs"], mode, scaling,
                     data.get("dask"))
    png = os.path.join(RESULTS, name + ".png")
    problem_chart = chart(rows, systems, results, png,
                          f"pullback benchmarks ({mode} run, {meta['date']}): time per call")
    if problem_chart is None:
        md_text = md_text.replace("## Time per call\n",
                                  f"## Time per call\n\n![chart]({name}.png)\n", 1)
    else:
        md_text += f"\n{problem_chart}\n"
    with open(os.path.join(RESULTS, name + ".md"), "w") as fh:
        fh.write(md_text)
    return md_text

if __name__ == "__main__":
    main()
