"""Fused elementwise kernels (issue: lower pure broadcasts to JAX jvp kernels).

For each case, at 10,000 and 1,000,000 elements (and seed 000's 50x50x50x50
chain): the primal's time, pullback's gradient with the lowering (the cost
model picks JAX or NumPy forward mode), pullback's gradient without it, a
hand-written NumPy gradient and ``jax.jit(jax.grad)``; ratios to the primal;
and each gradient's peak memory (resident set, measured in a fresh process).

Run:  .venv/bin/python benchmarks/elementwise.py            # the table
      .venv/bin/python benchmarks/elementwise.py --threshold  # the cost model's crossover
      .venv/bin/python benchmarks/elementwise.py --quick      # no memory column
      XLA_FLAGS=--xla_cpu_multi_thread_eigen=true .venv/bin/python benchmarks/elementwise.py --cases net  # XLA on all cores

Thread pools are pinned to one thread (NumPy's BLAS and XLA alike) so that
the comparison is one core against one core and timings do not swing.
"pullback" is what ``pb.value_and_grad`` runs for arguments of that size
(the size class and the kernels' own cost model decide); "JAX kernel
forced" lowers every region, one operation alone included, onto JAX.
"""
import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false "
                      "intra_op_parallelism_threads=1")
os.environ.setdefault("PULLBACK_CACHE", "0")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import types  # noqa: E402

import numpy as np  # noqa: E402

import pullback as pb  # noqa: E402
from pullback.lowering import jax_bridge, kernels  # noqa: E402


# -- the functions --------------------------------------------------------------------

def sum_abs(x):
    return np.sum(np.abs(x))


def sum_cbrt(x):
    return np.sum(np.cbrt(x))


def sum_tanh(x):
    return np.sum(np.tanh(x))


def bump(z):
    return math.exp(-z * z) * math.sin(3.0 * z) + z


def sum_vectorize(x):
    return np.sum(np.vectorize(bump)(x))


def tanh_chain(x):
    return np.sum(np.tanh(2.0 * x + 1.0) * x)


def closure(x, y):
    g = lambda z: z ** 2 + y[0]      # noqa: E731  (seed 001)
    return np.sum(g(x))


def net(x):
    y = np.tanh(x)
    y = 2.0 * y + 1.0
    y = np.sin(y) * x
    return np.sum(y ** 2)


# hand-written NumPy gradients (value and gradient, as value_and_grad)

def sum_abs_grad(x):
    return np.sum(np.abs(x)), np.sign(x)


def sum_cbrt_grad(x):
    c = np.cbrt(x)
    return np.sum(c), 1.0 / (3.0 * c * c)


def sum_tanh_grad(x):
    t = np.tanh(x)
    return np.sum(t), 1.0 - t * t


def sum_vectorize_grad(x):
    e = np.exp(-x * x)
    s = np.sin(3.0 * x)
    return np.sum(e * s + x), e * (3.0 * np.cos(3.0 * x) - 2.0 * x * s) + 1.0


def tanh_chain_grad(x):
    t = np.tanh(2.0 * x + 1.0)
    return np.sum(t * x), t + 2.0 * x * (1.0 - t * t)


def closure_grad(x, y):
    gy = np.zeros_like(y)
    gy[0] = x.size
    return np.sum(x * x + y[0]), (2.0 * x, gy)


def net_grad(x):
    t = np.tanh(x)
    a = 2.0 * t + 1.0
    s = np.sin(a)
    y = s * x
    value = np.sum(y * y)
    gy = 2.0 * y
    del y
    gx = gy * s
    ga = gy * x * np.cos(a)
    del gy, a, s
    gx += ga * 2.0 * (1.0 - t * t)
    return value, gx


# JAX versions of the same functions

def jax_version(name):
    import jax.numpy as jnp
    import jax
    return {
        "sum_abs": lambda x: jnp.sum(jnp.abs(x)),
        "sum_cbrt": lambda x: jnp.sum(jnp.cbrt(x)),
        "sum_tanh": lambda x: jnp.sum(jnp.tanh(x)),
        "sum_vectorize": lambda x: jnp.sum(jax.vmap(
            lambda z: jnp.exp(-z * z) * jnp.sin(3.0 * z) + z)(x.ravel())),
        "tanh_chain": lambda x: jnp.sum(jnp.tanh(2.0 * x + 1.0) * x),
        "closure": lambda x, y: jnp.sum(x ** 2 + y[0]),
        "net": lambda x: jnp.sum((jnp.sin(2.0 * jnp.tanh(x) + 1.0) * x) ** 2),
    }[name]


