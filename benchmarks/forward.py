"""Forward mode (issue 15): ``pb.jvp`` of elementwise chains.

For each chain, at 100,000 and 1,000,000 elements: the primal's time,
``pb.jvp`` (forward mode as a source transform; for arrays this large the
chain is one fused kernel returning value and partials, then one
multiply-add per input; the kernel's cost model picks JAX or NumPy forward
mode, and a column forces NumPy), and ``jax.jit(jax.jvp)``; the ratio of ``pb.jvp``
to the primal is the issue's target (within 3x).  Before forward mode,
``pb.jvp`` ran one reverse sweep per output element: 230x a gradient at
1,000 elements, and quadratic (so not measured here at these sizes).

Run:  .venv/bin/python benchmarks/forward.py            # the table
      .venv/bin/python benchmarks/forward.py --sizes 100000

Thread pools are pinned to one thread (NumPy's BLAS and XLA alike), as in
``elementwise.py``; times are the best of interleaved rounds.  ``--clock
cpu`` times with the process's CPU time (all its threads) instead of the
wall clock: on a machine shared with other work, a round the scheduler
interrupts then costs only what it computed.
"""
import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false "
                      "intra_op_parallelism_threads=1")
os.environ.setdefault("PULLBACK_CACHE", "0")

import argparse  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import pullback as pb  # noqa: E402
from pullback.lowering import kernels  # noqa: E402


def chain(x):
    y = np.tanh(x)
    y = 2.0 * y + 1.0
    y = np.sin(y) * x
    return y ** 2


def tanh_chain(x):
    return np.sum(np.tanh(2.0 * x + 1.0) * x)


def chain2(x, w):
    return np.exp(-x * x) * np.cos(w * x) + np.log1p(w * w) * x


def jax_version(name):
    import jax.numpy as jnp
    return {
        "chain": lambda x: (jnp.sin(2.0 * jnp.tanh(x) + 1.0) * x) ** 2,
        "tanh_chain": lambda x: jnp.sum(jnp.tanh(2.0 * x + 1.0) * x),
        "chain2": lambda x, w: jnp.exp(-x * x) * jnp.cos(w * x) + jnp.log1p(w * w) * x,
    }[name]


CASES = {
    "chain": (chain, 1, "(sin(2 tanh(x) + 1) x)^2, an array out"),
    "tanh_chain": (tanh_chain, 1, "sum(tanh(2x + 1) x), a number out"),
    "chain2": (chain2, 2, "exp(-x^2) cos(wx) + log1p(w^2) x, two inputs"),
}


CLOCK = time.perf_counter


def interleaved(fns, args, rounds):
    for f in fns.values():
        f(*args)
    times = {k: [] for k in fns}
    for _ in range(rounds):
        for k, f in fns.items():
            t = CLOCK()
            f(*args)
            times[k].append(CLOCK() - t)
    return {k: min(v) for k, v in times.items()}


def row(name, n, rounds):
    fn, nargs, label = CASES[name]
    rng = np.random.default_rng(0)
    xs = tuple(rng.standard_normal(n) for _ in range(nargs))
    ts = tuple(rng.standard_normal(n) for _ in range(nargs))
    def numpy_kernel(*a):
        with kernels.options(jax=False):
            return pb.jvp(fn, a, ts)
    fns = {"primal": lambda *a: fn(*a),
           "pb.jvp": lambda *a: pb.jvp(fn, a, ts),
           "pb.jvp, NumPy kernel": numpy_kernel}
    try:
        import jax
        jax.config.update("jax_enable_x64", True)
        jf = jax_version(name)
        jitted = jax.jit(lambda p, t: jax.jvp(jf, p, t))
        jp = tuple(jax.device_put(a) for a in xs)
        jt = tuple(jax.device_put(t) for t in ts)

        def jax_jvp(*a):
            out = jitted(jp, jt)
            jax.block_until_ready(out)
            return out
        fns["jax.jit(jax.jvp)"] = jax_jvp
    except ImportError:
        pass
    # the answer first: pullback's jvp against JAX's
    if "jax.jit(jax.jvp)" in fns:
        out, dot = pb.jvp(fn, xs, ts)
        jout, jdot = fns["jax.jit(jax.jvp)"]()
        assert np.allclose(dot, np.asarray(jdot), rtol=1e-9, atol=1e-12), name
    times = interleaved(fns, xs, rounds)
    return {"case": name, "label": label, "n": n, **times,
            "ratio": times["pb.jvp"] / times["primal"],
            "ratio_numpy": times["pb.jvp, NumPy kernel"] / times["primal"]}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--json", default="")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    opts = parser.parse_args()
    global CLOCK
    CLOCK = time.process_time if opts.clock == "cpu" else time.perf_counter
    rows = []
    print("| chain | n | primal | pb.jvp | pb.jvp, NumPy kernel | jax.jit(jax.jvp) | "
          "pb.jvp / primal | NumPy kernel / primal |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for n in (int(s) for s in opts.sizes.split(",")):
        for name in CASES:
            r = row(name, n, opts.rounds)
            rows.append(r)
            jx = r.get("jax.jit(jax.jvp)")
            print(f"| {r['label']} | {n:,} | {r['primal'] * 1e3:.2f} ms | "
                  f"{r['pb.jvp'] * 1e3:.2f} ms | {r['pb.jvp, NumPy kernel'] * 1e3:.2f} ms | "
                  f"{'-' if jx is None else f'{jx * 1e3:.2f} ms'} | {r['ratio']:.2f}x | "
                  f"{r['ratio_numpy']:.2f}x |", flush=True)
    if opts.json:
        with open(opts.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
