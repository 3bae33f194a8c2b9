"""Derivatives of derivatives (issue 15): the Hessian-vector product of an
MLP loss.

For a two-layer MLP loss ``mean((tanh(x @ w1) @ w2 - y) ** 2)`` with respect
to ``(w1, w2)``, at a few sizes: the primal's time, ``pb.grad``,
``pb.hvp`` (forward over reverse: forward mode over the generated primal and
adjoint), and ``jax.jit`` of JAX's HVP (``jax.jvp(jax.grad(loss))``) and of
``jax.grad``; the answer is checked against JAX's first.  The ratio that
matters is ``pb.hvp / pb.grad`` (an HVP costs a small constant times a
gradient) and ``pb.hvp`` against ``jax.jit``'s HVP.

Run:  .venv/bin/python benchmarks/higher_order.py
      .venv/bin/python benchmarks/higher_order.py --sizes 64x32x32 --rounds 30

Thread pools are pinned to one thread (NumPy's BLAS and XLA alike), as in
``forward.py``; times are the best of interleaved rounds.
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


def loss(w1, w2, x, y):
    h = np.tanh(x @ w1)
    out = h @ w2
    return np.mean((out - y) ** 2)


def jax_loss(w1, w2, x, y):
    import jax.numpy as jnp
    h = jnp.tanh(x @ w1)
    out = h @ w2
    return jnp.mean((out - y) ** 2)


def interleaved(fns, rounds):
    for f in fns.values():
        f()
    times = {k: [] for k in fns}
    for _ in range(rounds):
        for k, f in fns.items():
            t = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t)
    return {k: min(v) for k, v in times.items()}


def row(n, d, k, rounds):
    rng = np.random.default_rng(0)
    w1, w2 = rng.standard_normal((d, k)) / np.sqrt(d), rng.standard_normal(k) / np.sqrt(k)
    x, y = rng.standard_normal((n, d)), rng.standard_normal(n)
    v1, v2 = rng.standard_normal(w1.shape), rng.standard_normal(w2.shape)

    def f(a, b):
        return loss(a, b, x, y)
    fns = {"primal": lambda: loss(w1, w2, x, y),
           "pb.grad": lambda: pb.grad(loss, argnums=(0, 1))(w1, w2, x, y),
           "pb.hvp": lambda: pb.hvp(f, (w1, w2), (v1, v2))}
    import jax
    jax.config.update("jax_enable_x64", True)
    jx, jy = jax.device_put(x), jax.device_put(y)

    @jax.jit
    def jax_hvp(a, b, va, vb):
        return jax.jvp(jax.grad(lambda p, q: jax_loss(p, q, jx, jy), argnums=(0, 1)),
                       (a, b), (va, vb))[1]

    jgrad = jax.jit(jax.grad(lambda p, q: jax_loss(p, q, jx, jy), argnums=(0, 1)))
    jw = tuple(jax.device_put(a) for a in (w1, w2, v1, v2))

    def run_hvp():
        return jax.block_until_ready(jax_hvp(*jw))

    def run_grad():
        return jax.block_until_ready(jgrad(*jw[:2]))
    fns["jax.jit(hvp)"] = run_hvp
    fns["jax.jit(grad)"] = run_grad
    got, want = pb.hvp(f, (w1, w2), (v1, v2)), run_hvp()
    for a, b in zip(got, want):
        assert np.allclose(a, np.asarray(b), rtol=1e-9, atol=1e-12)
    times = interleaved(fns, rounds)
    return {"n": n, "d": d, "k": k, **times,
            "hvp_over_grad": times["pb.hvp"] / times["pb.grad"],
            "hvp_over_jax": times["pb.hvp"] / times["jax.jit(hvp)"]}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="64x16x16,256x64x64,1024x128x128")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--json", default="")
    opts = parser.parse_args()
    rows = []
    print("| n x d x k | primal | pb.grad | pb.hvp | jax.jit(grad) | jax.jit(hvp) | "
          "pb.hvp / pb.grad | pb.hvp / jax.jit(hvp) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for size in opts.sizes.split(","):
        n, d, k = (int(s) for s in size.split("x"))
        r = row(n, d, k, opts.rounds)
        rows.append(r)
        ms = {key: f"{r[key] * 1e3:.3f} ms" for key in
              ("primal", "pb.grad", "pb.hvp", "jax.jit(grad)", "jax.jit(hvp)")}
        print(f"| {n}x{d}x{k} | {ms['primal']} | {ms['pb.grad']} | {ms['pb.hvp']} | "
              f"{ms['jax.jit(grad)']} | {ms['jax.jit(hvp)']} | {r['hvp_over_grad']:.1f}x | "
              f"{r['hvp_over_jax']:.1f}x |", flush=True)
    if opts.json:
        with open(opts.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