CASES = {
    "sum_abs": (sum_abs, sum_abs_grad, "sum(abs(x))"),
    "sum_cbrt": (sum_cbrt, sum_cbrt_grad, "sum(cbrt(x))"),
    "sum_tanh": (sum_tanh, sum_tanh_grad, "sum(tanh(x))"),
    "sum_vectorize": (sum_vectorize, sum_vectorize_grad, "sum(np.vectorize(bump)(x))"),
    "tanh_chain": (tanh_chain, tanh_chain_grad, "sum(tanh(2x + 1) * x)"),
    "closure": (closure, closure_grad, "sum((z -> z**2 + y[0])(x))"),
    "net": (net, net_grad, "seed 000: net(x), x 50x50x50x50"),
}


def inputs(name, n):
    rng = np.random.default_rng(0)
    if name == "net":
        return (rng.uniform(-1, 1, size=(50, 50, 50, 50)),)
    x = rng.uniform(0.1, 2.0, size=n) * rng.choice([-1.0, 1.0], size=n)
    if name == "closure":
        return (x, np.array([4.0, 5.0]))
    return (x,)


# -- the gradients being compared -----------------------------------------------------------

def method(name, how):
    """A function of the inputs computing (value, gradient) ``how``."""
    fn, hand, _ = CASES[name]
    argnums = (0, 1) if name == "closure" else 0
    if how == "primal":
        return fn
    if how == "hand":
        return hand
    if how == "forced":
        run = method(name, "pullback")

        def forced(*args):               # a JAX kernel whatever the cost model says
            with kernels.options(min_operations=1, threshold=0):
                return run(*args)
        return forced
    if how in ("pullback", "unlowered"):
        # a copy of the function: its own transforms, not shared with the other way
        copy = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__,
                                  fn.__closure__)
        vg = pb.value_and_grad(copy, argnums=argnums)
        lower = how == "pullback"

        def run(*args):
            if lower:                     # lowered as for arguments of this size
                with kernels.sizing(args):
                    return vg(*args)
            with kernels.options(lower=False):
                return vg(*args)
        return run
    if how == "per_element":
        each = kernels.PerElement(bump, ["z"])
        primal, adjoint = each.for_callers((0,))

        def run(x):
            out, res = primal(x)
            return np.sum(out), adjoint(res, np.ones_like(out))[0]
        return run
    if how == "jax":
        import jax
        jfn = jax.jit(jax.value_and_grad(jax_version(name), argnums=argnums))

        def run(*args):
            with jax_bridge.x64(jax):
                return jax.block_until_ready(jfn(*args))
        return run
    raise ValueError(how)


def best(f, args, budget=1.5, most=200):
    f(*args)
    times, start = [], time.perf_counter()
    while len(times) < most and (time.perf_counter() - start < budget or len(times) < 3):
        t = time.perf_counter()
        f(*args)
        times.append(time.perf_counter() - t)
    return min(times)


def interleaved(fns, args, rounds):
    """The best time of each function, measured round-robin: a load that
    comes and goes on the machine then slows every contender alike."""
    for f in fns.values():
        f(*args)
    times = {k: [] for k in fns}
    for _ in range(rounds):
        for k, f in fns.items():
            t = time.perf_counter()
            f(*args)
            times[k].append(time.perf_counter() - t)
    return {k: min(v) for k, v in times.items()}


def peak_rss(name, n, how):
    """Peak resident memory of one gradient above what the inputs take, in a
    fresh process (after one warm-up call), in MiB."""
    code = (f"import sys; sys.path.insert(0, {os.path.dirname(__file__)!r})\n"
            "import elementwise as b\n"
            f"print(b._measure_peak({name!r}, {n}, {how!r}))\n")
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="65536", MALLOC_TRIM_THRESHOLD_="0")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    if p.returncode != 0:
        return float("nan")
    return float(p.stdout.strip().splitlines()[-1])


def _status(key):
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(key):
                return int(line.split()[1]) / 1024
    return float("nan")


def _measure_peak(name, n, how):
    import ctypes
    import gc
    args = inputs(name, n)
    f = method(name, how)
    f(*args)
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")
    base = _status("VmRSS")
    r = f(*args)
    del r
    return _status("VmHWM") - base


def table(sizes, memory, cases=None):
    rows = []
    hows = ["primal", "pullback", "forced", "unlowered", "hand", "jax"]
    for name, (_, _, label) in CASES.items():
        if cases and name not in cases:
            continue
        for n in ([50 ** 4] if name == "net" else sizes):
            args = inputs(name, n)
            row = {"case": label, "n": n}
            row.update(interleaved({how: method(name, how) for how in hows}, args,
                                   rounds=7 if n > 10 ** 6 else 25))
            if name == "sum_vectorize":
                m = min(n, 10_000)
                each = best(method(name, "per_element"), inputs(name, m), budget=2.0, most=3)
                row["per_element"] = each * n / m
            if memory:
                for how in ("pullback", "unlowered", "hand", "jax"):
                    row["mem_" + how] = peak_rss(name, n, how)
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    return rows


def show(rows, memory):
    def us(t):
        return f"{t * 1e6:,.0f}" if t < 0.1 else f"{t * 1e3:,.0f}m"
    head = ("| case | n | primal µs | pullback µs (×primal) | JAX kernel forced µs | "
            "unlowered µs | hand µs | jax.jit(grad) µs | pullback / hand | pullback / jax |")
    if memory:
        head += " peak MiB: pullback / unlowered / hand / jax |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for r in rows:
        line = (f"| {r['case']} | {r['n']:,} | {us(r['primal'])} | {us(r['pullback'])} "
                f"({r['pullback'] / r['primal']:.1f}) | {us(r['forced'])} | "
                f"{us(r['unlowered'])} | {us(r['hand'])} | "
                f"{us(r['jax'])} | {r['pullback'] / r['hand']:.2f} | {r['pullback'] / r['jax']:.2f} |")
        if memory:
            line += (f" {r['mem_pullback']:.0f} / {r['mem_unlowered']:.0f} / "
                     f"{r['mem_hand']:.0f} / {r['mem_jax']:.0f} |")
        print(line)
    for r in rows:
        if "per_element" in r:
            print(f"\nnp.vectorize(bump), n={r['n']:,}: per element (pullback's own adjoint of "
                  f"bump, once per element) {r['per_element'] * 1e3:,.0f} ms"
                  f"{' (extrapolated from 10,000)' if r['n'] > 10_000 else ''}; fused "
                  f"{r['pullback'] * 1e3:,.2f} ms: {r['per_element'] / r['pullback']:,.0f}x faster")


# -- the cost model's threshold ----------------------------------------------------------------

def threshold_sweep():
    """Gradient time with the JAX kernel against the plain NumPy code, by size:
    the crossover is where lowering starts to pay."""
    sizes = [1_000, 10_000, 30_000, 100_000, 300_000, 1_000_000]
    print("| case | " + " | ".join(f"{n:,}" for n in sizes) + " |")
    print("|---|" + "---|" * len(sizes))
    for name in ("sum_abs", "sum_cbrt", "sum_tanh", "closure", "tanh_chain", "net"):
        ratios = []
        for n in sizes:
            args = inputs(name, n) if name != "net" else (
                np.random.default_rng(0).uniform(-1, 1, n),)
            vg = method(name, "pullback")

            def fused(*a):                    # lowered, however small, and on JAX
                with kernels.options(lower=True, threshold=0, min_operations=1):
                    return vg(*a)
            t = interleaved({"plain": method(name, "unlowered"), "fused": fused}, args,
                            rounds=max(5, min(200, 3 * 10 ** 6 // n)))
            ratios.append(t["fused"] / t["plain"])
        print(f"| {CASES[name][2]} | " + " | ".join(f"{r:.2f}" for r in ratios) + " |")
    print("\n(gradient time with a JAX kernel / without lowering; below 1 lowering pays)")


def gpu_timings():
    """On a GPU: a fused kernel on CuPy arrays (through DLPack, no copy)
    against the same region run by CuPy op by op (the kernel's NumPy path,
    which CuPy's arrays take through NumPy's dispatch)."""
    import cupy
    from pullback.callees import Derivative
    fn = types.FunctionType(net.__code__, net.__globals__, "net", None, None)
    with kernels.options(lower=True):
        loaded = Derivative(fn).transform((np.ones(3),), (0,))
    kernel = next(v.__pullback_kernel__[0] for v in loaded.helpers.values()
                  if kernels.is_kernel_helper(v))
    primal, adjoint = kernel.for_callers((0,))

    def grad(x):
        out, res = primal(x)
        g = adjoint(res, cupy.ones_like(out))[0]
        cupy.cuda.Device().synchronize()
        return g

    print("| n | fused JAX kernel on CuPy µs | CuPy op by op µs | ratio |")
    print("|---|---|---|---|")
    for n in (10 ** 4, 10 ** 6, 10 ** 7, 50 ** 4 * 4):
        x = cupy.asarray(np.random.default_rng(0).uniform(-1, 1, n))
        fused = best(grad, (x,), budget=1.0)
        with kernels.options(jax=False):
            plain = best(grad, (x,), budget=1.0)
        print(f"| {n:,} | {fused * 1e6:,.0f} | {plain * 1e6:,.0f} | {fused / plain:.2f} |")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threshold", action="store_true", help="the cost model's sweep")
    parser.add_argument("--gpu", action="store_true", help="timings on CuPy arrays")
    parser.add_argument("--quick", action="store_true", help="leave out peak memory")
    parser.add_argument("--sizes", default="10000,1000000")
    parser.add_argument("--cases", default="", help="comma-separated, e.g. net,tanh_chain")
    a = parser.parse_args()
    if a.threshold:
        threshold_sweep()
        return
    if a.gpu:
        gpu_timings()
        return
    sizes = [int(s) for s in a.sizes.split(",")]
    cases = [c for c in a.cases.split(",") if c]
    show(table(sizes, not a.quick, cases), not a.quick)


if __name__ == "__main__":
    main()
